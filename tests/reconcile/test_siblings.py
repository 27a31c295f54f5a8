"""Reconciler fixes on a real pypaimon table: sibling branches created from one tag never block
each other's drop; one bad tag or branch does not stop the others of its table; a failing
action keeps its error."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tablekeeper import reconcile
from tablekeeper.core import errors
from tablekeeper.core.paimon.table import open_table
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.state.documents import parse_documents
from tests.support import paimon as P

HEAD = "apiVersion: tablekeeper.io/v1alpha1\n"


def _desired(wh: Path, *docs: str) -> reconcile.DesiredState:
    catalog = HEAD + f"kind: PaimonCatalog\nmetadata: {{name: c, namespace: ns}}\nspec: {{warehouse: '{wh}', " \
                     "writerTimeZone: UTC}\n"
    table = HEAD + "kind: PaimonTable\nmetadata: {name: t, namespace: ns}\nspec: {catalogRef: {kind: PaimonCatalog, " \
                   "name: c}, database: db, table: orders, enforcement: Operator}\n"
    text = "---\n".join([catalog, table, *docs])
    loaded = parse_documents([("m.yaml", text, wh)], base_dir=wh)
    assert not loaded.problems, [str(p) for p in loaded.problems]
    return reconcile.build_desired_state(loaded.resources)


def _tag(name: str, spec: str) -> str:
    return HEAD + f"kind: PaimonTag\nmetadata: {{name: {name}, namespace: ns}}\nspec: {{tableRef: {{name: t}}, {spec}}}\n"


def _branch(name: str, spec: str) -> str:
    return HEAD + f"kind: PaimonBranch\nmetadata: {{name: {name}, namespace: ns}}\n" \
                  f"spec: {{tableRef: {{name: t}}, {spec}}}\n"


def test_sibling_branches_from_one_tag_drop_independently(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=4)
    store = reconcile.MemoryRecordStore()
    now = datetime.now(UTC)
    docs = [_tag("base", "snapshotId: 2"), _branch("b1", "fromTag: base"), _branch("b2", "fromTag: base")]
    result = reconcile.converge(_desired(wh, *docs), now=now, store=store)
    assert result.ok and result.final.is_empty
    t = open_table(str(wh), "db.orders")
    assert sorted(t.branch_names()) == ["b1", "b2"]
    before = P.snapshot_views(str(wh), "db.orders")
    # each branch holds a copy of tag 'base'; the sibling's fork is main's tag, not that copy
    state = reconcile.observe(t)
    assert state.protected_tags("main") == {"base": ("b1", "b2")}
    assert state.protected_tags("b1") == {} and state.protected_tags("b2") == {}

    result = reconcile.converge(_desired(wh, docs[0], docs[2]), now=now, store=store)  # b1's manifest removed
    assert result.ok, [r.message for r in result.results]
    dropped = [r for r in result.results if r.action.kind == "DropBranch"]
    assert [(r.action.name, r.status) for r in dropped] == [("b1", "applied")]
    assert not [a for a in result.final.reported if a.kind == "BranchConflict"]
    t = open_table(str(wh), "db.orders")
    assert t.branch_names() == ["b2"] and t.tag("base").snapshot_id == 2
    after = P.snapshot_views(str(wh), "db.orders")
    assert {k: v for k, v in before.items() if not k.startswith("b1@")} == after


def test_bad_tag_does_not_block_its_siblings(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=3)
    desired = _desired(wh, _tag("good", "snapshotId: 2"), _tag("bad", "snapshotId: 99"))
    target = desired.tables[0]
    table = open_table(str(wh), "db.orders")
    state = reconcile.observe(table)
    acts = reconcile.plan_objects(target, state, reconcile.TableRecords(), target.resolve_policy(state.options),
                                  datetime.now(UTC))
    by_tag = {getattr(a, "tag", None): a for a in acts}
    assert isinstance(by_tag["good"], A.CreateTag)
    # a snapshot after the latest waits for its commit (transient) and names the snapshots there are
    bad = [a for a in acts if isinstance(a, A.Skipped) and a.what == "tag bad"]
    assert bad and bad[0].cause == "SnapshotNotFound" and "snapshots 1..3" in bad[0].reason


def test_planning_error_of_one_object_is_its_own(tmp_path: Path, monkeypatch: object) -> None:
    """An error raised while planning one declared tag becomes that tag's InvalidSpec conflict."""
    import pytest

    from tablekeeper.reconcile.planners import tags as tags_planner

    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=3)
    desired = _desired(wh, _tag("good", "snapshotId: 2"), _tag("odd", "snapshotId: 1"), _branch("b", "fromTag: good"))
    target = desired.tables[0]
    table = open_table(str(wh), "db.orders")
    state = reconcile.observe(table)
    original = tags_planner.resolve_tag_snapshot

    def broken(t: tags_planner.TagTarget, s: reconcile.TableState) -> tuple[int | None, str | None]:
        if t.tag == "odd":
            raise errors.InvalidInputError("cannot resolve", fix="fix the tag")
        return original(t, s)

    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(tags_planner, "resolve_tag_snapshot", broken)
        acts = reconcile.plan_objects(target, state, reconcile.TableRecords(), target.resolve_policy(state.options),
                                      datetime.now(UTC))
    finally:
        mp.undo()
    kinds = sorted((a.kind, getattr(a, "tag", None) or getattr(a, "name", None)) for a in acts)
    assert ("CreateTag", "good") in kinds and ("CreateBranch", "b") in kinds
    [odd] = [a for a in acts if getattr(a, "tag", None) == "odd"]
    assert isinstance(odd, A.TagConflict) and odd.conflict == "InvalidSpec" and "cannot resolve" in odd.reason


def test_failed_action_keeps_its_error(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=3)
    desired = _desired(wh, _tag("x", "snapshotId: 2"))
    store = reconcile.MemoryRecordStore()
    now = datetime.now(UTC)
    plan = reconcile.plan(desired, now=now, store=store)
    # someone else creates 'x' at another snapshot between plan and apply
    from tablekeeper.core.refs import tags

    tags.create_tag(open_table(str(wh), "db.orders"), "x", snapshot_id=3)
    result = reconcile.apply(plan, store=store)
    [failed] = result.failed
    assert isinstance(failed.error, errors.TagConflictError)
    assert failed.to_dict()["error"]["type"] == "TagConflictError"
    assert failed.to_dict()["error"]["fix"]
    assert open_table(str(wh), "db.orders").tag("x").snapshot_id == 3  # never moved
