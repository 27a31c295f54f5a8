"""tablekeeper.core.refs.tags on real pypaimon-written tables (paimon-semantics.md §3, §8, §9).

Every readable state is checked through pypaimon (``snapshot_views``), every "nothing changed"
through ``dir_listing``, and the files a tag deletion removes against an independent oracle
built on pypaimon's ManifestListManager/ManifestFileManager (tests/core/helpers.py)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core import errors
from tablekeeper.core.paimon.table import Table, open_table
from tablekeeper.core.plans import execution
from tablekeeper.core.plans import plan as plans
from tablekeeper.core.refs import branches, tags
from tests.core.helpers import (
    IDENT,
    append_table,
    content_listing,
    copy_warehouse,
    data_files,
    expected_tag_cleanup,
    expire_snapshots,
    overwrite,
    py_live_data,
    py_tag_snapshot,
    removed,
    rows,
    table_root,
    views_except,
    without,
)
from tests.support.paimon import (
    branch_table,
    build_history,
    catalog,
    dir_listing,
    read_rows,
    snapshot_views,
    write,
)

# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def pk(wh: str) -> Table:
    """A primary-key table with 5 snapshots."""
    build_history(wh, IDENT, commits=5)
    return open_table(wh, IDENT)


def _json(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def _non_null(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _py_tag_names(wh: str, branch: str | None = None) -> list[str]:
    cat = catalog(wh)
    t = branch_table(cat, IDENT, branch) if branch else cat.get_table(IDENT)
    return sorted(t.list_tags())


def _read_tag(wh: str, tag: str, branch: str | None = None) -> list[tuple[Any, ...]]:
    cat = catalog(wh)
    t = branch_table(cat, IDENT, branch) if branch else cat.get_table(IDENT)
    return read_rows(t, {"scan.tag-name": tag})


def _read_snapshot(wh: str, sid: int) -> list[tuple[Any, ...]]:
    return read_rows(catalog(wh).get_table(IDENT), {"scan.snapshot-id": str(sid)})


# -- create -----------------------------------------------------------------------------------


def test_create_from_latest_writes_the_snapshot_json_and_reads_as_latest(wh: str, pk: Table) -> None:
    result = tags.create_tag(pk, "v1")
    assert (result.action, result.snapshot_id) == ("created", 5)
    tag_json = _json(pk.tag_path("v1"))
    # no retention: exactly the snapshot's shape (Java writes plain snapshot.toJson())
    assert "tagCreateTime" not in tag_json and "tagTimeRetained" not in tag_json
    assert _non_null(tag_json) == _non_null(_json(pk.snapshot_path(5)))
    assert _py_tag_names(wh) == ["v1"]
    assert _read_tag(wh, "v1") == read_rows(catalog(wh).get_table(IDENT))


@pytest.mark.parametrize("sid", [1, 3, 5])
def test_create_from_snapshot_id(wh: str, pk: Table, sid: int) -> None:
    result = tags.create_tag(pk, f"at-{sid}", snapshot_id=sid)
    assert (result.action, result.snapshot_id) == ("created", sid)
    assert pk.tag(f"at-{sid}").snapshot.identity() == pk.snapshot(sid).identity()
    assert _read_tag(wh, f"at-{sid}") == _read_snapshot(wh, sid)


def test_create_from_timestamp_picks_latest_committed_at_or_before(wh: str, pk: Table) -> None:
    snaps = pk.snapshots()
    times = {s.id: s.time_millis for s in snaps}

    def expected(ts: int) -> int:
        return max(sid for sid, ms in times.items() if ms <= ts)

    probes = []
    for s in snaps:
        probes += [s.time_millis, s.time_millis + 1]
    probes.append(snaps[-1].time_millis + 10_000_000)
    for i, ts in enumerate(probes):
        name = f"ts-{i}"
        result = tags.create_tag(pk, name, timestamp_ms=ts)
        assert result.snapshot_id == expected(ts), (ts, times)
        assert _read_tag(wh, name) == _read_snapshot(wh, expected(ts))


def test_create_from_timestamp_before_first_snapshot_fails_and_writes_nothing(wh: str, pk: Table) -> None:
    first = pk.snapshot(1).time_millis
    before = dir_listing(wh)
    with pytest.raises(errors.SnapshotNotFoundError):
        tags.create_tag(pk, "too-early", timestamp_ms=first - 1)
    assert dir_listing(wh) == before


def test_create_on_a_branch(wh: str, pk: Table) -> None:
    tags.create_tag(pk, "t2", snapshot_id=2)
    branches.create_branch(pk, "b", from_tag="t2")
    write(branch_table(catalog(wh), IDENT, "b"), rows("2026-01-09", 100))
    b = pk.on_branch("b")
    result = tags.create_tag(b, "bt")
    assert (result.action, result.snapshot_id) == ("created", 3)
    assert os.path.isfile(os.path.join(b.branch_path, "tag", "tag-bt"))
    assert not pk.tag_exists("bt")  # not in main
    assert _py_tag_names(wh, "b") == ["bt", "t2"]
    assert _py_tag_names(wh) == ["t2"]
    assert _read_tag(wh, "bt", "b") == read_rows(branch_table(catalog(wh), IDENT, "b"))
    assert _read_tag(wh, "bt", "b") != _read_tag(wh, "t2")


@pytest.mark.parametrize(
    ("now", "retained", "array", "seconds", "iso"),
    [
        (datetime(2026, 1, 2, 3, 4, 5, 123456), timedelta(days=1), "[ 2026, 1, 2, 3, 4, 5, 123456000 ]",
         "86400.000000000", "PT24H"),
        (datetime(2026, 12, 31, 23, 59), timedelta(minutes=90), "[ 2026, 12, 31, 23, 59 ]",
         "5400.000000000", "PT1H30M"),
        (datetime(2026, 6, 1, 0, 0, 7), timedelta(seconds=1, milliseconds=500), "[ 2026, 6, 1, 0, 0, 7 ]",
         "1.500000000", None),
    ],
)
def test_create_with_time_retained_is_jackson_and_pypaimon_reads_it(
        wh: str, pk: Table, now: datetime, retained: timedelta, array: str, seconds: str, iso: str | None) -> None:
    tags.create_tag(pk, "ttl", snapshot_id=3, time_retained=retained, now=now)
    text = Path(pk.tag_path("ttl")).read_text(encoding="utf-8")
    assert f'  "tagCreateTime" : {array},\n' in text
    assert text.endswith(f'  "tagTimeRetained" : {seconds}\n}}')
    assert text.startswith('{\n  "version" : 3,\n')
    # pypaimon parses both fields and reads the tag
    py_tag = catalog(wh).get_table(IDENT).tag_manager().get("ttl")
    assert py_tag.tag_create_time == now
    assert py_tag.tag_time_retained == retained
    assert _py_tag_names(wh) == ["ttl"]
    assert _read_tag(wh, "ttl") == _read_snapshot(wh, 3)
    # and our own listing round-trips it
    row = tags.list_tags(pk)[0]
    assert (row.create_time, row.snapshot_id) == (now, 3)
    if iso:
        assert row.time_retained == iso


def test_create_with_non_positive_time_retained_is_refused(wh: str, pk: Table) -> None:
    before = dir_listing(wh)
    for bad in (timedelta(0), timedelta(seconds=-5)):
        with pytest.raises(errors.InvalidDurationError):
            tags.create_tag(pk, "ttl", time_retained=bad)
    assert dir_listing(wh) == before


def test_recreate_at_the_same_snapshot_is_idempotent(wh: str, pk: Table) -> None:
    tags.create_tag(pk, "v", snapshot_id=2)
    before = dir_listing(wh)
    again = tags.create_tag(pk, "v", snapshot_id=2)
    assert (again.action, again.snapshot_id) == ("unchanged", 2)
    by_ts = tags.create_tag(pk, "v", timestamp_ms=pk.snapshot(2).time_millis)
    assert by_ts.action == "unchanged"
    assert dir_listing(wh) == before  # not even rewritten


@pytest.mark.parametrize("other", [3, None])
def test_tag_conflict_at_another_snapshot_leaves_storage_unchanged(wh: str, pk: Table, other: int | None) -> None:
    tags.create_tag(pk, "v", snapshot_id=2)
    before = dir_listing(wh)
    with pytest.raises(errors.TagConflictError):
        tags.create_tag(pk, "v", snapshot_id=other)  # None = latest
    assert dir_listing(wh) == before
    assert pk.tag("v").snapshot_id == 2


def test_tag_an_expired_snapshot_pinned_by_another_tag(wh: str, pk: Table) -> None:
    tags.create_tag(pk, "keep", snapshot_id=2)
    expected = _read_snapshot(wh, 2)
    expire_snapshots(pk.root, 3)
    assert not pk.snapshot_exists(2)
    result = tags.create_tag(pk, "again", snapshot_id=2)
    assert (result.action, result.snapshot_id) == ("created", 2)
    assert pk.tag("again").snapshot.identity() == pk.tag("keep").snapshot.identity()
    assert _read_tag(wh, "again") == _read_tag(wh, "keep") == expected
    # an expired snapshot nobody pins cannot be tagged
    before = dir_listing(wh)
    with pytest.raises(errors.SnapshotNotFoundError):
        tags.create_tag(pk, "gone", snapshot_id=3)
    assert dir_listing(wh) == before


def test_listing_ignores_stray_files_p3(wh: str, pk: Table) -> None:
    tags.create_tag(pk, "real")
    tag_dir = Path(pk.dir("tag"))
    (tag_dir / ".tag-real.crc").write_bytes(b"crc")
    (tag_dir / "tag-success-file").mkdir()
    (tag_dir / "tag-success-file" / "real_SUCCESS").write_text("")
    assert [r.tag_name for r in tags.list_tags(pk)] == ["real"]


# -- rename / replace -------------------------------------------------------------------------


def test_rename(wh: str, pk: Table) -> None:
    tags.create_tag(pk, "old", snapshot_id=2, time_retained=timedelta(days=3))
    raw = Path(pk.tag_path("old")).read_bytes()
    expected = _read_tag(wh, "old")
    result = tags.rename_tag(pk, "old", "new")
    assert (result.action, result.tag, result.snapshot_id) == ("renamed", "new", 2)
    assert not pk.tag_exists("old")
    assert Path(pk.tag_path("new")).read_bytes() == raw  # a file rename: bytes kept
    assert _py_tag_names(wh) == ["new"]
    assert _read_tag(wh, "new") == expected


def test_rename_onto_an_existing_tag_is_refused(wh: str, pk: Table) -> None:
    tags.create_tag(pk, "a", snapshot_id=2)
    tags.create_tag(pk, "b", snapshot_id=3)
    before = dir_listing(wh)
    with pytest.raises(errors.AlreadyExistsError):
        tags.rename_tag(pk, "a", "b")
    assert dir_listing(wh) == before


def test_rename_of_a_fork_tag_needs_force_and_keeps_protection(wh: str, pk: Table) -> None:
    tags.create_tag(pk, "fork", snapshot_id=2)
    branches.create_branch(pk, "b", from_tag="fork")
    before = dir_listing(wh)
    with pytest.raises(errors.ProtectedObjectError):
        tags.rename_tag(pk, "fork", "renamed")
    assert dir_listing(wh) == before
    views = snapshot_views(wh, IDENT)
    assert tags.rename_tag(pk, "fork", "renamed", force=True).action == "renamed"
    assert tags.protected_fork_tags(pk) == {"renamed": ["b"]}
    after = snapshot_views(wh, IDENT)
    assert after.pop("main@tag-renamed") == views.pop("main@tag-fork")
    assert after == views
    # still protected under its new name (identity, not name, §9.1)
    with pytest.raises(errors.ProtectedObjectError):
        tags.plan_delete_tag(pk, "renamed")


def test_replace_moves_the_tag_and_keeps_retention(wh: str, pk: Table) -> None:
    tags.create_tag(pk, "r", snapshot_id=2, time_retained=timedelta(hours=2), now=datetime(2026, 1, 1, 1, 1, 1))
    result = tags.replace_tag(pk, "r", snapshot_id=4, now=datetime(2026, 2, 2, 2, 2, 2))
    assert (result.action, result.snapshot_id) == ("replaced", 4)
    tag = pk.tag("r")
    assert tag.snapshot.identity() == pk.snapshot(4).identity()
    assert (tag.time_retained, tag.create_time) == (timedelta(hours=2), datetime(2026, 2, 2, 2, 2, 2))
    assert _read_tag(wh, "r") == _read_snapshot(wh, 4)
    assert tags.replace_tag(pk, "r").snapshot_id == 5  # latest
    assert _read_tag(wh, "r") == _read_snapshot(wh, 5)
    assert catalog(wh).get_table(IDENT).tag_manager().get("r").tag_time_retained == timedelta(hours=2)


def test_replace_of_a_fork_tag_is_refused(wh: str, pk: Table) -> None:
    tags.create_tag(pk, "fork", snapshot_id=2)
    branches.create_branch(pk, "b", from_tag="fork")
    before = dir_listing(wh)
    with pytest.raises(errors.ProtectedObjectError):
        tags.replace_tag(pk, "fork", snapshot_id=4)
    assert dir_listing(wh) == before


# -- list -------------------------------------------------------------------------------------


def test_list_tags_matches_pypaimon_tags_system_table(wh: str, pk: Table) -> None:
    tags.create_tag(pk, "plain", snapshot_id=1)
    tags.create_tag(pk, "ttl", snapshot_id=3, time_retained=timedelta(days=1),
                    now=datetime(2026, 3, 4, 5, 6, 7, 890123))
    tags.create_tag(pk, "short", snapshot_id=5, time_retained=timedelta(minutes=30))
    ours = {r.tag_name: r for r in tags.list_tags(pk)}
    assert list(ours) == ["plain", "short", "ttl"]
    theirs = {dict(r)["tag_name"]: dict(r) for r in read_rows(catalog(wh).get_table(f"{IDENT}$tags"))}
    assert set(theirs) == set(ours)
    for name, row in ours.items():
        py = theirs[name]
        assert row.snapshot_id == py["snapshot_id"]
        assert row.schema_id == py["schema_id"]
        assert row.record_count == py["record_count"]
        # pypaimon: commit_time is the epoch-ms instant as a naive TIMESTAMP(3); ours is UTC-aware
        assert row.commit_time.replace(tzinfo=None) == py["commit_time"]
        if row.create_time is None:
            assert py["create_time"] is None
        else:  # TIMESTAMP(3): milliseconds
            assert row.create_time.replace(microsecond=row.create_time.microsecond // 1000 * 1000) \
                == py["create_time"]
        assert row.time_retained == py["time_retained"]
    assert ours["ttl"].as_dict()["time_retained"] == "PT24H"


# -- delete with cleanup ----------------------------------------------------------------------


def _cleanup_history(wh: str) -> dict[str, str]:
    """Append table, partitions d1/d2/d3, with overwrites (so files die):

        s1 +A(d1)   s2 +B(d2) [tag left]   s3 -A +C   s4 -B +D [tag mid]
        s5 -C -D +E1 +E2 (overwrite both)   s6 +F(d3)

    Returns {letter: relative data file path}."""
    pt = append_table(wh)
    root = table_root(wh)
    names: dict[str, str] = {}

    def commit(letters: list[str], fn: Any) -> None:
        before = data_files(root)
        fn()
        new = sorted(data_files(root) - before)
        assert len(new) == len(letters), new
        names.update(zip(letters, new, strict=True))

    commit(["A"], lambda: write(pt, rows("d1", 0)))
    commit(["B"], lambda: write(pt, rows("d2", 10)))
    commit(["C"], lambda: overwrite(pt, rows("d1", 20), {"dt": "d1"}))
    commit(["D"], lambda: overwrite(pt, rows("d2", 30), {"dt": "d2"}))
    commit(["E1", "E2"], lambda: overwrite(pt, rows("d1", 40) + rows("d2", 50), {}))
    commit(["F"], lambda: write(pt, rows("d3", 60)))
    # the two E files: sort by partition so the letters are stable
    e = sorted([names["E1"], names["E2"]])
    names["E1"], names["E2"] = e[0], e[1]
    t = open_table(wh, IDENT)
    tags.create_tag(t, "left", snapshot_id=2)
    tags.create_tag(t, "mid", snapshot_id=4)
    return names


def _expected_removed(wh: str, tag: str, root: Path) -> set[str]:
    """Relative paths the tag deletion must remove, from the pypaimon oracle."""
    data, meta = expected_tag_cleanup(wh, IDENT, tag)
    out = {f"tag/tag-{tag}"} | {f"manifest/{m}" for m in meta}
    by_name = {os.path.basename(p): p for p in data_files(root)}
    out |= {by_name[d] for d in data}
    return out


def _delete(table: Table, name: str, **kw: Any) -> execution.ExecutionResult:
    plan = tags.plan_delete_tag(table, name, **kw)
    result = execution.execute(plan, table.file_io)
    assert not result.failed
    return result


def _rel(root: Path, paths: Any) -> set[str]:
    return {os.path.relpath(p, root) for p in paths}


def test_delete_while_its_snapshot_exists_removes_only_the_tag_file(wh: str, pk: Table) -> None:
    tags.create_tag(pk, "t3", snapshot_id=3)
    views = snapshot_views(wh, IDENT)
    before = content_listing(wh)
    plan = tags.plan_delete_tag(pk, "t3")
    assert [f.kind for f in plan.files] == [plans.FileKind.TAG]
    _delete(pk, "t3")
    assert removed(before, content_listing(wh)) == {"db.db/orders/tag/tag-t3"}
    assert snapshot_views(wh, IDENT) == without(views, "main@tag-t3")


def test_delete_when_another_tag_pins_the_snapshot_removes_only_the_tag_file(wh: str, pk: Table) -> None:
    tags.create_tag(pk, "a", snapshot_id=2)
    tags.create_tag(pk, "b", snapshot_id=2)
    expire_snapshots(pk.root, 3)
    views = snapshot_views(wh, IDENT)
    before = content_listing(wh)
    _delete(pk, "a")
    assert removed(before, content_listing(wh)) == {"db.db/orders/tag/tag-a"}
    assert snapshot_views(wh, IDENT) == without(views, "main@tag-a")


def test_delete_with_cleanup_removes_exactly_what_only_the_tag_reached(wh: str) -> None:
    names = _cleanup_history(wh)
    root = table_root(wh)
    t = open_table(wh, IDENT)
    expire_snapshots(root, 4)  # snapshot files 1..4 gone, EARLIEST=5, no data deleted
    views = snapshot_views(wh, IDENT)
    expected = _expected_removed(wh, "mid", root)
    # sanity of the scenario: C and D die with the tag (s5 overwrote both partitions)
    assert {names["C"], names["D"]} <= expected
    assert not {names["A"], names["B"], names["E1"], names["E2"], names["F"]} & expected
    before = content_listing(root)
    plan = tags.plan_delete_tag(t, "mid")
    assert _rel(root, (f.path for f in plan.files)) == expected
    # Paimon's order: data, then manifests, then the tag file last
    assert [s.kind for s in plan.steps if isinstance(s, plans.DeleteStep)] == [
        plans.FileKind.DATA, plans.FileKind.MANIFEST, plans.FileKind.TAG]
    assert all(isinstance(s, plans.DeleteStep) for s in plan.steps)
    execution.execute(plan, t.file_io)
    assert removed(before, content_listing(root)) == expected
    assert snapshot_views(wh, IDENT) == without(views, "main@tag-mid")
    # every file of the remaining tag's merged set still exists (pitfall #1)
    for name in py_live_data(wh, IDENT, py_tag_snapshot(wh, IDENT, "left")):
        assert any(p.endswith(name) for p in data_files(root)), name


def test_delete_oldest_tag_removes_what_its_right_neighbour_no_longer_reads(wh: str) -> None:
    """Deleting 'left' (snapshot 2) after expiring 1..4: its right neighbour 'mid' reads C and D,
    so A and B go and C, D stay."""
    names = _cleanup_history(wh)
    root = table_root(wh)
    t = open_table(wh, IDENT)
    expire_snapshots(root, 4)
    views = snapshot_views(wh, IDENT)
    expected = _expected_removed(wh, "left", root)
    assert {names["A"], names["B"]} <= expected
    assert not {names["C"], names["D"]} & expected
    before = content_listing(root)
    _delete(t, "left")
    assert removed(before, content_listing(root)) == expected
    assert snapshot_views(wh, IDENT) == without(views, "main@tag-left")


def test_delete_uses_the_merged_set_pitfall_2(wh: str) -> None:
    """Tag whose base + delta hold +A, -A, +B: only B may be targeted. A is in no neighbour,
    so a reader that did not merge entries would delete it too."""
    pt = append_table(wh)
    root = table_root(wh)
    write(pt, rows("d1", 0))
    a = data_files(root)
    overwrite(pt, rows("d1", 10), {"dt": "d1"})
    b = data_files(root) - a
    t = open_table(wh, IDENT)
    tags.create_tag(t, "t", snapshot_id=2)
    overwrite(pt, rows("d1", 20), {"dt": "d1"})
    (a_path,), (b_path,) = a, b
    # the tag really holds +A, -A, +B unmerged
    from tablekeeper.core.reclaim.reach.reachability import Reachability

    snap = t.tag("t").snapshot
    reach = Reachability(t)
    entries = [(r.kind, r.file_name) for r in reach.refs_of_list(snap.base_manifest_list)
               + reach.refs_of_list(snap.delta_manifest_list)]
    a_name, b_name = os.path.basename(a_path), os.path.basename(b_path)
    assert sorted(entries) == sorted([(0, a_name), (1, a_name), (0, b_name)])
    expire_snapshots(root, 2)
    views = snapshot_views(wh, IDENT)
    expected = _expected_removed(wh, "t", root)
    assert b_path in expected and a_path not in expected
    before = content_listing(root)
    plan = tags.plan_delete_tag(t, "t")
    assert _rel(root, (f.path for f in plan.files if f.kind == plans.FileKind.DATA)) == {b_path}
    execution.execute(plan, t.file_io)
    assert removed(before, content_listing(root)) == expected
    assert os.path.exists(root / a_path)
    assert snapshot_views(wh, IDENT) == without(views, "main@tag-t")


def _fork_on_mid(wh: str) -> tuple[Table, dict[str, str]]:
    """_cleanup_history + branch b forked from 'mid' (snapshot 4) that overwrote d2 (-D +H)."""
    names = _cleanup_history(wh)
    t = open_table(wh, IDENT)
    branches.create_branch(t, "b", from_tag="mid")
    root = table_root(wh)
    before = data_files(root)
    overwrite(branch_table(catalog(wh), IDENT, "b"), rows("d2", 70), {"dt": "d2"})
    (names["H"],) = data_files(root) - before
    expire_snapshots(root, 4)
    return t, names


def test_delete_of_a_fork_tag_is_refused_without_force(wh: str) -> None:
    t, _names = _fork_on_mid(wh)
    before = dir_listing(wh)
    with pytest.raises(errors.ProtectedObjectError):
        tags.plan_delete_tag(t, "mid")
    assert dir_listing(wh) == before


def test_forced_delete_of_a_fork_tag_leaves_the_branch_readable(wh: str) -> None:
    t, names = _fork_on_mid(wh)
    root = table_root(wh)
    views = snapshot_views(wh, IDENT)
    assert {"b@snapshot-4", "b@snapshot-5", "b@tag-mid", "b@latest"} <= set(views)
    expected = _expected_removed(wh, "mid", root)
    # the branch's copy of snapshot 4 names the same manifest lists: nothing but the tag goes
    assert expected == {"tag/tag-mid"}
    before = content_listing(root)
    _delete(t, "mid", force=True)
    assert removed(before, content_listing(root)) == expected
    assert snapshot_views(wh, IDENT) == without(views, "main@tag-mid")
    assert os.path.exists(root / names["C"]) and os.path.exists(root / names["D"])


def test_delete_protects_files_of_another_branch_that_no_longer_holds_the_fork(wh: str) -> None:
    """The branch expired its fork snapshot and tag copy: 'mid' is no fork tag any more, but
    the branch's own snapshot 5 still reads C (d1), which must survive; D goes."""
    t, names = _fork_on_mid(wh)
    root = table_root(wh)
    bdir = root / "branch" / "branch-b"
    (bdir / "tag" / "tag-mid").unlink()
    expire_snapshots(root, 4, branch="b")
    assert tags.protected_fork_tags(t) == {}
    views = snapshot_views(wh, IDENT)
    expected = _expected_removed(wh, "mid", root)
    assert names["D"] in expected and names["C"] not in expected
    before = content_listing(root)
    _delete(t, "mid")
    assert removed(before, content_listing(root)) == expected
    assert snapshot_views(wh, IDENT) == without(views, "main@tag-mid")


