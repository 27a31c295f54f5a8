"""What each consumer of a branch holds: expiration keeps every snapshot from a consumer's
``nextSnapshot`` on, so a consumer left behind by a stopped job pins all later history."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from tablekeeper.core.paimon import Consumer, Table

__all__ = ["ConsumerRow", "list_consumers", "rows_of", "holding_more_than", "without_consumers"]


@dataclass(frozen=True)
class ConsumerRow:
    consumer_id: str
    next_snapshot: int
    modified_ms: int
    age: timedelta
    #: Existing snapshots at or after ``next_snapshot``: expiration keeps them while the consumer exists.
    snapshots_held: int
    #: Whether ``consumer.expiration-time`` (or the given age) has passed since the last update.
    expired: bool

    def as_dict(self) -> dict[str, Any]:
        return {"consumer_id": self.consumer_id, "next_snapshot_id": self.next_snapshot,
                "modified_ms": self.modified_ms, "age_seconds": int(self.age.total_seconds()),
                "snapshots_held": self.snapshots_held, "expired": self.expired}


def rows_of(consumers: list[Consumer], snapshot_ids: list[int], now_ms: int,
            expire_after: timedelta | None) -> list[ConsumerRow]:
    """Pure: one row per consumer, by consumer id."""
    out = []
    for c in consumers:
        age = timedelta(milliseconds=max(0, now_ms - c.mtime_ms))
        held = sum(1 for s in snapshot_ids if s >= c.next_snapshot)
        out.append(ConsumerRow(c.consumer_id, c.next_snapshot, c.mtime_ms, age, held,
                               expire_after is not None and age > expire_after))
    return sorted(out, key=lambda r: r.consumer_id)


def holding_more_than(rows: list[ConsumerRow], limit: int) -> list[ConsumerRow]:
    """The consumers that keep more than ``limit`` snapshots from expiring (the policy's
    ``consumers.warnAboveSnapshots``): most held first."""
    return sorted((r for r in rows if r.snapshots_held > limit), key=lambda r: (-r.snapshots_held, r.consumer_id))


def list_consumers(table: Table, now_ms: int, expire_after: timedelta | None) -> list[ConsumerRow]:
    return rows_of(table.consumers(), table.snapshot_ids(), now_ms, expire_after)


@dataclass(frozen=True)
class _WithoutConsumers(Table):
    removed: frozenset[str] = frozenset()

    def consumers(self) -> list[Consumer]:
        return [c for c in super().consumers() if c.consumer_id not in self.removed]


def without_consumers(table: Table, consumer_ids: Collection[str]) -> Table:
    """``table`` as expiration sees it once ``consumer_ids`` are removed: what a planned consumer
    expiry frees is planned together with it (Paimon expires consumers first, for that reason),
    and what one consumer holds is what expiration keeps without it (``explain``). Reads only."""
    return _WithoutConsumers(table.file_io, table.root, table.branch, table.identifier, frozenset(consumer_ids))
