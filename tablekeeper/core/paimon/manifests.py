"""Streaming reader for Paimon's Avro manifest lists, manifests and index manifests.

Each file is decoded with its own embedded writer schema; fields are picked by name with
defaults (Java and pypaimon write different nested record names and field sets). For planning,
``read_manifest_refs`` decodes through a projected reader schema derived from the writer
schema, so statistics are skipped inside fastavro."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import fastavro

from tablekeeper.core import errors
from tablekeeper.core.storage import FileIO

__all__ = [
    "ADD", "DELETE", "ManifestFileMeta", "DataFileMeta", "ManifestEntry", "FileRef",
    "IndexManifestEntry", "read_manifest_list", "read_manifest", "read_manifest_refs",
    "read_index_manifest", "entry_identifier", "merge_live",
]

ADD = 0
DELETE = 1


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: tuple[bytes | None, bytes | None, tuple[int | None, ...] | None]
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None
    total_buckets: int | None = None
    extra_files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: Any
    value_stats: Any
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...]
    creation_time: int | None
    delete_row_count: int | None
    embedded_file_index: bytes | None
    file_source: int | None
    value_stats_cols: tuple[str, ...] | None
    external_path: str | None
    first_row_id: int | None
    write_cols: tuple[str, ...] | None
    write_cols_sequences: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    kind: int
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta


class FileRef(NamedTuple):
    """What planning needs of a manifest entry."""

    kind: int
    partition: bytes
    bucket: int
    level: int
    file_name: str
    extra_files: tuple[str, ...]
    external_path: str | None
    file_source: int | None
    embedded_index: bytes | None


@dataclass(frozen=True, slots=True)
class IndexManifestEntry:
    kind: int
    partition: bytes
    bucket: int
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[Any, ...] | None
    external_path: str | None
    global_index: Any


def _read(file_io: FileIO, path: str) -> bytes:
    return file_io.read_bytes(path)  # FileNotFoundError propagates: never [] for a missing file


def _records(data: bytes, path: str, reader_schema: Any = None) -> Iterable[dict[str, Any]]:
    try:
        reader = (fastavro.reader(io.BytesIO(data)) if reader_schema is None
                  else fastavro.reader(io.BytesIO(data), reader_schema=reader_schema))
        return [r for r in reader if isinstance(r, dict)]
    except Exception as e:
        raise errors.FormatError(f"cannot decode Avro file {path}: {e}",
                                 fix="the manifest is damaged; restore it or repair the table") from e


def _ts_ms(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    return int(value)


def _tuple(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def read_manifest_list(file_io: FileIO, path: str) -> list[ManifestFileMeta]:
    out = []
    for r in _records(_read(file_io, path), path):
        stats = r.get("_PARTITION_STATS") or {}
        out.append(ManifestFileMeta(
            r["_FILE_NAME"], r["_FILE_SIZE"], r["_NUM_ADDED_FILES"], r["_NUM_DELETED_FILES"],
            (stats.get("_MIN_VALUES"), stats.get("_MAX_VALUES"), _tuple(stats.get("_NULL_COUNTS"))),
            r["_SCHEMA_ID"], r.get("_MIN_BUCKET"), r.get("_MAX_BUCKET"), r.get("_MIN_LEVEL"),
            r.get("_MAX_LEVEL"), r.get("_MIN_ROW_ID"), r.get("_MAX_ROW_ID"), r.get("_TOTAL_BUCKETS"),
            tuple(r.get("_EXTRA_FILES") or ()),
        ))
    return out


def _data_file(f: dict[str, Any]) -> DataFileMeta:
    return DataFileMeta(
        f["_FILE_NAME"], f["_FILE_SIZE"], f["_ROW_COUNT"], f.get("_MIN_KEY", b""), f.get("_MAX_KEY", b""),
        f.get("_KEY_STATS"), f.get("_VALUE_STATS"), f["_MIN_SEQUENCE_NUMBER"], f["_MAX_SEQUENCE_NUMBER"],
        f["_SCHEMA_ID"], f["_LEVEL"], tuple(f.get("_EXTRA_FILES") or ()), _ts_ms(f.get("_CREATION_TIME")),
        f.get("_DELETE_ROW_COUNT"), f.get("_EMBEDDED_FILE_INDEX"), f.get("_FILE_SOURCE"),
        _tuple(f.get("_VALUE_STATS_COLS")), f.get("_EXTERNAL_PATH"), f.get("_FIRST_ROW_ID"),
        _tuple(f.get("_WRITE_COLS")), _tuple(f.get("_WRITE_COLS_SEQUENCES")),
    )


def read_manifest(file_io: FileIO, path: str) -> list[ManifestEntry]:
    return [ManifestEntry(r["_KIND"], r["_PARTITION"], r["_BUCKET"], r["_TOTAL_BUCKETS"], _data_file(r["_FILE"]))
            for r in _records(_read(file_io, path), path)]


_REF_FILE_FIELDS = ("_FILE_NAME", "_LEVEL", "_EXTRA_FILES", "_EXTERNAL_PATH", "_FILE_SOURCE", "_EMBEDDED_FILE_INDEX")
_REF_FIELDS = ("_KIND", "_PARTITION", "_BUCKET", "_FILE")
_projections: dict[str, Any] = {}


def _projection(writer: dict[str, Any]) -> Any:
    key = json.dumps(writer, sort_keys=True)
    cached = _projections.get(key)
    if cached is None:
        fields = []
        for f in writer["fields"]:
            if f["name"] not in _REF_FIELDS:
                continue
            if f["name"] == "_FILE":
                inner = f["type"]
                inner = dict(inner, fields=[g for g in inner["fields"] if g["name"] in _REF_FILE_FIELDS])
                f = dict(f, type=inner)
            fields.append(f)
        cached = fastavro.parse_schema(dict(writer, fields=fields))
        _projections[key] = cached
    return cached


def read_manifest_refs(file_io: FileIO, path: str) -> list[FileRef]:
    data = _read(file_io, path)
    try:
        writer = fastavro.reader(io.BytesIO(data)).writer_schema
        if not isinstance(writer, dict):
            raise TypeError("top-level schema is not a record")
    except Exception as e:
        raise errors.FormatError(f"cannot decode Avro file {path}: {e}", fix="restore the manifest") from e
    out = []
    for r in _records(data, path, _projection(writer)):
        f = r["_FILE"]
        out.append(FileRef(r["_KIND"], r["_PARTITION"], r["_BUCKET"], f["_LEVEL"], f["_FILE_NAME"],
                           tuple(f.get("_EXTRA_FILES") or ()), f.get("_EXTERNAL_PATH"), f.get("_FILE_SOURCE"),
                           f.get("_EMBEDDED_FILE_INDEX")))
    return out


def read_index_manifest(file_io: FileIO, path: str) -> list[IndexManifestEntry]:
    return [IndexManifestEntry(
        r["_KIND"], r["_PARTITION"], r["_BUCKET"], r["_INDEX_TYPE"], r["_FILE_NAME"], r["_FILE_SIZE"],
        r["_ROW_COUNT"], _tuple(r.get("_DELETIONS_VECTORS_RANGES")), r.get("_EXTERNAL_PATH"), r.get("_GLOBAL_INDEX"))
        for r in _records(_read(file_io, path), path)]


def entry_identifier(ref: FileRef) -> tuple[Any, ...]:
    """Java's FileEntry.Identifier."""
    return (ref.partition, ref.bucket, ref.level, ref.file_name, ref.extra_files, ref.embedded_index,
            ref.external_path)


def merge_live(refs: Iterable[FileRef]) -> list[FileRef]:
    """Java's mergeEntries: ADD then DELETE of an identifier cancels; a DELETE whose ADD was not
    seen is kept (and ignored here); a duplicate ADD is an error."""
    live: dict[tuple[Any, ...], FileRef] = {}
    orphan_deletes: set[tuple[Any, ...]] = set()
    for ref in refs:
        ident = entry_identifier(ref)
        if ref.kind == ADD:
            if ident in live:
                raise errors.FormatError(f"file {ref.file_name} is added twice", fix="the table metadata is damaged")
            live[ident] = ref
        elif ident in live:
            del live[ident]
        else:
            orphan_deletes.add(ident)
    return list(live.values())
