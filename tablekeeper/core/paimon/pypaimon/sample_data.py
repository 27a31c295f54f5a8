"""Sample Paimon tables written through pypaimon (the demo and benchmarks), and a reader that
returns every retained view of a table (for the demo's before/after verification).

``commit_clock`` back-dates commits: pypaimon stamps ``snapshot.timeMillis`` with the wall
clock, so a history spanning days (for retention, partition expiry and auto-tags to act on)
needs the commit time injected. Only the snapshot's commit time changes; files are written as
usual."""

from __future__ import annotations

import contextlib
import time as _time
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

__all__ = ["ORDERS", "EVENTS", "create_orders_table", "create_events_table", "commit_rows", "commit_clock",
           "read_view", "table_views"]

ORDERS = pa.schema([("dt", pa.string()), ("order_id", pa.int64()), ("amount", pa.float64())])
EVENTS = pa.schema([("dt", pa.string()), ("event_id", pa.int64()), ("kind", pa.string()),
                    ("payload", pa.string())])


def _catalog(warehouse: str, options: Mapping[str, str] | None = None) -> Any:
    return CatalogFactory.create({"warehouse": warehouse, **(options or {})})


def create_orders_table(warehouse: str, identifier: str, *, buckets: int = 2) -> None:
    """A partitioned primary-key table ``(dt, order_id) -> amount``."""
    cat = _catalog(warehouse)
    cat.create_database(identifier.split(".")[0], ignore_if_exists=True)
    cat.create_table(identifier, Schema.from_pyarrow_schema(
        ORDERS, primary_keys=["dt", "order_id"], partition_keys=["dt"], options={"bucket": str(buckets)}),
        ignore_if_exists=True)


def create_events_table(warehouse: str, identifier: str) -> None:
    """A partitioned append-only table ``(dt, event_id, kind, payload)`` (no primary key)."""
    cat = _catalog(warehouse)
    cat.create_database(identifier.split(".")[0], ignore_if_exists=True)
    cat.create_table(identifier, Schema.from_pyarrow_schema(EVENTS, partition_keys=["dt"]), ignore_if_exists=True)


class _FixedClock:
    """Stands in for the ``time`` module inside pypaimon's commit: ``time()`` is fixed."""

    def __init__(self, epoch_ms: int) -> None:
        self.epoch_ms = epoch_ms

    def time(self) -> float:
        return self.epoch_ms / 1000

    def __getattr__(self, name: str) -> Any:
        return getattr(_time, name)


@contextlib.contextmanager
def commit_clock(epoch_ms: int) -> Iterator[None]:
    """Commits made inside get ``timeMillis = epoch_ms`` (a simulated history)."""
    from pypaimon.write import file_store_commit

    original = file_store_commit.time
    file_store_commit.time = _FixedClock(epoch_ms)  # type: ignore[assignment]
    try:
        yield
    finally:
        file_store_commit.time = original


def commit_rows(warehouse: str, identifier: str, rows: list[dict[str, Any]], branch: str = "main", *,
                schema: pa.Schema = ORDERS, at_ms: int | None = None) -> None:
    """One batch commit (one snapshot) on ``branch``; ``at_ms`` back-dates its commit time."""
    cat = _catalog(warehouse)
    table = cat.get_table(identifier if branch == "main" else f"{identifier}$branch_{branch}")
    wb = table.new_batch_write_builder()
    write, commit = wb.new_write(), wb.new_commit()
    clock = commit_clock(at_ms) if at_ms is not None else contextlib.nullcontext()
    try:
        write.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        with clock:
            commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()


def read_view(warehouse: str, identifier: str, *, branch: str = "main",
              options: Mapping[str, str] | None = None) -> list[tuple[Any, ...]]:
    """Rows of one view (``options`` like ``{'scan.tag-name': 't1'}``), sorted."""
    cat = _catalog(warehouse)
    table = cat.get_table(identifier if branch == "main" else f"{identifier}$branch_{branch}")
    if options:
        table = table.copy(dict(options))
    rb = table.new_read_builder()
    arrow = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    if arrow is None:
        return []
    return sorted((tuple(sorted(r.items())) for r in arrow.to_pylist()), key=repr)


def table_views(warehouse: str, identifier: str, branches: Mapping[str, tuple[list[int], list[str]]]
                ) -> dict[str, list[tuple[Any, ...]]]:
    """Every view: ``{branch: (snapshot ids, tag names)}`` -> ``{"b@snapshot-3": rows, ...}``."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for branch, (snapshot_ids, tag_names) in branches.items():
        if snapshot_ids:
            out[f"{branch}@latest"] = read_view(warehouse, identifier, branch=branch)
        for sid in snapshot_ids:
            out[f"{branch}@snapshot-{sid}"] = read_view(warehouse, identifier, branch=branch,
                                                        options={"scan.snapshot-id": str(sid)})
        for tag in tag_names:
            out[f"{branch}@tag-{tag}"] = read_view(warehouse, identifier, branch=branch,
                                                   options={"scan.tag-name": tag})
    return out
