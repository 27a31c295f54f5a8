"""Our manifest reader against pypaimon 2.1.0's readers and a raw fastavro decode, on tables
pypaimon writes and on the Java-written fixture; path resolution against pypaimon's
``canonical_data_file_path``; Java's merge semantics on synthetic entries."""

from __future__ import annotations

import datetime as dt
import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from pypaimon.manifest.index_manifest_file import IndexManifestFile
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.table.row.generic_row import GenericRow, GenericRowDeserializer, GenericRowSerializer
from pypaimon.utils.file_store_path_factory import canonical_data_file_path

from tablekeeper.core import errors
from tablekeeper.core.paimon import manifests as m
from tablekeeper.core.paimon.manifests import decoding
from tablekeeper.core.paimon.pypaimon.adapter import PartitionPathResolver, data_file_path, index_file_path
from tablekeeper.core.paimon.table import open_table_path
from tablekeeper.core.storage import FileIO, join
from tests.support import paimon as sp

IO = FileIO.for_uri("/")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
DV_OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "deletion-vectors.enabled": "true"}


# -- table builders (pypaimon writes) ----------------------------------------------------------
def _append_unaware(cat: Any) -> str:
    t = sp.create_table(cat, "db.append_unaware", sp.EVENTS_SCHEMA)
    for i in range(3):
        sp.write(t, [{"id": i * 10 + j, "payload": f"p{j}"} for j in range(3)], sp.EVENTS_SCHEMA)
    return "db.append_unaware"


def _append_partitioned(cat: Any) -> str:
    """Partitioned append table with a partition overwrite (DELETE entries)."""
    t = sp.create_table(cat, "db.append_part", sp.ORDERS_SCHEMA, partition_keys=["dt"])
    sp.write(t, sp.orders_rows("2026-01-01", 0, 3))
    sp.write(t, sp.orders_rows("2026-01-02", 3, 3))
    t = cat.get_table("db.append_part")
    wb = t.new_batch_write_builder().overwrite({"dt": "2026-01-01"})
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.Table.from_pylist(sp.orders_rows("2026-01-01", 10, 2), schema=sp.ORDERS_SCHEMA))
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    return "db.append_part"


def _append_fixed_bucket(cat: Any) -> str:
    t = sp.create_table(cat, "db.append_bucket2", sp.EVENTS_SCHEMA, options={"bucket": "2", "bucket-key": "id"})
    for i in range(2):
        sp.write(t, [{"id": i * 10 + j, "payload": "x"} for j in range(6)], sp.EVENTS_SCHEMA)
    return "db.append_bucket2"


