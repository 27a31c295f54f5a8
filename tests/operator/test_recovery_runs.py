"""``Rollback``, ``Check`` and ``RemoveMissingFiles`` runs: the operator carries out what
``tablekeeper rollback``, ``check`` and ``repair --remove-missing`` do, with the same core
decisions, and reports it in ``status.result``. Every table is re-read with pypaimon before and
after; a dry run changes no file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.reclaim.reach.reachability import Reachability
from tests.operator.conftest import Harness, obj, started_table
from tests.operator.test_dry_runs import finished_run
from tests.support import paimon as P
from tests.support.k8s import eventually

pytestmark = pytest.mark.k8s

IDENT = "sales.orders"


async def ended_run(harness: Harness, name: str, run_type: str, **spec: Any) -> dict[str, Any]:
    """Create a run, wait until it ends; its status."""
    await harness.apply(obj("PaimonMaintenanceRun", name, {"tableRef": {"name": "orders"}, "type": run_type, **spec}))
    await eventually(lambda: (harness.status("PaimonMaintenanceRun", name) or {}).get("phase")
                     in ("Succeeded", "Failed"), timeout=30)
    return harness.status("PaimonMaintenanceRun", name)


def reason_of(status: dict[str, Any], kind: str = "Failed") -> tuple[str, str]:
    cond = next(c for c in status["conditions"] if c["type"] == kind)
    return str(cond.get("reason")), str(cond.get("message"))


def _last_commit_files(warehouse: Path) -> list[str]:
    """The data files only the latest snapshot (6) reads."""
    table = open_table(str(warehouse), IDENT)
    reach = Reachability(table)

    def files(sid: int) -> set[str]:
        return {reach.data_paths(ref)[0] for ref in reach.live_files(table.snapshot(sid)).values()}
    return sorted(files(6) - files(5))


async def test_rollback_restores_the_target_as_latest_and_deletes_nothing(harness: Harness, warehouse: Path) -> None:
    await started_table(harness, warehouse)
    before, listing = P.snapshot_views(str(warehouse), IDENT), P.dir_listing(warehouse)

    dry = await finished_run(harness, "rollback-dry", "Rollback", dryRun=True,
                             rollbackTo={"snapshotId": 3, "keepAsTag": "before-rollback"})
    assert dry["result"]["dryRun"] is True and dry["result"]["restoredSnapshotId"] == 7
    assert "would restore snapshot 3" in reason_of(dry, "Complete")[1]
    assert P.dir_listing(warehouse) == listing

    done = await finished_run(harness, "rollback", "Rollback",
                              rollbackTo={"snapshotId": 3, "keepAsTag": "before-rollback"})
    result = done["result"]
    assert result["dryRun"] is False and result["deletedFiles"] == 0
    assert (result["targetSnapshotId"], result["restoredSnapshotId"]) == (3, 7)
    assert set(listing) <= set(P.dir_listing(warehouse))  # nothing deleted
    after = P.snapshot_views(str(warehouse), IDENT)
    assert after["main@latest"] == before["main@snapshot-3"]
    assert after["main@tag-before-rollback"] == before["main@latest"]
    assert {k: after[k] for k in before if k != "main@latest"} == {k: v for k, v in before.items()
                                                                    if k != "main@latest"}

    again = await finished_run(harness, "rollback-again", "Rollback", rollbackTo={"snapshotId": 3})
    assert again["result"]["restoredSnapshotId"] == 7 and "unchanged" in reason_of(again, "Complete")[1]
    assert open_table(str(warehouse), IDENT).snapshot_ids() == [1, 2, 3, 4, 5, 6, 7]


async def test_a_rollback_to_a_missing_tag_fails_and_changes_nothing(harness: Harness, warehouse: Path) -> None:
    await started_table(harness, warehouse)
    listing = P.dir_listing(warehouse)
    status = await ended_run(harness, "rollback-nowhere", "Rollback", parameters={"rollbackTo": {"tag": "nope"}})
    assert status["phase"] == "Failed"
    reason, message = reason_of(status)
    assert reason == "TagNotFound" and "'nope'" in message
    assert P.dir_listing(warehouse) == listing


async def test_check_passes_on_an_intact_table_and_names_a_lost_file(harness: Harness, warehouse: Path) -> None:
    await started_table(harness, warehouse)
    ok = await finished_run(harness, "check", "Check")
    assert ok["result"]["brokenViews"] == 0 and ok["result"]["checkedViews"] == 6
    assert ok["result"]["checkedFiles"] > 0

    lost = _last_commit_files(warehouse)[0]
    os.remove(lost)
    broken = await ended_run(harness, "check-broken", "Check")
    assert broken["phase"] == "Failed"
    reason, message = reason_of(broken)
    assert reason == "TableBroken" and lost in message and "main snapshot 6" in message
    assert broken["result"]["brokenViews"] == 1 and broken["result"]["missingFiles"] == 1
    event = await harness.wait_event("check-broken", "MaintenanceFailed")
    assert event["type"] == "Warning" and lost in event["message"]


async def test_remove_missing_files_is_shown_first_then_commits_without_deleting(
        harness: Harness, warehouse: Path) -> None:
    await started_table(harness, warehouse)
    before = P.snapshot_views(str(warehouse), IDENT)
    lost = _last_commit_files(warehouse)
    for path in lost:
        os.remove(path)
    listing = P.dir_listing(warehouse)

    shown = await finished_run(harness, "repair-shown", "RemoveMissingFiles")
    assert shown["result"]["dryRun"] is True and shown["result"]["removedEntries"] == len(lost)
    assert shown["result"]["sample"] == lost and "dryRun: false" in reason_of(shown, "Complete")[1]
    assert P.dir_listing(warehouse) == listing

    done = await finished_run(harness, "repair", "RemoveMissingFiles", dryRun=False)
    assert done["result"]["dryRun"] is False and done["result"]["removedEntries"] == len(lost)
    assert set(listing) <= set(P.dir_listing(warehouse))  # no file deleted
    t = P.table_at(str(warehouse), IDENT)
    # the primary-key table merges again without the last commit's files: it reads as snapshot 5
    assert P.read_rows(t) == before["main@snapshot-5"] != before["main@latest"]
    for sid in range(1, 6):
        assert P.read_rows(t, {"scan.snapshot-id": str(sid)}) == before[f"main@snapshot-{sid}"]


async def test_remove_missing_files_is_refused_while_a_tag_reads_the_file(harness: Harness, warehouse: Path) -> None:
    await started_table(harness, warehouse)
    await harness.apply(obj("PaimonTag", "last", {"tableRef": {"name": "orders"}, "snapshotId": 6}))
    await harness.wait_condition("PaimonTag", "last", reason="Created")
    lost = _last_commit_files(warehouse)[0]
    os.remove(lost)
    listing = P.dir_listing(warehouse)
    status = await ended_run(harness, "repair", "RemoveMissingFiles", parameters={"dryRun": False})
    assert status["phase"] == "Failed"
    reason, message = reason_of(status)
    assert reason == "TableBroken" and "tag last" in message and "delete the tag" in message
    assert P.dir_listing(warehouse) == listing
