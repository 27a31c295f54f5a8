"""Streaming reader for Paimon's Avro manifest lists, manifests and index manifests.

Every file is decoded with its own embedded writer schema and fields are picked by name, with
defaults for fields a writer did not have: Java and pypaimon name nested records differently and
write different field sets (paimon-semantics.md §1.8), so one fixed reader schema cannot serve
both. Three kinds of reads:

- full reads (``read_manifest_list``, ``read_manifest``, ``read_index_manifest``) return every
  field, with stats as raw BinaryRow bytes (decoding them needs the table schema and is left to
  callers that care);
- a planning projection (``read_manifest_refs``) returns only what file identity, paths and
  deletion planning need; stats, keys and sequence numbers are skipped inside fastavro's
  compiled code and never become Python objects;
- ``merge_live`` / ``read_snapshot_live_files`` apply Java's ``FileEntry.mergeEntries``.

Missing files raise ``FileNotFoundError``; anything unreadable raises ``FormatError``.
"""

from __future__ import annotations

import gc
import importlib
import io
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Final, NamedTuple, cast

import fastavro

from tablekeeper.core import errors
from tablekeeper.core.paimon.snapshot import Snapshot
from tablekeeper.core.storage import FileIO, join

__all__ = [
    "ADD",
    "DELETE",
    "FILE_SOURCE_APPEND",
    "FILE_SOURCE_COMPACT",
    "SimpleStats",
    "ManifestFileMeta",
    "DataFileMeta",
    "ManifestEntry",
    "FileRef",
    "DeletionVectorRange",
    "GlobalIndexMeta",
    "IndexManifestEntry",
    "FileIdentifier",
    "read_manifest_list",
    "read_manifest",
    "read_manifest_refs",
    "read_index_manifest",
    "entry_identifier",
    "merge_entries",
    "merge_live",
    "read_snapshot_live_files",
]

#: ``_KIND`` of a manifest entry (Java ``FileKind``).
ADD: Final = 0
DELETE: Final = 1
#: ``_FILE_SOURCE`` of a data file (Java ``FileSource``).
FILE_SOURCE_APPEND: Final = 0
FILE_SOURCE_COMPACT: Final = 1

_MANIFEST_VERSION: Final = 2
_MANIFEST_LIST_VERSION: Final = 2
_INDEX_MANIFEST_VERSION: Final = 1
_DEFAULT_WORKERS: Final = 4


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
                       f.external_path, f.file_source, f.embedded_file_index)


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


# -- Avro container handling ------------------------------------------------------------------
_MAGIC: Final = b"Obj\x01"
#: The Avro object container header (Avro spec, "Object Container Files").
_HEADER_SCHEMA: Final = fastavro.parse_schema({
    "type": "record",
    "name": "org.apache.avro.file.Header",
    "fields": [
        {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
        {"name": "meta", "type": {"type": "map", "values": "bytes"}},
        {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}},
    ],
})
_PRIMITIVES: Final = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})

_ENTRY_TOP_REQUIRED: Final = ("_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS", "_FILE")
_ENTRY_FILE_REQUIRED: Final = (
    "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS", "_VALUE_STATS",
    "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL", "_EXTRA_FILES",
)
_LIST_REQUIRED: Final = (
    "_VERSION", "_FILE_NAME", "_FILE_SIZE", "_NUM_ADDED_FILES", "_NUM_DELETED_FILES",
    "_PARTITION_STATS", "_SCHEMA_ID",
)
_INDEX_REQUIRED: Final = (
    "_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_INDEX_TYPE", "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT",
)
#: The fields ``read_manifest_refs`` keeps (top level, and inside ``_FILE``).
_REF_TOP: Final = ("_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_FILE")
_REF_FILE: Final = ("_FILE_NAME", "_LEVEL", "_EXTRA_FILES", "_EXTERNAL_PATH", "_FILE_SOURCE",
                    "_EMBEDDED_FILE_INDEX")

_FIX_DAMAGED: Final = ("the file is damaged or was not written by Paimon: restore it from a backup, or roll the "
                       "table back to a snapshot that does not reference it")


def _format_error(path: str, what: str, detail: str) -> errors.FormatError:
    return errors.FormatError(f"{path} is not a readable Paimon {what}: {detail}", fix=_FIX_DAMAGED)


