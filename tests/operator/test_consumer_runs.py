"""``ExpireConsumers`` runs: the operator expires the consumers the policy's
``consumers.expiration`` ages out (by the consumer file's modification time, as Paimon's
``consumer.expiration-time``), reports them in ``status.result.expiredConsumers``, and the next
``ExpireSnapshots`` run reclaims what they held; a dry run deletes nothing. The table is re-read
with pypaimon before and after."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tablekeeper.core.paimon.table import open_table
from tests.operator.conftest import Harness, started_table
from tests.operator.test_dry_runs import finished_run, job_entry
from tests.support.json_output import cli_json
from tests.support.k8s import eventually
from tests.support.paimon import dir_listing, snapshot_views

pytestmark = pytest.mark.k8s

IDENT = "sales.orders"


async def test_stale_consumers_expire_and_the_next_expiration_reclaims_what_they_held(
        harness: Harness, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = warehouse / "sales.db" / "orders"
    cli_json(capsys, "consumer", "reset", "-w", str(warehouse), IDENT, "stopped-job", "--next-snapshot", "2")
    cli_json(capsys, "consumer", "reset", "-w", str(warehouse), IDENT, "live-job", "--next-snapshot", "6")
    stale = root / "consumer" / "consumer-stopped-job"
    os.utime(stale, (time.time() - 8 * 86_400,) * 2)
    await started_table(harness, warehouse, retention={"snapshots": {"minRetained": 1, "maxRetained": 1},
                                                       "consumers": {"expiration": "7 d"}})
    before = snapshot_views(str(warehouse), IDENT)

    held = await finished_run(harness, "expire-held", "ExpireSnapshots")
    assert held["result"]["expiredSnapshots"] == 1  # snapshot 1: the stopped job's consumer holds 2..6
    assert open_table(str(warehouse), IDENT).snapshot_ids() == [2, 3, 4, 5, 6]

    listing = dir_listing(root)
    dry = await finished_run(harness, "consumers-dry", "ExpireConsumers", dryRun=True)
    assert dry["result"]["dryRun"] is True and dry["result"]["expiredConsumers"] == 1
    assert dir_listing(root) == listing and stale.exists()

    real = await finished_run(harness, "consumers", "ExpireConsumers")
    assert real["result"]["dryRun"] is False and real["result"]["expiredConsumers"] == 1
    assert real["result"]["deletedFiles"] == 1
    assert [c.consumer_id for c in open_table(str(warehouse), IDENT).consumers()] == ["live-job"]
    await eventually(lambda: job_entry(harness, "consumerExpiration").get("lastRunRef") == "consumers"
                     and job_entry(harness, "consumerExpiration").get("state") == "Succeeded")
    assert job_entry(harness, "consumerExpiration")["lastResult"]["expiredConsumers"] == 1

    freed = await finished_run(harness, "expire-freed", "ExpireSnapshots")
    assert freed["result"]["expiredSnapshots"] == 4  # 2..5: the live job's consumer is at 6
    assert open_table(str(warehouse), IDENT).snapshot_ids() == [6]
    after = snapshot_views(str(warehouse), IDENT)
    assert after == {k: before[k] for k in after}  # every retained view reads as before


async def test_without_consumers_expiration_the_run_does_nothing(
        harness: Harness, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli_json(capsys, "consumer", "reset", "-w", str(warehouse), IDENT, "stopped-job", "--next-snapshot", "2")
    os.utime(warehouse / "sales.db" / "orders" / "consumer" / "consumer-stopped-job", (time.time() - 8 * 86_400,) * 2)
    await started_table(harness, warehouse, retention={"snapshots": {"minRetained": 1}})
    listing = dir_listing(warehouse)
    run = await finished_run(harness, "consumers", "ExpireConsumers")
    assert "expiredConsumers" not in run["result"] and dir_listing(warehouse) == listing
    assert job_entry(harness, "consumerExpiration").get("state") == "Disabled"


async def test_the_table_status_says_what_holds_history_and_warns_of_a_consumer_over_the_limit(
        harness: Harness, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli_json(capsys, "consumer", "reset", "-w", str(warehouse), IDENT, "stopped-job", "--next-snapshot", "2")
    os.utime(warehouse / "sales.db" / "orders" / "consumer" / "consumer-stopped-job", (time.time() - 9 * 86_400,) * 2)
    await started_table(harness, warehouse, retention={"snapshots": {"minRetained": 1, "maxRetained": 1},
                                                       "consumers": {"warnAboveSnapshots": 3}})
    listing = dir_listing(warehouse)
    said = cli_json(capsys, "consumer", "list", "-w", str(warehouse), IDENT)
    assert [c["snapshots_held"] for c in said] == [5]  # snapshots 2..6, as the CLI lists them

    pins = harness.status("PaimonTable", "orders")["pins"]
    assert pins["oldestRetainedSnapshotId"] == 2 and pins["heldBy"] == "consumer stopped-job at 2"
    assert pins["expirableSnapshots"] == 1 and pins["consumers"] == 1
    [over] = pins["consumersOverLimit"]
    assert (over["consumerId"], over["snapshotsHeld"], over["nextSnapshotId"], over["age"]) == \
        ("stopped-job", 5, 2, "9 d")
    cond = harness.condition("PaimonTable", "orders", "ConsumersHealthy")
    assert cond["status"] == "False" and cond["reason"] == "ConsumerPinsHistory"
    assert "'stopped-job' keeps 5 snapshots" in cond["message"] and "9 d ago" in cond["message"]
    event = await harness.wait_event("orders", "ConsumerPinsHistory")
    assert event["type"] == "Warning" and "stopped-job" in event["message"]
    assert dir_listing(warehouse) == listing  # the status is only read: nothing changed since the start

    # the consumer moves on: the warning clears
    cli_json(capsys, "consumer", "reset", "-w", str(warehouse), IDENT, "stopped-job", "--next-snapshot", "6")
    await harness.patch("PaimonTable", "orders", {"spec": {"retention": {"consumers": {"warnAboveSnapshots": 4}}}})
    await eventually(lambda: (harness.condition("PaimonTable", "orders", "ConsumersHealthy") or {}).get("message")
                     == "no consumer keeps more than 4 snapshots")
    assert "consumersOverLimit" not in harness.status("PaimonTable", "orders")["pins"]