@pytest.mark.parametrize("victim", ["left-base", "left-delta", "branch-latest-delta"])
def test_missing_neighbour_manifest_list_aborts_and_deletes_nothing(wh: str, victim: str) -> None:
    t, _names = _fork_on_mid(wh)
    root = table_root(wh)
    # make mid deletable without force: drop the branch's fork copies (it keeps snapshot 5)
    (root / "branch" / "branch-b" / "tag" / "tag-mid").unlink()
    expire_snapshots(root, 4, branch="b")
    snap = t.tag("left").snapshot if victim.startswith("left") else t.on_branch("b").latest_snapshot()
    assert snap is not None
    name = snap.base_manifest_list if victim.endswith("base") else snap.delta_manifest_list
    assert name
    (root / "manifest" / name).unlink()
    before = dir_listing(wh)
    with pytest.raises(errors.IncompleteProtectionSetError):
        tags.plan_delete_tag(t, "mid")
    assert dir_listing(wh) == before


# -- crash safety -----------------------------------------------------------------------------


class Crash(RuntimeError):
    pass


def _crash_template(tmp_path: Path) -> tuple[str, int]:
    wh = str(tmp_path / "template")
    _cleanup_history(wh)
    expire_snapshots(table_root(wh), 4)
    plan = tags.plan_delete_tag(open_table(wh, IDENT), "mid")
    return wh, len(plan.files)