class _Container(NamedTuple):
    schema_json: str
    data: bytes  # container bytes whose embedded schema has no logical types


class _SchemaInfo(NamedTuple):
    """What one writer schema tells us, derived once and cached by its JSON text."""

    fields: Mapping[str, Any]  # top-level field name -> type
    stripped_json: bytes | None  # schema text without logical types (None: unchanged)
    ref_reader_schema: dict[str, Any] | None  # projection for read_manifest_refs
    ref_decoder: Callable[[Any, int, Callable[[FileRef], None]], None] | None  # compiled fast path


_SCHEMAS: dict[str, _SchemaInfo] = {}
_SCHEMAS_LOCK = threading.Lock()


def _strip_logical_types(schema: Any) -> Any:
    """Drop ``logicalType`` annotations so fastavro returns raw longs instead of building
    datetimes we would only convert back (``_CREATION_TIME``)."""
    if isinstance(schema, list):
        return [_strip_logical_types(s) for s in schema]
    if isinstance(schema, dict):
        return {k: _strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    return schema


def _record_fields(schema: Any) -> dict[str, Any] | None:
    if isinstance(schema, dict) and schema.get("type") == "record" and isinstance(schema.get("fields"), list):
        return {str(f["name"]): f["type"] for f in schema["fields"] if isinstance(f, dict) and "name" in f}
    return None


def _schema_info(schema_json: str, path: str, what: str) -> _SchemaInfo:
    cached = _SCHEMAS.get(schema_json)
    if cached is not None:
        return cached
    try:
        schema = json.loads(schema_json)
    except ValueError as e:
        raise _format_error(path, what, f"embedded Avro schema is not JSON ({e})") from e
    fields = _record_fields(schema)
    if fields is None:
        raise _format_error(path, what, "embedded Avro schema is not a record")
    stripped = _strip_logical_types(schema)
    stripped_json = None if stripped == schema else json.dumps(stripped).encode("utf-8")
    ref_reader: dict[str, Any] | None = None
    ref_decoder = None
    file_fields = _record_fields(fields.get("_FILE"))
    if file_fields is not None:
        ref_reader = _derive_ref_reader_schema(schema)
        ref_decoder = _compile_ref_decoder(schema)
    info = _SchemaInfo(fields, stripped_json, ref_reader, ref_decoder)
    with _SCHEMAS_LOCK:
        _SCHEMAS.setdefault(schema_json, info)
    return info


def _read_container(file_io: FileIO, path: str, what: str) -> tuple[_Container, _SchemaInfo]:
    """Read a whole Avro file and parse its header; missing files raise FileNotFoundError."""
    data = file_io.read_bytes(path)
    if not data.startswith(_MAGIC):
        raise _format_error(path, what, "no Avro container magic (empty, truncated or another format)")
    buf = io.BytesIO(data)
    try:
        header = cast(dict[str, Any], fastavro.schemaless_reader(buf, _HEADER_SCHEMA, None))
        schema_json = bytes(header["meta"]["avro.schema"]).decode("utf-8")
    except Exception as e:  # fastavro raises EOFError/ValueError/KeyError... on damaged headers
        raise _format_error(path, what, f"damaged Avro header ({type(e).__name__}: {e})") from e
    info = _schema_info(schema_json, path, what)
    if info.stripped_json is not None:
        header["meta"] = {**header["meta"], "avro.schema": info.stripped_json}
        out = io.BytesIO()
        fastavro.schemaless_writer(out, _HEADER_SCHEMA, header)
        data = out.getvalue() + data[buf.tell():]
    return _Container(schema_json, data), info


def _require(info: _SchemaInfo, names: Iterable[str], path: str, what: str) -> None:
    missing = [n for n in names if n not in info.fields]
    if missing:
        raise _format_error(path, what, f"writer schema lacks {', '.join(missing)}")


class _GcPause:
    """Pauses the cyclic GC while records are decoded.

    Decoding creates hundreds of thousands of acyclic containers; with the collector on, its
    generation scans cost about a third of the decode time. Re-entrant and thread-safe: the
    collector is re-enabled when the last concurrent decode ends, and only if it was on.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._was_enabled = False

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._was_enabled:
                    gc.enable()


_gc_paused = _GcPause()


def _records(container: _Container, path: str, what: str,
             reader_schema: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Decoded records; any decoder failure becomes a FormatError naming the file."""
    try:
        reader = fastavro.reader(io.BytesIO(container.data), reader_schema=reader_schema)
        for record in reader:
            yield cast(dict[str, Any], record)
    except errors.FormatError:
        raise
    except Exception as e:  # codec errors, EOFError, bad sync markers, schema resolution...
        raise _format_error(path, what, f"{type(e).__name__}: {e}") from e


def _tuple(value: Any) -> Any:
    return None if value is None else tuple(value)


def _stats(value: Mapping[str, Any]) -> SimpleStats:
    nulls = value.get("_NULL_COUNTS")
    return SimpleStats(value["_MIN_VALUES"], value["_MAX_VALUES"], None if nulls is None else tuple(nulls))


def _bad_version(path: str, what: str, got: Any, expected: int) -> errors.FormatError:
    return errors.FormatError(
        f"{path}: unsupported {what} format version {got!r} (expected {expected})",
        fix="the file was written by an unsupported Paimon version; upgrade tablekeeper",
    )


# -- manifest lists ---------------------------------------------------------------------------
def read_manifest_list(file_io: FileIO, path: str) -> list[ManifestFileMeta]:
    """Read a manifest list (``manifest-list-*``): the manifests one snapshot half consists of.

    Raises:
        FileNotFoundError: the file does not exist.
        FormatError: the file is damaged or not a manifest list.
    """
    what = "manifest list"
    container, info = _read_container(file_io, path, what)
    _require(info, _LIST_REQUIRED, path, what)
    out: list[ManifestFileMeta] = []
    with _gc_paused():
        for r in _records(container, path, what):
            if r["_VERSION"] != _MANIFEST_LIST_VERSION:
                raise _bad_version(path, what, r["_VERSION"], _MANIFEST_LIST_VERSION)
            extra = r.get("_EXTRA_FILES")
            out.append(ManifestFileMeta(
                r["_FILE_NAME"], r["_FILE_SIZE"], r["_NUM_ADDED_FILES"], r["_NUM_DELETED_FILES"],
                _stats(r["_PARTITION_STATS"]), r["_SCHEMA_ID"],
                r.get("_MIN_BUCKET"), r.get("_MAX_BUCKET"), r.get("_MIN_LEVEL"), r.get("_MAX_LEVEL"),
                r.get("_MIN_ROW_ID"), r.get("_MAX_ROW_ID"), r.get("_TOTAL_BUCKETS"),
                () if extra is None else tuple(extra),
            ))
    return out


# -- manifests: full read ---------------------------------------------------------------------
def read_manifest(file_io: FileIO, path: str) -> list[ManifestEntry]:
    """Read every field of every entry of a manifest (``manifest-*``), in file order.

    Raises:
        FileNotFoundError: the file does not exist.
        FormatError: the file is damaged or not a manifest.
    """
    what = "manifest"
    container, info = _read_container(file_io, path, what)
    _require(info, _ENTRY_TOP_REQUIRED, path, what)
    file_fields = _record_fields(info.fields["_FILE"])
    if file_fields is None:
        raise _format_error(path, what, "_FILE is not a record")
    missing = [n for n in _ENTRY_FILE_REQUIRED if n not in file_fields]
    if missing:
        raise _format_error(path, what, f"writer schema lacks _FILE.{', _FILE.'.join(missing)}")
    out: list[ManifestEntry] = []
    append = out.append
    entry, meta = ManifestEntry, DataFileMeta
    with _gc_paused():
        for r in _records(container, path, what):
            if r["_VERSION"] != _MANIFEST_VERSION:
                raise _bad_version(path, what, r["_VERSION"], _MANIFEST_VERSION)
            f = r["_FILE"]
            get = f.get
            extra = f["_EXTRA_FILES"]
            append(entry(r["_KIND"], r["_PARTITION"], r["_BUCKET"], r["_TOTAL_BUCKETS"], meta(
                f["_FILE_NAME"], f["_FILE_SIZE"], f["_ROW_COUNT"], f["_MIN_KEY"], f["_MAX_KEY"],
                _stats(f["_KEY_STATS"]), _stats(f["_VALUE_STATS"]),
                f["_MIN_SEQUENCE_NUMBER"], f["_MAX_SEQUENCE_NUMBER"], f["_SCHEMA_ID"], f["_LEVEL"],
                () if extra is None else tuple(extra),
                get("_CREATION_TIME"), get("_DELETE_ROW_COUNT"), get("_EMBEDDED_FILE_INDEX"),
                get("_FILE_SOURCE"), _tuple(get("_VALUE_STATS_COLS")), get("_EXTERNAL_PATH"),
                get("_FIRST_ROW_ID"), _tuple(get("_WRITE_COLS")), _tuple(get("_WRITE_COLS_SEQUENCES")),
            )))
    return out


# -- manifests: planning projection -----------------------------------------------------------
def _derive_ref_reader_schema(writer: Mapping[str, Any]) -> dict[str, Any]:
    """The writer schema cut down to the FileRef fields; names (also nested record names) stay
    the writer's, so Avro's by-name resolution matches whichever writer produced the file."""
    top: list[dict[str, Any]] = []
    for field in writer["fields"]:
        if field["name"] not in _REF_TOP:
            continue
        if field["name"] == "_FILE":
            file_type = dict(field["type"])
            file_type["fields"] = [f for f in file_type["fields"] if f["name"] in _REF_FILE]
            field = {**field, "type": file_type}
        top.append(field)
    return {**writer, "fields": top}


def _primitive(schema: Any) -> str | None:
    if isinstance(schema, str) and schema in _PRIMITIVES:
        return schema
    if isinstance(schema, dict) and schema.get("type") in _PRIMITIVES and len(schema) == 1:
        return str(schema["type"])
    return None


def _has_named_reference(schema: Any) -> bool:
    if isinstance(schema, str):
        return schema not in _PRIMITIVES
    if isinstance(schema, list):
        return any(_has_named_reference(s) for s in schema)
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind == "record":
            return any(_has_named_reference(f.get("type")) for f in schema.get("fields", []))
        if kind == "array":
            return _has_named_reference(schema.get("items"))
        if kind == "map":
            return _has_named_reference(schema.get("values"))
        if kind in ("enum", "fixed"):
            return False
        return _has_named_reference(kind)
    return True


class _FastAvro(NamedTuple):
    read_long: Callable[[Any], int]
    read_bytes: Callable[[Any], bytes]
    read_utf8: Callable[[Any], str]
    skip_long: Callable[[Any], None]
    skip_bytes: Callable[[Any], None]
    read_data: Callable[..., Any]
    skip_data: Callable[..., None]


def _load_fastavro_primitives() -> _FastAvro | None:
    """fastavro's compiled block decoders (``fastavro._read``), or None when this fastavro
    build does not have them: they are internal, so their use is verified before it is trusted."""
    try:
        mod = importlib.import_module("fastavro._read")
        if not getattr(mod, "CYTHON_MODULE", 0):
            return None
        return _FastAvro(mod.read_long, mod.read_bytes, mod.read_utf8, mod.skip_long, mod.skip_bytes,
                         mod._read_data, mod._skip_data)
    except (ImportError, AttributeError):
        return None


_FAST: _FastAvro | None = _load_fastavro_primitives()
#: Set by the self-test (first use); tests flip it to exercise the reader-schema fallback.
_fast_refs_enabled: bool | None = None


def _compile_ref_decoder(writer: Mapping[str, Any]) -> Callable[[Any, int, Callable[[FileRef], None]], None] | None:
    """Generate a straight-line decoder for one writer schema: kept fields are read and every
    other field (stats, keys, sequence numbers ...) is skipped by fastavro's compiled skippers,
    without the per-record schema resolution fastavro's reader-schema path performs (which makes
    that path slower than decoding everything). None when the schema has a shape this does not
    handle (named-type references, non-record ``_FILE``); the reader-schema path serves those."""
    if _FAST is None or _has_named_reference(writer):
        return None
    file_type = next((f["type"] for f in writer["fields"] if f["name"] == "_FILE"), None)
    if _record_fields(file_type) is None:
        return None
    try:
        parsed = cast(dict[str, Any], fastavro.parse_schema(dict(writer), _write_hint=False))
    except Exception:
        return None
    env: dict[str, Any] = {
        "RL": _FAST.read_long, "RB": _FAST.read_bytes, "RU": _FAST.read_utf8,
        "SL": _FAST.skip_long, "SB": _FAST.skip_bytes, "RD": _FAST.read_data, "SD": _FAST.skip_data,
        "NS": {"writer": {}, "reader": {}}, "OPT": {}, "Ref": FileRef, "tuple": tuple, "range": range,
        "BadVersion": _FastBadVersion,
    }
    var = {"_VERSION": "v", "_KIND": "k", "_PARTITION": "p", "_BUCKET": "b", "_FILE_NAME": "fn", "_LEVEL": "lv",
           "_EXTRA_FILES": "ef", "_EXTERNAL_PATH": "ep", "_FILE_SOURCE": "fs", "_EMBEDDED_FILE_INDEX": "ei"}
    lines = ["def decode(s, n, append):", "    for _ in range(n):",
             "        v = k = p = b = lv = fn = ep = fs = ei = None", "        ef = ()"]
    types: list[Any] = []

    def emit(name: str, schema: Any, keep: bool) -> None:
        prim = _primitive(schema)
        if keep:
            target = var[name]
            if prim in ("int", "long"):
                lines.append(f"        {target} = RL(s)")
            elif prim == "bytes":
                lines.append(f"        {target} = RB(s)")
            elif prim == "string":
                lines.append(f"        {target} = RU(s)")
            else:
                types.append(schema)
                lines.append(f"        {target} = RD(s, T{len(types) - 1}, NS, None, OPT)")
            return
        if prim in ("int", "long"):
            lines.append("        SL(s)")
        elif prim in ("bytes", "string"):
            lines.append("        SB(s)")
        else:
            types.append(schema)
            lines.append(f"        SD(s, T{len(types) - 1}, NS)")

    for field in parsed["fields"]:
        name = field["name"]
        if name == "_FILE":
            for sub in field["type"]["fields"]:
                emit(sub["name"], sub["type"], sub["name"] in _REF_FILE)
        else:
            emit(name, field["type"], name in _REF_TOP)
    lines.append(f"        if v != {_MANIFEST_VERSION}: raise BadVersion(v)")
    lines.append("        append(Ref(k, p, b, lv, fn, () if ef is None else tuple(ef), ep, fs, ei))")
    env.update({f"T{i}": t for i, t in enumerate(types)})
    try:
        exec(compile("\n".join(lines), "<tablekeeper manifest ref decoder>", "exec"), env)  # noqa: S102
    except SyntaxError:  # pragma: no cover - generated from a fixed template
        return None
    return cast(Callable[[Any, int, Callable[[FileRef], None]], None], env["decode"])


class _FastBadVersion(Exception):
    def __init__(self, version: Any) -> None:
        super().__init__(version)
        self.version = version


def _refs_by_reader_schema(container: _Container, info: _SchemaInfo, path: str, what: str) -> list[FileRef]:
    out: list[FileRef] = []
    append = out.append
    for r in _records(container, path, what, info.ref_reader_schema):
        if r["_VERSION"] != _MANIFEST_VERSION:
            raise _bad_version(path, what, r["_VERSION"], _MANIFEST_VERSION)
        f = r["_FILE"]
        get = f.get
        extra = f["_EXTRA_FILES"]
        append(FileRef(r["_KIND"], r["_PARTITION"], r["_BUCKET"], f["_LEVEL"], f["_FILE_NAME"],
                       () if extra is None else tuple(extra), get("_EXTERNAL_PATH"), get("_FILE_SOURCE"),
                       get("_EMBEDDED_FILE_INDEX")))
    return out


def _refs_fast(container: _Container, info: _SchemaInfo, path: str, what: str) -> list[FileRef]:
    decode = info.ref_decoder
    assert decode is not None
    out: list[FileRef] = []
    try:
        blocks = fastavro.block_reader(io.BytesIO(container.data))
        for block in blocks:
            decode(getattr(block, "bytes_"), block.num_records, out.append)  # noqa: B009 - untyped attribute
    except _FastBadVersion as e:
        raise _bad_version(path, what, e.version, _MANIFEST_VERSION) from None
    except Exception as e:
        raise _format_error(path, what, f"{type(e).__name__}: {e}") from e
    return out


def _fast_refs_usable() -> bool:
    """Self-test of the compiled path against the reader-schema path, once per process."""
    global _fast_refs_enabled
    if _fast_refs_enabled is None:
        _fast_refs_enabled = _self_test()
    return _fast_refs_enabled


def _self_test() -> bool:
    if _FAST is None:
        return False
    nullable = ["null", "string"]
    schema = {"type": "record", "name": "selftest", "fields": [
        {"name": "_VERSION", "type": "int"}, {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"}, {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": {"type": "record", "name": "selftest_FILE", "fields": [
            {"name": "_FILE_NAME", "type": "string"},
            {"name": "_KEY_STATS", "type": {"type": "record", "name": "selftest_STATS", "fields": [
                {"name": "_MIN_VALUES", "type": "bytes"},
                {"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}]}]}},
            {"name": "_LEVEL", "type": "int"},
            {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
            {"name": "_CREATION_TIME", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
            {"name": "_EMBEDDED_FILE_INDEX", "type": ["null", "bytes"]},
            {"name": "_FILE_SOURCE", "type": ["null", "int"]},
            {"name": "_EXTERNAL_PATH", "type": nullable},
        ]}},
    ]}
    records = [
        {"_VERSION": 2, "_KIND": i % 2, "_PARTITION": bytes([i]) * i, "_BUCKET": i - 3, "_TOTAL_BUCKETS": 7,
         "_FILE": {"_FILE_NAME": f"data-{i}", "_KEY_STATS": {"_MIN_VALUES": b"x" * i,
                                                              "_NULL_COUNTS": [None, i] if i % 2 else None},
                   "_LEVEL": i, "_EXTRA_FILES": [f"data-{i}.index"] * (i % 3), "_CREATION_TIME": i * 1000 or None,
                   "_EMBEDDED_FILE_INDEX": b"\x01" * i if i % 2 else None, "_FILE_SOURCE": i % 2 if i else None,
                   "_EXTERNAL_PATH": f"s3://b/{i}" if i % 3 == 1 else None}}
        for i in range(200)
    ]
    try:
        buf = io.BytesIO()
        fastavro.writer(buf, fastavro.parse_schema(schema), records, codec="deflate", sync_interval=2048)
        data = buf.getvalue()
        schema_json = json.dumps(schema)
        info = _SchemaInfo(_record_fields(schema) or {}, None, _derive_ref_reader_schema(schema),
                           _compile_ref_decoder(schema))
        if info.ref_decoder is None:
            return False
        container = _Container(schema_json, data)
        return _refs_fast(container, info, "<self-test>", "manifest") == \
            _refs_by_reader_schema(container, info, "<self-test>", "manifest")
    except Exception:
        return False


def read_manifest_refs(file_io: FileIO, path: str) -> list[FileRef]:
    """Read only the planning fields of every entry of a manifest, in file order.

    Stats, keys and sequence numbers are skipped inside fastavro, so this costs a fraction of
    ``read_manifest`` in time and memory. The projection is derived from each file's writer
    schema and cached by the schema's JSON text.

    Raises:
        FileNotFoundError: the file does not exist.
        FormatError: the file is damaged or not a manifest.
    """
    what = "manifest"
    container, info = _read_container(file_io, path, what)
    _require(info, _ENTRY_TOP_REQUIRED, path, what)
    file_fields = _record_fields(info.fields["_FILE"])
    if file_fields is None or any(n not in file_fields for n in ("_FILE_NAME", "_LEVEL", "_EXTRA_FILES")):
        raise _format_error(path, what, "_FILE lacks _FILE_NAME, _LEVEL or _EXTRA_FILES")
    with _gc_paused():
        if info.ref_decoder is not None and _fast_refs_usable():
            return _refs_fast(container, info, path, what)
        return _refs_by_reader_schema(container, info, path, what)


# -- index manifests --------------------------------------------------------------------------
def _dv_ranges(value: Any) -> tuple[DeletionVectorRange, ...] | None:
    if value is None:
        return None
    return tuple(DeletionVectorRange(d["f0"], d["f1"], d["f2"], d.get("_CARDINALITY"))
                 for d in value if d is not None)


def _global_index(value: Mapping[str, Any] | None) -> GlobalIndexMeta | None:
    if value is None:
        return None
    return GlobalIndexMeta(value["_ROW_RANGE_START"], value["_ROW_RANGE_END"], value["_INDEX_FIELD_ID"],
                           _tuple(value.get("_EXTRA_FIELD_IDS")), value.get("_INDEX_META"),
                           value.get("_SOURCE_META"))


def read_index_manifest(file_io: FileIO, path: str) -> list[IndexManifestEntry]:
    """Read an index manifest (``index-manifest-*``): HASH, deletion-vector and global index
    files of one snapshot. Unlike pypaimon, a missing file is an error, not an empty list.

    Raises:
        FileNotFoundError: the file does not exist.
        FormatError: the file is damaged or not an index manifest.
    """
    what = "index manifest"
    container, info = _read_container(file_io, path, what)
    _require(info, _INDEX_REQUIRED, path, what)
    out: list[IndexManifestEntry] = []
    with _gc_paused():
        for r in _records(container, path, what):
            if r["_VERSION"] != _INDEX_MANIFEST_VERSION:
                raise _bad_version(path, what, r["_VERSION"], _INDEX_MANIFEST_VERSION)
            try:
                dv = _dv_ranges(r.get("_DELETIONS_VECTORS_RANGES"))
                gi = _global_index(r.get("_GLOBAL_INDEX"))
            except (KeyError, TypeError) as e:
                raise _format_error(path, what, f"malformed nested record ({e})") from e
            out.append(IndexManifestEntry(
                r["_KIND"], r["_PARTITION"], r["_BUCKET"], r["_INDEX_TYPE"], r["_FILE_NAME"],
                r["_FILE_SIZE"], r["_ROW_COUNT"], dv, r.get("_EXTERNAL_PATH"), gi,
            ))
    return out


# -- identity and merging ---------------------------------------------------------------------
def entry_identifier(ref: FileRef) -> FileIdentifier:
    """Java's ``FileEntry.Identifier`` of an entry: the key ADD and DELETE entries cancel by."""
    return (ref.partition, ref.bucket, ref.level, ref.file_name, ref.extra_files, ref.embedded_index,
            ref.external_path)


def merge_entries(refs: Iterable[FileRef]) -> list[FileRef]:
    """Java's ``FileEntry.mergeEntries``: a DELETE cancels the ADD seen before it, or is kept
    (its ADD lives in an older manifest); adding an identifier twice is corrupt metadata.

    Returns the surviving ADD and DELETE entries in first-seen order.

    Raises:
        FormatError: an ADD for an identifier that is already present.
    """
    merged: dict[FileIdentifier, FileRef] = {}
    for ref in refs:
        key = (ref.partition, ref.bucket, ref.level, ref.file_name, ref.extra_files, ref.embedded_index,
               ref.external_path)
        if ref.kind == ADD:
            if key in merged:
                raise errors.FormatError(
                    f"file {ref.file_name} (bucket {ref.bucket}, level {ref.level}) is added twice",
                    fix="the table's manifests are inconsistent: Paimon itself refuses to read this "
                        "snapshot; restore the manifests or roll back to an earlier snapshot",
                )
            merged[key] = ref
        elif key in merged:
            del merged[key]
        else:
            merged[key] = ref
    return list(merged.values())


def merge_live(refs: Iterable[FileRef]) -> list[FileRef]:
    """The live files of a full state: ``merge_entries`` keeping only ADD entries.

    Raises:
        FormatError: an ADD for an identifier that is already present.
    """
    return [r for r in merge_entries(refs) if r.kind == ADD]


def read_snapshot_live_files(file_io: FileIO, manifest_dir: str, snapshot: Snapshot, *,
                             max_workers: int = _DEFAULT_WORKERS) -> list[FileRef]:
    """Every live data file of ``snapshot``: base + delta manifest lists merged in order.

    Manifests are fetched and decoded by a small thread pool (object stores are latency-bound);
    entries are merged in manifest-list order, as Java does.

    Raises:
        FileNotFoundError: a manifest list or manifest is missing (never an empty result).
        FormatError: a file is damaged, or the snapshot names no base/delta manifest list.
    """
    lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
    if not all(lists):
        raise errors.FormatError(
            f"snapshot {snapshot.id} does not name both a base and a delta manifest list",
            fix="the snapshot file is damaged; restore it",
        )
    names = [m.file_name for name in lists for m in read_manifest_list(file_io, join(manifest_dir, str(name)))]
    if len(names) <= 1 or max_workers <= 1:
        parts = [read_manifest_refs(file_io, join(manifest_dir, n)) for n in names]
    else:
        with ThreadPoolExecutor(max_workers=min(max_workers, len(names)),
                                thread_name_prefix="tablekeeper-manifests") as pool:
            parts = list(pool.map(lambda n: read_manifest_refs(file_io, join(manifest_dir, n)), names))
    return merge_live(ref for part in parts for ref in part)
