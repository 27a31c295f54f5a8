"""Synthetic Paimon tables for the maintenance benchmarks, written directly (no pypaimon commits).

A partitioned primary-key table ``(dt, order_id) -> amount`` with fixed buckets, laid out as a
writer would leave it after thousands of commits:

- ``schema/schema-0`` and one ``snapshot/snapshot-N`` per commit (Jackson-free JSON as pypaimon
  writes it), ``EARLIEST``/``LATEST`` hints, tags ``tag/tag-t<N>`` every ``tag_every`` commits;
- per commit one delta manifest (``manifest-<uuid>-0``) and two manifest lists
  (``manifest-list-<uuid>-0`` base, ``-1`` delta), all Avro with pypaimon's writer schemas
  (``pypaimon.manifest.schema.*``) and its codec (zstandard);
- the base manifest list follows Java's ``FileStoreCommitImpl``: ``base(s) = merge(base(s-1) +
  delta(s-1))`` with ``ManifestFileMerger``'s minor compaction (small manifests are merged with
  ``FileEntry.mergeEntries`` once ``merge_min_count`` of them pile up, or once they reach the
  target size) and a full compaction (rewrite of the live state) when uncancelled DELETE entries
  pile up;
- commits: APPENDs of level-0 files into the current day partition; every ``compact_every``-th
  commit a COMPACT that rewrites the level-0 files of each bucket into fewer level-5 files
  (one file per bucket is *upgraded* instead: DELETE level 0 + ADD level 5 of the same file,
  which expiration must not delete); when a new day starts past ``keep_partitions`` days, an
  OVERWRITE that drops the oldest day (partition expiration);
- empty data files on disk (about 1% with a file-index ``.index`` extra file), and optionally
  unreferenced "orphan" data files and manifests.

The builder keeps ground truth: which files each snapshot reaches, which files exist.
"""

from __future__ import annotations

import ctypes
import gc
import io
import json
import os
import random
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import fastavro

__all__ = ["SynthSpec", "SynthTable", "build_table", "validate_with_pypaimon", "reachable_with_pypaimon",
           "Phase", "phase", "copy_tree", "verdict", "max_rss_mb", "fmt_phase", "release_memory"]

DB = "bench"
TABLE = "orders"
IDENTIFIER = f"{DB}.{TABLE}"

_SCHEMA_JSON = {
    "version": 3,
    "id": 0,
    "fields": [
        {"id": 0, "name": "dt", "type": "STRING NOT NULL"},
        {"id": 1, "name": "order_id", "type": "BIGINT NOT NULL"},
        {"id": 2, "name": "amount", "type": "DOUBLE"},
    ],
    "highestFieldId": 2,
    "partitionKeys": ["dt"],
    "primaryKeys": ["dt", "order_id"],
    "options": {},
    "comment": None,
}

ADD, DELETE = 0, 1
_LINKS_PER_TEMPLATE = 5_000


