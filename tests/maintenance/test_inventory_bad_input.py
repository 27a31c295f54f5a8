"""Malformed storage inventories given to ``clean-orphans --listing`` (a local warehouse): S3
Inventory manifests, their CSV/Parquet/ORC data files and plain file lists, each damaged one way.
Every one exits 2 with one ``error:`` line naming the file and what is wrong, and a fix; nothing is
deleted (an old orphan the inventory would list stays), nothing is written."""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from pyarrow import orc, parquet

from tablekeeper.cli.main import main
from tests.maintenance.helpers import IDENT, backdate_tree, plant, table_root

MANIFEST = {"sourceBucket": "b", "destinationBucket": "arn:aws:s3:::d", "version": "2016-11-30",
            "creationTimestamp": "1700000000000", "fileFormat": "CSV",
            "fileSchema": "Bucket, Key, Size, LastModifiedDate", "files": [{"key": "data/part-0.csv.gz"}]}
GOOD_ROW = "b,wh/db.db/orders/x.orc,10,2023-01-01T00:00:00.000Z\n"
Write = Callable[[Path], Path]


def _manifest(doc: object, data: dict[str, bytes] | None = None) -> Write:
    """A manifest.json (``doc``: a dict, or raw bytes) and its data files beside it."""
    def write(d: Path) -> Path:
        (d / "data").mkdir(exist_ok=True)
        for name, content in (data if data is not None else {"part-0.csv.gz": gzip.compress(GOOD_ROW.encode())}).items():
            (d / "data" / name).write_bytes(content)
        path = d / "manifest.json"
        path.write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode())
        return path
    return write


def _with(**changes: object) -> dict[str, object]:
    out = {**MANIFEST, **changes}
    return {k: v for k, v in out.items() if v is not _DROP}


_DROP = object()


def _csv_data(text: bytes, *, gz: bool = True) -> Write:
    return _manifest(MANIFEST, {"part-0.csv.gz": gzip.compress(text) if gz else text})


def _list(name: str, content: bytes) -> Write:
    def write(d: Path) -> Path:
        path = d / name
        path.write_bytes(content)
        return path
    return write


def _parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    parquet.write_table(table, buf)
    return buf.getvalue()


