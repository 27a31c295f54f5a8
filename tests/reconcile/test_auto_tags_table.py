"""Auto-tags and tag expiry on a real pypaimon table, driven by an injected clock (no sleeps):
two simulated weeks of back-dated commits, tablekeeper reconciling now and then; the tags it
ends with are the tags Java's per-commit ``TagAutoCreation`` ends with."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from tablekeeper import reconcile
from tablekeeper.core.paimon.pypaimon import sample_data
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.refs.tag_auto import AutoTagRules, SnapshotPoint, TagPoint
from tablekeeper.core.refs.tag_periods import TagPeriodHandler
from tablekeeper.reconcile import actions as A
from tests.reconcile.test_tag_auto import JavaTagAutoCreation
from tests.support import paimon as P

IDENT = "db.t"


def manifests(dir_: Path, wh: Path, retention: str, zone: str | None = "Asia/Shanghai", extra: str = "") -> Path:
    m = dir_ / "m"
    m.mkdir(exist_ok=True)
    tz = f", writerTimeZone: {zone}" if zone else ""
    (m / "t.yaml").write_text(f"""apiVersion: tablekeeper.io/v1alpha1
kind: PaimonCatalog
metadata: {{name: c, namespace: ns}}
spec: {{warehouse: {wh}{tz}}}
---
apiVersion: tablekeeper.io/v1alpha1
kind: PaimonTable
metadata: {{name: t, namespace: ns}}
spec:
  catalogRef: {{kind: PaimonCatalog, name: c}}
  database: db
  table: t
  enforcement: Operator
  retention:
{retention}
{extra}""")
    return m


def test_two_weeks_of_auto_tags_match_java(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    sample_data.create_orders_table(str(wh), IDENT)
    m = manifests(tmp_path, wh, "    snapshots: {minRetained: 3, maxAge: 1 d}\n"
                                "    tags: {autoCreate: {mode: process-time, period: daily, maxRetained: 4}}")
    desired = reconcile.load([str(m)])
    store = reconcile.MemoryRecordStore()
    rules = AutoTagRules("process-time", TagPeriodHandler.create("daily"), ZoneInfo("Asia/Shanghai"),
                         num_retained_max=4)
    java_snaps: list[SnapshotPoint] = []
    java_tags: dict[str, TagPoint] = {}
    writer = JavaTagAutoCreation(rules, java_snaps, java_tags)
    rnd = random.Random(7)
    t = datetime(2026, 2, 1, 3, 0, tzinfo=UTC)
    next_run = t + timedelta(hours=rnd.randint(6, 40))
    runs = 0
    for k in range(1, 43):
        t += timedelta(hours=rnd.choice([2, 5, 8, 13]))
        at_ms = int(t.timestamp() * 1000)
        sample_data.commit_rows(str(wh), IDENT, [{"dt": f"{t:%Y-%m-%d}", "order_id": k, "amount": float(k)}],
                                at_ms=at_ms)
        java_snaps.append(SnapshotPoint(k, at_ms))
        writer.run()
        if t >= next_run:
            result = reconcile.converge(desired, now=t + timedelta(minutes=5), store=store)
            assert result.ok and result.final.is_empty
            runs += 1
            next_run = t + timedelta(hours=rnd.randint(6, 40))
    result = reconcile.converge(desired, now=t + timedelta(minutes=5), store=store)
    assert result.ok
    table = open_table(str(wh), IDENT)
    got = {tag.name: tag.snapshot_id for tag in table.tags()}
    assert got == {n: tag.snapshot_id for n, tag in java_tags.items()}
    assert len(got) == 4 and runs >= 5
    assert len(table.snapshot_ids()) < 42  # snapshot expiration ran, after tagging
    # every remaining tag still reads (its files survived snapshot expiration)
    views = P.snapshot_views(str(wh), IDENT)
    assert all(f"main@tag-{n}" in views for n in got)


def test_ttl_expiry_follows_the_injected_clock(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    sample_data.create_orders_table(str(wh), IDENT)
    start = datetime(2026, 2, 1, 0, 0, tzinfo=UTC)
    for k in range(1, 4):
        sample_data.commit_rows(str(wh), IDENT, [{"dt": "2026-02-01", "order_id": k, "amount": 1.0}],
                                at_ms=int((start + timedelta(hours=k)).timestamp() * 1000))
    tag = ("---\napiVersion: tablekeeper.io/v1alpha1\nkind: PaimonTag\nmetadata: {name: snap2, namespace: ns}\n"
           "spec: {tableRef: {name: t}, snapshotId: 2}\n")
    m = manifests(tmp_path, wh, "    tags: {defaultTimeRetained: 1 d}", zone="Asia/Shanghai", extra=tag)
    desired = reconcile.load([str(m)])
    store = reconcile.MemoryRecordStore()
    created_at = datetime(2026, 2, 1, 6, 0, tzinfo=UTC)
    assert reconcile.converge(desired, now=created_at, store=store).ok
    written = open_table(str(wh), IDENT).tag("snap2")
    assert written.create_time == datetime(2026, 2, 1, 14, 0)  # the writers' wall clock (UTC+8)
    assert written.time_retained == timedelta(days=1)
    assert reconcile.plan(desired, now=created_at + timedelta(days=1), store=store).is_empty  # not strictly after
    due = reconcile.plan(desired, now=created_at + timedelta(days=1, seconds=1), store=store)
    [expire] = [a for a in due.changes if isinstance(a, A.ExpireTags)]
    assert [(e.tag, e.rule, e.owned_by) for e in expire.tags] == [("snap2", "ttl", "PaimonTag ns/snap2")]
    assert reconcile.converge(desired, now=due.now, store=store).ok
    assert open_table(str(wh), IDENT).tag_names() == []
    # expired by TTL: never recreated while the manifest stays
    later = reconcile.plan(desired, now=due.now + timedelta(days=3), store=store)
    assert later.is_empty and [a.kind for a in later.reported] == ["Skipped"]


def test_ttl_with_unknown_zone_waits_twelve_hours(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    sample_data.create_orders_table(str(wh), IDENT)
    sample_data.commit_rows(str(wh), IDENT, [{"dt": "2026-02-01", "order_id": 1, "amount": 1.0}])
    tag = ("---\napiVersion: tablekeeper.io/v1alpha1\nkind: PaimonTag\nmetadata: {name: one, namespace: ns}\n"
           "spec: {tableRef: {name: t}, fromLatest: true, timeRetained: 1 h}\n")
    m = manifests(tmp_path, wh, "    tags: {autoCreate: {mode: process-time}}", zone=None, extra=tag)
    desired = reconcile.load([str(m)])
    store = reconcile.MemoryRecordStore()
    now = datetime(2026, 2, 1, 6, 0, tzinfo=UTC)
    first = reconcile.plan(desired, now=now, store=store)
    assert [a.what for a in first.reported if isinstance(a, A.Skipped)] == ["auto tags"]  # TimeZoneUnset
    assert reconcile.converge(desired, now=now, store=store).ok
    assert open_table(str(wh), IDENT).tag("one").create_time == datetime(2026, 2, 1, 6, 0)  # UTC wall clock
    assert not [a for a in reconcile.plan(desired, now=now + timedelta(hours=12), store=store).changes
                if isinstance(a, A.ExpireTags)]
    assert [a for a in reconcile.plan(desired, now=now + timedelta(hours=13, seconds=1), store=store).changes
            if isinstance(a, A.ExpireTags)]
