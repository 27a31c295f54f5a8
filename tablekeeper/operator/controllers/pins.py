"""``PaimonTable.status.pins`` and its ``ConsumersHealthy`` condition: where expiration by the
table's effective policy stops on main and what holds it (core's ``pins.oldest_pin``, the same
range rule expiration runs), and the consumers that keep more than
``consumers.warnAboveSnapshots`` snapshots (core's ``consumers.holding_more_than``). The full
answer, with bytes per pin and every branch, is ``tablekeeper explain``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tablekeeper.core import values
from tablekeeper.core.paimon import Table
from tablekeeper.core.reclaim import expire
from tablekeeper.core.recovery import pins
from tablekeeper.core.refs import consumers
from tablekeeper.core.refs.consumers import ConsumerRow

__all__ = ["TablePins", "table_pins", "consumer_warning"]


@dataclass(frozen=True)
class TablePins:
    #: ``status.pins``
    status: dict[str, Any]
    #: Consumers over the limit, most held first.
    over_limit: tuple[ConsumerRow, ...]
    limit: int | None


def _age(age: timedelta) -> str:
    """Rounded down to its largest unit: '9 d', '5 h', '12 min'."""
    seconds = int(age.total_seconds())
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def table_pins(table: Table, policy: Mapping[str, Any], options: Mapping[str, str], now: datetime) -> TablePins:
    """Blocking (reads snapshots and consumer files)."""
    now_ms = int(now.timestamp() * 1000)
    limit = policy.get("consumers.warnAboveSnapshots")
    rows = consumers.list_consumers(table, now_ms, None)
    over = tuple(consumers.holding_more_than(rows, int(limit))) if limit else ()
    status: dict[str, Any] = {"consumers": len(rows)}
    if policy.get("snapshots.state") == "Disabled":
        status.update(oldestRetainedSnapshotId=table.earliest_snapshot_id(), heldBy="snapshots.state: Disabled",
                      expirableSnapshots=0)
    else:
        head = pins.oldest_pin(table, expire.expire_config(expire.from_policy(policy), options), now_ms)
        status.update(oldestRetainedSnapshotId=head.oldest_retained, heldBy=head.held_by,
                      expirableSnapshots=head.expirable_now)
    if over:
        status["consumersOverLimit"] = [
            {"consumerId": r.consumer_id, "nextSnapshotId": r.next_snapshot, "snapshotsHeld": r.snapshots_held,
             "lastUpdateTime": values.rfc3339_ms(r.modified_ms), "age": _age(r.age)} for r in over[:10]]
    return TablePins(status, over, int(limit) if limit else None)


def consumer_warning(found: TablePins) -> tuple[str, str]:
    """(message, stable key) of the consumers over the limit: the key changes only when another
    consumer crosses it or one moves, so the Warning Event is not repeated as ages grow."""
    parts = [f"consumer {r.consumer_id!r} keeps {r.snapshots_held} snapshots from expiring (next snapshot "
             f"{r.next_snapshot}, last updated {_age(r.age)} ago)" for r in found.over_limit[:5]]
    more = len(found.over_limit) - 5
    message = ("; ".join(parts) + (f"; and {more} more" if more > 0 else "")
               + f": more than consumers.warnAboveSnapshots={found.limit}; if its job is gone, delete it "
                 "('tablekeeper consumer clear') or set consumers.expiration")
    key = ",".join(f"{r.consumer_id}@{r.next_snapshot}" for r in found.over_limit)
    return message[:1000], key
