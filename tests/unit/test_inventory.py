"""core/reclaim/orphans/inventory.py on its own: S3 Inventory's manifest and row formats, plain file lists and the
checks against a table, without a store (pure parsing; the store tiers are in
tests/maintenance/test_orphans_inventory.py)."""

from __future__ import annotations

import gzip
import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tablekeeper.core.reclaim.orphans import inventory
from tablekeeper.core.storage import FileStatus

CSV_SCHEMA = "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate"


def manifest(**patch: Any) -> bytes:
    doc = {"sourceBucket": "lake", "destinationBucket": "arn:aws:s3:::inv", "version": "2016-11-30",
           "creationTimestamp": "1700000000000", "fileFormat": "CSV", "fileSchema": CSV_SCHEMA,
           "files": [{"key": "lake/cfg/data/a.csv.gz", "size": 1, "MD5checksum": "x"}]}
    doc.update(patch)
    return json.dumps({k: v for k, v in doc.items() if v is not None}).encode()


def test_manifest_fields_and_schema_spellings() -> None:
    m = inventory.parse_manifest(manifest())
    assert (m.source_bucket, m.destination_bucket, m.file_format, m.creation_ms) == ("lake", "inv", "CSV",
                                                                                   1700000000000)
    assert m.files == ("lake/cfg/data/a.csv.gz",) and m.columns[:2] == ("Bucket", "Key")
    orc = inventory.parse_manifest(manifest(fileFormat="ORC", fileSchema="struct<bucket:string,key:string,"
                                                                          "size:bigint,last_modified_date:timestamp>"))
    assert orc.columns == ("bucket", "key", "size", "last_modified_date")
    parquet = inventory.parse_manifest(manifest(
        fileFormat="Parquet", fileSchema="message s3.inventory { required binary bucket (UTF8); required binary "
                                         "key (UTF8); optional int64 size; optional int64 last_modified_date "
                                         "(TIMESTAMP_MILLIS);}"))
    assert parquet.columns == ("bucket", "key", "size", "last_modified_date")


@pytest.mark.parametrize(("patch", "reason"), [
    ({"fileFormat": "Avro"}, "unknown fileFormat 'Avro'"),
    ({"creationTimestamp": None}, "lacks creationTimestamp"),
    ({"creationTimestamp": "yesterday"}, "bad creationTimestamp"),
    ({"fileSchema": "Bucket, Key, LastModifiedDate"}, "no Size column"),
    ({"fileFormat": "ORC", "fileSchema": "bucket,key"}, "not a struct"),
])
def test_manifest_refusals_are_typed_and_carry_a_fix(patch: dict[str, Any], reason: str) -> None:
    with pytest.raises(inventory.InventoryError) as e:
        inventory.parse_manifest(manifest(**patch))
    assert reason in e.value.message and e.value.fix and e.value.reason == "InvalidInventory"


def test_csv_rows_decode_keys_and_skip_old_versions_and_delete_markers() -> None:
    m = inventory.parse_manifest(manifest())
    data = gzip.compress(b'"lake","wh%2Fdt%3Da+b%2Fdata-1.parquet","v2","true","false","10","2023-11-14T22:13:20.000Z"\n'
                         b'"lake","wh%2Fold.parquet","v1","false","false","5","2023-11-14T22:13:20.000Z"\n'
                         b'"lake","wh%2Fgone.parquet","v3","true","true","","2023-11-14T22:13:20.000Z"\n')
    assert list(inventory.parse_inventory_rows(m, data, "a.csv.gz")) == [("wh/dt=a b/data-1.parquet", 10,
                                                                         1700000000000)]
    with pytest.raises(inventory.InventoryMismatchError):
        list(inventory.parse_inventory_rows(m, gzip.compress(b'"other","k","","true","false","1","0"\n'), "x"))
    with pytest.raises(inventory.InventoryError, match="not a time"):
        list(inventory.parse_inventory_rows(m, b'"lake","k","","true","false","1","soon"\n', "x"))
    with pytest.raises(inventory.InventoryError, match="gzip"):
        list(inventory.parse_inventory_rows(m, b"\x1f\x8b broken", "x"))


