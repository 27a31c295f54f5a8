"""Restart safety: an operator stopped between the two handler steps of a tag (ownership and
snapshot recorded, tag not created yet) is replaced by a new one that finishes the job at the
recorded snapshot, even though the table moved on; a table's ``nextRunTime`` survives a restart
(no extra run), and the next run comes when it says."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from tablekeeper.core.paimon.table import open_table
from tests.operator.conftest import FakeClock, Harness, basic_objects, fast_config, obj
from tests.support import paimon as P
from tests.support.k8s import eventually

pytestmark = pytest.mark.k8s


def reconciles(kind: str) -> float:
    return REGISTRY.get_sample_value("tablekeeper_reconciliations_total",
                                     {"kind": kind, "result": "success"}) or 0.0


async def test_restart_between_resolve_and_create(harness: Harness, warehouse: Path) -> None:
    reached = threading.Event()

    async def block_create(step: str, ref: str) -> None:
        if step == "tag/apply":
            reached.set()
            await asyncio.sleep(3600)  # cancelled when the operator stops

    await harness.start(fast_config(step_hook=block_create))
    for body in basic_objects(warehouse):
        await harness.apply(body)
    await harness.apply(obj("PaimonTag", "cut", {"tableRef": {"name": "orders"}, "fromLatest": True}))
    await eventually(reached.is_set)
    status = harness.status("PaimonTag", "cut")
    assert (status["state"], status["snapshotId"], status["owned"]) == ("Creating", 6, True)
    await harness.stop()
    assert open_table(str(warehouse), "sales.orders").tag_names() == []  # stopped before the create

    P.write(P.table_at(str(warehouse), "sales.orders"), P.orders_rows("2026-01-09", 500, 3))  # snapshot 7
    await harness.start(fast_config())
    await harness.wait_condition("PaimonTag", "cut", reason="Created")
    tags = {t.name: t.snapshot_id for t in open_table(str(warehouse), "sales.orders").tags()}
    assert tags == {"cut": 6}  # the snapshot resolved before the restart, not the new latest
    # Kopf's progress of the interrupted handler (status.kopf.progress) is gone once it succeeded
    await eventually(lambda: not (((harness.get("PaimonTag", "cut") or {}).get("status") or {}).get("kopf") or {})
                     .get("progress"))


async def test_next_run_time_survives_a_restart(harness: Harness, warehouse: Path) -> None:
    clock = FakeClock()
    config = fast_config(clock=clock)
    await harness.start(config)
    catalog, table = basic_objects(warehouse)
    table["spec"]["maintenance"] = {"schedule": "@every 1 min"}
    table["spec"]["enforcement"] = "Operator"  # with Both, recently committed tables are left to the writers
    table["spec"]["retention"] = {"snapshots": {"minRetained": 1, "maxRetained": 4}, "tags": {"state": "Disabled"}}
    await harness.apply(catalog)
    await harness.apply(table)

    def runs() -> list[dict[str, object]]:
        return harness.all("PaimonMaintenanceRun")

    await eventually(lambda: [r for r in runs() if (r.get("status") or {}).get("phase") == "Succeeded"])
    entry = harness.status("PaimonTable", "orders")["maintenance"]["snapshotExpiration"]
    first_next = entry["nextRunTime"]
    assert first_next == (clock.now + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert len(open_table(str(warehouse), "sales.orders").snapshot_ids()) == 4
    await eventually(lambda: harness.status("PaimonTable", "orders")["maintenance"]["snapshotExpiration"]
                     .get("state") == "Succeeded")
    await harness.stop()

    clock.advance(seconds=30)
    await harness.start(replace(config, clock=clock))
    seen = reconciles("PaimonTable")
    await eventually(lambda: reconciles("PaimonTable") >= seen + 3)  # a few periodic passes
    assert len(runs()) == 1
    assert harness.status("PaimonTable", "orders")["maintenance"]["snapshotExpiration"]["nextRunTime"] == first_next

    clock.advance(seconds=31)
    await eventually(lambda: len(runs()) == 2)
    await eventually(lambda: harness.status("PaimonTable", "orders")["maintenance"]["snapshotExpiration"]
                     ["nextRunTime"] != first_next)


async def test_enforcement_both_leaves_scheduled_expiry_to_active_writers(harness: Harness, warehouse: Path) -> None:
    """operator-design.md §4.2: with ``Both`` (the default) the operator expires only where writers
    cannot — here an idle table, once its latest commit is older than ``snapshots.maxAge``."""
    clock = FakeClock()
    await harness.start(fast_config(clock=clock))
    catalog, table = basic_objects(warehouse)
    table["spec"]["maintenance"] = {"schedule": "@every 1 min"}
    table["spec"]["retention"] = {"snapshots": {"minRetained": 1, "maxRetained": 4, "maxAge": "30 min"},
                                  "tags": {"state": "Disabled"}}
    await harness.apply(catalog)
    await harness.apply(table)
    before = P.snapshot_views(str(warehouse), "sales.orders")

    def finished() -> list[dict[str, object]]:
        return [r for r in harness.all("PaimonMaintenanceRun")
                if (r.get("status") or {}).get("phase") == "Succeeded"]

    await eventually(finished)
    first = finished()[0]["status"]
    assert isinstance(first, dict) and "left to the writers" in str(first["message"])
    assert len(open_table(str(warehouse), "sales.orders").snapshot_ids()) == 6  # nothing expired
    assert P.snapshot_views(str(warehouse), "sales.orders") == before

    clock.advance(hours=1)  # no commit since: the writers had no chance to expire anything
    await eventually(lambda: len(open_table(str(warehouse), "sales.orders").snapshot_ids()) == 1, timeout=30)
    after = P.snapshot_views(str(warehouse), "sales.orders")
    assert after == {k: v for k, v in before.items() if k in after} and "main@snapshot-6" in after
