"""Orphan cleanup from a storage inventory (issue 16, point 4): ``clean-orphans --listing`` with
an S3 Inventory report written in S3 Inventory's own layout on moto (manifest.json + gzip CSV,
Parquet, ORC) and with plain CSV/Parquet file lists on a local warehouse.

The oracle: exactly the planted orphans the inventory lists are deleted; files committed after
the inventory (a writer that wrote before it and committed after) and keys absent from it are
kept; every retained view reads as before through pypaimon; every refused inventory exits 2
with its reason and deletes nothing."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import time
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import s3fs

from tablekeeper.cli.main import main as cli_main
from tablekeeper.core.reclaim.orphans import inventory, planning
from tests.maintenance.helpers import (
    DAY_MS,
    IDENT,
    append_table,
    backdate_tree,
    build_mixed,
    check_retained,
    copy_tree,
    file_set,
    handle,
    now_ms,
    plant,
    reload,
    rows,
    table_root,
    views,
    write,
)
from tests.maintenance.test_orphans import plant_orphans, plant_untouchables
from tests.support import s3 as s3support
from tests.support.paimon import ORDERS_SCHEMA

DEST = "inventory"  # the inventory's destination bucket
CONFIG = "warehouse-daily"

CSV_FIELDS = ("Bucket", "Key", "VersionId", "IsLatest", "IsDeleteMarker", "Size", "LastModifiedDate", "ETag",
              "StorageClass")
ORC_SCHEMA = ("struct<bucket:string,key:string,size:bigint,last_modified_date:timestamp,e_tag:string,"
              "storage_class:string>")
PARQUET_SCHEMA = ("message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); "
                  "optional int64 size; optional int64 last_modified_date (TIMESTAMP_MILLIS); "
                  "optional binary e_tag (UTF8); optional binary storage_class (UTF8);}")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    capsys.readouterr()
    code = cli_main(list(args))
    out, err = capsys.readouterr()
    try:
        return code, json.loads(out), err
    except json.JSONDecodeError:
        return code, out, err


# -- S3 Inventory's layout ---------------------------------------------------------------------------


Row = tuple[str, int, int]  # key (bucket-relative), size, mtime ms


def s3_rows(s3: s3fs.S3FileSystem, bucket: str, prefix: str = "") -> list[Row]:
    """What S3 Inventory would list: every object with its size and LastModified."""
    out = []
    for path, info in s3.find(f"{bucket}/{prefix}", detail=True).items():
        if path.endswith("/"):
            continue
        out.append((path.split("/", 1)[1], int(info["size"]),
                    int(info["LastModified"].timestamp() * 1000)))
    return sorted(out)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _csv_data(bucket: str, rows_: Sequence[Row], extra: Sequence[Sequence[str]] = ()) -> bytes:
    lines = [",".join(f'"{v}"' for v in (bucket, quote_plus(k), "", "true", "false", str(size), _iso(ms),
                                         "0a0a", "STANDARD")) for k, size, ms in rows_]
    lines += [",".join(f'"{v}"' for v in row) for row in extra]
    return gzip.compress(("\n".join(lines) + "\n").encode())


def _columnar_table(bucket: str, rows_: Sequence[Row]) -> pa.Table:
    return pa.table({
        "bucket": pa.array([bucket] * len(rows_), pa.string()),
        "key": pa.array([k for k, _s, _m in rows_], pa.string()),
        "size": pa.array([s for _k, s, _m in rows_], pa.int64()),
        "last_modified_date": pa.array([m for _k, _s, m in rows_], pa.timestamp("ms", tz="UTC")),
        "e_tag": pa.array(["0a0a"] * len(rows_), pa.string()),
        "storage_class": pa.array(["STANDARD"] * len(rows_), pa.string()),
    })


def _data_file(fmt: str, bucket: str, rows_: Sequence[Row], extra: Sequence[Sequence[str]]) -> tuple[bytes, str]:
    if fmt == "CSV":
        return _csv_data(bucket, rows_, extra), "csv.gz"
    sink = io.BytesIO()
    if fmt == "Parquet":
        pq.write_table(_columnar_table(bucket, rows_), sink)
        return sink.getvalue(), "parquet"
    from pyarrow import orc

    orc.write_table(_columnar_table(bucket, rows_), sink)
    return sink.getvalue(), "orc"


def write_inventory(s3: s3fs.S3FileSystem, rows_: Sequence[Row], *, fmt: str = "CSV",
                    source_bucket: str = s3support.BUCKET, created_ms: int | None = None,
                    manifest_patch: dict[str, Any] | None = None, extra_csv: Sequence[Sequence[str]] = (),
                    raw_manifest: bytes | None = None, raw_data: bytes | None = None) -> str:
    """An S3 Inventory report in the destination bucket, laid out as S3 writes it:
    ``<source>/<config>/data/<uuid>.<ext>`` (two data files) and
    ``<source>/<config>/<YYYY-MM-DDTHH-MMZ>/manifest.json``. Returns the manifest's URI."""
    if not s3.exists(DEST):
        s3.mkdir(DEST)
    created_ms = created_ms if created_ms is not None else now_ms() - 2 * DAY_MS
    half = len(rows_) // 2
    files = []
    for part in (rows_[:half], rows_[half:]):
        data, ext = _data_file(fmt, source_bucket, part, extra_csv if part is rows_[:half] else ())
        key = f"{source_bucket}/{CONFIG}/data/{uuid.uuid4()}.{ext}"
        s3.pipe(f"{DEST}/{key}", raw_data if raw_data is not None else data)
        files.append({"key": key, "size": len(data), "MD5checksum": hashlib.md5(data).hexdigest()})
    stamp = datetime.fromtimestamp(created_ms / 1000, UTC).strftime("%Y-%m-%dT%H-%MZ")
    manifest = {
        "sourceBucket": source_bucket, "destinationBucket": f"arn:aws:s3:::{DEST}", "version": "2016-11-30",
        "creationTimestamp": str(created_ms), "fileFormat": fmt,
        "fileSchema": {"CSV": ", ".join(CSV_FIELDS), "ORC": ORC_SCHEMA, "Parquet": PARQUET_SCHEMA}[fmt],
        "files": files, **(manifest_patch or {})}
    path = f"{DEST}/{source_bucket}/{CONFIG}/{stamp}/manifest.json"
    s3.pipe(path, raw_manifest if raw_manifest is not None else json.dumps(manifest).encode())
    return f"s3://{path}"


