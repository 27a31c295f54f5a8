"""Planning decisions: tags and branches on synthetic table states (pure), and maintenance,
precedence, schedules and engine choice on the demo warehouse."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tablekeeper import reconcile
from tablekeeper.cli import demo
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.policy.schedule import Schedule
from tablekeeper.core.policy.specs.table import MaintenanceWindow
from tablekeeper.core.refs.tag_auto import SnapshotPoint
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.planners.schedules import in_window, is_due, next_fire
from tablekeeper.reconcile.state.documents import parse_documents
from tablekeeper.reconcile.state.observe import BranchState, TableState, TagState
from tablekeeper.reconcile.state.records import BranchRecord, TableRecords, TagRecord

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
HEAD = "apiVersion: tablekeeper.io/v1alpha1\n"
CATALOG = HEAD + "kind: PaimonCatalog\nmetadata: {name: c, namespace: ns}\nspec: {warehouse: /wh%s}\n"
TABLE = HEAD + "kind: PaimonTable\nmetadata: {name: t, namespace: ns}\nspec:\n  catalogRef: {kind: PaimonCatalog, " \
               "name: c}\n  database: db\n  table: t\n%s"


def target(*docs: str, zone: str | None = "UTC", table_extra: str = "") -> reconcile.TableTarget:
    text = "---\n".join([CATALOG % (f", writerTimeZone: {zone}" if zone else ""), TABLE % table_extra, *docs])
    loaded = parse_documents([("m.yaml", text, Path("/"))], base_dir=Path("/"))
    assert not loaded.problems, [str(p) for p in loaded.problems]
    return reconcile.build_desired_state(loaded.resources).tables[0]


def tag_doc(name: str, spec: str) -> str:
    return HEAD + f"kind: PaimonTag\nmetadata: {{name: {name}, namespace: ns}}\nspec: {{tableRef: {{name: t}}, {spec}}}\n"


def branch_doc(name: str, spec: str) -> str:
    return HEAD + f"kind: PaimonBranch\nmetadata: {{name: {name}, namespace: ns}}\nspec: {{tableRef: {{name: t}}, {spec}}}\n"


def ident(sid: int) -> tuple[int, str, str]:
    return (sid, f"base-{sid}", f"delta-{sid}")


def tag(name: str, sid: int, create: datetime | None = None, ttl: timedelta | None = None) -> TagState:
    return TagState(name, sid, ident(sid), sid * 1000, create, ttl)


def state(snapshot_ids: range = range(1, 11), tags: dict[str, dict[str, TagState]] | None = None,
          branches: dict[str, BranchState] | None = None, fork_tags: Any = None,
          options: dict[str, str] | None = None, start: datetime = NOW - timedelta(days=10)) -> TableState:
    snaps = tuple(SnapshotPoint(i, int((start + timedelta(hours=i)).timestamp() * 1000)) for i in snapshot_ids)
    all_snaps = {"main": snaps}
    for b in (branches or {}):
        all_snaps[b] = ()
    return TableState("db.t", options or {}, all_snaps, tags or {"main": {}}, branches or {}, fork_tags or {})


def objects(t: reconcile.TableTarget, s: TableState, records: TableRecords | None = None,
            now: datetime = NOW) -> list[A.Action]:
    return reconcile.plan_objects(t, s, records or TableRecords(), t.resolve_policy(s.options), now)


def kinds(actions: list[A.Action]) -> list[tuple[str, str]]:
    return [(a.kind, getattr(a, "tag", None) or getattr(a, "name", None) or getattr(a, "what", "")) for a in actions]


# -- declared tags --------------------------------------------------------------------------

def test_create_adopt_and_conflict() -> None:
    t = target(tag_doc("a", "snapshotId: 3, timeRetained: 7 d"))
    [create] = objects(t, state())
    assert isinstance(create, A.CreateTag) and (create.snapshot_id, create.time_retained) == (3, "7 d")
    assert create.resource == "PaimonTag ns/a" and create.source == "m.yaml"
    [adopt] = objects(t, state(tags={"main": {"a": tag("a", 3)}}))
    assert isinstance(adopt, A.AdoptTag)
    owned = TableRecords().with_tag("main", "a", TagRecord("PaimonTag ns/a", 3))
    assert objects(t, state(tags={"main": {"a": tag("a", 3)}}), owned) == []
    [conflict] = objects(t, state(tags={"main": {"a": tag("a", 5)}}), owned)
    assert isinstance(conflict, A.TagConflict) and conflict.conflict == "AlreadyExistsDifferentSnapshot"
    assert not conflict.is_change
    must = target(tag_doc("a", "snapshotId: 3, adoptionPolicy: MustCreate"))
    assert kinds(objects(must, state(tags={"main": {"a": tag("a", 3)}}))) == [("TagConflict", "a")]


def test_missing_tag_recreated_lost_or_expired() -> None:
    t = target(tag_doc("a", "snapshotId: 3"))
    owned = TableRecords().with_tag("main", "a", TagRecord("PaimonTag ns/a", 3))
    [again] = objects(t, state(), owned)
    assert isinstance(again, A.CreateTag) and "recreate" in again.reason
    [lost] = objects(t, state(range(5, 11)), owned)
    assert isinstance(lost, A.TagConflict) and lost.conflict == "SnapshotExpired"
    [missing] = objects(t, state(range(5, 11)))
    assert isinstance(missing, A.TagConflict) and missing.conflict == "SnapshotExpired"  # before the earliest
    assert "snapshots 5..10" in missing.reason and "spec.snapshotId" in missing.reason
    # pinned by another tag although its snapshot expired: still creatable
    [pinned] = objects(t, state(range(5, 11), tags={"main": {"other": tag("other", 3)}}))
    assert isinstance(pinned, A.CreateTag)
    expired = TableRecords().with_tag("main", "a", TagRecord("PaimonTag ns/a", 3, expires_ms=int(
        (NOW - timedelta(seconds=1)).timestamp() * 1000)))
    [skip] = objects(t, state(), expired)
    assert isinstance(skip, A.Skipped) and "expired by its TTL" in skip.reason


def test_from_timestamp_and_from_latest() -> None:
    start = NOW - timedelta(days=10)
    t = target(tag_doc("a", f"fromTimestamp: '{(start + timedelta(hours=4, minutes=1)).isoformat()}'"))
    [create] = objects(t, state(start=start))
    assert isinstance(create, A.CreateTag) and create.snapshot_id == 5  # first committed at or after
    late = target(tag_doc("a", f"fromTimestamp: '{NOW.isoformat()}'"))
    [wait] = objects(late, state(start=start))
    assert isinstance(wait, A.Skipped) and "waiting" in wait.reason
    latest = target(tag_doc("a", "fromLatest: true"))
    assert [a.snapshot_id for a in objects(latest, state()) if isinstance(a, A.CreateTag)] == [10]
    # fromLatest is frozen at creation: an existing tag at an older snapshot is in sync
    owned = TableRecords().with_tag("main", "a", TagRecord("PaimonTag ns/a", 4))
    assert objects(latest, state(tags={"main": {"a": tag("a", 4)}}), owned) == []


def test_default_ttl_comes_from_policy_with_source() -> None:
    t = target(tag_doc("a", "snapshotId: 3"), table_extra="  retention:\n    tags: {defaultTimeRetained: 3 d}\n")
    [create] = objects(t, state())
    assert isinstance(create, A.CreateTag) and create.time_retained == "3 d"
    assert create.policy == {"tags.defaultTimeRetained": "3 d (inline)"}


def test_auto_shaped_manual_name() -> None:
    auto = "  retention:\n    tags: {autoCreate: {mode: process-time, period: daily}}\n"
    t = target(tag_doc("a", "tagName: '2026-03-01', snapshotId: 3"), table_extra=auto)
    s = state(tags={"main": {"2026-02-28": tag("2026-02-28", 3)}})
    acts = [a for a in objects(t, s) if a.kind in ("CreateTag", "TagConflict") and getattr(a, "tag", "") == "2026-03-01"]
    assert [(a.kind, getattr(a, "conflict", None)) for a in acts] == [("TagConflict", "SnapshotAlreadyAutoTagged")]


# -- removed manifests -------------------------------------------------------------------------

def test_removed_tags_are_deleted_released_or_protected() -> None:
    t = target()
    records = (TableRecords().with_tag("main", "gone", TagRecord("PaimonTag ns/gone", 1))
               .with_tag("main", "keep", TagRecord("PaimonTag ns/keep", 2, "Retain"))
               .with_tag("main", "del", TagRecord("PaimonTag ns/del", 3))
               .with_tag("main", "fork", TagRecord("PaimonTag ns/fork", 4)))
    s = state(tags={"main": {"keep": tag("keep", 2), "del": tag("del", 3), "fork": tag("fork", 4)}, "b": {}},
              branches={"b": BranchState("b", 4, ident(4), "fork", None, None)}, fork_tags={"main": {"fork": ("b",)}})
    acts = objects(t, s, records)
    assert sorted(kinds(acts)) == [("DeleteTag", "del"), ("ReleaseObject", "gone"), ("ReleaseObject", "keep"),
                                   ("TagConflict", "fork")]
    assert [a.conflict for a in acts if isinstance(a, A.TagConflict)] == ["ProtectedByBranch"]
    assert "unmanaged" not in {getattr(a, "tag", "") for a in acts}  # unowned tags are never touched


def test_unowned_tags_and_branches_are_never_touched() -> None:
    s = state(tags={"main": {"someone": tag("someone", 2)}, "x": {}},
              branches={"x": BranchState("x", 2, ident(2), "someone", None, None)})
    assert objects(target(), s) == []


def test_removed_branch_drop_guards() -> None:
    records = TableRecords().with_branch("b", BranchRecord("PaimonBranch ns/b"))
    branch = {"b": BranchState("b", 4, ident(4), "t4", None, None)}
    tags = {"main": {"t4": tag("t4", 4)}, "b": {"t4": tag("t4", 4), "on-b": tag("on-b", 4)}}
    [drop] = objects(target(), state(tags=tags, branches=branch), records)
    assert isinstance(drop, A.DropBranch) and drop.name == "b"
    # a tag still declared on it
    needed = target(tag_doc("on-b", "branch: b, snapshotId: 4"))
    assert ("BranchConflict", "b") in kinds(objects(needed, state(tags=tags, branches=branch), records))
    # another branch was created from one of its tags
    acts = objects(target(), state(tags=tags, branches=branch, fork_tags={"b": {"on-b": ("c",)}}), records)
    assert [a.conflict for a in acts if isinstance(a, A.BranchConflict)] == ["HasDependentBranches"]
    # main reads it as fallback
    acts = objects(target(), state(tags=tags, branches=branch, options={"scan.fallback-branch": "b"}), records)
    assert [a.conflict for a in acts if isinstance(a, A.BranchConflict)] == ["BranchInUse"]
    # the branch's fork tag, created by tablekeeper, goes with it
    records = TableRecords().with_branch("b", BranchRecord("PaimonBranch ns/b", fork_tag="fork-b-4"))
    [drop] = objects(target(), state(tags=tags, branches=branch), records)
    assert isinstance(drop, A.DropBranch) and drop.fork_tag == "fork-b-4"


def test_branch_create_adopt_conflict_lost_and_ttl() -> None:
    t = target(tag_doc("t4", "snapshotId: 4"), branch_doc("b", "fromTag: t4, ttl: {maxIdle: 2 d}"))
    assert kinds(objects(t, state())) == [("CreateTag", "t4"), ("CreateBranch", "b")]
    exists = {"b": BranchState("b", 4, ident(4), "t4", int((NOW - timedelta(days=1)).timestamp() * 1000),
                               int((NOW - timedelta(days=1)).timestamp() * 1000))}
    tags = {"main": {"t4": tag("t4", 4)}, "b": {"t4": tag("t4", 4)}}
    assert kinds(objects(t, state(tags=tags, branches=exists))) == [("AdoptTag", "t4"), ("AdoptBranch", "b")]
    other = {"b": BranchState("b", 6, ident(6), None, None, None)}
    assert [a.conflict for a in objects(t, state(tags=tags, branches=other)) if isinstance(a, A.BranchConflict)] \
        == ["AlreadyExistsDifferentHistory"]
    owned = (TableRecords().with_tag("main", "t4", TagRecord("PaimonTag ns/t4", 4))
             .with_branch("b", BranchRecord("PaimonBranch ns/b", created_ms=int((NOW - timedelta(days=9)).timestamp()
                                                                                  * 1000))))
    [lost] = objects(t, state(tags={"main": {"t4": tag("t4", 4)}}), owned)
    assert isinstance(lost, A.BranchConflict) and lost.conflict == "Lost"
    assert objects(t, state(tags=tags, branches=exists), owned) == []  # idle for 1 day < 2 d
    [drop] = objects(t, state(tags=tags, branches=exists), owned, now=NOW + timedelta(days=1, minutes=1))
    assert isinstance(drop, A.DropBranch) and drop.ttl_expired and "maxIdle" in drop.reason
    protected = target(tag_doc("t4", "snapshotId: 4"), branch_doc("b", "fromTag: t4, protected: true, "
                                                                         "ttl: {maxIdle: 2 d}"))
    assert objects(protected, state(tags=tags, branches=exists), owned, now=NOW + timedelta(days=9)) == []
    dropped = owned.with_branch("b", BranchRecord("PaimonBranch ns/b", expired=True))
    [skip] = objects(t, state(tags={"main": {"t4": tag("t4", 4)}}), dropped)
    assert isinstance(skip, A.Skipped) and "TTL" in skip.reason


# -- auto tags and tag expiry ------------------------------------------------------------------

AUTO = "  retention:\n    tags: {autoCreate: {mode: process-time, period: daily, maxRetained: 2}}\n"


def test_auto_tags_need_the_writers_zone() -> None:
    [skip] = objects(target(zone=None, table_extra=AUTO), state())
    assert isinstance(skip, A.Skipped) and skip.reason.startswith("TimeZoneUnset")
    # the table's own sink.process-time-zone is explicit enough
    acts = objects(target(zone=None, table_extra=AUTO), state(options={"sink.process-time-zone": "Asia/Shanghai"}))
    assert {a.kind for a in acts} == {"CreateTag"}


def test_writers_own_auto_tags_when_the_table_option_enables_them() -> None:
    acts = objects(target(), state(options={"tag.automatic-creation": "process-time"}))
    assert kinds(acts) == [("Skipped", "auto tags")] and "writers create auto tags" in acts[0].reason


def test_auto_tags_and_count_expiry() -> None:
    start = datetime(2026, 3, 1, 6, 0, tzinfo=UTC)
    s = state(range(1, 7), start=start)  # hourly commits on 2026-03-01: first one is tagged 2026-02-28
    [create] = [a for a in objects(target(table_extra=AUTO), s) if isinstance(a, A.CreateTag)]
    assert (create.tag, create.snapshot_id, create.auto) == ("2026-02-28", 1, True)
    assert create.policy["tags.autoCreate.maxRetained"] == "2 (inline)"
    old = {n: tag(n, i) for i, n in enumerate(["2026-02-20", "2026-02-21", "2026-02-22"], start=1)}
    old["2026-02-22"] = tag("2026-02-22", 3)
    acts = objects(target(tag_doc("keep", "tagName: '2026-02-20', snapshotId: 1"), table_extra=AUTO),
                   state(range(1, 7), tags={"main": old}, start=start))
    [expire] = [a for a in acts if isinstance(a, A.ExpireTags)]
    # the declared auto-shaped tag 2026-02-20 is never counted out; 2026-02-21 is
    assert [(e.tag, e.rule) for e in expire.tags] == [("2026-02-21", "num-retained-max")]


def test_ttl_expiry_respects_protection_and_marks_ownership() -> None:
    old = NOW.replace(tzinfo=None) - timedelta(days=3)
    tags = {"main": {"mine": tag("mine", 2, old, timedelta(days=1)), "fork": tag("fork", 3, old, timedelta(days=1)),
                     "savepoint-7": tag("savepoint-7", 4, old, timedelta(days=1)),
                     "young": tag("young", 5, old, timedelta(days=7))}, "b": {}}
    s = state(tags=tags, branches={"b": BranchState("b", 3, ident(3), "fork", None, None)},
              fork_tags={"main": {"fork": ("b",)}})
    records = TableRecords().with_tag("main", "mine", TagRecord("PaimonTag ns/mine", 2))
    [expire] = objects(target(tag_doc("mine", "snapshotId: 2")), s, records)
    assert isinstance(expire, A.ExpireTags)
    assert [(e.tag, e.rule, e.owned_by) for e in expire.tags] == [("mine", "ttl", "PaimonTag ns/mine")]
    assert objects(target(), state(tags=tags, options={"tag.time-expire-enabled": "false"})) == []


# -- maintenance on the demo warehouse ---------------------------------------------------------

POLICIES = """apiVersion: tablekeeper.io/v1alpha1
kind: PaimonRetentionPolicy
metadata: {name: gold, namespace: demo}
spec: {defaults: {snapshots: {minRetained: 7, maxAge: 1 d}}}
---
apiVersion: tablekeeper.io/v1alpha1
kind: PaimonRetentionPolicy
metadata: {name: all, namespace: demo}
spec: {selector: {tableNames: ['sales.*']}, defaults: {snapshots: {minRetained: 4, expireLimit: 5, maxAge: 5 h}}}
---
apiVersion: tablekeeper.io/v1alpha1
kind: ClusterPaimonRetentionPolicy
metadata: {name: guard}
spec: {constraints: {snapshots: {minRetained: {min: 8}}}, enforcement: Clamp}
"""


def _manifests(tmp: Path, examples: Path, extra: str, table_patch: tuple[str, str] | None = None) -> Path:
    m = tmp / "m"
    m.mkdir(exist_ok=True)
    text = (examples / "01-catalog-and-table.yaml").read_text()
    if table_patch:
        text = text.replace(*table_patch)
    (m / "01.yaml").write_text(text)
    (m / "02.yaml").write_text(extra)
    return m


def _plan(m: Path, store: reconcile.RecordStore, now: datetime, **config: Any) -> reconcile.ReconcilePlan:
    desired = reconcile.load([str(m)], base_dir=str(m.parent))
    return reconcile.plan(desired, now=now, store=store, config=reconcile.ReconcileConfig(**config))


def test_precedence_flows_into_actions(demo_wh: Path, examples: Path) -> None:
    """inline > policyRefs > selector-matched policy > cluster; a cluster Clamp moves the value
    and becomes its source; the action carries the values with their sources."""
    m = _manifests(demo_wh.parent, examples, POLICIES, ("  table: orders\n", "  table: orders\n  policyRefs: "
                                                         "[{name: gold}]\n  retention: {snapshots: {maxAge: 3 d}}\n"))
    store = reconcile.MemoryRecordStore()
    p = _plan(m, store, datetime.now(UTC))
    orders = next(t for t in p.tables if t.target.location.identifier == "sales.orders")
    [exp] = [a for a in orders.changes if isinstance(a, A.ExpireSnapshots)]
    assert exp.policy["snapshots.maxAge"] == "3 d (inline)"
    assert exp.policy["snapshots.minRetained"] == "8 (cluster/guard)"  # 7 from gold, clamped
    assert exp.policy["snapshots.expireLimit"] == "5 (policy/demo/all)"
    assert (exp.retention.retain_min, exp.retention.time_retained, exp.retention.expire_limit) == \
        (8, timedelta(days=3), 5)
    assert orders.effective["snapshots.minRetained"] == {"source": "cluster/guard", "value": 8, "clampedFrom": 7}
    events = next(t for t in p.tables if t.target.location.identifier == "sales.events")
    [exp_e] = [a for a in events.changes if isinstance(a, A.ExpireSnapshots)]
    assert exp_e.policy["snapshots.maxAge"] == "5 h (policy/demo/all)"
    assert exp_e.retention.retain_min == 8
    # several batches of expireLimit; apply runs them all, so the next plan is empty
    assert exp.batches > 1 and exp.estimate.partial
    result = reconcile.converge(reconcile.load([str(m)], base_dir=str(m.parent)), now=p.now, store=store)
    assert result.ok and result.final.is_empty
    assert len(open_table(str(demo_wh), demo.ORDERS).snapshot_ids()) >= 8


def test_unmanaged_sections_run_no_maintenance(demo_wh: Path, examples: Path) -> None:
    """A table without retention settings gets no expiration, although Paimon's defaults
    (1 h, 10 snapshots) would expire most of the demo history: absent = not managed."""
    m = _manifests(demo_wh.parent, examples, "")
    p = _plan(m, reconcile.MemoryRecordStore(), datetime.now(UTC))
    assert p.is_empty and p.tables[0].actions == ()


def test_schedule_window_and_engine(demo_wh: Path, examples: Path) -> None:
    policy = ("apiVersion: tablekeeper.io/v1alpha1\nkind: PaimonRetentionPolicy\nmetadata: {name: p, namespace: demo}\n"
              "spec: {defaults: {snapshots: {minRetained: 5, maxAge: 1 d},"
              " orphanFiles: {state: Enabled, olderThan: 1 d}}}\n")
    m = _manifests(demo_wh.parent, examples, policy.replace("{name: p,", "{name: p, labels: {},")
                   .replace("spec: {defaults", "spec: {selector: {tableNames: ['sales.orders']}, defaults"),
                   ("    engine: Auto", "    engine: Auto\n    schedule: '0 3 * * *'"))
    store = reconcile.MemoryRecordStore()
    now = datetime.now(UTC)
    p = _plan(m, store, now, spark_threshold_files=10)
    orders = next(t for t in p.tables if t.target.location.identifier == "sales.orders")
    [exp] = [a for a in orders.changes if isinstance(a, A.ExpireSnapshots)]
    assert exp.engine == "spark"  # more than 10 files
    [orphans] = [a for a in orders.actions if isinstance(a, A.CleanOrphans)]
    assert orphans.dry_run and not orphans.is_change and orphans.estimate.files == 2  # the planted ones
    result = reconcile.converge(reconcile.load([str(m)], base_dir=str(m.parent)), now=now, store=store,
                                config=reconcile.ReconcileConfig(spark_threshold_files=10))
    [ran] = [r for r in result.results if r.action.kind == "ExpireSnapshots"]
    assert ran.engine == "in-process" and "no Spark runner" in ran.message
    assert result.final.is_empty
    # recorded: the cron schedule is not due again before the next 03:00
    later = _plan(m, store, now + timedelta(minutes=1))
    skipped = [a for a in later.reported if isinstance(a, A.Skipped) and a.what == "ExpireSnapshots"]
    assert skipped and "not due until" in skipped[0].reason
    assert _plan(m, store, now + timedelta(days=1, minutes=1), ignore_schedules=False).reported is not None


def test_cron_and_every_schedules() -> None:
    assert next_fire("0 3 * * *", datetime(2026, 3, 10, 3, 0)) == datetime(2026, 3, 11, 3, 0)
    assert next_fire("*/15 * * * *", datetime(2026, 3, 10, 3, 7)) == datetime(2026, 3, 10, 3, 15)
    assert next_fire("0 3 * * SUN", datetime(2026, 3, 10, 3, 0)) == datetime(2026, 3, 15, 3, 0)
    assert next_fire("0 0 1 JAN *", datetime(2026, 3, 10)) == datetime(2027, 1, 1)
    assert next_fire("0 0 13 * FRI", datetime(2026, 3, 10)) == datetime(2026, 3, 13)  # dom OR dow
    last = int(NOW.timestamp() * 1000)
    assert is_due(None, None, NOW).due and is_due(Schedule("@daily"), None, NOW).due
    assert not is_due(Schedule("@every 6 h"), last, NOW + timedelta(hours=5)).due
    assert is_due(Schedule("@every 6 h"), last, NOW + timedelta(hours=6)).due
    assert not is_due(Schedule("@daily"), last, NOW + timedelta(hours=11)).due
    assert is_due(Schedule("@daily"), last, NOW + timedelta(hours=12)).due
    window = MaintenanceWindow(start="22:00", end="04:00", time_zone="Europe/Berlin")
    assert in_window(window, datetime(2026, 3, 10, 22, 30, tzinfo=UTC)) and not in_window(window, NOW)
    assert not is_due(None, None, NOW, window=window).due


def test_estimates_report_files_and_bytes(demo_wh: Path, examples: Path) -> None:
    store = reconcile.MemoryRecordStore()
    desired = demo.load_examples(examples, ("01", "02", "03", "04"), str(demo_wh))
    p = reconcile.plan(desired, now=datetime.now(UTC), store=store)
    sized = [a for a in p.changes if isinstance(a, A.ExpireSnapshots)]
    assert sized and all(a.estimate.files > 0 and a.estimate.bytes > 0 for a in sized)
    assert all(set(a.estimate.by_kind) >= {"manifest", "snapshot"} for a in sized)
    fast = reconcile.plan(desired, now=p.now, store=store, config=reconcile.ReconcileConfig(estimate=False))
    assert [a.kind for a in fast.changes] == [a.kind for a in p.changes]
    assert p.summary()["files"] > 0 and p.to_dict()["summary"]["changes"] == len(p.changes)


@pytest.mark.parametrize("bad", ["2026-03-10", "yesterday"])
def test_cli_now_parsing(bad: str) -> None:
    from tablekeeper.cli.gitops import parse_now

    if bad == "yesterday":
        with pytest.raises(Exception, match="neither ISO-8601"):
            parse_now(bad)
    else:
        assert parse_now(bad) == datetime(2026, 3, 10, tzinfo=UTC)


@pytest.mark.parametrize(("catch_up", "expected"), [
    (False, ["2026-03-01 12"]),                    # Paimon's default: the period before the snapshot's
    (True, ["2026-03-01 10", "2026-03-01 11", "2026-03-01 12"]),  # automatic-completion: one missed period per snapshot
])
def test_catch_up_fills_missed_periods_when_asked(catch_up: bool, expected: list[str]) -> None:
    retention = ("  retention:\n    tags: {autoCreate: {mode: process-time, period: hourly, "
                 f"catchUp: {str(catch_up).lower()}}}}}\n")
    t = target(table_extra=retention)
    times = [datetime(2026, 3, 1, 10, 30, tzinfo=UTC), datetime(2026, 3, 1, 13, 5, tzinfo=UTC),
             datetime(2026, 3, 1, 13, 10, tzinfo=UTC), datetime(2026, 3, 1, 13, 20, tzinfo=UTC)]
    snaps = tuple(SnapshotPoint(i, int(w.timestamp() * 1000)) for i, w in enumerate(times, start=1))
    s = TableState("db.t", {}, {"main": snaps}, {"main": {"2026-03-01 09": tag("2026-03-01 09", 1)}}, {}, {})
    created = [a for a in objects(t, s) if isinstance(a, A.CreateTag)]
    assert [a.tag for a in created] == expected
    assert all(a.policy["tags.autoCreate.catchUp"] == f"{catch_up} (inline)" for a in created)


def test_known_branches_are_not_validated_against_storage() -> None:
    """A branch dropped by its TTL keeps its manifest; once its tag is gone too, planning must not
    fail with 'a branch from a missing tag': it is not going to be created again."""
    from tablekeeper.reconcile.planner import validate_against_storage

    t = target(branch_doc("b", "fromTag: gone, ttl: {maxAge: 1 d}"))
    assert [p.field for p in validate_against_storage(t, state())] == ["spec.fromTag"]
    dropped = TableRecords().with_branch("b", BranchRecord("PaimonBranch ns/b", expired=True))
    assert validate_against_storage(t, state(), dropped) == []
    [skip] = objects(t, state(), dropped)
    assert isinstance(skip, A.Skipped)
    pending = TableRecords().with_branch("b", BranchRecord("PaimonBranch ns/b", pending=True))
    assert [p.field for p in validate_against_storage(t, state(), pending)] == ["spec.fromTag"]


def test_interrupted_branch_create_resumes() -> None:
    t = target(tag_doc("t4", "snapshotId: 4"), branch_doc("b", "fromTag: t4"))
    pending = (TableRecords().with_tag("main", "t4", TagRecord("PaimonTag ns/t4", 4))
               .with_branch("b", BranchRecord("PaimonBranch ns/b", pending=True)))
    acts = objects(t, state(tags={"main": {"t4": tag("t4", 4)}}), pending)
    assert kinds(acts) == [("CreateBranch", "b")] and "resumes" in acts[0].reason
    done = {"b": BranchState("b", 4, ident(4), "t4", None, None)}
    acts = objects(t, state(tags={"main": {"t4": tag("t4", 4)}, "b": {"t4": tag("t4", 4)}}, branches=done), pending)
    assert kinds(acts) == [("AdoptBranch", "b")]


def test_failed_create_claims_nothing(demo_wh: Path, examples: Path) -> None:
    """Someone creates the tag at another snapshot between plan and apply: the create fails and
    tablekeeper records no ownership, so removing the manifest later never deletes their tag."""
    from tablekeeper.core.refs import tags as core_tags

    store = reconcile.MemoryRecordStore()
    desired = demo.load_examples(examples, ("01", "02"), str(demo_wh))
    p = reconcile.plan(desired, now=datetime.now(UTC), store=store)
    core_tags.create_tag(open_table(str(demo_wh), demo.ORDERS), "baseline", snapshot_id=5)
    result = reconcile.apply(p, store=store)
    [failed] = [r for r in result.results if r.status == "failed"]
    assert failed.action.kind == "CreateTag" and "already exists at snapshot 5" in failed.message
    assert store.load(str(demo_wh), demo.ORDERS).tag("main", "baseline") is None
    again = reconcile.plan(desired, now=p.now, store=store)
    assert [(a.kind, getattr(a, "conflict", None)) for a in again.reported if a.table == demo.ORDERS] == [
        ("TagConflict", "AlreadyExistsDifferentSnapshot")]
    only_tables = reconcile.plan(demo.load_examples(examples, ("01",), str(demo_wh)), now=p.now, store=store)
    assert not [a for a in only_tables.changes if a.table == demo.ORDERS]
    assert open_table(str(demo_wh), demo.ORDERS).tag("baseline").snapshot_id == 5


def test_decoupled_changelog_is_expired_by_its_own_retention(demo_wh: Path, examples: Path) -> None:
    policy = ("apiVersion: tablekeeper.io/v1alpha1\nkind: PaimonRetentionPolicy\nmetadata: {name: p, namespace: demo}\n"
              "spec:\n  selector: {tableNames: ['sales.events']}\n  defaults:\n"
              "    snapshots: {minRetained: 2, maxAge: 1 h}\n    changelog: {minRetained: 6}\n")
    m = _manifests(demo_wh.parent, examples, policy)
    store = reconcile.MemoryRecordStore()
    now = datetime.now(UTC)
    first = _plan(m, store, now)
    [exp] = [a for a in first.changes if isinstance(a, A.ExpireSnapshots)]
    assert exp.retention.changelog_decoupled and exp.policy["snapshots.minRetained"].endswith("(policy/demo/p)")
    result = reconcile.converge(reconcile.load([str(m)], base_dir=str(m.parent)), now=now, store=store)
    assert result.ok and result.final.is_empty
    kinds_run = [r.action.kind for r in result.results]
    assert kinds_run == ["ExpireSnapshots", "ExpireChangelog"]  # the second pass: changelog-N now exist
    events = open_table(str(demo_wh), demo.EVENTS)
    assert events.snapshot_ids() == [31, 32]
    assert events.changelog_ids() == [27, 28, 29, 30]  # 6 retained counting the 2 snapshots


def test_plan_table_kinds_filter_plans_only_those(demo_wh: Path, examples: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A maintenance run of one type plans (and sizes) only its own kinds."""
    from tablekeeper.core.reclaim.orphans import planning as core_orphans
    from tablekeeper.reconcile import planner

    desired = demo.load_examples(examples, ("01", "02", "03", "04"), str(demo_wh))
    store = reconcile.MemoryRecordStore()
    now = datetime.now(UTC)
    config = reconcile.ReconcileConfig(ignore_schedules=True)
    target = desired.table(demo.ORDERS)
    table = open_table(str(demo_wh), demo.ORDERS)
    state = reconcile.observe(table)
    records = store.load(target.location.warehouse, demo.ORDERS)
    policy = target.resolve_policy(state.options)
    full = planner.plan_table(target, table, state, records, policy, now, config)
    assert {"ExpireSnapshots", "CreateTag"} <= {a.kind for a in full.actions}
    calls: list[str] = []
    monkeypatch.setattr(core_orphans, "plan_orphan_clean", lambda *a, **k: calls.append("orphans"))  # never called
    only = planner.plan_table(target, table, state, records, policy, now, config,
                              kinds=("ExpireSnapshots", "ExpireChangelog"))
    assert {a.kind for a in only.actions} <= {"ExpireSnapshots", "ExpireChangelog", "Skipped"}
    assert [a for a in only.actions if a.kind == "ExpireSnapshots"] == \
        [a for a in full.actions if a.kind == "ExpireSnapshots"]
    assert calls == []
