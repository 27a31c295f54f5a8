"""Tag JSON: the snapshot JSON plus ``tagCreateTime`` (a Java LocalDateTime array, wall clock
of the writer's zone) and ``tagTimeRetained`` (a Duration as decimal seconds). A tag without
retention is written as the plain snapshot JSON, as Java does (old readers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tablekeeper.core import errors
from tablekeeper.core.paimon import jackson
from tablekeeper.core.paimon.snapshot import Snapshot, parse_json_object

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


def decode_local_datetime(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, list) and len(value) >= 3:
        nums = [int(v) for v in value] + [0] * (7 - len(value))
        return datetime(nums[0], nums[1], nums[2], nums[3], nums[4], nums[5], nums[6] // 1000)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError as e:
            raise errors.FormatError(f"bad tagCreateTime {value!r}", fix="restore the tag file") from e
    raise errors.FormatError(f"bad tagCreateTime {value!r}", fix="restore the tag file")


def encode_duration(value: timedelta) -> jackson.RawNumber:
    """Jackson's Duration: decimal seconds with nine fraction digits."""
    total_micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    if total_micros == 0:
        return jackson.RawNumber("0.0")  # Jackson's DecimalUtils: zero keeps a single digit
    seconds, micros = divmod(total_micros, 1_000_000)
    return jackson.RawNumber(f"{seconds}.{micros * 1000:09d}")


def decode_duration(value: Any) -> timedelta | None:
    if value is None:
        return None
    from decimal import Decimal  # (only tags with a retention need it)

    if isinstance(value, (int, float)):
        return timedelta(seconds=float(Decimal(str(value))))
    if isinstance(value, str):
        try:
            return timedelta(seconds=float(Decimal(value)))
        except ArithmeticError:
            from tablekeeper.core import durations  # a retention in Paimon's text form (rare)

            return durations.parse_duration(value, field="tagTimeRetained")
    raise errors.FormatError(f"bad tagTimeRetained {value!r}", fix="restore the tag file")


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
    def from_json(cls, name: str, text: str | bytes) -> Tag:
        data = parse_json_object(text, f"tag {name!r}")
        raw_create = data.pop("tagCreateTime", None)
        create = decode_local_datetime(raw_create)
        retained = decode_duration(data.pop("tagTimeRetained", None))
        snapshot = Snapshot.from_json(jackson.dumps(data), what=f"tag {name!r}")
        array = tuple(int(v) for v in raw_create) if isinstance(raw_create, list) else None
        size = len(text.encode("utf-8")) if isinstance(text, str) else len(text)
        return cls(name, snapshot, create, retained, array, size)

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.id

    def expires_at(self) -> datetime | None:
        if self.create_time is None or self.time_retained is None:
            return None
        return self.create_time + self.time_retained

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