def _keys(s3: s3fs.S3FileSystem, bucket: str, prefix: str) -> set[str]:
    return {k.split("/", 1)[1] for k in s3.find(f"{bucket}/{prefix}") if not k.endswith("/")}


def _backdate_all(s3: s3fs.S3FileSystem, bucket: str, prefix: str, age: timedelta) -> None:
    for key in _keys(s3, bucket, prefix):
        s3support.backdate(bucket, key, age)


# -- S3: the scenario -----------------------------------------------------------------------------------


def _has_orc() -> bool:
    try:
        from pyarrow import orc  # noqa: F401
    except ImportError:  # pragma: no cover - pyarrow's Linux wheels ship ORC
        return False
    return True


@pytest.fixture(scope="module")
def mixed_template(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The mixed history, written once by pypaimon on local disk (Paimon's metadata names files
    relative to the table, so the tree uploaded to S3 is the same table)."""
    wh = str(tmp_path_factory.mktemp("mixed") / "wh")
    build_mixed(wh)
    return wh


def _upload(template: str, bucket: str, rel: str) -> None:
    objects = {}
    for dirpath, _dirs, files in os.walk(template):
        for name in files:
            full = os.path.join(dirpath, name)
            objects[f"{rel}/{os.path.relpath(full, template)}"] = Path(full).read_bytes()
    s3support.put_objects(bucket, objects)


@pytest.mark.s3
def test_s3_inventory_deletes_exactly_the_listed_orphans_and_protects_commits_after_it(
        mixed_template: str, s3: s3fs.S3FileSystem, s3_warehouse: str, s3_bucket: str, s3_options: dict[str, str],
        capsys: pytest.CaptureFixture[str]) -> None:
    wh = s3_warehouse
    _upload(mixed_template, s3_bucket, "wh")
    prefix = table_root(wh).removeprefix(f"s3://{s3_bucket}/")
    # a writer that wrote its files before the inventory and commits after it (stale inventory)
    keys_built = _keys(s3, s3_bucket, "wh")
    pending = reload(wh, catalog_options=s3_options).new_batch_write_builder()
    pending_write = pending.new_write()
    pending_write.write_arrow(pa.Table.from_pylist(rows("b", 700), schema=ORDERS_SCHEMA))
    messages = pending_write.prepare_commit()
    pending_files = _keys(s3, s3_bucket, "wh") - keys_built
    assert pending_files
    planted = {f"{prefix}/{rel}" for rel in (
        "manifest/manifest-0a0a-orphan-0", "index/index-0a0a-orphan-0", "statistics/stat-0a0a-orphan-0",
        "dt=a/bucket-0/data-0a0a-orphan-0.parquet", "dt=zz/bucket-0/data-0a0a-orphan-1.parquet",
        "dt=a/bucket-0/data-0a0a-orphan%3A2.parquet", "snapshot/.snapshot-99.0a0a.tmp",
        "branch/branch-b1/snapshot/.snapshot-9.0a0a.tmp")}
    untouchable = {f"{prefix}/{rel}" for rel in (
        "schema/junk", "tag/junk", "consumer/junk", "README", "dt=a/_SUCCESS", "unknown/x.parquet",
        "snapshot/snapshot-7f0a.tmp", "branch/branch-b1/tag/junk", "dt=a/bucket-0/sub/data-0a0a-1.parquet")}
    other_table = "wh/db.db/other/dt=a/bucket-0/data-0a0a-other.parquet"  # outside the table: never touched
    s3support.put_objects(s3_bucket, dict.fromkeys(planted | untouchable | {other_table}, b"junk"))
    _backdate_all(s3, s3_bucket, "wh", timedelta(days=3))
    listed = s3_rows(s3, s3_bucket)
    assert pending_files <= {k for k, _s, _m in listed}  # listed as old and unreferenced
    # delete markers and older versions of a versioned bucket name no current object
    extra = [(s3_bucket, quote_plus(f"{prefix}/dt=a/bucket-0/data-0a0a-deleted.parquet"), "v1", "true", "true",
              "0", _iso(now_ms() - 3 * DAY_MS), "", "STANDARD"),
             (s3_bucket, quote_plus(f"{prefix}/dt=a/bucket-0/data-0a0a-old-version.parquet"), "v0", "false", "false",
              "4", _iso(now_ms() - 3 * DAY_MS), "", "STANDARD")]
    manifest = write_inventory(s3, listed, extra_csv=extra)
    # after the inventory: the writer commits, and an old orphan appears that the inventory lacks
    reload(wh, catalog_options=s3_options)
    commit = pending.new_commit()
    commit.commit(messages)
    commit.close()
    pending_write.close()
    late = f"{prefix}/dt=b/bucket-0/data-0a0a-late-orphan.parquet"
    s3support.put_objects(s3_bucket, {late: b"junk"})
    s3support.backdate(s3_bucket, late, timedelta(days=3))
    before = views(wh, IDENT, s3_options)
    keys_before = _keys(s3, s3_bucket, "wh")

    opts = [a for k, v in s3_options.items() for a in ("--option", f"{k}={v}")]
    code, summary, err = cli(capsys, "clean-orphans", "-w", wh, IDENT, "--listing", manifest, *opts, "-o", "json")
    assert code == 0, err
    assert summary["total_files"] == len(planted) and summary["listing"] == manifest
    assert _keys(s3, s3_bucket, "wh") == keys_before - planted
    assert late in _keys(s3, s3_bucket, "wh") and other_table in _keys(s3, s3_bucket, "wh")
    assert pending_files <= _keys(s3, s3_bucket, "wh")
    check_retained(wh, before, options=s3_options)
    latest = reload(wh, catalog_options=s3_options)
    assert {r["id"] for r in _read_rows(latest)} >= {700, 701}  # the commit after the inventory reads


def _read_rows(table: Any) -> list[dict[str, Any]]:
    rb = table.new_read_builder()
    return list(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist())


# -- S3: refused inventories -------------------------------------------------------------------------------


def _case_wrong_bucket(s3: s3fs.S3FileSystem, listed: list[Row]) -> tuple[str, str]:
    s3.mkdir("elsewhere")
    return write_inventory(s3, listed, source_bucket="elsewhere"), "lists bucket 'elsewhere'"


def _case_wrong_prefix(s3: s3fs.S3FileSystem, listed: list[Row]) -> tuple[str, str]:
    moved = [(k.replace("wh/", "otherwh/", 1), s, m) for k, s, m in listed]
    return write_inventory(s3, moved), "names no file under the table's location"


def _case_too_recent(s3: s3fs.S3FileSystem, listed: list[Row]) -> tuple[str, str]:
    return write_inventory(s3, listed, created_ms=now_ms() - 3_600_000), "not before the older-than threshold"


def _case_not_json(s3: s3fs.S3FileSystem, listed: list[Row]) -> tuple[str, str]:
    return write_inventory(s3, listed, raw_manifest=b"{not json"), "is not JSON"


def _case_unknown_format(s3: s3fs.S3FileSystem, listed: list[Row]) -> tuple[str, str]:
    return write_inventory(s3, listed, manifest_patch={"fileFormat": "JSON"}), "unknown fileFormat 'JSON'"


def _case_missing_column(s3: s3fs.S3FileSystem, listed: list[Row]) -> tuple[str, str]:
    return (write_inventory(s3, listed, manifest_patch={"fileSchema": "Bucket, Key, Size, ETag"}),
            "no LastModifiedDate column")


def _case_bad_csv_row(s3: s3fs.S3FileSystem, listed: list[Row]) -> tuple[str, str]:
    return write_inventory(s3, listed, raw_data=gzip.compress(b'"lake","a","1"\n')), "field(s), the schema has"


def _case_damaged_parquet(s3: s3fs.S3FileSystem, listed: list[Row]) -> tuple[str, str]:
    return write_inventory(s3, listed, fmt="Parquet", raw_data=b"PAR1garbage"), "is not a readable Parquet file"


#: refused through the CLI (exit 2, the reason on stderr)
CLI_REFUSALS = {"wrong-bucket": _case_wrong_bucket, "wrong-prefix": _case_wrong_prefix,
                "too-recent": _case_too_recent, "not-json": _case_not_json}
#: refused by the core loader (the same typed errors; fewer CLI start-ups)
CORE_REFUSALS = {"unknown-format": _case_unknown_format, "missing-column": _case_missing_column,
                 "bad-csv-row": _case_bad_csv_row, "damaged-parquet": _case_damaged_parquet}


@pytest.mark.s3
def test_s3_refused_inventories_exit_2_and_delete_nothing_then_parquet_and_orc_reports_clean(
        s3: s3fs.S3FileSystem, s3_warehouse: str, s3_bucket: str, s3_options: dict[str, str],
        capsys: pytest.CaptureFixture[str]) -> None:
    wh = s3_warehouse
    t = append_table(wh, catalog_options=s3_options)
    write(t, rows("a", 0))
    prefix = table_root(wh).removeprefix(f"s3://{s3_bucket}/")
    orphan = f"{prefix}/dt=a/bucket-0/data-0a0a-orphan-0.parquet"
    s3support.put_objects(s3_bucket, {orphan: b"junk"})
    _backdate_all(s3, s3_bucket, "wh", timedelta(days=3))
    listed = s3_rows(s3, s3_bucket)
    keys = _keys(s3, s3_bucket, "wh")
    before = views(wh, IDENT, s3_options)
    opts = [a for k, v in s3_options.items() for a in ("--option", f"{k}={v}")]
    for name, case in CLI_REFUSALS.items():
        manifest, reason = case(s3, listed)
        code, _out, err = cli(capsys, "clean-orphans", "-w", wh, IDENT, "--listing", manifest, *opts)
        assert code == 2, (name, err)
        assert reason in err and "fix:" in err, (name, err)
        assert _keys(s3, s3_bucket, "wh") == keys, name
    t = handle(wh, options=s3_options)
    for name, case in CORE_REFUSALS.items():
        manifest, reason = case(s3, listed)
        with pytest.raises(inventory.InventoryError, match=re.escape(reason)) as refused:
            inventory.load_for_table(manifest, t.file_io, t.root, planning.listing_roots(t))
        assert refused.value.fix, name
    assert _keys(s3, s3_bucket, "wh") == keys
    check_retained(wh, before, options=s3_options)
    # the same table with good reports: the orphans go (the refusals were about the inventory)
    second = f"{prefix}/dt=a/bucket-0/data-0a0a-orphan-1.parquet"
    for fmt, gone in (("Parquet", orphan), ("ORC", second)):
        if fmt == "ORC" and not _has_orc():  # pragma: no cover - pyarrow's Linux wheels ship ORC
            assert os.environ.get("CI") != "true", "pyarrow without ORC under CI"
            continue
        if fmt == "ORC":
            s3support.put_objects(s3_bucket, {second: b"junk"})
            s3support.backdate(s3_bucket, second, timedelta(days=3))
        keys = _keys(s3, s3_bucket, "wh")
        manifest = write_inventory(s3, s3_rows(s3, s3_bucket), fmt=fmt)
        code, summary, err = cli(capsys, "clean-orphans", "-w", wh, IDENT, "--listing", manifest, *opts, "-o", "json")
        assert code == 0, err
        assert summary["total_files"] == 1 and _keys(s3, s3_bucket, "wh") == keys - {gone}, fmt
    check_retained(wh, before, options=s3_options)


# -- local: plain file lists, and the same decision as a live listing ------------------------------------


@pytest.fixture
def local_mixed(mixed_template: str, tmp_path: Path) -> str:
    return copy_tree(mixed_template, tmp_path / "wh")


def _walk(root: str) -> list[tuple[str, int, int]]:
    out = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            st = os.stat(p)
            out.append((p, st.st_size, st.st_mtime_ns // 1_000_000))
    return sorted(out)


def _write_list(path: Path, entries: Iterable[tuple[str, int, int]], fmt: str, age_s: float = 2 * 86400) -> str:
    entries = list(entries)
    if fmt == "csv":
        lines = ["key,size,last_modified"] + [f"{p},{s},{_iso(m) if i % 2 else m}"
                                              for i, (p, s, m) in enumerate(entries)]
        path.write_text("\n".join(lines) + "\n")
    else:
        pq.write_table(pa.table({"key": [p for p, _s, _m in entries], "size": [s for _p, s, _m in entries],
                                 "last_modified": pa.array([m for _p, _s, m in entries],
                                                           pa.timestamp("ms", tz="UTC"))}), path)
    when = time.time() - age_s
    os.utime(path, (when, when))
    return str(path)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_local_file_list_deletes_listed_orphans_keeps_unlisted_ones(
        fmt: str, local_mixed: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh, root = local_mixed, table_root(local_mixed)
    planted = plant_orphans(root)
    untouchable = plant_untouchables(root)
    backdate_tree(wh, 3 * 86400)
    listing = _write_list(tmp_path / f"files.{fmt}", _walk(wh), fmt)
    unlisted = plant(f"{root}/dt=a/bucket-0/data-0a0a0a0a-unlisted-0.parquet")  # old, absent from the list
    before_files = file_set(wh)
    before = views(wh)
    code, summary, err = cli(capsys, "clean-orphans", "-w", wh, IDENT, "--listing", listing, "-o", "json")
    assert code == 0, err
    assert summary["total_files"] == len(planted)
    assert file_set(wh) == before_files - {os.path.relpath(p, wh) for p in planted}
    assert os.path.exists(unlisted) and all(os.path.exists(p) for p in untouchable)
    check_retained(wh, before)


def test_local_inventory_plans_what_a_live_listing_plans(local_mixed: str, tmp_path: Path) -> None:
    """The candidate rules are one decision: the same files from a listing and from an inventory."""
    wh, root = local_mixed, table_root(local_mixed)
    plant_orphans(root)
    plant_untouchables(root)
    young = plant(f"{root}/dt=a/bucket-0/data-0a0a-young.parquet", age_s=None)
    backdate_tree(wh, 3 * 86400)
    os.utime(young)
    t = handle(wh)
    threshold = planning.resolve_older_than(now_ms())
    live = planning.plan_orphan_clean(t, planning.OrphanConfig(threshold))
    listing = inventory.load(_write_list(tmp_path / "files.csv", _walk(wh), "csv"), t.file_io, t.root,
                             planning.listing_roots(t))
    from_inventory = planning.plan_orphan_clean(t, planning.OrphanConfig(threshold, listing=listing))
    assert live.files and {f.path for f in from_inventory.files} == {f.path for f in live.files}
    assert {(f.path, f.kind, f.size) for f in from_inventory.files} == {(f.path, f.kind, f.size) for f in live.files}


def test_local_list_refusals_exit_2(local_mixed: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh, root = local_mixed, table_root(local_mixed)
    orphan = plant(f"{root}/dt=a/bucket-0/data-0a0a0a0a-orphan-0.parquet")
    backdate_tree(wh, 3 * 86400)
    before_files = file_set(wh)
    fresh = _write_list(tmp_path / "fresh.csv", _walk(wh), "csv", age_s=60)
    no_mtime = tmp_path / "cols.csv"
    no_mtime.write_text(f"key,size\n{orphan},4\n")
    relative = tmp_path / "relative.csv"
    relative.write_text("key,size,last_modified\ndb.db/orders/x,4,0\n")
    other = copy_tree(wh, tmp_path / "other-wh")
    foreign = _write_list(tmp_path / "foreign.csv", _walk(other), "csv")
    for path, reason in ((fresh, "not before the older-than threshold"), (str(no_mtime), "needs the columns"),
                         (str(relative), "neither a full location"), (foreign, "names no file under"),
                         (str(tmp_path / "missing.csv"), "listing file not found")):
        code, _out, err = cli(capsys, "clean-orphans", "-w", wh, IDENT, "--listing", path)
        assert code == 2 and reason in err, (path, err)
    assert file_set(wh) == before_files  # --engine spark refuses the same way: tests/spark/test_s3_requests.py
