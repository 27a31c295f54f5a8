"""Paimon's tag periods: period lengths, the name formats of auto-created tags and their strict
parsing, ported from ``TagPeriodHandler`` of ``apache/paimon`` at ``5dacde516b``
(paimon-semantics.md §3.3).

Times are epoch milliseconds in the table's local wall clock (``tag.automatic-creation``
timezone); a tag name parses only if it is exactly what the period's format writes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Literal

from tablekeeper.core import errors, values

__all__ = ["Period", "NameFormat", "CreationMode", "LONG_MIN", "TagPeriodHandler"]


Period = Literal["daily", "hourly", "two-hours"]


NameFormat = Literal["with_dashes", "without_dashes", "without_dashes_and_spaces"]


CreationMode = Literal["process-time", "watermark", "batch"]


#: Java's ``Long.MIN_VALUE``: the watermark of a snapshot committed without one.
LONG_MIN = -(2**63)


_EPOCH = datetime(1970, 1, 1)


# Java DateTimeFormatter patterns of TagPeriodHandler: fixed-width ASCII digits, STRICT.
_DAY_DASHES = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")


_DAY_PLAIN = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})")


_HOUR_DASHES = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2})")


_HOUR_PLAIN = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2}) ([0-9]{2})")


_HOUR_COMPACT = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})([0-9]{2})")


_MINUTE = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})([0-9]{2})([0-9]{2})")


#: format key -> (strict pattern, Java pattern)
_FORMATS: dict[str, tuple[re.Pattern[str], str]] = {
    "day-dashes": (_DAY_DASHES, "yyyy-MM-dd"),
    "day-plain": (_DAY_PLAIN, "yyyyMMdd"),
    "hour-dashes": (_HOUR_DASHES, "yyyy-MM-dd HH"),
    "hour-plain": (_HOUR_PLAIN, "yyyyMMdd HH"),
    "hour-compact": (_HOUR_COMPACT, "yyyyMMddHH"),
    "minute": (_MINUTE, "yyyyMMddHHmm"),
}


def _java_div(a: int, b: int) -> int:
    """Java's long division (truncates toward zero, unlike Python's floor division)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _millis(value: datetime) -> int:
    """``Timestamp.fromLocalDateTime(t).getMillisecond()``: a wall clock read as if it were UTC."""
    delta = value.replace(tzinfo=None) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def _from_millis(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


@dataclass(frozen=True)
class TagPeriodHandler:
    """One period and name format (Java's ``TagPeriodHandler`` implementations).

    Build with :meth:`create`; ``kind`` is ``daily``, ``hourly``, ``two-hours`` or ``duration``
    (``tag.creation-period-duration``, which overrides the named period).
    """

    kind: Literal["daily", "hourly", "two-hours", "duration"]
    period: timedelta
    fmt: str  # key of _FORMATS

    @classmethod
    def create(cls, period: str | None = "daily", period_duration: timedelta | None = None,
               name_format: str | None = "with_dashes") -> TagPeriodHandler:
        """``TagPeriodHandler.create(options)``.

        Raises:
            InvalidInputError: unknown period or name format, or a non-positive duration.
        """
        formatter = name_format or "with_dashes"
        if formatter not in ("with_dashes", "without_dashes", "without_dashes_and_spaces"):
            raise errors.InvalidInputError(f"unknown tag.period-formatter {formatter!r}",
                                           fix="use with_dashes, without_dashes or without_dashes_and_spaces")
        if period_duration is not None:
            if period_duration <= timedelta(0) or period_duration % timedelta(milliseconds=1):
                raise errors.InvalidInputError(f"tag.creation-period-duration {period_duration} is not positive",
                                               fix="use a positive whole duration such as '30 min'")
            return cls("duration", period_duration, "minute")
        name = period or "daily"
        if name == "daily":
            return cls("daily", timedelta(days=1), "day-dashes" if formatter == "with_dashes" else "day-plain")
        if name == "hourly":
            return cls("hourly", timedelta(hours=1), {"with_dashes": "hour-dashes", "without_dashes": "hour-plain",
                                                      "without_dashes_and_spaces": "hour-compact"}[formatter])
        if name == "two-hours":
            return cls("two-hours", timedelta(hours=2), "hour-dashes")  # Java ignores the formatter here
        raise errors.InvalidInputError(f"unknown tag.creation-period {name!r}", fix="use daily, hourly or two-hours")

    # -- names -----------------------------------------------------------------------------
    def validate_delay(self, delay: timedelta) -> None:
        """``checkArgument(onePeriod > delay)``.

        Raises:
            InvalidInputError: the delay is not shorter than one period.
        """
        if not self.period > delay:
            raise errors.InvalidInputError(
                f"tag.creation-delay {delay} is not shorter than the period {self.period}",
                fix="use a delay shorter than the period, or a longer period")

    def tag_to_time(self, name: str) -> datetime:
        """Parse a tag name strictly (Java ``ResolverStyle.STRICT``).

        Raises:
            ValueError: the name is not an auto-tag name of this period and format.
        """
        if self.kind == "daily":
            name = name.split(" ")[0]  # Java: LocalDate.parse(tag.split(" ")[0])
        pattern, java = _FORMATS[self.fmt]
        match = pattern.fullmatch(name)
        if match is None:
            raise ValueError(f"{name!r} does not match {java}")
        parts = [int(g) for g in match.groups()]
        if parts[0] < 1:  # year 0 is valid in Java; datetime cannot hold it (never a real tag)
            raise ValueError(f"{name!r}: year 0")
        if len(parts) == 3:
            return datetime.combine(date(parts[0], parts[1], parts[2]), datetime.min.time())
        minute = parts[4] if len(parts) > 4 else 0
        return datetime(parts[0], parts[1], parts[2], parts[3], minute)  # ValueError for 02-30, hour 24 (STRICT)

    def is_auto_tag(self, name: str) -> bool:
        try:
            self.tag_to_time(name)
        except ValueError:
            return False
        return True

    def time_to_tag(self, value: datetime) -> str:
        """Format a tag time (``time.format(formatter)``; daily names keep only the date)."""
        y, mo, d = f"{value.year:04d}", f"{value.month:02d}", f"{value.day:02d}"
        h, mi = f"{value.hour:02d}", f"{value.minute:02d}"
        return {
            "day-dashes": f"{y}-{mo}-{d}", "day-plain": f"{y}{mo}{d}", "hour-dashes": f"{y}-{mo}-{d} {h}",
            "hour-plain": f"{y}{mo}{d} {h}", "hour-compact": f"{y}{mo}{d}{h}", "minute": f"{y}{mo}{d}{h}{mi}",
        }[self.fmt]

    @property
    def pattern(self) -> str:
        """The Java name pattern, e.g. ``yyyy-MM-dd``."""
        return _FORMATS[self.fmt][1]

    # -- arithmetic ------------------------------------------------------------------------
    def normalize_to_previous_tag(self, value: datetime) -> datetime:
        """The period *before* the one ``value`` falls in; the floor is taken on the wall clock
        read as UTC millis (``Timestamp.fromLocalDateTime``), exactly as Java."""
        period_ms = self.period // timedelta(milliseconds=1)
        floored = _java_div(_millis(value), period_ms) * period_ms
        return _from_millis(floored) - self.period

    def next_tag_time(self, value: datetime) -> datetime:
        return value + self.period

    def previous_tag_time(self, value: datetime) -> datetime:
        return value - self.period

    def describe(self) -> str:
        """e.g. ``daily (yyyy-MM-dd)`` or ``every 30 min (yyyyMMddHHmm)``."""
        what = f"every {_human(self.period)}" if self.kind == "duration" else self.kind
        return f"{what} ({self.pattern})"


def _human(value: timedelta) -> str:
    return values.format_duration(value)
