"""The changelog is expired with the limit it was planned with (issue #11).

The planner sizes ``ExpireChangelog`` with the policy's ``snapshots.expireLimit``; the applier and
the Spark request must run it with that same limit, not the table option ``snapshot.expire.limit``
(which the policy does not write with ``enforcement: Python``). With one batch per apply the
difference shows: the plan says one changelog, a run with the table's default limit of 50
expires all three."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tablekeeper import reconcile
from tablekeeper.cli import demo
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.policy.specs.run import PaimonMaintenanceRunSpec
from tablekeeper.reconcile import actions as A
from tablekeeper.spark import dispatch

from .test_planner import _manifests

_POLICY = ("apiVersion: tablekeeper.io/v1alpha1\nkind: PaimonRetentionPolicy\nmetadata: {{name: p, namespace: demo}}\n"
           "spec:\n  selector: {{tableNames: ['sales.events']}}\n  defaults:\n"
           "    snapshots: {{minRetained: 2, maxAge: 1 h{limit}}}\n    changelog: {{minRetained: {changelogs}}}\n")


def _decoupled_history(demo_wh: Path, examples: Path, now: datetime) -> Path:
    """sales.events with snapshots 31, 32 and long-lived changelogs 27..30 (six retained)."""
    m = _manifests(demo_wh.parent, examples, _POLICY.format(limit="", changelogs=6))
    store = reconcile.MemoryRecordStore()
    assert reconcile.converge(reconcile.load([str(m)], base_dir=str(m.parent)), now=now, store=store).ok
    assert open_table(str(demo_wh), demo.EVENTS).changelog_ids() == [27, 28, 29, 30]
    # now keep three (counting the two snapshots), expiring at most one per batch
    (m / "02.yaml").write_text(_POLICY.format(limit=", expireLimit: 1", changelogs=3))
    return m


def test_applier_expires_the_changelog_with_the_planned_limit(demo_wh: Path, examples: Path) -> None:
    now = datetime.now(UTC)
    m = _decoupled_history(demo_wh, examples, now)
    store = reconcile.MemoryRecordStore()
    config = reconcile.ReconcileConfig(max_batches=1)
    p = reconcile.plan(reconcile.load([str(m)], base_dir=str(m.parent)), now=now, store=store, config=config)
    [log] = [a for a in p.changes if isinstance(a, A.ExpireChangelog)]
    assert log.changelogs == 1  # changelog 27 only: expireLimit 1
    result = reconcile.apply(p, store=store, config=config)
    [done] = [r for r in result.results if r.action.kind == "ExpireChangelog"]
    assert done.status == "applied" and done.expired == log.changelogs
    assert open_table(str(demo_wh), demo.EVENTS).changelog_ids() == [28, 29, 30]


def test_spark_request_expires_the_changelog_with_the_policy_limit(demo_wh: Path, examples: Path) -> None:
    """The operator's Spark request for ExpireSnapshots (snapshots, then the changelog), run by the
    in-process evaluator of the same request with one batch: one changelog, as planned."""
    from tablekeeper.operator.runs import spark as sparkruns


    now = datetime.now(UTC)
    m = _decoupled_history(demo_wh, examples, now)
    desired = reconcile.load([str(m)], base_dir=str(m.parent))
    target = desired.table(demo.EVENTS)
    table = open_table(str(demo_wh), demo.EVENTS)
    policy = target.resolve_policy(table.options())
    spec = PaimonMaintenanceRunSpec.model_validate({"tableRef": {"name": "events"}, "type": "ExpireSnapshots"})
    request = sparkruns.launch_request(spec, str(demo_wh), demo.EVENTS, {}, dry_run=False, policy=policy.values)
    assert request is not None
    result = dispatch.run_local(dataclasses.replace(request, batches=1, now_ms=int(now.timestamp() * 1000)))
    assert result.details["changelog"]["expired_changelogs"] == 1
    assert open_table(str(demo_wh), demo.EVENTS).changelog_ids() == [28, 29, 30]


pytestmark = pytest.mark.timeout(300)