@dataclass(frozen=True)
class SynthSpec:
    snapshots: int = 2_000
    files: int = 100_000  #: level-0 data files written by APPEND commits (compaction adds ~10% more)
    buckets: int = 4
    snapshots_per_partition: int = 50
    compact_every: int = 10
    compact_ratio: int = 10  #: level-0 files per rewritten level-5 file
    keep_partitions: int = 20
    tag_every: int = 250
    merge_min_count: int = 30
    manifest_target: int = 4_000  #: entries; "suggested manifest size"
    full_compaction_deletes: int = 20_000
    extra_file_every: int = 97  #: every n-th data file has a file-index extra file
    #: "pypaimon": base(s) = base(s-1) + delta(s-1), never merged (pypaimon 2.1 commits);
    #: "java": Java's ManifestFileMerger (minor merges, full compaction).
    writer: str = "pypaimon"
    orphan_files: int = 0
    orphan_manifests: int = 0
    seed: int = 7

    @property
    def files_per_append(self) -> int:
        appends = self.snapshots - self.snapshots // max(1, self.compact_every)
        return max(1, -(-self.files // max(1, appends)))


# -- Avro records -----------------------------------------------------------------------------
def _pypaimon_schemas() -> tuple[Any, Any, str]:
    from pypaimon.manifest import avro_codec
    from pypaimon.manifest.schema.manifest_entry import MANIFEST_ENTRY_SCHEMA
    from pypaimon.manifest.schema.manifest_file_meta import MANIFEST_FILE_META_SCHEMA

    return (fastavro.parse_schema(MANIFEST_ENTRY_SCHEMA), fastavro.parse_schema(MANIFEST_FILE_META_SCHEMA),
            avro_codec("zstd"))


def _binary_row_string(value: str) -> bytes:
    """pypaimon's GenericRowSerializer.to_bytes for a one-column STRING row."""
    from pypaimon.schema.data_types import AtomicType, DataField
    from pypaimon.table.row.generic_row import GenericRow, GenericRowSerializer

    return bytes(GenericRowSerializer.to_bytes(GenericRow([value], [DataField(0, "dt", AtomicType("STRING"))])))


def _binary_row_long(value: int) -> bytes:
    from pypaimon.schema.data_types import AtomicType, DataField
    from pypaimon.table.row.generic_row import GenericRow, GenericRowSerializer

    return bytes(GenericRowSerializer.to_bytes(GenericRow([value], [DataField(1, "order_id", AtomicType("BIGINT"))])))


@dataclass(eq=False)
class _File:
    name: str
    part: int
    bucket: int
    level: int
    extra: tuple[str, ...]
    seq: int
    created_ms: int = 0
    encoded: dict[int, bytes] = field(default_factory=dict)  #: kind -> Avro-encoded manifest entry

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.part, self.bucket, self.name)


# An entry as the builder tracks it: (kind, file).
_Entry = tuple[int, _File]


def _ident(f: _File) -> tuple[int, int, int, str]:
    return (f.part, f.bucket, f.level, f.name)


@dataclass
class _Manifest:
    name: str
    entries: list[_Entry]
    size: int = 0
    list_record: dict[str, Any] | None = None
    list_bytes: bytes | None = None  #: list_record, Avro-encoded

    @property
    def n(self) -> int:
        return len(self.entries)


@dataclass
class _Chain:
    blocks: list[tuple[int, bytes]] = field(default_factory=list)
    tail: list[bytes] = field(default_factory=list)
    tail_size: int = 0


_SYNC_INTERVAL = 16_000  # fastavro's default (1000 * SYNC_SIZE), which pypaimon uses


def _avro_long(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _zstd_compress(data: bytes) -> bytes:
    try:
        from backports import zstd  # type: ignore[import-not-found]
    except ImportError:  # Python >= 3.14
        from compression import zstd  # type: ignore[import-not-found,no-redef]
    return bytes(zstd.compress(data))


@dataclass
class SynthTable:
    """What was built, plus ground truth."""

    warehouse: str
    root: str
    spec: SynthSpec
    snapshot_ids: list[int]
    tags: dict[str, int]  #: tag name -> snapshot id
    data_files: int  #: data files (incl. extra files) on disk
    manifest_files: int  #: manifests + manifest lists on disk
    entries_written: int
    live_counts: dict[int, int]  #: snapshot id -> number of live data files (sampled ids)
    live_sets: dict[int, frozenset[str]] = field(repr=False, default_factory=dict)  #: sampled ids -> names
    referenced_names: set[str] = field(repr=False, default_factory=set)  #: every name a root reaches
    orphan_paths: list[str] = field(repr=False, default_factory=list)
    build_seconds: float = 0.0

    @property
    def identifier(self) -> str:
        return IDENTIFIER


class _Builder:
    def __init__(self, warehouse: str, spec: SynthSpec, now_ms: int) -> None:
        self.spec = spec
        self.rng = random.Random(spec.seed)
        self.warehouse = warehouse
        self.root = os.path.join(warehouse, f"{DB}.db", TABLE)
        self.manifest_dir = os.path.join(self.root, "manifest")
        self.entry_schema, self.list_schema, self.codec = _pypaimon_schemas()
        self.now_ms = now_ms
        self.start_ms = now_ms - 2 * 86_400_000 - spec.snapshots * 60_000
        self.parts: list[bytes] = []
        self.part_names: list[str] = []
        self.key_rows = [_binary_row_long(i * 1000) for i in range(64)]
        self.live: dict[tuple[int, int, int, str], _File] = {}  # identifier -> file
        self.level0: dict[tuple[int, int], list[_File]] = {}
        self.base: list[_Manifest] = []
        self.prev_delta: list[_Manifest] = []
        self.seq = 0
        self.file_counter = 0
        self.entries_written = 0
        self.manifests_written = 0
        self.data_files = 0
        self.dirs_made: set[str] = set()
        self.referenced: set[str] = set()
        self.template_dir = os.path.join(warehouse, ".templates")
        self.template: str | None = None
        self.template_links = 0
        self.chain = _Chain()
        header = io.BytesIO()
        fastavro.writer(header, self.list_schema, [], codec=self.codec)
        self.list_header = header.getvalue()
        header = io.BytesIO()
        fastavro.writer(header, self.entry_schema, [], codec=self.codec)
        self.entry_header = header.getvalue()
        self.now_commit_ms = self.start_ms

    # -- names ------------------------------------------------------------------------------
    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def partition(self, idx: int) -> bytes:
        while len(self.parts) <= idx:
            day = len(self.parts)
            name = time.strftime("%Y-%m-%d", time.gmtime(1_767_225_600 + day * 86_400))  # from 2026-01-01
            self.part_names.append(name)
            self.parts.append(_binary_row_string(name))
        return self.parts[idx]

    def bucket_dir(self, part: int, bucket: int) -> str:
        self.partition(part)
        return os.path.join(self.root, f"dt={self.part_names[part]}", f"bucket-{bucket}")

    # -- data files -------------------------------------------------------------------------
    def new_file(self, part: int, bucket: int, level: int) -> _File:
        self.file_counter += 1
        name = f"data-{self.uuid()}-0.parquet"
        extra: tuple[str, ...] = ()
        if self.spec.extra_file_every and self.file_counter % self.spec.extra_file_every == 0:
            extra = (f"{name}.index",)
        self.seq += 1
        f = _File(name, part, bucket, level, extra, self.seq, self.now_commit_ms)
        directory = self.bucket_dir(part, bucket)
        if directory not in self.dirs_made:
            os.makedirs(directory, exist_ok=True)
            self.dirs_made.add(directory)
        for n in (name, *extra):
            self.touch(os.path.join(directory, n))
        return f

    def touch(self, path: str) -> None:
        """An empty file. Creating inodes is slow on some disks (~0.4 ms here), so data files
        are hard links to a few empty template files outside the table (at most
        ``_LINKS_PER_TEMPLATE`` each, leaving room under ext4's 65,000-link limit for the
        ``cp -al`` copies the benchmarks make). They are still distinct directory entries that
        listing, stat and unlink treat as regular files."""
        if self.template is None or self.template_links >= _LINKS_PER_TEMPLATE:
            self.template = os.path.join(self.template_dir, f"empty-{self.data_files}")
            os.makedirs(self.template_dir, exist_ok=True)
            with open(self.template, "wb"):
                pass
            self.template_links = 0
        os.link(self.template, path)
        self.template_links += 1
        self.data_files += 1

    # -- Avro -------------------------------------------------------------------------------
    def _entry_record(self, kind: int, f: _File) -> dict[str, Any]:
        k = self.key_rows[f.seq % len(self.key_rows)]
        k2 = self.key_rows[(f.seq + 7) % len(self.key_rows)]
        return {
            "_VERSION": 2, "_KIND": kind, "_PARTITION": self.parts[f.part], "_BUCKET": f.bucket,
            "_TOTAL_BUCKETS": self.spec.buckets,
            "_FILE": {
                "_FILE_NAME": f.name, "_FILE_SIZE": 2_000 + f.seq % 5_000, "_ROW_COUNT": 1 + f.seq % 977,
                "_MIN_KEY": k, "_MAX_KEY": k2,
                "_KEY_STATS": {"_MIN_VALUES": k, "_MAX_VALUES": k2, "_NULL_COUNTS": [0]},
                "_VALUE_STATS": {"_MIN_VALUES": b"\x00" * 12, "_MAX_VALUES": b"\x00" * 12, "_NULL_COUNTS": []},
                "_MIN_SEQUENCE_NUMBER": f.seq * 1000, "_MAX_SEQUENCE_NUMBER": f.seq * 1000 + 999,
                "_SCHEMA_ID": 0, "_LEVEL": f.level, "_EXTRA_FILES": list(f.extra),
                "_CREATION_TIME": f.created_ms, "_DELETE_ROW_COUNT": 0, "_EMBEDDED_FILE_INDEX": None,
                "_FILE_SOURCE": 0 if f.level == 0 else 1, "_VALUE_STATS_COLS": [], "_EXTERNAL_PATH": None,
                "_FIRST_ROW_ID": None, "_WRITE_COLS": None, "_WRITE_COLS_SEQUENCES": None,
            },
        }

    def _encoded_entry(self, kind: int, f: _File) -> bytes:
        found = f.encoded.get(kind)
        if found is None:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, self.entry_schema, self._entry_record(kind, f))
            found = f.encoded[kind] = buf.getvalue()
        return found

    def _container(self, header: bytes, records: Iterable[bytes]) -> bytes:
        """An Avro object container as ``fastavro.writer(..., codec=zstandard)`` writes it:
        ``header`` (schema and codec; its sync marker is replaced by a fresh one), then blocks
        cut once their encoded records reach 16,000 bytes, each zstd-compressed."""
        sync = self.rng.getrandbits(128).to_bytes(16, "little")
        parts = [header[:-16], sync]
        pending: list[bytes] = []
        size = 0

        def flush() -> None:
            payload = _zstd_compress(b"".join(pending))
            parts.extend((_avro_long(len(pending)), _avro_long(len(payload)), payload, sync))

        for record in records:
            pending.append(record)
            size += len(record)
            if size >= _SYNC_INTERVAL:
                flush()
                pending, size = [], 0
        if pending:
            flush()
        return b"".join(parts)

    def write_manifest(self, entries: list[_Entry]) -> _Manifest:
        name = f"manifest-{self.uuid()}-0"
        data = self._container(self.entry_header, (self._encoded_entry(k, f) for k, f in entries))
        with open(os.path.join(self.manifest_dir, name), "wb") as out:
            out.write(data)
        self.entries_written += len(entries)
        self.manifests_written += 1
        return _Manifest(name, entries, len(data))

    def list_record(self, m: _Manifest) -> dict[str, Any]:
        self.write_list_records([m])
        assert m.list_record is not None
        return m.list_record

    def write_list(self, name: str, manifests: list[_Manifest]) -> int:
        records = self.write_list_records(manifests)
        path = os.path.join(self.manifest_dir, name)
        with open(path, "wb") as out:
            fastavro.writer(out, self.list_schema, records, codec=self.codec)
            size = out.tell()
        self.manifests_written += 1
        return size

    def write_chained_list(self, name: str, appended: list[_Manifest]) -> int:
        """The next list of a chain whose records only grow (pypaimon: base(s) = base(s-1) +
        delta(s-1)), byte-compatible with ``fastavro.writer``: same schema header, codec and
        block boundaries (a block is cut once its encoded records reach 16,000 bytes). Full
        blocks are compressed once and reused by every later list of the chain."""
        chain = self.chain
        for m in appended:
            if m.list_bytes is None:
                buf = io.BytesIO()
                fastavro.schemaless_writer(buf, self.list_schema, self.list_record(m))
                m.list_bytes = buf.getvalue()
            chain.tail.append(m.list_bytes)
            chain.tail_size += len(m.list_bytes)
            if chain.tail_size >= _SYNC_INTERVAL:
                chain.blocks.append((len(chain.tail), _zstd_compress(b"".join(chain.tail))))
                chain.tail, chain.tail_size = [], 0
        sync = self.rng.getrandbits(128).to_bytes(16, "little")
        parts = [self.list_header[:-16], sync]
        blocks = list(chain.blocks)
        if chain.tail:
            blocks.append((len(chain.tail), _zstd_compress(b"".join(chain.tail))))
        for count, payload in blocks:
            parts += [_avro_long(count), _avro_long(len(payload)), payload, sync]
        data = b"".join(parts)
        with open(os.path.join(self.manifest_dir, name), "wb") as out:
            out.write(data)
        self.manifests_written += 1
        return len(data)

    def write_list_records(self, manifests: list[_Manifest]) -> list[dict[str, Any]]:
        records = []
        for m in manifests:
            if m.list_record is not None:
                records.append(m.list_record)
                continue
            parts = sorted({f.part for _, f in m.entries}) or [0]
            buckets = [f.bucket for _, f in m.entries] or [0]
            levels = [f.level for _, f in m.entries] or [0]
            records.append({
                "_VERSION": 2, "_FILE_NAME": m.name, "_FILE_SIZE": m.size,
                "_NUM_ADDED_FILES": sum(1 for k, _ in m.entries if k == ADD),
                "_NUM_DELETED_FILES": sum(1 for k, _ in m.entries if k == DELETE),
                "_PARTITION_STATS": {"_MIN_VALUES": self.parts[parts[0]], "_MAX_VALUES": self.parts[parts[-1]],
                                     "_NULL_COUNTS": [0]},
                "_SCHEMA_ID": 0, "_MIN_BUCKET": min(buckets), "_MAX_BUCKET": max(buckets),
                "_MIN_LEVEL": min(levels), "_MAX_LEVEL": max(levels), "_MIN_ROW_ID": None, "_MAX_ROW_ID": None,
                "_TOTAL_BUCKETS": self.spec.buckets, "_EXTRA_FILES": None,
            })
            m.list_record = records[-1]
        return records

    # -- manifest merging (Java ManifestFileMerger, simplified to entry counts) ---------------
    @staticmethod
    def _merge_entries(manifests: Iterable[_Manifest]) -> list[_Entry]:
        merged: dict[tuple[int, int, int, str], _Entry] = {}
        for m in manifests:
            for kind, f in m.entries:
                key = _ident(f)
                if kind == ADD:
                    merged[key] = (kind, f)
                elif key in merged:
                    del merged[key]
                else:
                    merged[key] = (kind, f)
        return list(merged.values())

    def _rolling(self, entries: list[_Entry]) -> list[_Manifest]:
        target = self.spec.manifest_target
        return [self.write_manifest(entries[i:i + target]) for i in range(0, len(entries), target)]

    def merge(self, manifests: list[_Manifest]) -> list[_Manifest]:
        spec = self.spec
        if spec.writer == "pypaimon":
            return manifests
        deletes = sum(1 for m in manifests for k, _ in m.entries if k == DELETE)
        if deletes >= spec.full_compaction_deletes:
            live = [e for e in self._merge_entries(manifests) if e[0] == ADD]
            return self._rolling(live)
        result: list[_Manifest] = []
        candidates: list[_Manifest] = []
        total = 0

        def flush() -> None:
            if len(candidates) == 1:
                result.append(candidates[0])
            elif candidates:
                result.extend(self._rolling(self._merge_entries(candidates)))

        for m in manifests:
            total += m.n
            candidates.append(m)
            if total >= spec.manifest_target:
                flush()
                candidates, total = [], 0
        if len(candidates) >= spec.merge_min_count:
            flush()
        else:
            result.extend(candidates)
        return result

    # -- commits ----------------------------------------------------------------------------
    def commit_entries(self, sid: int) -> tuple[str, list[_Entry]]:
        spec = self.spec
        part = (sid - 1) // spec.snapshots_per_partition
        self.partition(part)
        first_of_day = (sid - 1) % spec.snapshots_per_partition == 0
        drop = part - spec.keep_partitions
        if first_of_day and drop >= 0:
            dropped = [f for f in self.live.values() if f.part == drop]
            for f in dropped:
                del self.live[_ident(f)]
            for b in range(spec.buckets):
                self.level0.pop((drop, b), None)
            return "OVERWRITE", [(DELETE, f) for f in dropped]
        if sid % spec.compact_every == 0:
            entries: list[_Entry] = []
            for b in range(spec.buckets):
                l0 = self.level0.pop((part, b), [])
                if not l0:
                    continue
                upgraded, rewritten = l0[0], l0[1:]
                entries.append((DELETE, upgraded))
                del self.live[_ident(upgraded)]
                moved = _File(upgraded.name, part, b, 5, upgraded.extra, upgraded.seq, upgraded.created_ms)
                entries.append((ADD, moved))
                self.live[_ident(moved)] = moved
                for f in rewritten:
                    entries.append((DELETE, f))
                    del self.live[_ident(f)]
                for _ in range(-(-len(rewritten) // spec.compact_ratio)):
                    nf = self.new_file(part, b, 5)
                    entries.append((ADD, nf))
                    self.live[_ident(nf)] = nf
            return "COMPACT", entries
        entries = []
        for i in range(spec.files_per_append):
            b = (sid + i) % spec.buckets
            f = self.new_file(part, b, 0)
            self.level0.setdefault((part, b), []).append(f)
            self.live[_ident(f)] = f
            entries.append((ADD, f))
        return "APPEND", entries

    def snapshot_json(self, sid: int, kind: str, base: str, base_size: int, delta: str, delta_size: int,
                      delta_records: int) -> dict[str, Any]:
        return {
            "version": 3, "id": sid, "schemaId": 0,
            "baseManifestList": base, "deltaManifestList": delta,
            "totalRecordCount": len(self.live) * 100, "deltaRecordCount": delta_records * 100,
            "commitUser": "bench-writer", "commitIdentifier": sid, "commitKind": kind,
            "timeMillis": self.start_ms + sid * 60_000,
            "baseManifestListSize": base_size, "deltaManifestListSize": delta_size,
            "uuid": self.uuid(), "writerVersion": "tablekeeper-bench-synth",
        }


def build_table(warehouse: str, spec: SynthSpec, *, sample_live: Iterable[int] = (),
                track_referenced: bool = False, now_ms: int | None = None) -> SynthTable:
    """Write the table under ``warehouse`` (a filesystem-catalog warehouse) and return ground truth.

    ``sample_live``: snapshot ids whose live data file names are kept for validation.
    ``track_referenced``: collect every name a snapshot or tag reaches (orphan benchmark).
    """
    t0 = time.perf_counter()
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    b = _Builder(warehouse, spec, now_ms)
    for d in ("schema", "snapshot", "manifest", "tag"):
        os.makedirs(os.path.join(b.root, d), exist_ok=True)
    with open(os.path.join(warehouse, f"{DB}.db", ".keep"), "w"):
        pass
    schema = dict(_SCHEMA_JSON, options={"bucket": str(spec.buckets), "file.format": "parquet",
                                         "manifest.merge-min-count": str(spec.merge_min_count)},
                  timeMillis=b.start_ms)
    with open(os.path.join(b.root, "schema", "schema-0"), "w") as f:
        json.dump(schema, f, indent=2)
    sample = set(sample_live)
    live_counts: dict[int, int] = {}
    live_sets: dict[int, frozenset[str]] = {}
    tags: dict[str, int] = {}
    snap_dir = os.path.join(b.root, "snapshot")
    for sid in range(1, spec.snapshots + 1):
        b.now_commit_ms = b.start_ms + sid * 60_000
        kind, entries = b.commit_entries(sid)
        list_uuid = b.uuid()
        base_manifests = b.merge(b.base + b.prev_delta) if sid > 1 else []
        base_name, delta_name = f"manifest-list-{list_uuid}-0", f"manifest-list-{list_uuid}-1"
        if spec.writer == "pypaimon":
            base_size = b.write_chained_list(base_name, b.prev_delta)
        else:
            base_size = b.write_list(base_name, base_manifests)
        delta_manifests = [b.write_manifest(entries)] if entries else []
        delta_size = b.write_list(delta_name, delta_manifests)
        b.base, b.prev_delta = base_manifests, delta_manifests
        snap = b.snapshot_json(sid, kind, base_name, base_size, delta_name, delta_size, len(entries))
        text = json.dumps(snap, indent=2)
        with open(os.path.join(snap_dir, f"snapshot-{sid}"), "w") as f:
            f.write(text)
        if track_referenced:
            b.referenced.update((base_name, delta_name))
            for m in (*base_manifests, *delta_manifests):
                if m.name not in b.referenced:
                    b.referenced.add(m.name)
                    for _, df in m.entries:
                        b.referenced.add(df.name)
                        b.referenced.update(df.extra)
        if spec.tag_every and sid % spec.tag_every == 0:
            name = f"t{sid}"
            tags[name] = sid
            tag = dict(snap, tagCreateTime=[2026, 1, 1, 0, 0, 0, 0], tagTimeRetained=None)
            tag.pop("tagTimeRetained")
            with open(os.path.join(b.root, "tag", f"tag-{name}"), "w") as f:
                json.dump(tag, f, indent=2)
        if sid in sample:
            live_sets[sid] = frozenset(f.name for f in b.live.values())
        if sid in sample or sid == spec.snapshots:
            live_counts[sid] = len(b.live)
    for hint, value in (("EARLIEST", 1), ("LATEST", spec.snapshots)):
        with open(os.path.join(snap_dir, hint), "w") as f:
            f.write(str(value))
    orphan_paths: list[str] = []
    for i in range(spec.orphan_files):
        part = (i * 7) % max(1, len(b.parts))
        directory = b.bucket_dir(part, i % spec.buckets)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"data-{b.uuid()}-0.parquet")
        b.touch(path)
        orphan_paths.append(path)
    for _ in range(spec.orphan_manifests):
        path = os.path.join(b.manifest_dir, f"manifest-{b.uuid()}-0")
        with open(path, "wb") as leftover:
            leftover.write(b"Obj\x01 crashed writer leftover")
        orphan_paths.append(path)
    return SynthTable(
        warehouse=warehouse, root=b.root, spec=spec, snapshot_ids=list(range(1, spec.snapshots + 1)), tags=tags,
        data_files=b.data_files, manifest_files=b.manifests_written + spec.orphan_manifests,
        entries_written=b.entries_written, live_counts=live_counts, live_sets=live_sets,
        referenced_names=b.referenced, orphan_paths=orphan_paths, build_seconds=time.perf_counter() - t0)


# -- validation through pypaimon ----------------------------------------------------------------
def _pypaimon_table(warehouse: str) -> Any:
    from pypaimon import CatalogFactory

    return CatalogFactory.create({"warehouse": warehouse}).get_table(IDENTIFIER)


def reachable_with_pypaimon(warehouse: str, snapshot_ids: Iterable[int], tag_names: Iterable[str] = ()
                            ) -> Iterator[tuple[str, set[str], set[str]]]:
    """For each snapshot id / tag: (label, live data file paths + extra files, manifest paths),
    read with pypaimon's own readers only (``get_table``, ManifestListManager,
    ManifestFileManager.read_entries_parallel)."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    from pypaimon.tag.tag_manager import TagManager

    table = _pypaimon_table(warehouse)
    mlm, mfm = ManifestListManager(table), ManifestFileManager(table)
    sm = table.snapshot_manager()
    factory = table.path_factory()
    root = table.table_path.rstrip("/")
    roots: list[tuple[str, Any]] = [(f"snapshot-{i}", sm.get_snapshot_by_id(i)) for i in snapshot_ids]
    tm = TagManager(table.file_io, table.table_path)
    roots += [(f"tag-{n}", tm.get(n).trim_to_snapshot()) for n in tag_names]
    for label, snap in roots:
        if snap is None:
            raise AssertionError(f"pypaimon cannot read {label}")
        metas = mlm.read_all(snap)
        manifests = {f"{root}/manifest/{snap.base_manifest_list}", f"{root}/manifest/{snap.delta_manifest_list}"}
        manifests.update(f"{root}/manifest/{m.file_name}" for m in metas)
        live: set[str] = set()
        for e in mfm.read_entries_parallel(metas):
            bucket_dir = str(factory.bucket_path(tuple(e.partition.values), e.bucket)).removeprefix("file:")
            live.add(f"{bucket_dir}/{e.file.file_name}")
            live.update(f"{bucket_dir}/{x}" for x in e.file.extra_files)
        yield label, live, manifests


def validate_with_pypaimon(built: SynthTable, snapshot_ids: Iterable[int]) -> list[str]:
    """Read sampled snapshots with pypaimon and compare their live files with the ground truth
    (and check every reached file exists). Returns human-readable lines; raises on mismatch."""
    lines = []
    table = _pypaimon_table(built.warehouse)
    latest = table.snapshot_manager().get_latest_snapshot()
    if latest is None or latest.id != built.spec.snapshots:
        raise AssertionError(f"pypaimon sees latest snapshot {latest and latest.id}, expected {built.spec.snapshots}")
    for label, live, manifests in reachable_with_pypaimon(built.warehouse, snapshot_ids):
        sid = int(label.rsplit("-", 1)[1])
        names = {p.rsplit("/", 1)[1] for p in live if not p.endswith(".index")}
        expected = built.live_sets.get(sid)
        if expected is not None and names != expected:
            raise AssertionError(f"{label}: pypaimon reads {len(names)} live files, builder expected {len(expected)}")
        missing = [p for p in (*live, *manifests) if not os.path.exists(p)]
        if missing:
            raise AssertionError(f"{label}: {len(missing)} reachable files missing, e.g. {missing[0]}")
        lines.append(f"pypaimon reads {label}: {len(names):,} live data files, {len(manifests)} manifest files"
                     + (" (= ground truth)" if expected is not None else ""))
    return lines


# -- measurement helpers shared by the benchmarks --------------------------------------------
T = TypeVar("T")


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except OSError:  # pragma: no cover - not Linux
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def release_memory() -> None:
    """Collect garbage and hand freed heap back to the OS, so the next phase's RSS peak is its own."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


@dataclass
class Phase:
    label: str
    seconds: float = 0.0
    rss_start: int = 0
    rss_peak: int = 0

    @property
    def peak_mb(self) -> float:
        return self.rss_peak / 1e6

    @property
    def growth_mb(self) -> float:
        return max(0, self.rss_peak - self.rss_start) / 1e6


class _Sampler(threading.Thread):
    def __init__(self, interval: float = 0.005) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.peak = rss_bytes()
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.peak = max(self.peak, rss_bytes())
            self._stop_event.wait(self.interval)

    def stop(self) -> int:
        self._stop_event.set()
        self.join()
        self.peak = max(self.peak, rss_bytes())
        return self.peak


@contextmanager
def phase(label: str, *, release: bool = True) -> Iterator[Phase]:
    """Time a block and sample its peak RSS (a 5 ms sampler thread; cheap next to the work)."""
    if release:
        release_memory()
    p = Phase(label, rss_start=rss_bytes())
    sampler = _Sampler()
    sampler.start()
    start = time.perf_counter()
    try:
        yield p
    finally:
        p.seconds = time.perf_counter() - start
        p.rss_peak = sampler.stop()


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def copy_tree(src: str, dst: str) -> None:
    """A hard-link copy (``cp -al``): metadata and empty data files are shared inodes, but
    deleting a name in one copy leaves the others intact; tablekeeper replaces hint files
    (temp + rename), so no copy writes into a shared inode."""
    subprocess.run(["cp", "-al", src, dst], check=True)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def max_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fmt_phase(p: Phase) -> str:
    return f"{p.label:<52} {p.seconds:8.2f}s   peak RSS {p.peak_mb:7.0f} MB (+{p.growth_mb:.0f} MB)"


