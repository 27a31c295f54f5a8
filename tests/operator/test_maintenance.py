"""Maintenance through PaimonMaintenanceRun records: ``run-now`` creates a run (cleared afterwards),
the run expires snapshots with the shared planner and records its result; history limits prune
old runs; two runs of one table never overlap (Forbid); bad run-now values are refused; orphan
cleanup defaults to a dry run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core.paimon.table import open_table
from tests.operator.conftest import Harness, basic_objects, fast_config, obj, started_table
from tests.support.k8s import eventually

pytestmark = pytest.mark.k8s


def runs(harness: Harness) -> list[dict[str, Any]]:
    return sorted(harness.all("PaimonMaintenanceRun"), key=lambda r: r["metadata"]["creationTimestamp"])


def phases(harness: Harness) -> list[str]:
    return [str((r.get("status") or {}).get("phase")) for r in runs(harness)]


async def run_now(harness: Harness, run_type: str) -> None:
    await harness.patch("PaimonTable", "orders", {"metadata": {"annotations": {"tablekeeper.io/run-now": run_type}}})


async def test_run_now_expires_snapshots_through_a_run(harness: Harness, warehouse: Path) -> None:
    await started_table(harness, warehouse, retention={"snapshots": {"minRetained": 1, "maxRetained": 2}})
    await run_now(harness, "ExpireSnapshots")
    await eventually(lambda: phases(harness) == ["Succeeded"])
    [run] = runs(harness)
    labels = run["metadata"]["labels"]
    assert labels["tablekeeper.io/type"] == "ExpireSnapshots" and labels["tablekeeper.io/trigger"] == "Manual"
    assert run["metadata"]["ownerReferences"][0]["kind"] == "PaimonTable"
    status = run["status"]
    assert status["result"]["expiredSnapshots"] == 4 and status["result"]["deletedFiles"] > 0
    made = status["result"]["storageRequests"]  # the run's storage requests by kind (docs/storage-internals.md)
    assert made["get"] > 0 and made["list"] > 0 and made["total"] == sum(v for k, v in made.items() if k != "total")
    assert status["engine"] == "Python" and status["startTime"] and status["completionTime"]
    assert {c["type"]: c["status"] for c in status["conditions"]} == {"Ready": "True", "Complete": "True",
                                                                   "Failed": "False"}
    assert open_table(str(warehouse), "sales.orders").snapshot_ids() == [5, 6]
    await harness.wait_event(run["metadata"]["name"], "MaintenanceSucceeded")
    await harness.wait_event("orders", "MaintenanceRequested")
    await eventually(lambda: "tablekeeper.io/run-now" not in
                     ((harness.get("PaimonTable", "orders") or {})["metadata"].get("annotations") or {}))
    await eventually(lambda: harness.status("PaimonTable", "orders")["maintenance"]["snapshotExpiration"]
                     .get("state") == "Succeeded")
    entry = harness.status("PaimonTable", "orders")["maintenance"]["snapshotExpiration"]
    assert entry["lastRunRef"] == run["metadata"]["name"] and entry["lastResult"]["expiredSnapshots"] == 4
    assert harness.status("PaimonTable", "orders")["lastMaintenanceTime"]


async def test_history_limits_prune_finished_runs(harness: Harness, warehouse: Path) -> None:
    await started_table(harness, warehouse, retention={"snapshots": {"minRetained": 1, "maxRetained": 5}},
                  maintenance={"successfulRunsHistoryLimit": 1})
    await run_now(harness, "ExpireSnapshots")
    await eventually(lambda: phases(harness) == ["Succeeded"])
    first = runs(harness)[0]["metadata"]["name"]
    await eventually(lambda: "tablekeeper.io/run-now" not in
                     ((harness.get("PaimonTable", "orders") or {})["metadata"].get("annotations") or {}))
    await run_now(harness, "ExpireTags")
    await eventually(lambda: [r["metadata"]["name"] for r in runs(harness)
                              if (r.get("status") or {}).get("phase") == "Succeeded"] not in ([], [first]))
    await eventually(lambda: len(runs(harness)) == 1 and runs(harness)[0]["metadata"]["name"] != first)


async def test_the_tables_maintenance_status_follows_its_run_without_a_periodic_check(harness: Harness,
                                                                                     warehouse: Path) -> None:
    """The table's ``status.maintenance`` shows a run's end in the run's words as soon as the run
    ends, not at the table's next periodic check (held off here for an hour)."""
    await harness.start(fast_config(timer_idle=3600, reconcile_interval=3600))
    catalog, table = basic_objects(warehouse)
    table["spec"]["retention"] = {"snapshots": {"minRetained": 1, "maxRetained": 2}}
    await harness.apply(catalog)
    await harness.apply(table)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")
    await harness.apply(obj("PaimonMaintenanceRun", "now", {"tableRef": {"name": "orders"},
                                                            "type": "ExpireSnapshots"}))
    await eventually(lambda: phases(harness) == ["Succeeded"], timeout=30)
    try:
        await eventually(lambda: (harness.status("PaimonTable", "orders").get("maintenance") or {})
                         .get("snapshotExpiration", {}).get("state") == "Succeeded", timeout=10)
    except AssertionError:
        raise AssertionError(harness.status("PaimonTable", "orders").get("maintenance")) from None
    entry = harness.status("PaimonTable", "orders")["maintenance"]["snapshotExpiration"]
    assert entry["lastRunRef"] == "now" and entry["lastResult"]["expiredSnapshots"] == 4
    assert harness.status("PaimonTable", "orders")["lastMaintenanceTime"] == \
        harness.status("PaimonMaintenanceRun", "now")["completionTime"]