def _pk(cat: Any) -> str:
    t = sp.create_table(cat, "db.pk", sp.ORDERS_SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        sp.write(t, sp.orders_rows("2026-01-01", i, 4))  # overlapping keys: upserts
    return "db.pk"


def _pk_partitioned_bucket2(cat: Any, warehouse: str) -> str:
    sp.build_history(warehouse, "db.pk_part", commits=4)  # PK (dt, id), partitioned by dt, bucket=2
    return "db.pk_part"


def _pk_dynamic_bucket(cat: Any) -> str:
    t = sp.create_table(cat, "db.pk_dynamic", sp.ORDERS_SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                        options={"bucket": "-1"})
    sp.write(t, sp.orders_rows("2026-01-01", 0, 5))
    sp.write(t, sp.orders_rows("2026-01-02", 3, 5))
    sp.write(t, sp.orders_rows("2026-01-01", 2, 2))
    return "db.pk_dynamic"


def _deletion_vectors(cat: Any) -> str:
    t = sp.create_table(cat, "db.dv", sp.EVENTS_SCHEMA, options=DV_OPTIONS)
    sp.write(t, [{"id": i, "payload": f"p{i}"} for i in range(10)], sp.EVENTS_SCHEMA)
    sp.write(t, [{"id": i, "payload": f"q{i}"} for i in range(10, 15)], sp.EVENTS_SCHEMA)
    for row_ids in ([1, 3], [11]):
        t = cat.get_table("db.dv")
        wb = t.new_batch_write_builder()
        c = wb.new_commit()
        c.commit(wb.new_update().delete_by_row_id(row_ids))
        c.close()
    return "db.dv"


def _pk_deletion_vectors(cat: Any) -> str:
    """Primary-key table with ``deletion-vectors.enabled`` (pypaimon never compacts, so no DV
    files appear; the manifests still carry that table's layout)."""
    t = sp.create_table(cat, "db.pk_dv", sp.ORDERS_SCHEMA, primary_keys=["id"],
                        options={"bucket": "1", "deletion-vectors.enabled": "true"})
    for i in range(3):
        sp.write(t, sp.orders_rows("2026-01-01", i, 3))
    return "db.pk_dv"


def _external_paths(cat: Any, warehouse: str) -> str:
    t = sp.create_table(cat, "db.external", sp.EVENTS_SCHEMA, options={
        "data-file.external-paths": f"file://{warehouse}/external-store",
        "data-file.external-paths.strategy": "round-robin"})
    sp.write(t, [{"id": 1, "payload": "x"}], sp.EVENTS_SCHEMA)
    sp.write(t, [{"id": 2, "payload": "y"}], sp.EVENTS_SCHEMA)
    return "db.external"


def _path_directory(cat: Any) -> str:
    t = sp.create_table(cat, "db.pathdir", sp.ORDERS_SCHEMA, partition_keys=["dt"],
                        options={"data-file.path-directory": "data"})
    sp.write(t, sp.orders_rows("a/b", 0, 3))
    sp.write(t, sp.orders_rows("2026-01-01", 3, 3))
    return "db.pathdir"


PYPAIMON_TABLES = ("append_unaware", "append_part", "append_bucket2", "pk", "pk_part", "pk_dynamic", "dv",
                   "pk_dv", "external", "pathdir")


@pytest.fixture(scope="module")
def pypaimon_warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    warehouse = str(tmp_path_factory.mktemp("pypaimon-wh"))
    cat = sp.catalog(warehouse)
    _append_unaware(cat)
    _append_partitioned(cat)
    _append_fixed_bucket(cat)
    _pk(cat)
    _pk_partitioned_bucket2(cat, warehouse)
    _pk_dynamic_bucket(cat)
    _deletion_vectors(cat)
    _pk_deletion_vectors(cat)
    _external_paths(cat, warehouse)
    _path_directory(cat)
    return warehouse


# -- comparison helpers -----------------------------------------------------------------------
def _raw_records(path: str) -> list[dict[str, Any]]:
    """Independent oracle for raw bytes: plain fastavro decode of the file."""
    with open(path, "rb") as f:
        return [r for r in fastavro.reader(f) if isinstance(r, dict)]


def _ms(value: dt.datetime | None) -> int | None:
    return None if value is None else (value - EPOCH) // dt.timedelta(milliseconds=1)


def _stats_equal(ours: m.SimpleStats, theirs: Any) -> None:
    assert ours.min_values == theirs.min_values.data
    assert ours.max_values == theirs.max_values.data
    their_nulls = theirs.null_counts
    assert ours.null_counts == (None if their_nulls is None else tuple(their_nulls))


def _compare_manifest_list(pt: Any, manifest_dir: str, name: str) -> list[m.ManifestFileMeta]:
    path = join(manifest_dir, name)
    ours = m.read_manifest_list(IO, path)
    theirs = ManifestListManager(pt).read(name)
    raw = _raw_records(path)
    assert len(ours) == len(theirs) == len(raw)
    for o, t, r in zip(ours, theirs, raw, strict=True):
        assert (o.file_name, o.file_size, o.num_added_files, o.num_deleted_files, o.schema_id) == \
            (t.file_name, t.file_size, t.num_added_files, t.num_deleted_files, t.schema_id)
        assert (o.min_bucket, o.max_bucket, o.min_level, o.max_level, o.min_row_id, o.max_row_id, o.total_buckets) \
            == (t.min_bucket, t.max_bucket, t.min_level, t.max_level, t.min_row_id, t.max_row_id, t.total_buckets)
        assert o.extra_files == tuple(t.extra_files or ())
        _stats_equal(o.partition_stats, t.partition_stats)
        assert o.partition_stats.min_values == r["_PARTITION_STATS"]["_MIN_VALUES"]
    return ours


def _compare_manifest(pt: Any, manifest_dir: str, name: str, resolver: PartitionPathResolver) -> None:
    path = join(manifest_dir, name)
    ours = m.read_manifest(IO, path)
    refs = m.read_manifest_refs(IO, path)
    theirs = ManifestFileManager(pt).read(name, drop_stats=False)
    raw = _raw_records(path)
    assert len(ours) == len(theirs) == len(raw) == len(refs)
    assert refs == [e.to_ref() for e in ours]
    for o, t, r in zip(ours, theirs, raw, strict=True):
        of, tf, rf = o.file, t.file, r["_FILE"]
        # entry level; partitions: exact bytes vs the raw decode, values vs pypaimon
        assert (o.kind, o.bucket, o.total_buckets) == (t.kind, t.bucket, t.total_buckets)
        assert o.partition == r["_PARTITION"]
        assert resolver.partition_values(o.partition) == tuple(t.partition.values)
        # every DataFileMeta field
        assert (of.file_name, of.file_size, of.row_count) == (tf.file_name, tf.file_size, tf.row_count)
        assert (of.min_key, of.max_key) == (rf["_MIN_KEY"], rf["_MAX_KEY"])
        keys = pt.trimmed_primary_keys_fields
        assert GenericRowDeserializer.from_bytes(of.min_key, keys).values == tf.min_key.values
        assert GenericRowDeserializer.from_bytes(of.max_key, keys).values == tf.max_key.values
        _stats_equal(of.key_stats, tf.key_stats)
        _stats_equal(of.value_stats, tf.value_stats)
        assert (of.min_sequence_number, of.max_sequence_number, of.schema_id, of.level) == \
            (tf.min_sequence_number, tf.max_sequence_number, tf.schema_id, tf.level)
        assert of.extra_files == tuple(tf.extra_files)
        assert of.creation_time == _ms(rf.get("_CREATION_TIME"))
        assert of.creation_time == (None if tf.creation_time is None else tf.creation_time.get_millisecond())
        assert (of.delete_row_count, of.embedded_file_index, of.file_source, of.external_path, of.first_row_id) == \
            (tf.delete_row_count, tf.embedded_index, tf.file_source, tf.external_path, tf.first_row_id)
        for ours_value, their_value in ((of.value_stats_cols, tf.value_stats_cols), (of.write_cols, tf.write_cols),
                                        (of.write_cols_sequences, tf.write_cols_sequences)):
            assert ours_value == (None if their_value is None else tuple(their_value))


def _compare_index_manifest(pt: Any, manifest_dir: str, name: str,
                            resolver: PartitionPathResolver) -> list[m.IndexManifestEntry]:
    path = join(manifest_dir, name)
    ours = m.read_index_manifest(IO, path)
    theirs = IndexManifestFile(pt).read(name)
    raw = _raw_records(path)
    assert len(ours) == len(theirs) == len(raw)
    for o, t, r in zip(ours, theirs, raw, strict=True):
        tf = t.index_file
        assert (o.kind, o.bucket, o.index_type, o.file_name, o.file_size, o.row_count, o.external_path) == \
            (t.kind, t.bucket, tf.index_type, tf.file_name, tf.file_size, tf.row_count, tf.external_path)
        assert o.partition == r["_PARTITION"]
        assert resolver.partition_values(o.partition) == tuple(t.partition.values)
        if tf.dv_ranges is None:
            assert o.dv_ranges is None
        else:
            assert o.dv_ranges is not None
            assert sorted(o.dv_ranges) == sorted(
                (d.data_file_name, d.offset, d.length, d.cardinality) for d in tf.dv_ranges.values())
        if tf.global_index_meta is None:
            assert o.global_index is None
        else:
            g = tf.global_index_meta
            assert o.global_index == (g.row_range_start, g.row_range_end, g.index_field_id,
                                      None if g.extra_field_ids is None else tuple(g.extra_field_ids),
                                      g.index_meta, g.source_meta)
    return ours


def _check_table(pt: Any, table_root: str) -> dict[str, int]:
    """Compare every manifest list / manifest / index manifest of every snapshot, the merged
    live set, and the paths of live data and index files. Returns counts for sanity checks."""
    handle = open_table_path(table_root)
    manifest_dir = join(handle.root, "manifest")
    resolver = PartitionPathResolver(handle)
    seen_manifests: set[str] = set()
    seen_index: set[str] = set()
    counts = {"snapshots": 0, "entries": 0, "deletes": 0, "index": 0, "live": 0}
    for snapshot in handle.snapshots():
        counts["snapshots"] += 1
        for list_name in snapshot.manifest_lists:
            for meta in _compare_manifest_list(pt, manifest_dir, list_name):
                if meta.file_name not in seen_manifests:
                    seen_manifests.add(meta.file_name)
                    _compare_manifest(pt, manifest_dir, meta.file_name, resolver)
                    counts["deletes"] += meta.num_deleted_files
                    counts["entries"] += meta.num_added_files + meta.num_deleted_files
        if snapshot.index_manifest and snapshot.index_manifest not in seen_index:
            seen_index.add(snapshot.index_manifest)
            for entry in _compare_index_manifest(pt, manifest_dir, snapshot.index_manifest, resolver):
                counts["index"] += 1
                assert os.path.isfile(index_file_path(resolver, entry)), entry
        # merged live set equals pypaimon's
        live = m.read_snapshot_live_files(IO, manifest_dir, snapshot)
        py_snapshot = pt.snapshot_manager().get_snapshot_by_id(snapshot.id)
        their_live = ManifestFileManager(pt).read_entries_parallel(ManifestListManager(pt).read_all(py_snapshot))
        assert sorted((r.partition, r.bucket, r.level, r.file_name) for r in live) == sorted(
            (_partition_bytes(resolver, e), e.bucket, e.file.level, e.file.file_name) for e in their_live)
        # paths: ours == pypaimon's canonical path (or the external path), and the file exists
        for ref in live:
            ours_path = data_file_path(resolver, ref)
            values = resolver.partition_values(ref.partition)
            theirs_path = (ref.external_path.removeprefix("file:") if ref.external_path
                           else canonical_data_file_path(pt, values, ref.bucket, ref.file_name))
            assert ours_path == theirs_path
            assert os.path.isfile(ours_path), ours_path
            assert resolver.file_paths(ref)[0] == ours_path
        counts["live"] = len(live)
    return counts


def _partition_bytes(resolver: PartitionPathResolver, entry: Any) -> bytes:
    """Partition bytes of a pypaimon entry, as our reader returns them (round trip check)."""
    data: bytes = GenericRowSerializer.to_bytes(entry.partition)
    assert resolver.partition_values(data) == tuple(entry.partition.values)
    return data


# -- pypaimon-written tables ------------------------------------------------------------------
@pytest.mark.parametrize("name", PYPAIMON_TABLES)
def test_reader_matches_pypaimon_on_pypaimon_tables(pypaimon_warehouse: str, name: str) -> None:
    pt = sp.catalog(pypaimon_warehouse).get_table(f"db.{name}")
    counts = _check_table(pt, str(Path(pypaimon_warehouse) / "db.db" / name))
    assert counts["snapshots"] >= 2 and counts["entries"] >= 2 and counts["live"] >= 1
    if name == "append_part":
        assert counts["deletes"] >= 1  # the overwrite wrote DELETE entries
    if name in ("pk_dynamic", "dv"):
        assert counts["index"] >= 1
    if name == "dv":
        pt_latest = pt.snapshot_manager().get_latest_snapshot()
        entries = m.read_index_manifest(IO, join(pypaimon_warehouse, "db.db", "dv", "manifest",
                                                 pt_latest.index_manifest))
        assert any(e.index_type == "DELETION_VECTORS" and e.dv_ranges for e in entries)
    if name == "pk_dynamic":
        pt_latest = pt.snapshot_manager().get_latest_snapshot()
        entries = m.read_index_manifest(IO, join(pypaimon_warehouse, "db.db", "pk_dynamic", "manifest",
                                                 pt_latest.index_manifest))
        assert {e.index_type for e in entries} == {"HASH"}


def test_external_paths_and_path_directory(pypaimon_warehouse: str) -> None:
    for name, check in (("external", lambda r, p: r.external_path and "/external-store/" in p),
                        ("pathdir", lambda r, p: "/pathdir/data/" in p)):
        handle = open_table_path(join(pypaimon_warehouse, "db.db", name))
        latest = handle.latest_snapshot()
        assert latest is not None
        resolver = PartitionPathResolver(handle.root, schema=handle.schema())
        live = m.read_snapshot_live_files(IO, join(handle.root, "manifest"), latest)
        assert live
        for ref in live:
            path = resolver.data_file_path(ref)
            assert check(ref, path), path
            assert os.path.isfile(path)
    pathdir = PartitionPathResolver(join(pypaimon_warehouse, "db.db", "pathdir"))  # schema read from storage
    handle = open_table_path(join(pypaimon_warehouse, "db.db", "pathdir"))
    latest = handle.latest_snapshot()
    assert latest is not None
    refs = m.read_snapshot_live_files(IO, join(handle.root, "manifest"), latest)
    assert {pathdir.relative_bucket_dir(r.partition, r.bucket) for r in refs} == {
        "data/dt=a%2Fb/bucket-0", "data/dt=2026-01-01/bucket-0"}


@pytest.mark.parametrize("name", PYPAIMON_TABLES)
def test_fastavro_reader_fallback_matches_compiled_decoders(pypaimon_warehouse: str, name: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    manifest_dir = join(pypaimon_warehouse, "db.db", name, "manifest")
    paths = [join(manifest_dir, n) for n in sorted(os.listdir(manifest_dir))
             if n.startswith("manifest-") and not n.startswith("manifest-list-")]
    compiled = [(m.read_manifest(IO, p), m.read_manifest_refs(IO, p)) for p in paths]
    assert decoding.fast_usable()  # the self-test accepted this fastavro build
    monkeypatch.setattr(decoding, "_fast_enabled", False)
    fallback = [(m.read_manifest(IO, p), m.read_manifest_refs(IO, p)) for p in paths]
    assert compiled == fallback and sum(len(e) for e, _ in compiled) > 0


# -- Java-written fixture ---------------------------------------------------------------------
@pytest.mark.parametrize("name", sp.JAVA_TABLES)
def test_reader_matches_pypaimon_on_java_fixture(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = sp.extract_java_fixture(tmp_path)
    pt = sp.catalog(str(warehouse)).get_table(f"default.{name}")
    root = str(warehouse / "default.db" / name)
    counts = _check_table(pt, root)
    assert counts["snapshots"] >= 2 and counts["index"] >= 1
    # Java's nested record names and field set (no _WRITE_COLS_SEQUENCES, no _TOTAL_BUCKETS in lists)
    manifest_dir = join(root, "manifest")
    names = sorted(os.listdir(manifest_dir))
    entry_file = next(n for n in names if n.startswith("manifest-") and not n.startswith("manifest-list-"))
    with open(join(manifest_dir, entry_file), "rb") as f:
        schema = fastavro.reader(f).writer_schema
    assert isinstance(schema, dict) and schema["name"] == "org.apache.paimon.avro.generated.record"
    entries = m.read_manifest(IO, join(manifest_dir, entry_file))
    assert all(e.file.write_cols_sequences is None for e in entries)
    # the fastavro.reader fallback returns exactly what the compiled decoders return
    paths = [join(manifest_dir, n) for n in names if n.startswith("manifest-") and not n.startswith("manifest-list-")]
    compiled = [(m.read_manifest(IO, p), m.read_manifest_refs(IO, p)) for p in paths]
    monkeypatch.setattr(decoding, "_fast_enabled", False)
    assert [(m.read_manifest(IO, p), m.read_manifest_refs(IO, p)) for p in paths] == compiled
    everything = [e for file_entries, _refs in compiled for e in file_entries]
    assert any(e.kind == m.DELETE for e in everything) and any(e.file.level > 0 for e in everything)


# -- partition paths --------------------------------------------------------------------------
PATH_SCHEMA = pa.schema([("s", pa.string()), ("i", pa.int32()), ("b", pa.int64()), ("d", pa.date32()),
                         ("v", pa.int64())])
PATH_ROWS = [
    ("a/b", 1, 10**12, dt.date(2026, 1, 1)),
    ("x=y", -5, None, dt.date(1969, 12, 31)),
    ("a b", None, 3, None),
    (None, 7, 8, dt.date(2000, 2, 29)),
    ("", 0, 0, dt.date(2026, 1, 1)),
    ("%#?:*", 2, -2, dt.date(2026, 1, 2)),
]


def test_data_file_paths_match_pypaimon_for_typed_escaped_and_null_partitions(tmp_path: Path) -> None:
    cat = sp.catalog(str(tmp_path))
    t = sp.create_table(cat, "db.paths", PATH_SCHEMA, partition_keys=["s", "i", "b", "d"],
                        options={"bucket": "2", "bucket-key": "v"})
    sp.write(t, [{"s": s, "i": i, "b": b, "d": d, "v": n} for n, (s, i, b, d) in enumerate(PATH_ROWS)], PATH_SCHEMA)
    pt = cat.get_table("db.paths")
    handle = open_table_path(str(tmp_path / "db.db" / "paths"))
    latest = handle.latest_snapshot()
    assert latest is not None
    resolver = PartitionPathResolver(handle)
    live = m.read_snapshot_live_files(IO, join(handle.root, "manifest"), latest)
    assert len(live) == len(PATH_ROWS)
    relative = set()
    for ref in live:
        values = resolver.partition_values(ref.partition)
        assert data_file_path(resolver, ref) == canonical_data_file_path(pt, values, ref.bucket, ref.file_name)
        assert os.path.isfile(data_file_path(resolver, ref))
        relative.add(resolver.relative_bucket_dir(ref.partition, ref.bucket).rsplit("/", 1)[0])
    assert {"s=a%2Fb/i=1/b=1000000000000/d=20454", "s=x%3Dy/i=-5/b=__DEFAULT_PARTITION__/d=-1",
            "s=a b/i=__DEFAULT_PARTITION__/b=3/d=__DEFAULT_PARTITION__",
            "s=__DEFAULT_PARTITION__/i=7/b=8/d=11016"} <= relative
    # cached per (partition, bucket): same object on a repeated call
    ref = live[0]
    assert resolver.bucket_dir(ref.partition, ref.bucket) is resolver.bucket_dir(ref.partition, ref.bucket)


def test_extra_and_external_file_paths(tmp_path: Path) -> None:
    cat = sp.catalog(str(tmp_path))
    sp.create_table(cat, "db.t", sp.ORDERS_SCHEMA, partition_keys=["dt"])
    resolver = PartitionPathResolver(str(tmp_path / "db.db" / "t"))
    fields = [f for f in sp.catalog(str(tmp_path)).get_table("db.t").table_schema.fields if f.name == "dt"]
    part = GenericRowSerializer.to_bytes(GenericRow(["2026-01-01"], fields))
    root = str(tmp_path / "db.db" / "t")
    local = m.FileRef(m.ADD, part, 0, 0, "data-1.parquet", ("data-1.parquet.index",), None, 0, None)
    assert resolver.file_paths(local) == [f"{root}/dt=2026-01-01/bucket-0/data-1.parquet",
                                          f"{root}/dt=2026-01-01/bucket-0/data-1.parquet.index"]
    external = local._replace(external_path="s3://bucket/ext/dt=2026-01-01/bucket-0/data-1.parquet")
    assert resolver.file_paths(external) == ["s3://bucket/ext/dt=2026-01-01/bucket-0/data-1.parquet",
                                             "s3://bucket/ext/dt=2026-01-01/bucket-0/data-1.parquet.index"]
    local_external = local._replace(external_path="file:/ext/bucket-0/data-1.parquet")
    assert resolver.file_paths(local_external) == ["/ext/bucket-0/data-1.parquet", "/ext/bucket-0/data-1.parquet.index"]
    index = m.IndexManifestEntry(m.ADD, part, 0, "HASH", "index-1", 10, 1, None, None, None)
    assert resolver.index_file_path(index) == f"{root}/index/index-1"
    assert resolver.index_file_path(index._replace(external_path="s3://b/i/index-1")) == "s3://b/i/index-1"


def test_index_file_in_data_file_dir(tmp_path: Path) -> None:
    cat = sp.catalog(str(tmp_path))
    t = sp.create_table(cat, "db.dv_in_dir", sp.EVENTS_SCHEMA, options={**DV_OPTIONS, "index-file-in-data-file-dir": "true"})
    sp.write(t, [{"id": i, "payload": "x"} for i in range(5)], sp.EVENTS_SCHEMA)
    t = cat.get_table("db.dv_in_dir")
    wb = t.new_batch_write_builder()
    c = wb.new_commit()
    c.commit(wb.new_update().delete_by_row_id([2]))
    c.close()
    handle = open_table_path(str(tmp_path / "db.db" / "dv_in_dir"))
    latest = handle.latest_snapshot()
    assert latest is not None and latest.index_manifest
    resolver = PartitionPathResolver(handle)
    assert resolver.index_file_in_data_file_dir
    pt = cat.get_table("db.dv_in_dir")
    py_entries = IndexManifestFile(pt).read(latest.index_manifest)
    for ours, theirs in zip(m.read_index_manifest(IO, join(handle.root, "manifest", latest.index_manifest)),
                            py_entries, strict=True):
        expected = pt.path_factory().bucket_index_path(tuple(theirs.partition.values), theirs.bucket,
                                                       theirs.index_file, pt.file_io)
        assert index_file_path(resolver, ours) == expected
        assert os.path.isfile(index_file_path(resolver, ours))


# -- merge semantics --------------------------------------------------------------------------
def _ref(kind: int, name: str, level: int = 0, bucket: int = 0, partition: bytes = b"p") -> m.FileRef:
    return m.FileRef(kind, partition, bucket, level, name, (), None, 0, None)


def test_merge_add_delete_cancel() -> None:
    refs = [_ref(m.ADD, "a"), _ref(m.ADD, "b"), _ref(m.DELETE, "a"), _ref(m.ADD, "c")]
    assert [r.file_name for r in m.merge_live(refs)] == ["b", "c"]


def test_merge_keeps_delete_whose_add_was_not_seen() -> None:
    refs = [_ref(m.DELETE, "old"), _ref(m.ADD, "new")]
    assert [(r.kind, r.file_name) for r in m.merge_entries(refs)] == [(m.DELETE, "old"), (m.ADD, "new")]
    assert [r.file_name for r in m.merge_live(refs)] == ["new"]


def test_merge_upgrade_same_name_other_level() -> None:
    base = [_ref(m.ADD, "f", level=0)]
    delta = [_ref(m.DELETE, "f", level=0), _ref(m.ADD, "f", level=2)]
    live = m.merge_live(base + delta)
    assert [(r.file_name, r.level) for r in live] == [("f", 2)]
    # ADD of the upgraded level before the DELETE of the old one: identities differ, no conflict
    live = m.merge_live(base + list(reversed(delta)))
    assert [(r.file_name, r.level) for r in live] == [("f", 2)]


def test_merge_identity_includes_partition_bucket_extra_files_and_external_path() -> None:
    a = _ref(m.ADD, "f")
    others = [a._replace(partition=b"q"), a._replace(bucket=1), a._replace(extra_files=("f.index",)),
              a._replace(external_path="s3://x/f"), a._replace(embedded_index=b"\x01")]
    assert len(m.merge_live([a, *others])) == 6
    assert m.entry_identifier(a) == (b"p", 0, 0, "f", (), None, None)
    assert m.merge_live([a, *others, a._replace(kind=m.DELETE)]) == others


def test_merge_duplicate_add_is_an_error() -> None:
    with pytest.raises(errors.FormatError, match="added twice") as info:
        m.merge_live([_ref(m.ADD, "a"), _ref(m.ADD, "a")])
    assert info.value.fix
    with pytest.raises(errors.FormatError):  # Java: a kept DELETE then an ADD is also a conflict
        m.merge_live([_ref(m.DELETE, "a"), _ref(m.ADD, "a")])


# -- failures ---------------------------------------------------------------------------------
@pytest.fixture()
def damaged(tmp_path: Path, pypaimon_warehouse: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A copy of a table plus the paths of one manifest list, manifest and index manifest."""
    root = str(tmp_path / "pk_dynamic")
    shutil.copytree(join(pypaimon_warehouse, "db.db", "pk_dynamic"), root)
    manifest_dir = join(root, "manifest")
    names = sorted(os.listdir(manifest_dir))
    paths = {
        "list": join(manifest_dir, next(n for n in names if n.startswith("manifest-list-"))),
        "manifest": join(manifest_dir, next(n for n in names if n.startswith("manifest-")
                                            and not n.startswith("manifest-list-"))),
        "index": join(manifest_dir, next(n for n in names if n.startswith("index-manifest-"))),
    }
    yield root, paths


READERS = {"list": m.read_manifest_list, "manifest": m.read_manifest, "refs": m.read_manifest_refs,
           "index": m.read_index_manifest}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_missing_file_raises_file_not_found(tmp_path: Path, reader: str) -> None:
    with pytest.raises(FileNotFoundError):
        READERS[reader](IO, str(tmp_path / "manifest" / "manifest-nope-0"))


@pytest.mark.parametrize("reader", sorted(READERS))
def test_corrupt_files_raise_format_error(damaged: tuple[str, dict[str, str]], reader: str) -> None:
    _root, paths = damaged
    path = paths["manifest" if reader == "refs" else reader]
    data = Path(path).read_bytes()
    variants = {
        "empty": b"",
        "garbage": b"not avro at all",
        "truncated": data[: len(data) - 7],
        "bad-header": data[:6],
        "flipped": data[:-20] + bytes(b ^ 0xFF for b in data[-20:]),
    }
    for label, payload in variants.items():
        Path(path).write_bytes(payload)
        with pytest.raises(errors.FormatError) as info:
            READERS[reader](IO, path)
        assert info.value.fix, label


def test_wrong_kind_of_file_is_a_format_error(damaged: tuple[str, dict[str, str]]) -> None:
    _root, paths = damaged
    with pytest.raises(errors.FormatError, match="lacks"):
        m.read_manifest(IO, paths["list"])
    with pytest.raises(errors.FormatError, match="lacks"):
        m.read_manifest_refs(IO, paths["index"])
    with pytest.raises(errors.FormatError, match="lacks"):
        m.read_manifest_list(IO, paths["manifest"])


def test_unsupported_version_is_a_format_error(tmp_path: Path, damaged: tuple[str, dict[str, str]]) -> None:
    _root, paths = damaged
    with open(paths["manifest"], "rb") as f:
        reader = fastavro.reader(f)
        schema, records = reader.writer_schema, [r for r in reader if isinstance(r, dict)]
    for r in records:
        r["_VERSION"] = 1
    out = io.BytesIO()
    fastavro.writer(out, schema, records, codec="deflate")
    path = tmp_path / "manifest-v1"
    path.write_bytes(out.getvalue())
    for reader_fn in (m.read_manifest, m.read_manifest_refs):
        with pytest.raises(errors.FormatError, match="version 1"):
            reader_fn(IO, str(path))


def test_unknown_entry_kind_is_a_format_error_naming_the_manifest(tmp_path: Path,
                                                                   damaged: tuple[str, dict[str, str]]) -> None:
    """An entry kind other than ADD (0) and DELETE (1), as a newer Paimon could write, fails
    closed naming the manifest and the kind (issue 13 point 6)."""
    _root, paths = damaged
    with open(paths["manifest"], "rb") as f:
        reader = fastavro.reader(f)
        schema, records = reader.writer_schema, [r for r in reader if isinstance(r, dict)]
    records[-1]["_KIND"] = 2
    out = io.BytesIO()
    fastavro.writer(out, schema, records, codec="deflate")
    path = tmp_path / "manifest-kind2"
    path.write_bytes(out.getvalue())
    for reader_fn in (m.read_manifest, m.read_manifest_refs):
        with pytest.raises(errors.FormatError, match=f"{path}: unsupported manifest entry kind 2 ") as info:
            reader_fn(IO, str(path))
        assert info.value.fix


def test_missing_manifest_under_a_snapshot_is_not_an_empty_result(damaged: tuple[str, dict[str, str]]) -> None:
    root, _paths = damaged
    handle = open_table_path(root)
    latest = handle.latest_snapshot()
    assert latest is not None
    manifest_dir = join(root, "manifest")
    metas = m.read_manifest_list(IO, join(manifest_dir, str(latest.base_manifest_list)))
    os.remove(join(manifest_dir, metas[0].file_name))
    with pytest.raises(FileNotFoundError):
        m.read_snapshot_live_files(IO, manifest_dir, latest)
    os.remove(join(manifest_dir, str(latest.delta_manifest_list)))
    with pytest.raises(FileNotFoundError):
        m.read_snapshot_live_files(IO, manifest_dir, latest)


def test_gc_is_restored_after_reads(pypaimon_warehouse: str) -> None:
    import gc

    manifest_dir = join(pypaimon_warehouse, "db.db", "pk_part", "manifest")
    name = next(n for n in os.listdir(manifest_dir) if n.startswith("manifest-") and "list" not in n)
    assert gc.isenabled()
    m.read_manifest(IO, join(manifest_dir, name))
    assert gc.isenabled()
    gc.disable()
    try:
        m.read_manifest_refs(IO, join(manifest_dir, name))
        assert not gc.isenabled()
    finally:
        gc.enable()
