"""Durations in Paimon's syntax ('30 min', '1 h', '7 d', '500 ms'), as Paimon's TimeUtils parses
them, plus ISO-8601 ('PT24H', as pypaimon reports tag retention). Formatting writes the
shortest exact Paimon form."""

from __future__ import annotations

import re
from datetime import timedelta

from tablekeeper.core import errors

__all__ = ["parse_duration", "format_duration"]

_UNITS: dict[str, timedelta] = {}
for _names, _unit in (
    (("d", "day", "days"), timedelta(days=1)),
    (("h", "hour", "hours"), timedelta(hours=1)),
    (("min", "m", "minute", "minutes"), timedelta(minutes=1)),
    (("s", "sec", "secs", "second", "seconds"), timedelta(seconds=1)),
    (("ms", "milli", "millis", "millisecond", "milliseconds"), timedelta(milliseconds=1)),
    (("µs", "us", "micro", "micros", "microsecond", "microseconds"), timedelta(microseconds=1)),
):
    for _name in _names:
        _UNITS[_name] = _unit

_PAIMON = re.compile(r"^\s*(\d+)\s*([a-zµ]*)\s*$")
_ISO = re.compile(
    r"^P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)


def parse_duration(text: str, *, field: str = "duration") -> timedelta:
    """Parse '7 d', '30 min', '1h', '86400 s', '500' (milliseconds, as Paimon) or 'PT24H'.

    Raises:
        InvalidDurationError: for anything else (negative, empty, unknown unit).
    """
    if not isinstance(text, str) or not text.strip():
        raise errors.InvalidDurationError(
            f"{field}: empty duration", fix="write a duration such as '30 min', '1 h' or '7 d'"
        )
    raw = text.strip()
    iso = _ISO.match(raw.upper())
    if iso and raw.upper() not in ("P", "PT"):
        parts = iso.groupdict()
        try:
            return timedelta(
                days=int(parts["d"] or 0),
                hours=int(parts["h"] or 0),
                minutes=int(parts["m"] or 0),
                seconds=float(parts["s"] or 0),
            )
        except (OverflowError, ValueError):
            raise _too_long(field, text) from None
    match = _PAIMON.match(raw.lower())
    if not match:
        raise errors.InvalidDurationError(
            f"{field}: {text!r} is not a duration",
            fix="write a number and a unit: ms, s, min, h or d (e.g. '30 min', '7 d')",
        )
    number, unit = int(match.group(1)), match.group(2)
    if unit and unit not in _UNITS:
        raise errors.InvalidDurationError(
            f"{field}: unknown time unit {unit!r} in {text!r}",
            fix="use one of ms, s, min, h, d",
        )
    try:
        return timedelta(milliseconds=number) if not unit else number * _UNITS[unit]
    except (OverflowError, ValueError):  # beyond timedelta's range (999999999 days)
        raise _too_long(field, text) from None


def _too_long(field: str, text: str) -> errors.InvalidDurationError:
    return errors.InvalidDurationError(
        f"{field}: {text!r} is longer than any duration can be (at most 999999999 d)",
        fix="write a shorter duration, e.g. '3650 d'",
    )


def format_duration(value: timedelta) -> str:
    """The largest whole Paimon unit that represents ``value`` exactly ('7 d', '90 min')."""
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    for name, unit in (("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000),
                       ("s", 1_000_000), ("ms", 1_000)):
        if micros % unit == 0:
            return f"{micros // unit} {name}"
    return f"{micros} us"
