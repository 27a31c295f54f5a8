"""Consumer files ``consumer/consumer-<id>``: ``{"nextSnapshot" : N}``."""

from __future__ import annotations

from dataclasses import dataclass

from tablekeeper.core.paimon.metadata import jackson
from tablekeeper.core.paimon.metadata.json_fields import INT, check_fields, parse_json_object

__all__ = ["Consumer"]


@dataclass(frozen=True)
class Consumer:
    consumer_id: str
    next_snapshot: int
    mtime_ms: int = 0

    @classmethod
    def from_json(cls, consumer_id: str, text: str | bytes, mtime_ms: int = 0, *, what: str | None = None) -> Consumer:
        """Parse a consumer file; ``what`` names it in errors (its path; default: the consumer id).

        Raises:
            FormatError: not a JSON object with a whole-number ``nextSnapshot``.
        """
        what = what or f"consumer {consumer_id!r}"
        fix = "reset the consumer, or delete its file if it is no longer used"
        data = parse_json_object(text, what, fix=fix)
        check_fields(data, what, {"nextSnapshot": INT}, required=("nextSnapshot",), fix=fix)
        return cls(consumer_id, int(data["nextSnapshot"]), mtime_ms)

    def to_json(self) -> str:
        return jackson.dumps({"nextSnapshot": self.next_snapshot})
