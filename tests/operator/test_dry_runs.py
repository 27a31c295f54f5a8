"""Dry runs explain themselves and never count as done maintenance: a dry ``PaimonMaintenanceRun``
carries the core plan's notes word for word as the CLI prints them (``status.result.notes`` and
its condition message), reports the counts the real run then reports, changes nothing (read back
with pypaimon), and sets neither the job's ``lastSuccessTime``/``lastRunRef`` nor the table's
``lastMaintenanceTime`` (it is recorded under ``lastDryRun*``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.operator.conftest import Harness, obj, started_table
from tests.support.json_output import cli_json
from tests.support.k8s import eventually
from tests.support.paimon import dir_listing, snapshot_views

pytestmark = pytest.mark.k8s

IDENT = "sales.orders"


async def finished_run(harness: Harness, name: str, run_type: str, **parameters: Any) -> dict[str, Any]:
    """Create a run, wait for it to succeed; its status."""
    spec: dict[str, Any] = {"tableRef": {"name": "orders"}, "type": run_type}
    if parameters:
        spec["parameters"] = parameters
    await harness.apply(obj("PaimonMaintenanceRun", name, spec))
    await eventually(lambda: (harness.status("PaimonMaintenanceRun", name) or {}).get("phase")
                     in ("Succeeded", "Failed"), timeout=30)
    status = harness.status("PaimonMaintenanceRun", name)
    assert status["phase"] == "Succeeded", status
    return status


def complete_message(status: dict[str, Any]) -> str:
    return next(str(c["message"]) for c in status["conditions"] if c["type"] == "Complete")


def job_entry(harness: Harness, key: str) -> dict[str, Any]:
    entry: dict[str, Any] = (harness.status("PaimonTable", "orders").get("maintenance") or {}).get(key) or {}
    return entry


async def test_a_dry_expire_says_why_nothing_expires_as_the_cli_does(
        harness: Harness, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # every snapshot is younger than a day: nothing expires
    await started_table(harness, warehouse, retention={"snapshots": {"minRetained": 1, "maxAge": "1 d"}})
    root = warehouse / "sales.db" / "orders"
    views, listing = snapshot_views(str(warehouse), IDENT), dir_listing(root)
    said = cli_json(capsys, "expire", "-w", str(warehouse), IDENT, "--retain-min", "1", "--time-retained", "1 d",
                    "--dry-run")
    assert said["expired_snapshots"] == 0 and "younger than snapshot.time-retained" in said["notes"][0]

    dry = await finished_run(harness, "dry-expire", "ExpireSnapshots", dryRun=True)
    result = dry["result"]
    assert result["dryRun"] is True and result["notes"] == said["notes"]
    assert result["expiredSnapshots"] == 0 == said["expired_snapshots"]
    assert complete_message(dry) == "; ".join(["dry run: nothing deleted", *said["notes"]])
    assert snapshot_views(str(warehouse), IDENT) == views and dir_listing(root) == listing

    await eventually(lambda: job_entry(harness, "snapshotExpiration").get("lastDryRunRef") == "dry-expire")
    entry = job_entry(harness, "snapshotExpiration")
    assert entry["lastDryRunResult"]["notes"] == said["notes"] and entry["lastDryRunTime"] == dry["completionTime"]
    assert "lastSuccessTime" not in entry and "lastRunRef" not in entry and "lastResult" not in entry
    assert "lastMaintenanceTime" not in harness.status("PaimonTable", "orders")

    real = await finished_run(harness, "real-expire", "ExpireSnapshots")
    assert real["result"]["dryRun"] is False and real["result"]["notes"] == said["notes"]
    assert real["result"]["expiredSnapshots"] == result["expiredSnapshots"]
    # the entry names a run as soon as it starts: wait until it records the run's end
    await eventually(lambda: job_entry(harness, "snapshotExpiration").get("lastRunRef") == "real-expire"
                     and job_entry(harness, "snapshotExpiration").get("state") == "Succeeded")
    entry = job_entry(harness, "snapshotExpiration")
    assert entry["lastSuccessTime"] == real["completionTime"] and entry["lastDryRunRef"] == "dry-expire"
    assert harness.status("PaimonTable", "orders")["lastMaintenanceTime"] == real["completionTime"]


async def test_a_dry_expire_counts_what_the_real_run_expires(
        harness: Harness, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    await started_table(harness, warehouse, retention={"snapshots": {"minRetained": 1, "maxRetained": 2, "maxAge": "1 d"}})
    root = warehouse / "sales.db" / "orders"
    views, listing = snapshot_views(str(warehouse), IDENT), dir_listing(root)
    said = cli_json(capsys, "expire", "-w", str(warehouse), IDENT, "--retain-min", "1", "--retain-max", "2",
                    "--time-retained", "1 d", "--dry-run")

    dry = await finished_run(harness, "dry-expire", "ExpireSnapshots", dryRun=True)
    assert dry["result"]["notes"] == said["notes"] and said["notes"][0].startswith("expiring snapshots 1..4")
    assert dry["result"]["expiredSnapshots"] == said["expired_snapshots"] == 4
    assert snapshot_views(str(warehouse), IDENT) == views and dir_listing(root) == listing

    real = await finished_run(harness, "real-expire", "ExpireSnapshots")
    assert real["result"]["expiredSnapshots"] == dry["result"]["expiredSnapshots"]
    assert sorted(k for k in snapshot_views(str(warehouse), IDENT) if "@snapshot-" in k) == [
        "main@snapshot-5", "main@snapshot-6"]


async def test_an_orphan_dry_run_says_what_it_found_as_the_cli_does(
        harness: Harness, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = warehouse / "sales.db" / "orders"
    orphan = root / "dt=2026-01-01" / "bucket-0" / "data-orphan.parquet"
    orphan.write_bytes(b"x" * 10)
    os.utime(orphan, (1_600_000_000, 1_600_000_000))  # old enough
    await started_table(harness, warehouse, retention={"orphanFiles": {"state": "Enabled", "olderThan": "1 d"}})
    views, listing = snapshot_views(str(warehouse), IDENT), dir_listing(root)
    said = cli_json(capsys, "clean-orphans", "-w", str(warehouse), IDENT, "--older-than", "1 d", "--dry-run")
    assert said["notes"]

    # run-now: the operator's own run, a dry run by the policy's default orphanFiles.dryRun
    await harness.patch("PaimonTable", "orders", {"metadata": {"annotations": {
        "tablekeeper.io/run-now": "RemoveOrphanFiles"}}})
    await eventually(lambda: [(r.get("status") or {}).get("phase") for r in harness.all("PaimonMaintenanceRun")]
                     == ["Succeeded"])
    [run] = harness.all("PaimonMaintenanceRun")
    status = run["status"]
    assert status["result"]["dryRun"] is True and status["result"]["orphanFiles"] == 1
    assert status["result"]["notes"] == said["notes"]
    assert complete_message(status) == "; ".join(["dry run: nothing deleted", *said["notes"]])
    assert orphan.exists() and snapshot_views(str(warehouse), IDENT) == views and dir_listing(root) == listing

    name = run["metadata"]["name"]
    await eventually(lambda: job_entry(harness, "orphanFileCleanup").get("lastDryRunRef") == name)
    entry = job_entry(harness, "orphanFileCleanup")
    assert entry["state"] == "NotYetRun" and "lastSuccessTime" not in entry and "lastRunRef" not in entry
    assert "lastMaintenanceTime" not in harness.status("PaimonTable", "orders")