def _orc(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    orc.write_table(table, buf)
    return buf.getvalue()


_PARQUET_SCHEMA = "message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); " \
                  "optional int64 size; optional int64 last_modified_date; }"

CASES = [
    # manifest.json itself
    pytest.param(_manifest(b"{not json"), "is not JSON", id="manifest-not-json"),
    pytest.param(_manifest(b"[" * 100_000 + b"]" * 100_000), "is not JSON", id="manifest-deeply-nested"),
    pytest.param(_manifest(b"\xff\xfe{}"), "is not JSON", id="manifest-not-utf8"),
    pytest.param(_manifest(b'["a"]'), "not an object", id="manifest-an-array"),
    *[pytest.param(_manifest(_with(**{key: _DROP})), f"lacks {key}", id=f"manifest-without-{key}")
      for key in ("sourceBucket", "fileFormat", "fileSchema", "files", "creationTimestamp")],
    pytest.param(_manifest(_with(fileFormat="Avro")), "unknown fileFormat 'Avro'", id="manifest-unknown-format"),
    pytest.param(_manifest(_with(fileFormat=7)), "fileFormat is not a string", id="manifest-format-a-number"),
    pytest.param(_manifest(_with(sourceBucket=["b"])), "sourceBucket is not a string", id="manifest-bucket-a-list"),
    pytest.param(_manifest(_with(files="data/part-0.csv.gz")), "files is not a list", id="manifest-files-text"),
    pytest.param(_manifest(_with(files=[{"size": 1}])), "bad creationTimestamp or files entry",
                 id="manifest-file-without-key"),
    pytest.param(_manifest(_with(creationTimestamp="yesterday")), "bad creationTimestamp", id="manifest-time-text"),
    pytest.param(_manifest(_with(creationTimestamp=True)), "bad creationTimestamp", id="manifest-time-a-boolean"),
    pytest.param(_manifest(_with(fileSchema="Bucket, Key, Size")), "has no LastModifiedDate column",
                 id="manifest-schema-without-mtime"),
    pytest.param(_manifest(_with(fileFormat="ORC", fileSchema="bucket:string")), "ORC fileSchema is not a struct",
                 id="manifest-orc-schema-not-a-struct"),
    pytest.param(_manifest(_with(fileFormat="Parquet", fileSchema="message m { }")), "Parquet fileSchema has no fields",
                 id="manifest-parquet-schema-empty"),
    pytest.param(_manifest(_with(files=[])), "names no data file", id="manifest-no-data-files"),
    # its data files
    pytest.param(_manifest(MANIFEST, {}), "listing file not found", id="data-file-missing"),
    pytest.param(_manifest(MANIFEST, {"part-0.csv.gz": b"\x1f\x8b\x08\x00garbage"}), "(gzip) UTF-8 CSV",
                 id="data-gzip-corrupt"),
    pytest.param(_manifest(MANIFEST, {"part-0.csv.gz": gzip.compress(b"\xff\xfe,x,1,2\n")}), "(gzip) UTF-8 CSV",
                 id="data-not-utf8"),
    pytest.param(_csv_data(b"b,key-only\n"), "2 field(s), the schema has 4", id="data-row-too-short"),
    pytest.param(_csv_data(b"b,wh/x,ten,2023-01-01T00:00:00Z\n"), "size 'ten' is not a number", id="data-size-text"),
    pytest.param(_csv_data(b"b,wh/x,inf,2023-01-01T00:00:00Z\n"), "size 'inf' is not a number", id="data-size-inf"),
    pytest.param(_csv_data(b"b,wh/x,10,the day before\n"), "is not a time", id="data-time-text"),
    pytest.param(_csv_data(b"b,wh/x,10,9999-99-99T00:00:00Z\n"), "is not a time", id="data-time-out-of-range"),
    pytest.param(_csv_data(b"other,wh/x,10,2023-01-01T00:00:00Z\n"), "a row of bucket 'other'", id="data-other-bucket"),
    pytest.param(_csv_data(b'b,"wh/x\0y",10,2023-01-01T00:00:00Z\n'), "", id="data-nul-in-key"),
    pytest.param(_manifest(_with(fileFormat="Parquet", fileSchema=_PARQUET_SCHEMA,
                                 files=[{"key": "data/part-0.parquet"}]), {"part-0.parquet": b"PAR1 not parquet"}),
                 "not a readable Parquet file", id="data-parquet-garbage"),
    pytest.param(_manifest(_with(fileFormat="Parquet", fileSchema=_PARQUET_SCHEMA, files=[{"key": "data/p.parquet"}]),
                           {"p.parquet": _parquet(pa.table({"bucket": ["b"], "key": ["wh/x"], "size": [1.5e300],
                                                            "last_modified_date": [float("inf")]}))}),
                 "is not a time", id="data-parquet-infinite-time"),
    pytest.param(_manifest(_with(fileFormat="ORC", fileSchema="struct<bucket:string,key:string,size:bigint,"
                                 "last_modified_date:timestamp>", files=[{"key": "data/p.orc"}]),
                           {"p.orc": b"ORC garbage"}), "not a readable ORC file", id="data-orc-garbage"),
    pytest.param(_manifest(_with(fileFormat="ORC", fileSchema="struct<bucket:string,key:string,size:bigint,"
                                 "last_modified_date:timestamp>", files=[{"key": "data/p.orc"}]),
                           {"p.orc": _orc(pa.table({"bucket": ["b"], "key": pa.array([None], pa.string()),
                                                    "size": [1], "last_modified_date": [1]}))}),
                 "a row without key", id="data-orc-null-key"),
    # plain file lists
    pytest.param(_list("files.csv", b"path;size;mtime\n/x;1;2\n"), "needs the columns key, size and last_modified",
                 id="list-wrong-separator"),
    pytest.param(_list("files.csv", b"key,size,last_modified\n,1,2\n"), "a row without key", id="list-empty-key"),
    pytest.param(_list("files.csv", b"key,size,last_modified\n/x,1e999,2\n"), "is not a number", id="list-size-huge"),
    pytest.param(_list("files.csv", b"key,size,last_modified\n/x,1,soon\n"), "is not a time", id="list-time-text"),
    pytest.param(_list("files.csv", b"key,size,last_modified\nrelative/x,1,2\n"), "neither a full location",
                 id="list-relative-key"),
    pytest.param(_list("files.csv", b"key,size,last_modified\n/x,1\n"), "2 field(s), the schema has 3",
                 id="list-row-too-short"),
    pytest.param(_list("files.csv.gz", b"\x1f\x8b\x08\x00\x00\x00"), "(gzip) UTF-8 CSV", id="list-gzip-truncated"),
    pytest.param(_list("files.parquet", b"PAR1\x00\x00PAR1"), "not a readable Parquet file", id="list-parquet-garbage"),
    pytest.param(_list("files.parquet", _parquet(pa.table({"key": ["/x"], "size": ["big"], "last_modified": [1]}))),
                 "is not a number", id="list-parquet-size-text"),
    pytest.param(_list("files.csv", b'key,size,last_modified\n"/x' + b"a" * 200_000 + b'",1,2\n'), "not valid CSV",
                 id="list-field-too-large"),
    pytest.param(lambda d: d, "is a directory", id="listing-a-directory"),
    pytest.param(lambda d: d / "nope.csv", "listing file not found", id="listing-missing"),
]


@pytest.mark.parametrize(("write", "reason"), CASES)
def test_a_malformed_inventory_exits_2_and_deletes_nothing(mixed: str, tmp_path: Path, write: Write, reason: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    root = table_root(mixed)
    orphan = plant(f"{root}/dt=a/bucket-0/data-0a0a0a0a-orphan-0.parquet")
    backdate_tree(mixed, 3 * 86400)
    listing_dir = tmp_path / "inventory"
    listing_dir.mkdir()
    listing = write(listing_dir)
    for dirpath, _dirs, files in os.walk(listing_dir):  # taken long ago: only the damage can refuse it
        for name in files:
            os.utime(os.path.join(dirpath, name), (1_600_000_000, 1_600_000_000))
    before = {str(p): p.read_bytes() for p in Path(mixed).rglob("*") if p.is_file()}
    code = main(["clean-orphans", "-w", mixed, IDENT, "--listing", str(listing)])
    _out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, err
    assert lines[0].startswith("error: ") and reason in lines[0] and len(lines) == 2 and "fix:" in lines[1], err
    assert str(listing_dir) in lines[0], err  # names the manifest, data file or list
    assert os.path.exists(orphan)
    assert {str(p): p.read_bytes() for p in Path(mixed).rglob("*") if p.is_file()} == before


def test_there_are_at_least_25_cases() -> None:
    assert len(CASES) >= 25
