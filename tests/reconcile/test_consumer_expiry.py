"""``retention.consumers.expiration`` through the reconciler and ``plan/apply -f``: with
``enforcement: Operator`` no writer expires consumers (the option is not written), so tablekeeper
does, as Paimon's commit does: consumers not updated for that long are deleted first, and snapshot
expiration, planned on the table without them, reclaims what they held in the same apply. The
table reads as before through pypaimon; a consumer still in use is kept."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tablekeeper import reconcile
from tablekeeper.cli.main import main
from tablekeeper.core.paimon.table import open_table
from tablekeeper.reconcile.planners import enabled_jobs
from tests.support import paimon as P
from tests.support.json_output import cli_json

HEAD = "apiVersion: tablekeeper.io/v1alpha1\n"
T = "db.orders"


def manifests(wh: Path, enforcement: str, consumers: str) -> str:
    return "---\n".join([
        HEAD + f"kind: PaimonCatalog\nmetadata: {{name: c, namespace: ns}}\nspec: {{warehouse: '{wh}'}}\n",
        HEAD + "kind: PaimonTable\nmetadata: {name: t, namespace: ns}\n"
               "spec:\n  catalogRef: {kind: PaimonCatalog, name: c}\n  database: db\n  table: orders\n"
               f"  enforcement: {enforcement}\n"
               f"  retention:\n    snapshots: {{minRetained: 1, maxRetained: 1}}\n    consumers: {consumers}\n",
    ])


def _aged(wh: Path, consumer: str, days: float) -> None:
    path = wh / "db.db" / "orders" / "consumer" / f"consumer-{consumer}"
    then = time.time() - days * 86_400
    os.utime(path, (then, then))


def _history_with_consumers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """db.orders with snapshots 2..12: a stopped job's consumer at 2 (last written 8 days ago)
    holds them; a live job's consumer at 12."""
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=12)
    cli_json(capsys, "consumer", "reset", "-w", str(wh), T, "stopped-job", "--next-snapshot", "2")
    cli_json(capsys, "consumer", "reset", "-w", str(wh), T, "live-job", "--next-snapshot", "12")
    _aged(wh, "stopped-job", 8)
    cli_json(capsys, "expire", "-w", str(wh), T, "--retain-min", "1", "--retain-max", "1")
    assert open_table(str(wh), T).snapshot_ids() == list(range(2, 13))
    return wh


def test_apply_expires_stale_consumers_first_and_reclaims_what_they_held(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = _history_with_consumers(tmp_path, capsys)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "table.yaml").write_text(manifests(wh, "Operator", "{expiration: 7 d}"))
    before, listing = P.snapshot_views(str(wh), T), P.dir_listing(wh)

    assert main(["plan", "-f", str(tmp_path / "m"), "-o", "json"]) == 2
    planned = json.loads(capsys.readouterr().out)["tables"][0]["changes"]
    kinds = [a["kind"] for a in planned]
    assert kinds.index("ExpireConsumers") < kinds.index("ExpireSnapshots")
    [consumers] = [a for a in planned if a["kind"] == "ExpireConsumers"]
    [snapshots] = [a for a in planned if a["kind"] == "ExpireSnapshots"]
    assert consumers["consumers"] == ["stopped-job"] and consumers["expiration"] == "7 d"
    # planned on the table without the stale consumer: the live one at 12 holds the rest
    assert (snapshots["first_snapshot"], snapshots["last_snapshot"], snapshots["snapshots"]) == (2, 11, 10)
    assert P.dir_listing(wh) == listing  # a plan changes nothing
    assert main(["plan", "-f", str(tmp_path / "m")]) == 2
    assert "expire consumers not updated for 7 d: stopped-job" in capsys.readouterr().out

    assert main(["apply", "-f", str(tmp_path / "m"), "-o", "json"]) == 0
    applied = json.loads(capsys.readouterr().out)
    assert applied["converged"] and applied["passes"][0]["totals"]["failed"] == 0
    table = open_table(str(wh), T)
    assert [c.consumer_id for c in table.consumers()] == ["live-job"]
    assert table.snapshot_ids() == [12]
    after = P.snapshot_views(str(wh), T)
    assert after == {k: before[k] for k in after}  # every retained view reads as before

    assert main(["plan", "-f", str(tmp_path / "m"), "-o", "json"]) == 0
    again = json.loads(capsys.readouterr().out)["tables"][0]["changes"]
    assert not [a for a in again if a["kind"] in ("ExpireConsumers", "ExpireSnapshots")]


def test_a_consumer_written_since_the_plan_is_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The applier re-lists the consumers: a job that wrote its position after the plan keeps it."""
    wh = _history_with_consumers(tmp_path, capsys)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "table.yaml").write_text(manifests(wh, "Operator", "{expiration: 7 d}"))
    desired = reconcile.load([str(tmp_path / "m")], base_dir=str(tmp_path))
    store = reconcile.MemoryRecordStore()
    plan = reconcile.plan(desired, now=datetime.now(UTC), store=store)
    assert [a.consumers for a in plan.changes if a.kind == "ExpireConsumers"] == [("stopped-job",)]
    _aged(wh, "stopped-job", 0)  # the job came back and wrote its position
    result = reconcile.apply(plan, store=store)
    [done] = [r for r in result.results if r.action.kind == "ExpireConsumers"]
    assert done.status == "unchanged" and done.expired == 0
    table = open_table(str(wh), T)
    assert sorted(c.consumer_id for c in table.consumers()) == ["live-job", "stopped-job"]
    assert table.snapshot_ids() == list(range(2, 13))  # still held


@pytest.mark.parametrize(("enforcement", "consumers", "runs"), [
    ("Operator", "{expiration: 7 d}", True),
    ("Operator", "{state: Disabled, expiration: 7 d}", False),
    ("Operator", "{state: Enabled}", False),  # Paimon never expires consumers without an expiration
    ("TableOptions", "{expiration: 7 d}", False),  # written as consumer.expiration-time: the writers expire
])
def test_consumer_expiry_is_enabled_by_the_policy(tmp_path: Path, enforcement: str, consumers: str,
                                                   runs: bool) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "table.yaml").write_text(manifests(tmp_path / "wh", enforcement, consumers))
    [target] = reconcile.load([str(tmp_path / "m")], base_dir=str(tmp_path)).tables
    policy = target.resolve_policy({})
    assert enabled_jobs.enabled("ExpireConsumers", enforcement, policy) is runs