def test_plain_lists_csv_and_parquet() -> None:
    csv_rows = list(inventory.parse_file_list(b"bucket,key,size,last_modified\nlake,wh/a,3,1700000000000\n", "l"))
    assert csv_rows == [("lake", "wh/a", 3, 1700000000000)]
    sink = io.BytesIO()
    pq.write_table(pa.table({"location": ["s3://lake/wh/a"], "size": [3],
                             "last_modified": pa.array([1700000000000], pa.timestamp("ms", tz="UTC"))}), sink)
    assert list(inventory.parse_file_list(sink.getvalue(), "l.parquet")) == [(None, "s3://lake/wh/a", 3,
                                                                              1700000000000)]
    with pytest.raises(inventory.InventoryError, match="needs the columns key, size and last_modified"):
        list(inventory.parse_file_list(b"name,bytes\nx,1\n", "l"))


def listing(kind: inventory.Kind = "s3-inventory", bucket: str | None = "lake", taken: int = 1_000,
            paths: tuple[str, ...] = ("s3://lake/wh/db.db/t/manifest/m-1",)) -> inventory.Listing:
    return inventory.Listing("report", kind, taken, bucket, tuple(FileStatus(p, 1, 500) for p in paths), len(paths))


def test_check_listing_bucket_prefix_and_time() -> None:
    root = "s3://lake/wh/db.db/t"
    inventory.check_listing(listing(), root, 2_000)
    with pytest.raises(inventory.InventoryMismatchError, match="lists bucket 'other'"):
        inventory.check_listing(listing(bucket="other"), root, 2_000)
    with pytest.raises(inventory.InventoryMismatchError, match="is not on S3"):
        inventory.check_listing(listing(), "/wh/db.db/t", 2_000)
    with pytest.raises(inventory.InventoryMismatchError, match="names no file under"):
        inventory.check_listing(listing(paths=("s3://lake/wh/db.db/t2/manifest/m-1",)), root, 2_000)
    with pytest.raises(inventory.InventoryTooRecentError):
        inventory.check_listing(listing(taken=2_000), root, 2_000)
    inventory.check_listing(listing(kind="file-list", bucket=None, paths=("/wh/db.db/t/x",)), "/wh/db.db/t", 2_000)


def test_a_downloaded_report_finds_its_data_files_by_key(tmp_path: Any) -> None:
    """``aws s3 sync`` of the destination prefix keeps S3 Inventory's layout: the manifest's keys
    resolve below its parent directories."""
    from tablekeeper.core.storage import FileIO

    data = gzip.compress(b'"lake","wh%2Fdb.db%2Ft%2Fmanifest%2Fm-1","v","true","false","7","2023-11-14T22:13:20Z"\n'
                         b'"lake","wh%2Fdb.db%2Fother%2Fx","v","true","false","7","2023-11-14T22:13:20Z"\n')
    (tmp_path / "lake" / "cfg" / "data").mkdir(parents=True)
    (tmp_path / "lake" / "cfg" / "data" / "a.csv.gz").write_bytes(data)
    (tmp_path / "lake" / "cfg" / "2023-11-14T00-00Z").mkdir()
    path = tmp_path / "lake" / "cfg" / "2023-11-14T00-00Z" / "manifest.json"
    path.write_bytes(manifest())
    got = inventory.load(str(path), FileIO.for_uri(str(path)), "s3://lake/wh/db.db/t", ("s3://lake/wh/db.db/t",))
    assert got.kind == "s3-inventory" and got.bucket == "lake" and got.taken_ms == 1700000000000
    assert got.files == (FileStatus("s3://lake/wh/db.db/t/manifest/m-1", 7, 1700000000000),) and got.rows == 2
