"""Paimon's manifest records as tablekeeper reads them: manifest-list rows, manifest entries (full
and the planning projection ``FileRef``), index-manifest rows, and the format constants."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

__all__ = ["ADD", "DELETE", "FILE_SOURCE_APPEND", "FILE_SOURCE_COMPACT", "MANIFEST_VERSION", "MANIFEST_LIST_VERSION",
    "INDEX_MANIFEST_VERSION", "SimpleStats", "ManifestFileMeta", "DataFileMeta", "FileRef", "ManifestEntry",
    "DeletionVectorRange", "GlobalIndexMeta", "IndexManifestEntry", "FileIdentifier", "as_tuple", "simple_stats",
    "list_row", "entry_row", "ref_row"]

#: ``_KIND`` of a manifest entry (Java ``FileKind``).
ADD: Final = 0
DELETE: Final = 1
#: ``_FILE_SOURCE`` of a data file (Java ``FileSource``).
FILE_SOURCE_APPEND: Final = 0
FILE_SOURCE_COMPACT: Final = 1

MANIFEST_VERSION: Final = 2
MANIFEST_LIST_VERSION: Final = 2
INDEX_MANIFEST_VERSION: Final = 1


# -- public records ---------------------------------------------------------------------------
class SimpleStats(NamedTuple):
    """Min/max BinaryRow bytes and per-column null counts, kept raw: decoding needs a schema."""

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None


class ManifestFileMeta(NamedTuple):
    """One manifest-list row: a manifest file and the summary Java uses to prune it."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None
    max_bucket: int | None
    min_level: int | None
    max_level: int | None
    min_row_id: int | None
    max_row_id: int | None
    total_buckets: int | None
    extra_files: tuple[str, ...]


class DataFileMeta(NamedTuple):
    """Every field of Java's DataFileMeta; absent (older-writer) fields are None.

    ``creation_time`` is the raw Avro ``timestamp-millis`` long: Java writes its local wall clock
    as if it were UTC, so it is an epoch-ms number only in the writer's time zone.
    """

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
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


class FileRef(NamedTuple):
    """What planning needs of a manifest entry: identity, location and provenance."""

    kind: int
    partition: bytes
    bucket: int
    level: int
    file_name: str
    extra_files: tuple[str, ...]
    external_path: str | None
    file_source: int | None
    embedded_index: bytes | None
    file_size: int = 0


class ManifestEntry(NamedTuple):
    """One manifest row. ``partition`` is the serialized BinaryRow (arity prefix + row bytes),
    which Java compares byte-wise, so it can key maps as is."""

    kind: int
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    def to_ref(self) -> FileRef:
        """The planning projection of this entry (same as ``read_manifest_refs`` yields)."""
        f = self.file
        return FileRef(self.kind, self.partition, self.bucket, f.level, f.file_name, f.extra_files,
                       f.external_path, f.file_source, f.embedded_file_index, f.file_size)


class DeletionVectorRange(NamedTuple):
    """Where one data file's deletion vector sits inside a DELETION_VECTORS index file."""

    data_file_name: str
    offset: int
    length: int
    cardinality: int | None


class GlobalIndexMeta(NamedTuple):
    """Row range and field of a global index file (``_GLOBAL_INDEX``)."""

    row_range_start: int
    row_range_end: int
    index_field_id: int
    extra_field_ids: tuple[int, ...] | None
    index_meta: bytes | None
    source_meta: bytes | None


class IndexManifestEntry(NamedTuple):
    """One index-manifest row (HASH, DELETION_VECTORS or a global index file)."""

    kind: int
    partition: bytes
    bucket: int
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorRange, ...] | None
    external_path: str | None
    global_index: GlobalIndexMeta | None


#: Java's ``FileEntry.Identifier``: (partition, bucket, level, file name, extra files,
#: embedded index, external path).
FileIdentifier = tuple[bytes, int, int, str, tuple[str, ...], bytes | None, str | None]


def as_tuple(value: Any) -> Any:
    return None if value is None else tuple(value)


def simple_stats(value: Mapping[str, Any]) -> SimpleStats:
    nulls = value.get("_NULL_COUNTS")
    return SimpleStats(value["_MIN_VALUES"], value["_MAX_VALUES"], None if nulls is None else tuple(nulls))


# -- the fastavro.reader path (the final judge) -----------------------------------------------
def list_row(r: Mapping[str, Any]) -> ManifestFileMeta:
    """The row of one manifest-list record (as fastavro's reader makes it, or a self-test
    record): what every faster list decoder must build."""
    extra = r.get("_EXTRA_FILES")
    return ManifestFileMeta(
        r["_FILE_NAME"], r["_FILE_SIZE"], r["_NUM_ADDED_FILES"], r["_NUM_DELETED_FILES"],
        simple_stats(r["_PARTITION_STATS"]), r["_SCHEMA_ID"],
        r.get("_MIN_BUCKET"), r.get("_MAX_BUCKET"), r.get("_MIN_LEVEL"), r.get("_MAX_LEVEL"),
        r.get("_MIN_ROW_ID"), r.get("_MAX_ROW_ID"), r.get("_TOTAL_BUCKETS"),
        () if extra is None else tuple(extra),
    )


def entry_row(r: Mapping[str, Any]) -> ManifestEntry:
    """The row of one manifest record as fastavro's reader makes it (what the faster entry
    decoders must build)."""
    f = r["_FILE"]
    get = f.get
    extra = f["_EXTRA_FILES"]
    return ManifestEntry(r["_KIND"], r["_PARTITION"], r["_BUCKET"], r["_TOTAL_BUCKETS"], DataFileMeta(
        f["_FILE_NAME"], f["_FILE_SIZE"], f["_ROW_COUNT"], f["_MIN_KEY"], f["_MAX_KEY"],
        simple_stats(f["_KEY_STATS"]), simple_stats(f["_VALUE_STATS"]),
        f["_MIN_SEQUENCE_NUMBER"], f["_MAX_SEQUENCE_NUMBER"], f["_SCHEMA_ID"], f["_LEVEL"],
        () if extra is None else tuple(extra),
        get("_CREATION_TIME"), get("_DELETE_ROW_COUNT"), get("_EMBEDDED_FILE_INDEX"),
        get("_FILE_SOURCE"), as_tuple(get("_VALUE_STATS_COLS")), get("_EXTERNAL_PATH"),
        get("_FIRST_ROW_ID"), as_tuple(get("_WRITE_COLS")), as_tuple(get("_WRITE_COLS_SEQUENCES")),
    ))


def ref_row(r: Mapping[str, Any]) -> FileRef:
    """The planning projection of one manifest record as fastavro's reader makes it."""
    f = r["_FILE"]
    get = f.get
    extra = f["_EXTRA_FILES"]
    return FileRef(r["_KIND"], r["_PARTITION"], r["_BUCKET"], f["_LEVEL"], f["_FILE_NAME"],
                   () if extra is None else tuple(extra), get("_EXTERNAL_PATH"), get("_FILE_SOURCE"),
                   get("_EMBEDDED_FILE_INDEX"), get("_FILE_SIZE") or 0)
