"""tablekeeper.core.refs.branches on real pypaimon-written tables (paimon-semantics.md §4, §8 P1/P7,
#11, #13, #14, §9.1). pypaimon's own fast_forward is broken (§10.3): it is never the system
under test; pypaimon is only the writer and the independent reader."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange

from tablekeeper.core import errors
from tablekeeper.core.paimon.table import Table, open_table
from tablekeeper.core.refs import branches, tags
from tablekeeper.core.storage import FileIO
from tests.core.helpers import IDENT, content_listing, copy_warehouse, expire_snapshots, rows, without
from tests.support.paimon import (
    branch_table,
    build_history,
    catalog,
    dir_listing,
    read_rows,
    snapshot_views,
    write,
)


@pytest.fixture
def pk(wh: str) -> Table:
    """Primary-key table with 5 snapshots and tags t1@1, t2@2, t4@4, t5@5."""
    build_history(wh, IDENT, commits=5)
    t = open_table(wh, IDENT)
    for sid in (1, 2, 4, 5):
        tags.create_tag(t, f"t{sid}", snapshot_id=sid)
    return t


def _bytes(path: str | Path) -> bytes:
    return Path(path).read_bytes()


def _branch_dir(t: Table, name: str) -> Path:
    return Path(t.root) / "branch" / f"branch-{name}"


def _add_note_column(wh: str, identifier: str) -> None:
    catalog(wh).alter_table(identifier, [SchemaChange.add_column("note", AtomicType("STRING"))])


def _evolved(wh: str) -> Table:
    """Main: snapshots 1-2 on schema 0, add column 'note' (schema 1), snapshots 3-4 on it."""
    build_history(wh, IDENT, commits=2)
    _add_note_column(wh, IDENT)
    t = catalog(wh).get_table(IDENT)
    for i in range(2):
        write(t, [{"dt": "2026-02-01", "id": 500 + i, "amount": 1.0, "note": f"n{i}"}])
    return open_table(wh, IDENT)


def _rename_views(views: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    return {new + k[len(old):]: v for k, v in views.items() if k.startswith(old + "@")}


def _branch_views(views: dict[str, Any], branch: str) -> dict[str, Any]:
    return {k: v for k, v in views.items() if k.startswith(branch + "@")}


# -- create -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("tag_sid", "schemas"), [(2, [0]), (4, [0, 1])])
def test_create_from_tag_copies_bytes_and_reads_as_the_tag(wh: str, tag_sid: int, schemas: list[int]) -> None:
    t = _evolved(wh)
    tags.create_tag(t, "t", snapshot_id=tag_sid)
    views = snapshot_views(wh, IDENT)
    result = branches.create_branch(t, "b", from_tag="t")
    assert result.action == "created"
    bdir = _branch_dir(t, "b")
    # P7: byte copies, no re-serialisation
    assert _bytes(bdir / "tag" / "tag-t") == _bytes(t.tag_path("t"))
    assert _bytes(bdir / "snapshot" / f"snapshot-{tag_sid}") == _bytes(t.snapshot_path(tag_sid))
    assert sorted(os.listdir(bdir / "schema")) == [f"schema-{s}" for s in schemas]
    for s in schemas:
        assert _bytes(bdir / "schema" / f"schema-{s}") == _bytes(t.schema_path(s))
    assert _bytes(bdir / "snapshot" / "EARLIEST") == _bytes(bdir / "snapshot" / "LATEST") == str(tag_sid).encode()
    after = snapshot_views(wh, IDENT)
    assert _branch_views(after, "b") == {
        "b@latest": views["main@tag-t"],
        f"b@snapshot-{tag_sid}": views["main@tag-t"],
        "b@tag-t": views["main@tag-t"],
    }
    assert without(after, *_branch_views(after, "b")) == views
    assert catalog(wh).get_table(IDENT).branch_manager().branches() == ["b"]
    # the branch takes commits on top of the tag, at tag_sid + 1
    bt = branch_table(catalog(wh), IDENT, "b")
    write(bt, [{**r, **({"note": "x"} if 1 in schemas else {})} for r in rows("2026-03-01", 900)])
    assert t.on_branch("b").snapshot_ids() == [tag_sid, tag_sid + 1]


def test_create_from_a_tag_whose_snapshot_expired_pitfall_13(wh: str, pk: Table) -> None:
    tags.create_tag(pk, "ttl", snapshot_id=2, time_retained=timedelta(days=7))
    expected = snapshot_views(wh, IDENT)["main@tag-ttl"]
    expire_snapshots(pk.root, 3)
    assert not pk.snapshot_exists(2)
    result = branches.create_branch(pk, "b", from_tag="ttl")
    assert any("expired" in n for n in result.notes)
    b = pk.on_branch("b")
    written = b.snapshot(2)
    assert written.identity() == pk.tag("ttl").snapshot.identity()
    text = _bytes(_branch_dir(pk, "b") / "snapshot" / "snapshot-2").decode()
    assert "tagCreateTime" not in text and "tagTimeRetained" not in text  # a snapshot, not a tag
    views = snapshot_views(wh, IDENT)
    assert views["b@latest"] == views["b@snapshot-2"] == views["b@tag-ttl"] == expected


def test_create_from_snapshot_creates_a_protected_fork_tag(wh: str, pk: Table) -> None:
    result = branches.create_branch(pk, "b", from_snapshot=3)
    fork = branches.fork_tag_name("b", 3)
    assert fork == "fork-b-3"
    assert pk.tag(fork).snapshot.identity() == pk.snapshot(3).identity()
    assert any(fork in n for n in result.notes)
    views = snapshot_views(wh, IDENT)
    assert views["b@latest"] == views["main@snapshot-3"] == views[f"b@tag-{fork}"]
    assert tags.protected_fork_tags(pk) == {fork: ["b"]}
    rows_ = {r.branch_name: r for r in branches.list_branches(pk)}
    assert (rows_["b"].from_tag, rows_["b"].fork_snapshot_id) == (fork, 3)
    before = dir_listing(wh)
    with pytest.raises(errors.ProtectedObjectError):
        tags.plan_delete_tag(pk, fork)
    with pytest.raises(errors.ProtectedObjectError):
        tags.rename_tag(pk, fork, "other")
    with pytest.raises(errors.ProtectedObjectError):
        tags.replace_tag(pk, fork, snapshot_id=5)
    assert dir_listing(wh) == before


def test_create_empty_copies_every_schema(wh: str) -> None:
    t = _evolved(wh)
    branches.create_branch(t, "e")
    bdir = _branch_dir(t, "e")
    assert sorted(os.listdir(bdir)) == ["schema"]
    assert sorted(os.listdir(bdir / "schema")) == ["schema-0", "schema-1"]
    for s in (0, 1):
        assert _bytes(bdir / "schema" / f"schema-{s}") == _bytes(t.schema_path(s))
    rows_ = {r.branch_name: r for r in branches.list_branches(t)}
    assert (rows_["e"].from_tag, rows_["e"].fork_snapshot_id) == (None, None)
    # pypaimon writes to it with the latest schema; its first commit is snapshot 1
    bt = branch_table(catalog(wh), IDENT, "e")
    write(bt, [{"dt": "x", "id": 1, "amount": 2.0, "note": "empty"}])
    assert t.on_branch("e").snapshot_ids() == [1]
    assert read_rows(branch_table(catalog(wh), IDENT, "e")) == [
        (("amount", 2.0), ("dt", "x"), ("id", 1), ("note", "empty"))]


# -- drop / rename / list ---------------------------------------------------------------------


def _with_branch(wh: str, t: Table, name: str = "b", tag: str = "t2") -> None:
    branches.create_branch(t, name, from_tag=tag)
    write(branch_table(catalog(wh), IDENT, name), rows("2026-01-09", 100))


def test_drop_removes_the_branch_directory_only(wh: str, pk: Table) -> None:
    _with_branch(wh, pk)
    views = snapshot_views(wh, IDENT)
    data_before = {k: v for k, v in content_listing(wh).items() if "/branch/" not in k}
    result = branches.drop_branch(pk, "b")
    assert result.action == "dropped"
    assert not _branch_dir(pk, "b").exists()
    assert {k: v for k, v in content_listing(wh).items() if "/branch/" not in k} == data_before
    assert snapshot_views(wh, IDENT) == without(views, *_branch_views(views, "b"))
    assert catalog(wh).get_table(IDENT).branch_manager().branches() == []


@pytest.mark.parametrize("option", ["scan.fallback-branch", "scan.primary-branch"])
def test_drop_of_a_fallback_branch_is_refused(wh: str, pk: Table, option: str) -> None:
    _with_branch(wh, pk)
    catalog(wh).alter_table(IDENT, [SchemaChange.set_option(option, "b")])
    before = dir_listing(wh)
    with pytest.raises(errors.ProtectedObjectError):
        branches.drop_branch(pk, "b")
    assert dir_listing(wh) == before


def test_rename(wh: str, pk: Table) -> None:
    _with_branch(wh, pk)
    views = snapshot_views(wh, IDENT)
    result = branches.rename_branch(pk, "b", "c")
    assert result.action == "renamed"
    assert not _branch_dir(pk, "b").exists()
    after = snapshot_views(wh, IDENT)
    assert _branch_views(after, "c") == _rename_views(views, "b", "c")
    assert without(after, *_branch_views(after, "c")) == without(views, *_branch_views(views, "b"))
    rows_ = {r.branch_name: r for r in branches.list_branches(pk)}
    assert list(rows_) == ["c"] and (rows_["c"].from_tag, rows_["c"].fork_snapshot_id) == ("t2", 2)


def test_rename_onto_existing_or_of_main_is_refused(wh: str, pk: Table) -> None:
    _with_branch(wh, pk, "b")
    _with_branch(wh, pk, "c", tag="t4")
    before = dir_listing(wh)
    with pytest.raises(errors.AlreadyExistsError):
        branches.rename_branch(pk, "b", "c")
    with pytest.raises(errors.InvalidNameError):
        branches.rename_branch(pk, "main", "x")
    assert dir_listing(wh) == before


def test_list_branches_columns_and_pypaimon_branches_table(wh: str, pk: Table) -> None:
    _with_branch(wh, pk, "b", tag="t2")
    branches.create_branch(pk, "c", from_snapshot=4)
    branches.create_branch(pk, "e")
    listed = {r.branch_name: r for r in branches.list_branches(pk)}
    assert list(listed) == ["b", "c", "e"]
    assert {n: (r.from_tag, r.fork_snapshot_id) for n, r in listed.items()} == {
        "b": ("t2", 2), "c": ("fork-c-4", 4), "e": (None, None)}
    py = {dict(r)["branch_name"]: dict(r)["create_time"] for r in read_rows(catalog(wh).get_table(f"{IDENT}$branches"))}
    assert set(py) == set(listed)
    for name, row in listed.items():  # both are the branch directory's mtime
        assert abs((row.create_time.replace(tzinfo=None) - py[name]).total_seconds()) <= 0.002
        assert set(row.as_dict()) == {"branch_name", "create_time", "from_tag", "fork_snapshot_id"}


def test_fork_detection_survives_a_forced_tag_rename_in_main(wh: str, pk: Table) -> None:
    _with_branch(wh, pk, "b", tag="t2")
    tags.rename_tag(pk, "t2", "renamed", force=True)
    row = branches.list_branches(pk)[0]
    assert (row.branch_name, row.fork_snapshot_id) == ("b", 2)
    assert tags.protected_fork_tags(pk) == {"renamed": ["b"]}
    before = dir_listing(wh)
    with pytest.raises(errors.ProtectedObjectError):
        tags.plan_delete_tag(pk, "renamed")
    assert dir_listing(wh) == before


# -- fast-forward -----------------------------------------------------------------------------


def _ff_scenario(wh: str, *, schema_change: bool = True) -> Table:
    """Main 1..5 (tags t1, t2, t4, t5), EARLIEST=1 as an expiry would write; branch b forked
    from t2 with two own commits (3, 4) and, between them, a branch-only schema change."""
    build_history(wh, IDENT, commits=5)
    t = open_table(wh, IDENT)
    for sid in (1, 2, 4, 5):
        tags.create_tag(t, f"t{sid}", snapshot_id=sid)
    (Path(t.root) / "snapshot" / "EARLIEST").write_text("1")
    branches.create_branch(t, "b", from_tag="t2")
    write(branch_table(catalog(wh), IDENT, "b"), rows("2026-01-07", 200))
    if schema_change:
        _add_note_column(wh, f"{IDENT}$branch_b")
        write(branch_table(catalog(wh), IDENT, "b"), [{"dt": "2026-01-08", "id": 300, "amount": 3.0, "note": "b"}])
    else:
        write(branch_table(catalog(wh), IDENT, "b"), rows("2026-01-08", 300))
    assert t.on_branch("b").snapshot_ids() == [2, 3, 4]
    return t


@pytest.mark.parametrize("expired_upto", [0, 1, 3])
def test_fast_forward_main_ahead_of_the_fork_p1(wh: str, expired_upto: int) -> None:
    t = _ff_scenario(wh)
    if expired_upto:
        expire_snapshots(t.root, expired_upto)
    views = snapshot_views(wh, IDENT)
    assert _bytes(Path(t.root) / "branch" / "branch-b" / "schema" / "schema-1")  # branch-only schema
    assert not os.path.exists(t.schema_path(1))
    result = branches.fast_forward(t, "b")
    assert result.action == "fast-forwarded"
    after = snapshot_views(wh, IDENT)
    # main reads exactly what the branch reads: latest and every branch snapshot id
    assert after["main@latest"] == views["b@latest"]
    for sid in (2, 3, 4):
        assert after[f"main@snapshot-{sid}"] == views[f"b@snapshot-{sid}"], sid
        assert _bytes(t.snapshot_path(sid)) == _bytes(t.on_branch("b").snapshot_path(sid))
    assert "main@snapshot-5" not in after
    # tags newer than the fork are gone, older ones (and the fork tag) read as before
    assert sorted(t.tag_names()) == ["t1", "t2"]
    assert after["main@tag-t1"] == views["main@tag-t1"] and after["main@tag-t2"] == views["main@tag-t2"]
    if expired_upto < 1:
        assert after["main@snapshot-1"] == views["main@snapshot-1"]
    # schemas: main now has the branch's schema-1 (byte copy) and pypaimon reads with it
    assert _bytes(t.schema_path(1)) == _bytes(t.on_branch("b").schema_path(1))
    fresh = catalog(wh).get_table(IDENT)
    assert [f.name for f in fresh.table_schema.fields] == ["dt", "id", "amount", "note"]
    assert fresh.snapshot_manager().get_latest_snapshot().id == 4
    # EARLIEST still names an existing snapshot, the oldest one main keeps
    earliest = int((Path(t.root) / "snapshot" / "EARLIEST").read_text())
    assert t.snapshot_exists(earliest)
    assert earliest == min(t.snapshot_ids()) == (1 if expired_upto < 1 else 2)
    assert fresh.snapshot_manager().try_get_earliest_snapshot().id == earliest
    # the branch itself is untouched
    assert _branch_views(after, "b") == _branch_views(views, "b")


def test_fast_forward_of_a_branch_without_tag_dir_pitfall_14(wh: str) -> None:
    t = _ff_scenario(wh, schema_change=False)
    bdir = _branch_dir(t, "b")
    (bdir / "tag" / "tag-t2").unlink()
    (bdir / "tag").rmdir()
    views = snapshot_views(wh, IDENT)
    branches.fast_forward(t, "b")
    after = snapshot_views(wh, IDENT)
    assert after["main@latest"] == views["b@latest"]
    for sid in (2, 3, 4):
        assert after[f"main@snapshot-{sid}"] == views[f"b@snapshot-{sid}"]
    # as Java: main's tags at snapshots >= the branch's earliest go (t2 too, the branch has no
    # copy of it to bring back); t1 stays and reads as before
    assert t.tag_names() == ["t1"]
    assert after["main@tag-t1"] == views["main@tag-t1"]


@pytest.mark.parametrize("how", ["snapshot-and-tag", "snapshot-only"])
def test_fast_forward_of_a_diverged_branch_is_refused(wh: str, how: str) -> None:
    t = _ff_scenario(wh)
    bdir = _branch_dir(t, "b")
    (bdir / "snapshot" / "snapshot-2").unlink()
    if how == "snapshot-and-tag":
        (bdir / "tag" / "tag-t2").unlink()
    assert t.on_branch("b").earliest_snapshot_id() == 3
    before = dir_listing(wh)
    with pytest.raises(errors.DivergedBranchError):
        branches.fast_forward(t, "b")
    assert dir_listing(wh) == before


def test_fast_forward_of_a_branch_whose_fork_snapshot_expired_when_main_kept_nothing_in_between(wh: str) -> None:
    """The branch's own expiry removed its copy of the fork snapshot (2); main kept no snapshot
    from 2 to the branch's earliest (3): main can follow the branch, as Java's fast_forward does."""
    t = _ff_scenario(wh, schema_change=False)
    (_branch_dir(t, "b") / "snapshot" / "snapshot-2").unlink()
    for sid in (1, 2):
        (Path(t.root) / "snapshot" / f"snapshot-{sid}").unlink()
    (Path(t.root) / "snapshot" / "EARLIEST").write_text("3")
    views = snapshot_views(wh, IDENT)
    branches.fast_forward(t, "b")
    assert snapshot_views(wh, IDENT)["main@latest"] == views["b@latest"]


class Crash(RuntimeError):
    pass


def _crashing(monkeypatch: pytest.MonkeyPatch, k: int, midway: bool) -> Callable[[], int]:
    """Make FileIO's mutating methods raise on the (k+1)-th call. ``midway``: a multi-file
    delete removes its first file before raising (a crash inside a batch)."""
    calls = 0
    originals = {name: getattr(FileIO, name) for name in ("write_new", "overwrite", "delete_files")}

    def wrap(name: str) -> Callable[..., Any]:
        original = originals[name]

        def method(self: FileIO, *args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls > k:
                if midway and name == "delete_files":
                    paths = list(args[0])
                    if len(paths) > 1:
                        original(self, paths[:1])
                raise Crash(f"{name} call {calls}")
            return original(self, *args, **kwargs)

        return method

    for name in originals:
        monkeypatch.setattr(FileIO, name, wrap(name))
    return lambda: calls


@pytest.mark.parametrize("midway", [False, True])
def test_fast_forward_crash_after_k_calls_then_rerun_finishes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             midway: bool) -> None:
    template = str(tmp_path / "template")
    _ff_scenario(template)
    clean = copy_warehouse(template, tmp_path / "clean")
    branches.fast_forward(open_table(clean, IDENT), "b")
    clean_state = content_listing(clean)
    clean_views = snapshot_views(clean, IDENT)
    crashed_at = []
    for k in range(40):
        wh = copy_warehouse(template, tmp_path / f"k{k}")
        with monkeypatch.context() as m:
            _crashing(m, k, midway)
            try:
                branches.fast_forward(open_table(wh, IDENT), "b")
            except Crash:
                crashed_at.append(k)
            else:
                break
        result = branches.fast_forward(open_table(wh, IDENT), "b")  # the rerun, no faults
        assert result.action == "fast-forwarded"
        assert content_listing(wh) == clean_state, f"k={k}"
        assert snapshot_views(wh, IDENT) == clean_views, f"k={k}"
    else:
        pytest.fail("fast_forward never finished within 40 mutating calls")
    assert len(crashed_at) >= 6  # deletes of tags, snapshots; copies of schema, snapshots; hints
    # a finished fast-forward is idempotent
    again = branches.fast_forward(open_table(clean, IDENT), "b")
    assert again.deleted == ()
    assert content_listing(clean) == clean_state


# -- replace main -----------------------------------------------------------------------------


@pytest.mark.parametrize("backup", [None, "bak"])
def test_replace_main(wh: str, backup: str | None) -> None:
    t = _ff_scenario(wh)
    views = snapshot_views(wh, IDENT)
    main_views = _branch_views(views, "main")
    result = branches.replace_main(t, "b", backup=backup)
    assert result.action == "replaced-main"
    assert not _branch_dir(t, "b").exists()  # source gone
    # a fresh pypaimon table object on the table root reads the branch's data
    fresh = catalog(wh).get_table(IDENT)
    assert read_rows(fresh) == views["b@latest"]
    assert [f.name for f in fresh.table_schema.fields] == ["dt", "id", "amount", "note"]
    after = snapshot_views(wh, IDENT)
    assert _branch_views(after, "main") == _rename_views(views, "b", "main")
    if backup:
        assert _branch_views(after, backup) == _rename_views(main_views, "main", backup)
        assert sorted(fresh.branch_manager().branches()) == [backup]
    else:
        assert fresh.branch_manager().branches() == []
        assert set(after) == set(_branch_views(after, "main"))


# -- create: reruns ---------------------------------------------------------------------------


# Mutating calls of a create from tag t2@2: write_new tag-t2, snapshot-2, schema-0, EARLIEST,
# LATEST (k = 0..4 crash before call k+1). From snapshot 2: write_new of the fork tag in main
# first, then the same five (k = 0..5). Every crash point must be resumable by a rerun.
@pytest.mark.parametrize(
    ("source", "k"),
    [
        *[("tag", k) for k in range(5)],
        *[("snapshot", k) for k in range(6)],
    ],
)
def test_create_branch_crash_after_k_writes_then_rerun_completes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 source: str, k: int) -> None:
    template = str(tmp_path / "template")
    build_history(template, IDENT, commits=3)
    tags.create_tag(open_table(template, IDENT), "t2", snapshot_id=2)
    kwargs: dict[str, Any] = {"from_tag": "t2"} if source == "tag" else {"from_snapshot": 2}
    clean = copy_warehouse(template, tmp_path / "clean")
    branches.create_branch(open_table(clean, IDENT), "b", **kwargs)
    wh = copy_warehouse(template, tmp_path / "crash")
    with monkeypatch.context() as m:
        _crashing(m, k, midway=False)
        with pytest.raises(Crash):
            branches.create_branch(open_table(wh, IDENT), "b", **kwargs)
    result = branches.create_branch(open_table(wh, IDENT), "b", **kwargs)
    assert result.action == "created"
    assert content_listing(wh) == content_listing(clean)
    assert snapshot_views(wh, IDENT) == snapshot_views(clean, IDENT)


def test_recreating_a_branch_never_resurrects_its_expired_fork_snapshot(wh: str, pk: Table) -> None:
    _with_branch(wh, pk, "b", tag="t2")
    write(branch_table(catalog(wh), IDENT, "b"), rows("2026-01-10", 110))
    expire_snapshots(pk.root, 2, branch="b")  # the branch expired its fork snapshot 2
    before = dir_listing(wh)
    with pytest.raises(errors.AlreadyExistsError):
        branches.create_branch(pk, "b", from_tag="t2")
    assert dir_listing(wh) == before
    assert not (_branch_dir(pk, "b") / "snapshot" / "snapshot-2").exists()
