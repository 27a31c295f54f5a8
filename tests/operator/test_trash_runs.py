"""Runs on a table with the option ``trash.keep``: a destructive run moves what it removes into
the table's trash and names the trash run in ``status.result.trash``; an ``Undo`` run puts it
back and the table reads as before (every view, pypaimon); the operator purges trash runs past
their window on its passes over the table."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.safety import trash
from tests.operator.conftest import Harness, started_table
from tests.operator.test_dry_runs import finished_run
from tests.operator.test_recovery_runs import ended_run, reason_of
from tests.support import paimon as P
from tests.support.k8s import eventually

pytestmark = pytest.mark.k8s

IDENT = "sales.orders"


def _warehouse(tmp_path: Path, keep: str) -> Path:
    wh = tmp_path / "trash-wh"
    P.build_history(str(wh), IDENT, commits=6, options={"trash.keep": keep})
    return wh


async def test_an_expiration_is_kept_in_the_trash_and_an_undo_run_puts_it_back(
        harness: Harness, tmp_path: Path) -> None:
    wh = _warehouse(tmp_path, "7 d")
    await started_table(harness, wh, retention={"snapshots": {"minRetained": 1, "maxRetained": 2}})
    before = P.snapshot_views(str(wh), IDENT)

    expired = await finished_run(harness, "expire", "ExpireSnapshots")
    result: dict[str, Any] = expired["result"]
    assert result["expiredSnapshots"] == 4 and open_table(str(wh), IDENT).snapshot_ids() == [5, 6]
    kept = result["trash"]
    assert kept["movedFiles"] > 0 and kept["keepUntil"] and "-expire-" in kept["run"]
    [record] = trash.list_runs(open_table(str(wh), IDENT).file_io, open_table(str(wh), IDENT).root)
    assert record.run_id == kept["run"]

    dry = await finished_run(harness, "undo-dry", "Undo", undoRun=kept["run"], dryRun=True)
    assert dry["result"]["restoredFiles"] == kept["movedFiles"]
    assert open_table(str(wh), IDENT).snapshot_ids() == [5, 6]

    undone = await finished_run(harness, "undo", "Undo", undoRun=kept["run"])
    assert undone["result"]["restoredFiles"] == kept["movedFiles"]
    assert open_table(str(wh), IDENT).snapshot_ids() == [1, 2, 3, 4, 5, 6]
    assert P.snapshot_views(str(wh), IDENT) == before  # every view reads as before the expiration

    again = await ended_run(harness, "undo-again", "Undo", parameters={"undoRun": kept["run"]})
    assert again["phase"] == "Failed" and kept["run"] in reason_of(again)[1]


async def test_the_operator_purges_trash_runs_past_their_window(harness: Harness, tmp_path: Path) -> None:
    wh = _warehouse(tmp_path, "1 s")
    await started_table(harness, wh, retention={"snapshots": {"minRetained": 1, "maxRetained": 2}})
    expired = await finished_run(harness, "expire", "ExpireSnapshots")
    run_id = expired["result"]["trash"]["run"]
    table = open_table(str(wh), IDENT)
    time.sleep(1.1)
    await harness.patch("PaimonTable", "orders", {"spec": {"retention": {"snapshots": {"maxRetained": 3}}}})
    event = await harness.wait_event("orders", "TrashPurged")
    assert run_id in event["message"]
    await eventually(lambda: trash.list_runs(table.file_io, table.root) == [])
    assert open_table(str(wh), IDENT).snapshot_ids() == [5, 6]  # only the trash was touched


async def test_a_cluster_minimum_window_keeps_what_runs_and_tag_deletions_of_any_table_remove(
        harness: Harness, tmp_path: Path) -> None:
    """``ClusterPaimonRetentionPolicy.constraints.trash.keep.min``: a table that sets no window
    gets the minimum (Clamp), so its expiration run and the deletion of its PaimonTag are kept in
    the trash, and Undo runs put both back (newest first)."""
    from tests.operator.conftest import basic_objects, obj

    wh = tmp_path / "policy-trash-wh"
    P.build_history(str(wh), IDENT, commits=6)  # no trash.keep option on the table
    await harness.start()
    await harness.apply(obj("ClusterPaimonRetentionPolicy", "undo", {
        "constraints": {"trash": {"keep": {"min": "3 d"}}}}))
    catalog, table = basic_objects(wh)
    table["spec"]["retention"] = {"snapshots": {"minRetained": 1, "maxRetained": 2}}
    await harness.apply(catalog)
    await harness.apply(table)
    await eventually(lambda: (harness.status("PaimonTable", "orders").get("effectivePolicy") or {})
                     .get("trash.keep", {}).get("value") == "3 d", timeout=30)
    # enforcement Both (the default) writes the window as the table option, for ad-hoc commands
    await eventually(lambda: open_table(str(wh), IDENT).options().get("trash.keep") == "3 d", timeout=30)
    await harness.apply(obj("PaimonTag", "audit", {"tableRef": {"name": "orders"}, "snapshotId": 2}))
    await harness.wait_condition("PaimonTag", "audit", reason="Created")
    before = P.snapshot_views(str(wh), IDENT)

    expired = await finished_run(harness, "expire", "ExpireSnapshots")
    kept = expired["result"]["trash"]
    keep_until = time.mktime(time.strptime(kept["keepUntil"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    assert abs(keep_until - (time.time() + 3 * 86400)) < 600  # the cluster's minimum, not "deleted at once"
    # the table's next pass exports what its trash holds
    await harness.patch("PaimonTable", "orders", {"spec": {"retention": {"snapshots": {"maxRetained": 3}}}})
    await eventually(lambda: REGISTRY.get_sample_value("tablekeeper_trash_bytes", {"table": "sales/orders"})
                     == kept["movedBytes"], timeout=30)
    assert REGISTRY.get_sample_value("tablekeeper_trash_runs", {"table": "sales/orders"}) == 1
    await harness.delete("PaimonTag", "audit")
    await harness.wait_gone("PaimonTag", "audit")
    event = await harness.wait_event("audit", "KeptInTrash")
    tag_run = event["message"].split(" as run ", 1)[1].split(" ", 1)[0]
    assert "audit" not in open_table(str(wh), IDENT).tag_names()

    await finished_run(harness, "undo-tag", "Undo", undoRun=tag_run)
    await finished_run(harness, "undo-expire", "Undo", undoRun=kept["run"])
    assert P.snapshot_views(str(wh), IDENT) == before  # the tag and every snapshot read as before