# With batch_size=1 the plan for 'mid' is: C, D (data), two manifest lists, tag file = 5 batches.
# A crash after the first manifest list is gone leaves a tag whose own manifest list is
# missing: the rerun's plan_delete_tag then fails with IncompleteProtectionSetError.

@pytest.mark.parametrize("k", [0, 1, 2, 3, 4])
def test_delete_tag_crash_after_k_batches_then_rerun_equals_clean_run(tmp_path: Path, k: int) -> None:
    template, n_files = _crash_template(tmp_path)
    assert n_files == 5
    clean = copy_warehouse(template, tmp_path / "clean")
    t_clean = open_table(clean, IDENT)
    execution.execute(tags.plan_delete_tag(t_clean, "mid"), t_clean.file_io, batch_size=1)
    clean_state = content_listing(clean)
    clean_views = snapshot_views(clean, IDENT)

    wh = copy_warehouse(template, tmp_path / f"crash-{k}")
    t = open_table(wh, IDENT)
    calls = 0

    def fault(paths: list[str]) -> None:
        nonlocal calls
        calls += 1
        if calls > k:
            raise Crash(f"crash before batch {calls}: {paths}")

    with pytest.raises(Crash):
        execution.execute(tags.plan_delete_tag(t, "mid"), t.file_io, batch_size=1, parallelism=1,
                          fault=fault)
    assert len(removed(content_listing(template), content_listing(wh))) == k
    # the crashed state is readable: every retained view still reads as before
    assert views_except(wh, IDENT, {"main@tag-mid"}) == without(snapshot_views(template, IDENT), "main@tag-mid")
    # rerun plan + execute finishes the job
    t = open_table(wh, IDENT)
    if t.tag_exists("mid"):
        result = execution.execute(tags.plan_delete_tag(t, "mid"), t.file_io, batch_size=1)
        assert not result.failed
    assert content_listing(wh) == clean_state
    assert snapshot_views(wh, IDENT) == clean_views
