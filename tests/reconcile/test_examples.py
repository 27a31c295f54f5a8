"""The examples/ manifests against the demo warehouse: every cumulative set applies, a plan right
after an apply is empty (idempotency), retained views read the same, and taking manifests away
deletes exactly what they owned (and nothing that is still needed)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tablekeeper import reconcile
from tablekeeper.cli import demo
from tablekeeper.cli.main import main
from tablekeeper.core.paimon.table import open_table
from tablekeeper.reconcile import actions as A
from tests.support import paimon as P

SETS = [("01",), ("01", "02"), ("01", "02", "03"), ("01", "02", "03", "04")]


def _converge(examples: Path, prefixes: tuple[str, ...], wh: Path, store: reconcile.RecordStore,
              now: datetime) -> reconcile.ConvergeResult:
    desired = demo.load_examples(examples, prefixes, str(wh))
    return reconcile.converge(desired, now=now, store=store)


def _views(wh: Path) -> dict[str, Any]:
    return {ident: P.snapshot_views(str(wh), ident) for ident in (demo.ORDERS, demo.EVENTS)}


@pytest.mark.parametrize("prefixes", SETS, ids=["-".join(s) for s in SETS])
def test_apply_then_plan_is_empty(prefixes: tuple[str, ...], demo_wh: Path, examples: Path) -> None:
    store = reconcile.MemoryRecordStore()
    now = datetime.now(UTC)
    result = _converge(examples, prefixes, demo_wh, store, now)
    assert result.ok, [r.message for r in result.results if r.status == "failed"]
    assert result.final.is_empty
    again = reconcile.plan(demo.load_examples(examples, prefixes, str(demo_wh)), now=now + timedelta(minutes=5),
                           store=store)
    assert again.is_empty, [(a.kind, a.reason) for a in again.changes]
    assert not [a for a in again.reported if a.kind in ("TagConflict", "BranchConflict")]
    if prefixes == ("01",):
        assert result.applied == ()  # tables only: nothing to do


def test_cumulative_steps_keep_every_retained_view(demo_wh: Path, examples: Path) -> None:
    store = reconcile.MemoryRecordStore()
    before = _views(demo_wh)
    for prefixes in SETS[:3]:
        assert _converge(examples, prefixes, demo_wh, store, datetime.now(UTC)).ok
    after = _views(demo_wh)
    for ident in before:
        for key, rows in before[ident].items():
            assert after[ident][key] == rows, (ident, key)
    orders = open_table(str(demo_wh), demo.ORDERS)
    assert orders.tag("baseline").snapshot_id == 12 and orders.branch_names() == ["backfill"]
    assert after[demo.ORDERS]["backfill@latest"] == before[demo.ORDERS]["main@snapshot-12"]
    # the retention policy: views that survive read the same; latest loses exactly the dropped partitions
    result = _converge(examples, SETS[3], demo_wh, store, datetime.now(UTC))
    assert result.ok
    dropped: dict[str, set[str]] = {}
    for p in result.plans:
        for a in p.changes:
            if isinstance(a, A.ExpirePartitions):
                dropped.setdefault(a.table, set()).update(a.partitions)
    assert dropped[demo.ORDERS] and dropped[demo.EVENTS]
    final = _views(demo_wh)
    for ident in before:
        for key, rows in after[ident].items():
            if key not in final[ident]:
                continue
            expected = [r for r in rows if f"dt={dict(r)['dt']}" not in dropped[ident]] if key == "main@latest" \
                else rows
            assert final[ident][key] == expected, (ident, key)
    orders = open_table(str(demo_wh), demo.ORDERS)
    auto = [t for t in orders.tag_names() if t[:2] == "20"]
    assert len(auto) == 3  # maxRetained: 3
    assert "baseline" in orders.tag_names()  # a fork point of backfill


def test_removing_manifests_deletes_what_they_owned(demo_wh: Path, examples: Path) -> None:
    store = reconcile.MemoryRecordStore()
    now = datetime.now(UTC)
    assert _converge(examples, ("01", "02", "03"), demo_wh, store, now).ok
    # without 03 the branch is dropped; its fork tag stays (still declared by 02)
    plan = reconcile.plan(demo.load_examples(examples, ("01", "02"), str(demo_wh)), now=now, store=store)
    assert [(a.kind, getattr(a, "name", None)) for a in plan.changes] == [("DropBranch", "backfill")]
    # without 02 and 03 at once: the branch goes first, then its fork tag may be deleted; the
    # Retain tag of events is only forgotten
    plan = reconcile.plan(demo.load_examples(examples, ("01",), str(demo_wh)), now=now, store=store)
    kinds = [(a.kind, a.table, getattr(a, "name", None) or getattr(a, "tag", None)) for a in plan.changes]
    assert kinds == [("DropBranch", demo.ORDERS, "backfill"), ("DeleteTag", demo.ORDERS, "baseline"),
                     ("ReleaseObject", demo.EVENTS, "audit-1")]
    result = reconcile.converge(demo.load_examples(examples, ("01",), str(demo_wh)), now=now, store=store)
    assert result.ok and result.final.is_empty
    orders = open_table(str(demo_wh), demo.ORDERS)
    events = open_table(str(demo_wh), demo.EVENTS)
    assert orders.tag_names() == [] and orders.branch_names() == []
    assert events.tag_names() == ["audit-1"]  # deletionPolicy Retain
    assert reconcile.plan(demo.load_examples(examples, ("01", "02"), str(demo_wh)), now=now,
                          store=store).summary()["create"] == 1  # baseline again; audit-1 is adopted


def test_removed_tag_that_is_a_fork_point_is_kept(demo_wh: Path, examples: Path, tmp_path: Path) -> None:
    store = reconcile.MemoryRecordStore()
    now = datetime.now(UTC)
    assert _converge(examples, ("01", "02", "03"), demo_wh, store, now).ok
    # a manifest set that keeps the branch but drops the tag it was created from
    (tmp_path / "m").mkdir()
    for name in ("01-catalog-and-table.yaml", "03-branch-from-tag.yaml"):
        (tmp_path / "m" / name).write_text((examples / name).read_text())
    (tmp_path / "m" / "02-tags.yaml").write_text("\n".join(
        doc for doc in (examples / "02-tags.yaml").read_text().split("---") if "first-audit" in doc))
    resources = reconcile.load_manifests([tmp_path / "m"], base_dir=tmp_path)
    plan = reconcile.plan(reconcile.build_desired_state(resources), now=now, store=store)
    conflicts = [a for a in plan.reported if isinstance(a, A.TagConflict)]
    assert [(c.tag, c.conflict) for c in conflicts] == [("baseline", "ProtectedByBranch")]
    assert not [a for a in plan.changes if isinstance(a, A.DeleteTag)]


def test_cli_plan_apply_plan(demo_wh: Path, examples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's flow: the demo writes the examples pointed at its warehouse, then plan/apply -f."""
    local = Path(demo.write_local_manifests(examples, str(demo_wh)))
    assert local == demo_wh.parent / ".tablekeeper-demo-manifests"
    assert sorted(p.name for p in local.glob("*.yaml")) == sorted(p.name for p in examples.glob("*.yaml"))
    listing = P.dir_listing(demo_wh)
    assert main(["plan", "-f", str(local)]) == 2
    out = capsys.readouterr().out
    assert "+ tag 'baseline' at snapshot 12, TTL 30 d" in out and "+ branch 'backfill' from tag 'baseline'" in out
    assert "expire snapshots" in out and "file(s)" in out and "Plan:" in out
    assert P.dir_listing(demo_wh) == listing  # plan changes nothing
    assert main(["apply", "-f", str(local), "-o", "json"]) == 0
    applied = json.loads(capsys.readouterr().out)
    assert applied["converged"] and applied["passes"][0]["totals"]["failed"] == 0
    assert applied["passes"][0]["totals"]["deletedFiles"] > 0
    assert (demo_wh / ".tablekeeper" / "state" / "sales.orders.json").is_file()
    assert main(["plan", "-f", str(local)]) == 0
    assert "No changes" in capsys.readouterr().out
    code = main(["plan", "-f", str(local), "-o", "json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["empty"] is True


def test_apply_relative_to_manifests(demo_wh: Path, examples: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    manifests = tmp_path / "repo"
    manifests.mkdir()
    for f in examples.glob("0[12]-*.yaml"):
        (manifests / f.name).write_text(f.read_text().replace("warehouse: .tablekeeper-demo",
                                                              "warehouse: ../.tablekeeper-demo"))
    assert main(["apply", "-f", str(manifests), "--relative-to", "manifests"]) == 0
    assert "created tag 'baseline'" in capsys.readouterr().out
    assert open_table(str(demo_wh), demo.ORDERS).tag("baseline").snapshot_id == 12