async def test_runs_of_one_table_never_overlap(harness: Harness, warehouse: Path) -> None:
    await started_table(harness, warehouse, retention={"snapshots": {"minRetained": 1, "maxRetained": 3}})
    for name in ("manual-a", "manual-b"):
        await harness.apply(obj("PaimonMaintenanceRun", name, {"tableRef": {"name": "orders"},
                                                                "type": "ExpireSnapshots"}))
    await eventually(lambda: phases(harness) == ["Succeeded", "Succeeded"], timeout=30)
    a, b = (harness.status("PaimonMaintenanceRun", n) for n in ("manual-a", "manual-b"))
    first, second = sorted((a, b), key=lambda s: s["startTime"])
    assert first["completionTime"] <= second["startTime"]
    assert sorted([a["result"].get("expiredSnapshots", 0), b["result"].get("expiredSnapshots", 0)]) == [0, 3]


async def test_bad_run_now_value_is_refused(harness: Harness, warehouse: Path) -> None:
    await started_table(harness, warehouse)
    await run_now(harness, "Vacuum")
    await harness.wait_event("orders", "ValidationError")
    await eventually(lambda: "tablekeeper.io/run-now" not in
                     ((harness.get("PaimonTable", "orders") or {})["metadata"].get("annotations") or {}))
    assert runs(harness) == []


async def test_orphan_cleanup_run_is_a_dry_run_by_default(harness: Harness, warehouse: Path) -> None:
    orphan = warehouse / "sales.db" / "orders" / "dt=2026-01-01" / "bucket-0" / "data-orphan.parquet"
    orphan.write_bytes(b"x" * 10)
    import os

    os.utime(orphan, (1_600_000_000, 1_600_000_000))  # old enough
    await started_table(harness, warehouse, retention={"orphanFiles": {"state": "Enabled", "olderThan": "1 d"}})
    await run_now(harness, "RemoveOrphanFiles")
    await eventually(lambda: phases(harness) == ["Succeeded"])
    result = runs(harness)[0]["status"]["result"]
    assert result["dryRun"] is True and result["orphanFiles"] == 1
    assert orphan.exists()


async def _branch_with_commit(harness: Harness, warehouse: Path, *, protected: bool = False) -> None:
    await started_table(harness, warehouse)
    await harness.apply(obj("PaimonTag", "base", {"tableRef": {"name": "orders"}, "snapshotId": 6}))
    await harness.apply(obj("PaimonBranch", "b", {"tableRef": {"name": "orders"}, "fromTag": "base",
                                                  "protected": protected}))
    await harness.wait_condition("PaimonBranch", "b", reason="Created")
    from tests.support import paimon as P

    P.write(P.table_at(str(warehouse), "sales.orders", "b"), P.orders_rows("2026-01-05", 500, 3))


async def test_fast_forward_run_merges_the_branch_into_main(harness: Harness, warehouse: Path) -> None:
    from tests.support import paimon as P

    await _branch_with_commit(harness, warehouse)
    branch_rows = P.read_rows(P.table_at(str(warehouse), "sales.orders", "b"))
    assert branch_rows != P.read_rows(P.table_at(str(warehouse), "sales.orders"))
    await harness.apply(obj("PaimonMaintenanceRun", "ff", {"tableRef": {"name": "orders"}, "type": "FastForward",
                                                            "branch": "b"}))
    await eventually(lambda: harness.status("PaimonMaintenanceRun", "ff").get("phase") == "Succeeded", timeout=30)
    assert P.read_rows(P.table_at(str(warehouse), "sales.orders")) == branch_rows  # main reads the branch
    assert open_table(str(warehouse), "sales.orders").latest_snapshot_id() == 7
    assert harness.status("PaimonMaintenanceRun", "ff")["result"]["writtenFiles"] > 0


async def test_fast_forward_and_rollback_refuse_a_protected_branch(harness: Harness, warehouse: Path) -> None:
    from tests.support import paimon as P

    await _branch_with_commit(harness, warehouse, protected=True)
    before = P.snapshot_views(str(warehouse), "sales.orders")
    await harness.apply(obj("PaimonMaintenanceRun", "ff", {"tableRef": {"name": "orders"}, "type": "FastForward",
                                                            "branch": "b"}))
    await harness.apply(obj("PaimonMaintenanceRun", "rb", {"tableRef": {"name": "orders"}, "type": "Rollback",
                                                            "branch": "b",
                                                            "parameters": {"rollbackTo": {"tag": "base"}}}))
    await eventually(lambda: {harness.status("PaimonMaintenanceRun", n).get("phase") for n in ("ff", "rb")}
                     == {"Failed"}, timeout=30)
    reasons = {n: {c["type"]: c.get("reason") for c in harness.status("PaimonMaintenanceRun", n)["conditions"]}
               for n in ("ff", "rb")}
    assert reasons["ff"]["Failed"] == "BranchProtected" and reasons["rb"]["Failed"] == "BranchProtected"
    assert P.snapshot_views(str(warehouse), "sales.orders") == before  # storage unchanged
