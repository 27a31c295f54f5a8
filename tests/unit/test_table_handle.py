"""The table handle on tables pypaimon wrote and on the Java-written fixture: snapshot listing,
hint rules (Java's HintFileUtils), tags, branches, consumers and error mapping."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core import errors
from tablekeeper.core.paimon.metadata.snapshot import Snapshot
from tablekeeper.core.paimon.table import Table, open_table, open_table_path, table_path
from tests.support import paimon as tp

IDENT = "db.orders"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once: 3 commits, tags t1 (snapshot 1) and t3 (snapshot 3, 1 d retention), branch b1
    from t1 with its own commit, and an empty branch b2."""
    warehouse = tmp_path_factory.mktemp("template")
    cat = tp.catalog(str(warehouse))
    table = tp.create_table(cat, IDENT, tp.ORDERS_SCHEMA, primary_keys=["dt", "id"],
                            partition_keys=["dt"], options={"bucket": "1"})
    for i in range(3):
        tp.write(table, tp.orders_rows(f"2026-01-0{i + 1}", i * 2, 2))
    table.create_tag("t1", snapshot_id=1)
    table.create_tag("t3", snapshot_id=3, time_retained="1 d")
    table.branch_manager().create_branch("b1", tag_name="t1")
    tp.write(tp.branch_table(cat, IDENT, "b1"), tp.orders_rows("2026-02-01", 100, 2))
    table.branch_manager().create_branch("b2")
    return warehouse


