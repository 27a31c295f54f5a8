"""Tag JSON: the snapshot JSON plus ``tagCreateTime`` (a Java LocalDateTime array, wall clock
of the writer's zone) and ``tagTimeRetained`` (a Duration as decimal seconds). A tag without
retention is written as the plain snapshot JSON, as Java does (old readers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tablekeeper.core import errors, pycompat
from tablekeeper.core.paimon.metadata import jackson
from tablekeeper.core.paimon.metadata.json_fields import parse_json_object
from tablekeeper.core.paimon.metadata.snapshot import Snapshot

__all__ = ["Tag", "encode_local_datetime", "decode_local_datetime", "encode_duration",
           "decode_duration"]


def encode_local_datetime(value: datetime) -> list[int]:
    """Jackson's LocalDateTime array: seconds and nanos omitted when zero (trailing)."""
    parts = [value.year, value.month, value.day, value.hour, value.minute]
    nanos = value.microsecond * 1000
    if value.second or nanos:
        parts.append(value.second)
        if nanos:
            parts.append(nanos)
    return parts


def decode_local_datetime(value: Any, what: str = "tag") -> datetime | None:
    """Jackson's LocalDateTime: an array of 3 to 7 whole numbers, or ISO-8601 text.

    Raises:
        FormatError: anything else, or a date that does not exist (naming ``what``).
    """
    if value is None:
        return None
    bad = errors.FormatError(f"{what}: bad tagCreateTime {str(value)[:80]!r}", fix="restore the tag file")
    if isinstance(value, list):
        if not 3 <= len(value) <= 7 or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise bad
        nums = [*value, *[0] * (7 - len(value))]
        try:
            return datetime(nums[0], nums[1], nums[2], nums[3], nums[4], nums[5], nums[6] // 1000)
        except (ValueError, OverflowError) as e:
            raise bad from e
    if isinstance(value, str):
        try:
            return pycompat.fromisoformat(value)
        except ValueError as e:
            raise bad from e
    raise bad


def encode_duration(value: timedelta) -> jackson.RawNumber:
    """Jackson's Duration: decimal seconds with nine fraction digits."""
    total_micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    if total_micros == 0:
        return jackson.RawNumber("0.0")  # Jackson's DecimalUtils: zero keeps a single digit
    seconds, micros = divmod(total_micros, 1_000_000)
    return jackson.RawNumber(f"{seconds}.{micros * 1000:09d}")


def decode_duration(value: Any, what: str = "tag") -> timedelta | None:
    """Jackson's Duration: decimal seconds (a number or its text), or Paimon's duration text.

    Raises:
        FormatError: anything else, or a duration out of range (naming ``what``).
    """
    if value is None:
        return None
    from decimal import Decimal  # (only tags with a retention need it)

    bad = errors.FormatError(f"{what}: bad tagTimeRetained {str(value)[:80]!r}", fix="restore the tag file")
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return timedelta(seconds=float(Decimal(str(value))))
        if isinstance(value, str):
            try:
                return timedelta(seconds=float(Decimal(value)))
            except ArithmeticError:
                from tablekeeper.core import values  # a retention in Paimon's text form (rare)

                return values.parse_duration(value, field="tagTimeRetained")
    except errors.InvalidDurationError as e:
        raise bad from e
    except (ValueError, OverflowError, ArithmeticError) as e:  # NaN, infinite or beyond timedelta's range
        raise bad from e
    raise bad


@dataclass(frozen=True)
class Tag:
    """A tag file: the snapshot it pins, with its creation time and retention when written."""

    name: str
    snapshot: Snapshot
    create_time: datetime | None = None
    time_retained: timedelta | None = None
    #: ``tagCreateTime`` exactly as read. Java writes nanoseconds, ``datetime`` keeps only
    #: microseconds; re-serialising writes this array while it still matches ``create_time``.
    create_time_array: tuple[int, ...] | None = field(default=None, compare=False, repr=False)
    #: bytes of the tag file as read (None for a tag not read from a file)
    file_size: int | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_json(cls, name: str, text: str | bytes, *, what: str | None = None) -> Tag:
        """Parse a tag file; ``what`` names it in errors (its path; default: the tag's name).

        Raises:
            FormatError: the file is damaged or of an unknown format.
        """
        what = what or f"tag {name!r}"
        data = parse_json_object(text, what)
        raw_create = data.pop("tagCreateTime", None)
        create = decode_local_datetime(raw_create, what)
        retained = decode_duration(data.pop("tagTimeRetained", None), what)
        snapshot = Snapshot.from_fields(data, what=what)  # the snapshot's fields as parsed, no second parse
        array = tuple(int(v) for v in raw_create) if isinstance(raw_create, list) else None
        size = len(text.encode("utf-8")) if isinstance(text, str) else len(text)
        return cls(name, snapshot, create, retained, array, size)

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.id

    def expires_at(self) -> datetime | None:
        """When the tag expires; ``datetime.max`` (``min``) for a retention that ends after year
        9999 (before year 1)."""
        if self.create_time is None or self.time_retained is None:
            return None
        try:
            return self.create_time + self.time_retained
        except OverflowError:
            bound = datetime.max if self.time_retained > timedelta(0) else datetime.min
            return bound.replace(tzinfo=self.create_time.tzinfo)

    def to_json(self) -> str:
        """Java's TagManager: plain snapshot JSON without retention, else the Tag JSON."""
        if self.time_retained is None:
            return self.snapshot.to_json()
        fields: dict[str, Any] = self.snapshot.ordered_fields()
        if self.create_time is not None:
            array = self.create_time_array
            if array is not None and decode_local_datetime(list(array)) == self.create_time:
                fields["tagCreateTime"] = list(array)
            else:
                fields["tagCreateTime"] = encode_local_datetime(self.create_time)
        fields["tagTimeRetained"] = encode_duration(self.time_retained)
        return jackson.dumps(fields)
