"""The ``Duration`` field type: a string in Paimon's duration syntax ('30 min', '1 h', '7 d').

One grammar for CRDs, YAML manifests and Paimon table options (operator-design.md §3,
"Durations"): a whole number, an optional single space and one unit of ``ms``, ``s``, ``min``,
``h`` or ``d``. The value is kept exactly as written (so manifests round-trip unchanged and can
be written to Paimon options as is) and parsed by :func:`tablekeeper.core.values.durations.parse_duration`.

Compare amounts with :meth:`Duration.to_timedelta`; ordering operators on ``Duration`` raise
``TypeError`` because string order ('10 min' < '9 min') is never what is meant. Equality stays
textual: ``Duration('60 min') != Duration('1 h')``.
"""

from __future__ import annotations

import re
from datetime import timedelta

from tablekeeper.core import errors, values
from tablekeeper.core.policy.common import PatternString

__all__ = ["Duration", "DURATION_PATTERN", "to_timedelta"]

#: The accepted grammar, also emitted as the JSON-schema ``pattern`` (CRD validation).
DURATION_PATTERN = r"^[0-9]+ ?(ms|s|min|h|d)$"
_DURATION_RE = re.compile(DURATION_PATTERN)
_FIX = "write a whole number and one unit of ms, s, min, h or d, e.g. '30 min', '1 h' or '7 d'"


class Duration(PatternString):
    """A validated Paimon duration string; serialises back as the same plain string."""

    __slots__ = ()
    json_pattern = DURATION_PATTERN

    def __new__(cls, value: str) -> Duration:
        if isinstance(value, Duration):
            return value
        if not isinstance(value, str):
            raise errors.InvalidDurationError(f"{value!r} is not a duration string", fix=_FIX)
        if not _DURATION_RE.match(value):
            raise errors.InvalidDurationError(f"{value!r} is not a duration in Paimon syntax", fix=_FIX)
        values.parse_duration(value)  # the single parser; cannot fail after the pattern
        return super().__new__(cls, value)

    @classmethod
    def from_timedelta(cls, value: timedelta) -> Duration:
        """The shortest exact Paimon form of ``value`` ('90 min', '7 d').

        Raises:
            InvalidDurationError: when ``value`` is negative or not a whole number of milliseconds.
        """
        if value < timedelta(0):
            raise errors.InvalidDurationError(f"negative duration {value}", fix="use a positive duration")
        return cls(values.format_duration(value))

    def to_timedelta(self) -> timedelta:
        """The amount of time this duration stands for."""
        return values.parse_duration(self)

    def _no_order(self, other: object) -> bool:
        raise TypeError("Durations are not ordered as strings; compare .to_timedelta() values")

    __lt__ = __le__ = __gt__ = __ge__ = _no_order


def to_timedelta(value: str) -> timedelta:
    """``Duration(value).to_timedelta()``: validate a Paimon duration string and return its amount.

    Raises:
        InvalidDurationError: when ``value`` is not in the accepted grammar.
    """
    return Duration(value).to_timedelta()
