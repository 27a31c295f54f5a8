"""The ``Schedule`` field type: when maintenance runs.

Two forms (operator-design.md §4.2, §7.6):

- ``@every <duration>``: a fixed interval in Paimon duration syntax (``@every 6 h``, ``@every 6h``),
  at least :data:`MIN_INTERVAL`;
- a five-field cron expression ``minute hour day-of-month month day-of-week`` (``0 3 * * 0``)
  with ``*``, lists, ranges and steps, month names ``JAN``-``DEC`` and weekday names
  ``SUN``-``SAT`` (0 and 7 are Sunday), or one of the macros ``@hourly``, ``@daily``,
  ``@midnight``, ``@weekly``, ``@monthly``, ``@yearly``, ``@annually``.

Times are evaluated in the zone of the maintenance window (UTC by default) by the scheduler;
this module validates only. The value is kept exactly as written.
"""

from __future__ import annotations

import re
from datetime import timedelta

from tablekeeper.core.policy.common import PatternString
from tablekeeper.core.policy.duration_field import Duration
from tablekeeper.core.policy.validation import InvalidSpecError

__all__ = ["Schedule", "SCHEDULE_PATTERN", "MIN_INTERVAL", "MACROS"]

#: Shortest ``@every`` interval accepted (a timer firing more often only burns API calls).
MIN_INTERVAL = timedelta(minutes=1)

#: Cron macros and their five-field equivalents.
MACROS: dict[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

#: Coarse shape check emitted into the JSON schema; the validator below is exact.
SCHEDULE_PATTERN = r"^(@every [0-9]+ ?(ms|s|min|h|d)|@[a-z]+|\S+( \S+){4})$"

_MONTHS = {m: i for i, m in enumerate(
    ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"), start=1)}
_DAYS = {d: i for i, d in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))}
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day-of-month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day-of-week", 0, 7, _DAYS),
)
_ITEM = re.compile(r"^(?P<range>\*|[A-Za-z0-9]+(-[A-Za-z0-9]+)?)(/(?P<step>[0-9]+))?$")
_FIX = "write '@every 6 h', a macro such as '@daily', or five cron fields such as '0 3 * * 0'"


def _value(text: str, field: str, low: int, high: int, names: dict[str, int]) -> int:
    number = names.get(text.upper()) if not text.isdigit() else int(text)
    if number is None or not low <= number <= high:
        raise InvalidSpecError(
            f"cron {field} value {text!r} is out of range {low}-{high}", fix=_FIX
        )
    return number


def _check_cron(expression: str) -> None:
    parts = expression.split()
    if len(parts) != 5 or " ".join(parts) != expression:
        raise InvalidSpecError(
            f"cron expression {expression!r} must have exactly 5 fields separated by single spaces", fix=_FIX
        )
    for text, (field, low, high, names) in zip(parts, _FIELDS, strict=True):
        for item in text.split(","):
            match = _ITEM.match(item)
            if not match:
                raise InvalidSpecError(f"cron {field} item {item!r} is malformed", fix=_FIX)
            step = match.group("step")
            if step is not None and int(step) == 0:
                raise InvalidSpecError(f"cron {field} step must be at least 1 in {item!r}", fix=_FIX)
            span = match.group("range")
            if span == "*":
                continue
            first, _, last = span.partition("-")
            start = _value(first, field, low, high, names)
            if last and _value(last, field, low, high, names) < start:
                raise InvalidSpecError(f"cron {field} range {span!r} runs backwards", fix=_FIX)


class Schedule(PatternString):
    """A validated schedule string: ``@every <duration>``, a cron macro or five cron fields."""

    __slots__ = ()
    json_pattern = SCHEDULE_PATTERN

    def __new__(cls, value: str) -> Schedule:
        if isinstance(value, Schedule):
            return value
        if not isinstance(value, str) or not value.strip():
            raise InvalidSpecError("schedule must not be empty", fix=_FIX)
        if value.startswith("@every"):
            amount = value[len("@every"):]
            if not amount.startswith(" ") or amount.startswith("  "):
                raise InvalidSpecError(f"{value!r}: write one space after '@every'", fix=_FIX)
            interval = Duration(amount[1:]).to_timedelta()
            if interval < MIN_INTERVAL:
                raise InvalidSpecError(
                    f"schedule interval {amount[1:]!r} is shorter than {MIN_INTERVAL}",
                    fix="use an interval of at least '1 min'",
                )
        elif value.startswith("@"):
            if value not in MACROS:
                raise InvalidSpecError(f"unknown schedule macro {value!r}",
                                       fix="use one of " + ", ".join(sorted(MACROS)) + " or '@every <duration>'")
        else:
            _check_cron(value)
        return super().__new__(cls, value)

    @property
    def interval(self) -> timedelta | None:
        """The interval of an ``@every`` schedule; None for cron schedules."""
        if self.startswith("@every "):
            return Duration(self[len("@every "):]).to_timedelta()
        return None

    @property
    def cron(self) -> str | None:
        """The five-field cron expression (macros expanded); None for ``@every`` schedules."""
        if self.startswith("@every "):
            return None
        return MACROS.get(str(self), str(self))
