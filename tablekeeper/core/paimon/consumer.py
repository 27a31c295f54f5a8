"""Consumer files ``consumer/consumer-<id>``: ``{"nextSnapshot" : N}``."""

from __future__ import annotations

from dataclasses import dataclass

from tablekeeper.core import errors
from tablekeeper.core.paimon import jackson
from tablekeeper.core.paimon.snapshot import parse_json_object

__all__ = ["Consumer"]


@dataclass(frozen=True)
class Consumer:
    consumer_id: str
    next_snapshot: int
    mtime_ms: int = 0

    @classmethod
    def from_json(cls, consumer_id: str, text: str | bytes, mtime_ms: int = 0) -> Consumer:
        data = parse_json_object(text, f"consumer {consumer_id!r}")
        if "nextSnapshot" not in data:
            raise errors.FormatError(f"consumer {consumer_id!r} has no nextSnapshot", fix="reset the consumer")
        return cls(consumer_id, int(data["nextSnapshot"]), mtime_ms)

    def to_json(self) -> str:
        return jackson.dumps({"nextSnapshot": self.next_snapshot})
