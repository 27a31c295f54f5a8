"""pypaimon 2.1.0 writes a table to moto S3 (its own pyarrow S3 client); tablekeeper's table
handle reads it back through s3fs with the same Paimon-style options."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import s3fs

from tablekeeper.core import errors
from tablekeeper.core.paimon.metadata.snapshot import Snapshot
from tablekeeper.core.paimon.table import Table, open_table
from tablekeeper.core.storage import FileIO
from tests.support import paimon as tp
from tests.support import s3 as s3support

pytestmark = pytest.mark.s3


def _build(warehouse: str, options: dict[str, str]) -> Any:
    cat = tp.catalog(warehouse, options)
    table = tp.create_table(cat, "db.orders", tp.ORDERS_SCHEMA, primary_keys=["dt", "id"],
                            partition_keys=["dt"], options={"bucket": "1"})
    tp.write(table, tp.orders_rows("2026-01-01", 0, 3))
    tp.write(table, tp.orders_rows("2026-01-02", 3, 3))
    tp.write(table, tp.orders_rows("2026-01-01", 1, 2))  # upsert
    table.create_tag("nightly", snapshot_id=1)
    table.create_tag("weekly", snapshot_id=2, time_retained="1d")
    table.branch_manager().create_branch("b1", tag_name="nightly")
    return cat.get_table("db.orders")


@pytest.fixture(scope="module")
def pypaimon_objects(s3_endpoint: str) -> dict[str, bytes]:
    """The table ``_build`` writes through pypaimon on S3, once per module, as objects."""
    options = s3support.paimon_s3_options(s3_endpoint)
    return s3support.bucket_snapshot_once(s3_endpoint, lambda: _build(f"s3://{s3support.BUCKET}/wh", options))


@pytest.fixture
def pypaimon_table(s3_warehouse: str, s3_options: dict[str, str], pypaimon_objects: dict[str, bytes]) -> Any:
    """A fresh copy of the pypaimon-written table (restored into the emptied bucket)."""
    assert s3_warehouse == f"s3://{s3support.BUCKET}/wh"
    s3support.put_objects(s3support.BUCKET, pypaimon_objects)
    return tp.catalog(s3_warehouse, s3_options).get_table("db.orders")


def test_open_table_reads_what_pypaimon_wrote(pypaimon_table: Any, s3_warehouse: str,
                                             s3_options: dict[str, str]) -> None:
    handle = open_table(s3_warehouse, "db.orders", options=s3_options)

    assert handle.root == "s3://lake/wh/db.db/orders"
    assert handle.identifier == "db.orders"
    assert handle.snapshot_ids() == [1, 2, 3]
    assert handle.latest_snapshot_id() == 3
    assert handle.earliest_snapshot_id() == 1
    assert not handle.file_io.exists(f"{handle.root}/snapshot/EARLIEST")  # pypaimon never writes it

    sm = pypaimon_table.snapshot_manager()
    for ours in handle.snapshots():
        theirs = sm.get_snapshot_by_id(ours.id)
        assert (ours.schema_id, ours.base_manifest_list, ours.delta_manifest_list, ours.commit_kind,
                ours.time_millis, ours.total_record_count, ours.uuid) == (
            theirs.schema_id, theirs.base_manifest_list, theirs.delta_manifest_list, theirs.commit_kind,
            theirs.time_millis, theirs.total_record_count, theirs.uuid)

    schema = handle.schema()
    assert schema.id == 0
    assert [f["name"] for f in schema.fields] == ["dt", "id", "amount"]
    assert schema.partition_keys == ("dt",)
    assert schema.primary_keys == ("dt", "id")
    assert handle.options()["bucket"] == "1"


def test_tags_and_branches_written_by_pypaimon(pypaimon_table: Any, s3_warehouse: str,
                                              s3_options: dict[str, str]) -> None:
    handle = open_table(s3_warehouse, "db.orders", options=s3_options)

    assert handle.tag_names() == ["nightly", "weekly"]
    assert sorted(pypaimon_table.list_tags()) == ["nightly", "weekly"]
    nightly, weekly = handle.tags()
    assert (nightly.name, nightly.snapshot_id, nightly.time_retained, nightly.create_time) == ("nightly", 1, None, None)
    assert (weekly.name, weekly.snapshot_id, weekly.time_retained) == ("weekly", 2, timedelta(days=1))
    assert weekly.create_time is not None
    assert abs(datetime.now() - weekly.create_time) < timedelta(minutes=5)  # writer's local wall clock
    # pypaimon reads the same retention
    assert pypaimon_table.tag_manager().get("weekly").tag_time_retained == timedelta(days=1)

    assert handle.branch_names() == ["b1"]
    b1 = open_table(s3_warehouse, "db.orders", branch="b1", options=s3_options)
    assert b1.snapshot_ids() == [1]
    assert b1.tag_names() == ["nightly"]
    assert b1.schema().primary_keys == ("dt", "id")
    with pytest.raises(errors.BranchNotFoundError):
        handle.on_branch("b2")


def test_walk_sees_pypaimon_files_but_not_its_directory_markers(
        pypaimon_table: Any, s3: s3fs.S3FileSystem, s3_warehouse: str, s3_options: dict[str, str]) -> None:
    handle = open_table(s3_warehouse, "db.orders", options=s3_options)
    markers = [o["Key"] for o in s3.call_s3("list_objects_v2", Bucket="lake", Prefix="wh/")["Contents"]
               if o["Key"].endswith("/")]
    assert "wh/db.db/orders/tag/" in markers  # pyarrow's create_dir writes these

    files = {s.path.removeprefix(handle.root + "/"): s for s in handle.file_io.walk_files(handle.root)}

    assert {"schema/schema-0", "snapshot/snapshot-1", "snapshot/snapshot-3", "snapshot/LATEST",
            "tag/tag-nightly", "tag/tag-weekly", "branch/branch-b1/snapshot/snapshot-1"} <= set(files)
    assert not any(name.endswith("/") or name in ("tag", "snapshot", "branch") for name in files)
    assert all(s.size > 0 and not s.is_dir for s in files.values())
    assert len([n for n in files if n.endswith(".parquet")]) == 3
    assert handle.file_io.read_text(f"{handle.root}/snapshot/LATEST") == "3"


def test_delete_tree_drops_a_pypaimon_branch_completely(pypaimon_table: Any, s3: s3fs.S3FileSystem,
                                                       s3_warehouse: str, s3_options: dict[str, str]) -> None:
    handle = open_table(s3_warehouse, "db.orders", options=s3_options)
    branch_path = handle.on_branch("b1").branch_path

    handle.file_io.delete_tree(branch_path)

    assert handle.branch_names() == []
    assert s3.call_s3("list_objects_v2", Bucket="lake", Prefix="wh/db.db/orders/branch/branch-b1")["KeyCount"] == 0
    assert tp.catalog(s3_warehouse, s3_options).get_table("db.orders").branch_manager().branches() == []


def test_tables_that_do_not_exist(s3_warehouse: str, s3_options: dict[str, str]) -> None:
    tp.create_table(tp.catalog(s3_warehouse, s3_options), "db.orders", tp.ORDERS_SCHEMA)
    assert open_table(s3_warehouse, "db.orders", options=s3_options).snapshot_ids() == []
    with pytest.raises(errors.TableNotFoundError):
        open_table(s3_warehouse, "db.nope", options=s3_options)
    with pytest.raises(errors.TableNotFoundError):
        open_table(s3_warehouse, "nodb.orders", options=s3_options)
    with pytest.raises(errors.InvalidInputError):
        open_table(s3_warehouse, "orders", options=s3_options)


def test_java_fixture_uploaded_to_s3_reads_byte_identically(s3: s3fs.S3FileSystem, s3_bucket: str,
                                                           s3_options: dict[str, str], tmp_path: Path) -> None:
    warehouse = tp.extract_java_fixture(tmp_path / "java")
    s3.put(str(warehouse) + "/", f"{s3_bucket}/java/", recursive=True)
    io = FileIO.for_uri(f"s3://{s3_bucket}/java", s3_options)

    for name in tp.JAVA_TABLES:
        handle: Table = open_table(f"s3://{s3_bucket}/java", f"default.{name}", file_io=io)
        local = warehouse / "default.db" / name / "snapshot"
        expected_ids = sorted(int(p.name.split("-")[1]) for p in local.glob("snapshot-*"))
        assert handle.snapshot_ids() == expected_ids
        assert handle.latest_snapshot_id() == int((local / "LATEST").read_text())
        assert handle.earliest_snapshot_id() == int((local / "EARLIEST").read_text())
        for sid in expected_ids:
            raw = io.read_text(handle.snapshot_path(sid))
            assert raw == (local / f"snapshot-{sid}").read_text()
            assert Snapshot.from_json(raw).to_json() == raw