@pytest.fixture
def warehouse(template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "wh"
    shutil.copytree(template, target)
    return target


@pytest.fixture
def table(warehouse: Path) -> Table:
    return open_table(str(warehouse), IDENT)


def _snapshot_dir(table: Table) -> Path:
    return Path(table.dir("snapshot"))


# -- snapshots and hints -----------------------------------------------------------------------
def test_snapshots_of_a_pypaimon_table(table: Table, warehouse: Path) -> None:
    assert table.root == str(warehouse / "db.db" / "orders")
    assert table.branch == "main"
    assert table.identifier == IDENT
    assert table.snapshot_ids() == [1, 2, 3]
    assert table.latest_snapshot_id() == 3
    assert table.earliest_snapshot_id() == 1
    assert [s.id for s in table.snapshots()] == [1, 2, 3]
    assert table.latest_snapshot() is not None and table.latest_snapshot().id == 3  # type: ignore[union-attr]
    pypaimon_latest = tp.table_at(str(warehouse), IDENT).snapshot_manager().get_latest_snapshot()
    assert table.snapshot(3).base_manifest_list == pypaimon_latest.base_manifest_list


def test_pypaimon_never_writes_earliest(table: Table) -> None:
    names = {p.name for p in _snapshot_dir(table).iterdir()}
    assert "LATEST" in names and "EARLIEST" not in names
    assert (_snapshot_dir(table) / "LATEST").read_text() == "3"


def test_latest_hint_is_trusted_only_if_the_next_snapshot_is_absent(table: Table) -> None:
    snapshots = _snapshot_dir(table)
    # A gap: snapshot-5 exists, 4 does not. Java trusts LATEST=3 because snapshot-4 is absent.
    shutil.copy(snapshots / "snapshot-3", snapshots / "snapshot-5")
    assert table.latest_snapshot_id() == 3
    # A stale hint (LATEST=2 while snapshot-3 exists) is ignored: the listing decides.
    (snapshots / "LATEST").write_text("2")
    assert table.latest_snapshot_id() == 5


def test_latest_falls_back_to_listing_when_the_hint_is_unusable(table: Table) -> None:
    snapshots = _snapshot_dir(table)
    (snapshots / "LATEST").write_text("garbage")
    assert table.latest_snapshot_id() == 3
    (snapshots / "LATEST").write_text("9")  # points at a snapshot that does not exist
    assert table.latest_snapshot_id() == 3
    (snapshots / "LATEST").unlink()
    assert table.latest_snapshot_id() == 3


def test_earliest_hint_is_trusted_only_if_that_snapshot_exists(table: Table) -> None:
    snapshots = _snapshot_dir(table)
    (snapshots / "EARLIEST").write_text("2")
    assert table.earliest_snapshot_id() == 2  # trusted even though snapshot-1 is still there
    (snapshots / "snapshot-1").unlink()
    (snapshots / "EARLIEST").write_text("1")  # stale: snapshot-1 is gone
    assert table.earliest_snapshot_id() == 2
    (snapshots / "EARLIEST").write_text("x")
    assert table.earliest_snapshot_id() == 2


def test_only_versioned_names_are_snapshots(table: Table) -> None:
    snapshots = _snapshot_dir(table)
    for stray in (".snapshot-4.3f2a.tmp", "snapshot-4a1b2c.tmp", "snapshot-", "snapshot-x", "snapshot-٣", "other"):
        (snapshots / stray).write_text("{}")
    (snapshots / "snapshot-7").mkdir()  # a directory is never a snapshot
    assert table.snapshot_ids() == [1, 2, 3]
    assert table.latest_snapshot_id() == 3


def test_missing_snapshot(table: Table) -> None:
    with pytest.raises(errors.SnapshotNotFoundError):
        table.snapshot(42)
    assert not table.snapshot_exists(42)
    assert table.snapshot_path(42).endswith("/snapshot/snapshot-42")


def test_table_without_snapshots(tmp_path: Path) -> None:
    tp.create_table(tp.catalog(str(tmp_path)), "db.empty", tp.EVENTS_SCHEMA)
    empty = open_table(str(tmp_path), "db.empty")
    assert empty.snapshot_ids() == []
    assert empty.latest_snapshot_id() is None
    assert empty.earliest_snapshot_id() is None
    assert empty.latest_snapshot() is None
    assert empty.tag_names() == [] and empty.branch_names() == [] and empty.consumers() == []


# -- schema ------------------------------------------------------------------------------------
def test_schema_and_options(table: Table) -> None:
    assert table.schema_ids() == [0]
    schema = table.schema()
    assert schema.primary_keys == ("dt", "id")
    assert schema.partition_keys == ("dt",)
    assert table.options()["bucket"] == "1"
    with pytest.raises(errors.NotFoundError):
        table.schema(7)


# -- tags --------------------------------------------------------------------------------------
def test_tags(table: Table) -> None:
    assert table.tag_names() == ["t1", "t3"]
    t1, t3 = table.tags()
    assert (t1.name, t1.snapshot_id, t1.time_retained) == ("t1", 1, None)
    assert (t3.name, t3.snapshot_id) == ("t3", 3)
    assert t3.time_retained is not None and t3.time_retained.days == 1
    assert table.tag_exists("t1") and not table.tag_exists("nope")
    with pytest.raises(errors.TagNotFoundError):
        table.tag("nope")


def test_stray_crc_files_and_the_success_file_directory_are_not_tags(table: Table, warehouse: Path) -> None:
    tags = Path(table.dir("tag"))
    (tags / ".tag-t1.crc").write_bytes(b"crc")  # Hadoop checksum file
    (tags / "tag-success-file").mkdir()  # tag.create-success-file=true
    (tags / "tag-success-file" / "t1_SUCCESS").write_text("")
    # pypaimon 2.1.0's own listing is fooled (paimon-semantics.md, pitfall P3)
    assert {"t1.crc", "success-file"} <= set(tp.table_at(str(warehouse), IDENT).tag_manager().list_tags())
    (tags / "README").write_text("not a tag")  # (pypaimon's listing would now crash)

    assert table.tag_names() == ["t1", "t3"]
    assert [t.name for t in table.tags()] == ["t1", "t3"]


def test_tags_are_sorted_by_snapshot_then_name(table: Table) -> None:
    tags = Path(table.dir("tag"))
    shutil.copy(tags / "tag-t1", tags / "tag-a-late-name")
    shutil.copy(tags / "tag-t3", tags / "tag-0-early")
    assert [(t.snapshot_id, t.name) for t in table.tags()] == [(1, "a-late-name"), (1, "t1"), (3, "0-early"), (3, "t3")]


# -- branches ----------------------------------------------------------------------------------
def test_branch_listing(table: Table, warehouse: Path) -> None:
    assert sorted(tp.table_at(str(warehouse), IDENT).branch_manager().branches()) == ["b1", "b2"]
    branch_dir = Path(table.root) / "branch"
    (branch_dir / "not-a-branch").mkdir()
    (branch_dir / "branch-file").write_text("a file, not a branch directory")

    assert table.branch_names() == ["b1", "b2"]
    assert [t.branch for t in table.all_branches()] == ["main", "b1", "b2"]
    # pypaimon 2.1.0 counts the file as a branch named "file"
    assert "file" in tp.table_at(str(warehouse), IDENT).branch_manager().branches()


def test_branch_handles(table: Table, warehouse: Path) -> None:
    b1 = open_table(str(warehouse), IDENT, branch="b1")
    assert b1.branch == "b1"
    assert b1.branch_path == str(Path(table.root) / "branch" / "branch-b1")
    assert b1.dir("snapshot") == f"{b1.branch_path}/snapshot"
    assert b1.shared_dir("manifest") == f"{table.root}/manifest"  # manifests live at the root
    assert b1.snapshot_ids() == [1, 2]
    assert b1.latest_snapshot_id() == 2
    assert b1.tag_names() == ["t1"]
    assert b1.schema().primary_keys == ("dt", "id")
    def where(t: Table) -> tuple[str, str, str]:
        return (t.root, t.branch, t.identifier)

    assert where(table.on_branch("b1")) == where(b1)
    assert where(b1.on_branch("main")) == where(table)
    assert b1.on_branch("b2").branch_path == str(Path(table.root) / "branch" / "branch-b2")

    b2 = table.on_branch("b2")
    assert b2.snapshot_ids() == [] and b2.latest_snapshot_id() is None
    assert b2.schema_ids() == [0]


def test_unknown_branch(table: Table, warehouse: Path) -> None:
    with pytest.raises(errors.BranchNotFoundError) as info:
        table.on_branch("nope")
    assert info.value.fix
    with pytest.raises(errors.BranchNotFoundError):
        open_table(str(warehouse), IDENT, branch="nope")


@pytest.mark.parametrize("name", ["../b1", "a/b", "", "123", "a.b"])
def test_bad_branch_names_are_invalid_input(table: Table, name: str) -> None:
    with pytest.raises(errors.InvalidNameError):
        table.on_branch(name)


# -- tables and identifiers --------------------------------------------------------------------
def test_unknown_table(warehouse: Path) -> None:
    with pytest.raises(errors.TableNotFoundError):
        open_table(str(warehouse), "db.nope")
    with pytest.raises(errors.TableNotFoundError):
        open_table(str(warehouse), "nodb.orders")
    (warehouse / "db.db" / "hollow" / "snapshot").mkdir(parents=True)  # a directory without schema/
    with pytest.raises(errors.TableNotFoundError):
        open_table(str(warehouse), "db.hollow")
    with pytest.raises(errors.TableNotFoundError):
        open_table_path(str(warehouse / "nowhere"))


@pytest.mark.parametrize("identifier", ["a", "a.b.c", "../x.y", ".b", "a.", "a/b.c", "a.b/c", "", "x\\y.z", "db..t"])
def test_bad_identifiers_are_invalid_input(warehouse: Path, identifier: str) -> None:
    with pytest.raises(errors.InvalidInputError):
        open_table(str(warehouse), identifier)


def test_table_path() -> None:
    assert table_path("s3://lake/wh", "sales.orders") == "s3://lake/wh/sales.db/orders"
    assert table_path("/tmp/wh/", "a.b") == "/tmp/wh/a.db/b"


def test_open_by_path_derives_the_identifier(table: Table) -> None:
    by_path = open_table_path(table.root)
    assert by_path.identifier == IDENT
    assert by_path.snapshot_ids() == [1, 2, 3]
    assert open_table_path(f"file://{table.root}").root == table.root


# -- consumers ---------------------------------------------------------------------------------
def test_consumers(table: Table, warehouse: Path) -> None:
    from pypaimon.consumer.consumer import Consumer as PyConsumer

    py_table = tp.table_at(str(warehouse), IDENT)
    py_table.consumer_manager().reset_consumer("reader-b", PyConsumer(next_snapshot=3))
    consumer_dir = Path(table.dir("consumer"))
    (consumer_dir / "consumer-reader-a").write_text('{\n  "nextSnapshot" : 2\n}')  # Java's form
    assert py_table.consumer_manager().min_next_snapshot() == 2
    (consumer_dir / ".consumer-reader-a.crc").write_text("crc")
    (consumer_dir / "consumer-dir").mkdir()

    consumers = table.consumers()
    assert [(c.consumer_id, c.next_snapshot) for c in consumers] == [("reader-a", 2), ("reader-b", 3)]
    assert all(c.mtime_ms > 0 for c in consumers)
    assert table.on_branch("b1").consumers() == []


def test_broken_consumer_is_a_format_error(table: Table) -> None:
    consumer_dir = Path(table.dir("consumer"))
    consumer_dir.mkdir(exist_ok=True)
    (consumer_dir / "consumer-bad").write_text('{"somethingElse": 1}')
    with pytest.raises(errors.FormatError):
        table.consumers()


# -- the Java-written fixture ------------------------------------------------------------------
@pytest.fixture
def java_warehouse(tmp_path: Path) -> Path:
    return tp.extract_java_fixture(tmp_path / "java")


@pytest.mark.parametrize("name", tp.JAVA_TABLES)
def test_java_fixture_tables(java_warehouse: Path, name: str) -> None:
    handle = open_table(str(java_warehouse), f"default.{name}")
    snapshot_dir = java_warehouse / "default.db" / name / "snapshot"
    expected = sorted(int(p.name.removeprefix("snapshot-")) for p in snapshot_dir.glob("snapshot-*"))

    assert handle.snapshot_ids() == expected
    assert handle.latest_snapshot_id() == int((snapshot_dir / "LATEST").read_bytes()) == expected[-1]
    assert handle.earliest_snapshot_id() == int((snapshot_dir / "EARLIEST").read_bytes()) == expected[0]
    for snapshot in handle.snapshots():
        raw = (snapshot_dir / f"snapshot-{snapshot.id}").read_text()
        assert snapshot.to_json() == raw
    assert any(s.index_manifest for s in handle.snapshots())  # deletion vectors / global index
    schema = handle.schema()
    assert schema.primary_keys == ("id",)
    assert handle.options()["deletion-vectors.enabled"] == "true"
    assert handle.tag_names() == [] and handle.branch_names() == [] and handle.consumers() == []


def test_java_fixture_hint_rules(java_warehouse: Path) -> None:
    handle = open_table(str(java_warehouse), "default.test_pk_global_index_golden")
    snapshot_dir = Path(handle.dir("snapshot"))
    latest = handle.latest_snapshot_id()
    assert latest is not None and latest > 2
    # expire the first snapshot by hand: the Java EARLIEST=1 hint is now stale
    (snapshot_dir / "snapshot-1").unlink()
    assert handle.earliest_snapshot_id() == 2
    # a commit in flight wrote snapshot-(N+1) but not yet LATEST
    (snapshot_dir / f"snapshot-{latest + 1}").write_text(Snapshot.from_json(
        (snapshot_dir / f"snapshot-{latest}").read_text()).with_fields(id=latest + 1).to_json())
    assert handle.latest_snapshot_id() == latest + 1


def test_java_fixture_with_pypaimon_tags_on_top(java_warehouse: Path) -> None:
    py_table: Any = tp.table_at(str(java_warehouse), "default.test_pk_vector_golden")
    py_table.create_tag("java-1", snapshot_id=1)
    handle = open_table(str(java_warehouse), "default.test_pk_vector_golden")
    [tag] = handle.tags()
    assert (tag.name, tag.snapshot_id) == ("java-1", 1)
    assert tag.snapshot.base_manifest_list == handle.snapshot(1).base_manifest_list
