"""Decoding Paimon's Avro manifest files: the container and its writer schema (checked for the
fields every reader needs), fastavro's reader as the final judge, and per writer schema a
generated straight-line decoder over fastavro's compiled primitives for the hot paths.

Every file is decoded with its own embedded writer schema and fields are picked by name, with
defaults for fields a writer did not have: Java and pypaimon name nested records differently and
write different field sets (paimon-semantics.md §1.8), so one fixed reader schema cannot serve
both.
"""

from __future__ import annotations

import functools
import gc
import importlib
import io
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, Final, NamedTuple, cast

from tablekeeper.core import errors
from tablekeeper.core.paimon import avro_schema, manifest_native
from tablekeeper.core.paimon.avro_schema import BYTES, INT, STRING, array, optional, record
from tablekeeper.core.paimon.manifest_records import (
    MANIFEST_LIST_VERSION,
    MANIFEST_VERSION,
    DataFileMeta,
    FileRef,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)
from tablekeeper.core.storage import FileIO

__all__ = [
    "fastavro_module",
    "Container",
    "SchemaInfo",
    "FastDecodeError",
    "VersionMismatch",
    "ENTRY_TOP_REQUIRED",
    "ENTRY_FILE_REQUIRED",
    "REF_FILE_REQUIRED",
    "LIST_REQUIRED",
    "INDEX_REQUIRED",
    "SHAPES",
    "format_error",
    "bad_version",
    "schema_info",
    "read_container",
    "parse_container",
    "plain_bytes",
    "require_fields",
    "gc_paused",
    "decode_records",
    "as_tuple",
    "simple_stats",
    "primitive_type",
    "decode_compiled",
    "decode_fast",
    "native_program",
    "fast_usable",
    "fast_lists_usable",
    "list_by_reader",
    "list_row",
    "entry_row",
    "ref_row",
    "entries_by_reader",
    "refs_by_reader",
    "decode_by_reader",
    "self_test_files",
]


def fastavro_module() -> Any:
    """fastavro, imported on first use: the judge of unusual files and the primitives of the
    generated decoders, but a local orphan cleanup decodes its lists natively and never needs
    it (its import is ~40 ms of a CLI process; tests/cli/test_startup.py)."""
    import fastavro

    return fastavro


# -- Avro container handling ------------------------------------------------------------------
_MAGIC: Final = b"Obj\x01"


@functools.cache
def _header_schema() -> Any:
    """The Avro object container header (Avro spec, "Object Container Files"), parsed."""
    return fastavro_module().parse_schema({
        "type": "record",
        "name": "org.apache.avro.file.Header",
        "fields": [
            {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
            {"name": "meta", "type": {"type": "map", "values": "bytes"}},
            {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}},
        ],
    })

_PRIMITIVES: Final = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})

ENTRY_TOP_REQUIRED: Final = ("_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS", "_FILE")
ENTRY_FILE_REQUIRED: Final = (
    "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS", "_VALUE_STATS",
    "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL", "_EXTRA_FILES",
)
REF_FILE_REQUIRED: Final = ("_FILE_NAME", "_LEVEL", "_EXTRA_FILES")
LIST_REQUIRED: Final = (
    "_VERSION", "_FILE_NAME", "_FILE_SIZE", "_NUM_ADDED_FILES", "_NUM_DELETED_FILES",
    "_PARTITION_STATS", "_SCHEMA_ID",
)
INDEX_REQUIRED: Final = (
    "_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_INDEX_TYPE", "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT",
)

#: The types every reader relies on, per file kind (nullable where some writer writes null): a
#: field of another type is a FormatError before any record is decoded (avro_schema.type_problem).
_STATS_SHAPE: Final = record({"_MIN_VALUES": BYTES, "_MAX_VALUES": BYTES, "_NULL_COUNTS": optional(array(optional(INT)))},
                             ("_MIN_VALUES", "_MAX_VALUES"))
_FILE_SHAPES: Final = {
    "_FILE_NAME": STRING, "_FILE_SIZE": INT, "_ROW_COUNT": INT, "_MIN_KEY": BYTES, "_MAX_KEY": BYTES,
    "_KEY_STATS": _STATS_SHAPE, "_VALUE_STATS": _STATS_SHAPE, "_MIN_SEQUENCE_NUMBER": INT,
    "_MAX_SEQUENCE_NUMBER": INT, "_SCHEMA_ID": INT, "_LEVEL": INT, "_EXTRA_FILES": array(STRING),
    "_CREATION_TIME": optional(INT), "_DELETE_ROW_COUNT": optional(INT), "_EMBEDDED_FILE_INDEX": optional(BYTES),
    "_FILE_SOURCE": optional(INT), "_VALUE_STATS_COLS": optional(array(STRING)), "_EXTERNAL_PATH": optional(STRING),
    "_FIRST_ROW_ID": optional(INT), "_WRITE_COLS": optional(array(STRING)),
    "_WRITE_COLS_SEQUENCES": optional(array(INT)),
}
SHAPES: Final[dict[str, dict[str, avro_schema.Shape]]] = {
    "manifest": {"_VERSION": INT, "_KIND": INT, "_PARTITION": BYTES, "_BUCKET": INT, "_TOTAL_BUCKETS": INT,
                 "_FILE": record(_FILE_SHAPES)},
    "list": {
        "_VERSION": INT, "_FILE_NAME": STRING, "_FILE_SIZE": INT, "_NUM_ADDED_FILES": INT, "_NUM_DELETED_FILES": INT,
        "_PARTITION_STATS": _STATS_SHAPE, "_SCHEMA_ID": INT, "_MIN_BUCKET": optional(INT),
        "_MAX_BUCKET": optional(INT), "_MIN_LEVEL": optional(INT), "_MAX_LEVEL": optional(INT),
        "_MIN_ROW_ID": optional(INT), "_MAX_ROW_ID": optional(INT), "_TOTAL_BUCKETS": optional(INT),
        "_EXTRA_FILES": optional(array(STRING)),
    },
    "index": {
        "_VERSION": INT, "_KIND": INT, "_PARTITION": BYTES, "_BUCKET": INT, "_INDEX_TYPE": STRING,
        "_FILE_NAME": STRING, "_FILE_SIZE": INT, "_ROW_COUNT": INT,
        "_DELETIONS_VECTORS_RANGES": optional(array(optional(record(
            {"f0": STRING, "f1": INT, "f2": INT, "_CARDINALITY": optional(INT)}, ("f0", "f1", "f2"))))),
        "_EXTERNAL_PATH": optional(STRING),
        "_GLOBAL_INDEX": optional(record(
            {"_ROW_RANGE_START": INT, "_ROW_RANGE_END": INT, "_INDEX_FIELD_ID": INT,
             "_EXTRA_FIELD_IDS": optional(array(INT)), "_INDEX_META": optional(BYTES), "_SOURCE_META": optional(BYTES)},
            ("_ROW_RANGE_START", "_ROW_RANGE_END", "_INDEX_FIELD_ID"))),
    },
}

_FIX_DAMAGED: Final = ("the file is damaged or was not written by Paimon: restore it from a backup, or roll the "
                       "table back to a snapshot that does not reference it")


def format_error(path: str, what: str, detail: str) -> errors.FormatError:
    return errors.FormatError(f"{path} is not a readable Paimon {what}: {detail}", fix=_FIX_DAMAGED)


def bad_version(path: str, what: str, got: Any, expected: int) -> errors.FormatError:
    return errors.FormatError(
        f"{path}: unsupported {what} format version {got!r} (expected {expected})",
        fix="the file was written by an unsupported Paimon version; upgrade tablekeeper",
    )


def _strip_logical_types(schema: Any) -> Any:
    """Drop ``logicalType`` annotations: we want ``_CREATION_TIME`` as the raw long, not a
    datetime fastavro would build only for us to convert back."""
    if isinstance(schema, list):
        return [_strip_logical_types(s) for s in schema]
    if isinstance(schema, dict):
        return {k: _strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    return schema


def _record_fields(schema: Any) -> dict[str, Any] | None:
    if isinstance(schema, dict) and schema.get("type") == "record" and isinstance(schema.get("fields"), list):
        return {str(f["name"]): f.get("type") for f in schema["fields"] if isinstance(f, dict) and "name" in f}
    return None


class Container(NamedTuple):
    data: bytes
    header_end: int


class SchemaInfo:
    """Everything derived from one writer schema, computed once and cached by its JSON text:
    field presence, the logical-type-free schema text, the ``read_manifest_refs`` reader schema
    and the compiled decoders. Decoders are compiled lazily, on first use."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.fields: dict[str, Any] = _record_fields(schema) or {}
        self.file_fields: dict[str, Any] | None = _record_fields(self.fields.get("_FILE"))
        stripped = _strip_logical_types(schema)
        self.stripped: dict[str, Any] = stripped
        self.stripped_json: bytes | None = None if stripped == schema else json.dumps(stripped).encode("utf-8")
        self._ref_reader_schema: dict[str, Any] | None = None
        self._reader_schemas: dict[str, dict[str, Any]] = {}
        self._decoders: dict[str, _Decoder | None] = {}
        self._programs: dict[str, manifest_native.Program | None] = {}
        #: avro_schema.type_problem per file kind of SHAPES, computed once
        self.type_problems: dict[str, str | None] = {}
        self._lock = threading.Lock()

    @property
    def ref_reader_schema(self) -> dict[str, Any]:
        if self._ref_reader_schema is None:
            self._ref_reader_schema = _derive_reader_schema(self.stripped, _REF_SPEC)
        return self._ref_reader_schema

    def reader_schema(self, kind: str) -> dict[str, Any]:
        """The writer schema cut down to the fields decoder ``kind`` reads: fastavro's reader,
        the judge, then skips what the fast decoders skip (a field no reader needs is not judged,
        whichever decoder runs)."""
        if kind == "ref":
            return self.ref_reader_schema
        if kind not in self._reader_schemas:
            self._reader_schemas[kind] = _derive_reader_schema(self.stripped, _DECODER_KINDS[kind][0])
        return self._reader_schemas[kind]

    def native(self, kind: str) -> manifest_native.Program | None:
        """The native program of decoder ``kind`` (:mod:`.manifest_native`), or None."""
        if kind not in self._programs:
            with self._lock:
                if kind not in self._programs:
                    self._programs[kind] = manifest_native.compile_program(self.stripped, _DECODER_KINDS[kind][0], kind)
        return self._programs[kind]

    def decoder(self, kind: str) -> _Decoder | None:
        if kind not in self._decoders:
            with self._lock:
                if kind not in self._decoders:
                    self._decoders[kind] = _compile_decoder(self.stripped, *_DECODER_KINDS[kind])
        return self._decoders[kind]


_SCHEMAS: dict[str, SchemaInfo] = {}
_SCHEMAS_LOCK = threading.Lock()


def schema_info(schema_json: str, path: str, what: str) -> SchemaInfo:
    cached = _SCHEMAS.get(schema_json)
    if cached is not None:
        return cached
    try:
        schema = json.loads(schema_json)
    except (ValueError, RecursionError) as e:
        raise format_error(path, what, f"embedded Avro schema is not JSON ({type(e).__name__}: {e})") from e
    problem = avro_schema.schema_problem(schema)
    if problem is not None:
        raise format_error(path, what, f"embedded Avro schema: {problem}")
    info = SchemaInfo(schema)
    with _SCHEMAS_LOCK:
        return _SCHEMAS.setdefault(schema_json, info)


def read_container(file_io: FileIO, path: str, what: str) -> tuple[Container, SchemaInfo]:
    """Read a whole Avro file and parse its header; a missing file raises FileNotFoundError."""
    return parse_container(file_io.read_bytes(path), path, what)


def parse_container(data: bytes, path: str, what: str) -> tuple[Container, SchemaInfo]:
    if not data.startswith(_MAGIC):
        raise format_error(path, what, "no Avro container magic (empty, truncated or another format)")
    buf = io.BytesIO(data)
    try:
        header = cast(dict[str, Any], fastavro_module().schemaless_reader(buf, _header_schema(), None))
        schema_json = bytes(header["meta"]["avro.schema"]).decode("utf-8")
    except Exception as e:  # fastavro raises EOFError/ValueError/KeyError... on damaged headers
        raise format_error(path, what, f"damaged Avro header ({type(e).__name__}: {e})") from e
    return Container(data, buf.tell()), schema_info(schema_json, path, what)


def plain_bytes(container: Container, info: SchemaInfo) -> bytes:
    """The container with its embedded schema free of logical types, for fastavro.reader."""
    if info.stripped_json is None:
        return container.data
    buf = io.BytesIO(container.data)
    header = cast(dict[str, Any], fastavro_module().schemaless_reader(buf, _header_schema(), None))
    header["meta"] = {**header["meta"], "avro.schema": info.stripped_json}
    out = io.BytesIO()
    fastavro_module().schemaless_writer(out, _header_schema(), header)
    return out.getvalue() + container.data[container.header_end:]


def require_fields(info: SchemaInfo, path: str, what: str, top: Iterable[str], file: Iterable[str] = (), *,
                   shapes: str) -> None:
    """The writer schema has the fields ``top`` (and ``_FILE.<file>``), and every field of
    ``SHAPES[shapes]`` it has is of the type readers rely on.

    Raises:
        FormatError: naming the file and the first missing or mistyped field.
    """
    missing = [n for n in top if n not in info.fields]
    file = tuple(file)
    if file:
        if info.file_fields is None:
            missing.append("_FILE (as a record)")
        else:
            missing.extend(f"_FILE.{n}" for n in file if n not in info.file_fields)
    if missing:
        raise format_error(path, what, f"writer schema lacks {', '.join(missing)}")
    if shapes not in info.type_problems:
        info.type_problems[shapes] = avro_schema.type_problem(info.stripped, SHAPES[shapes])
    problem = info.type_problems[shapes]
    if problem is not None:
        raise format_error(path, what, f"writer schema: {problem}")


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


gc_paused = _GcPause()


def decode_records(data: bytes, path: str, what: str,
             reader_schema: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Records decoded by fastavro.reader; any decoder failure becomes a FormatError."""
    try:
        for record in fastavro_module().reader(io.BytesIO(data), reader_schema=reader_schema):
            yield cast(dict[str, Any], record)
    except errors.FormatError:
        raise
    except Exception as e:  # codec errors, EOFError, bad sync markers, schema resolution...
        raise format_error(path, what, f"{type(e).__name__}: {e}") from e


def as_tuple(value: Any) -> Any:
    return None if value is None else tuple(value)


def simple_stats(value: Mapping[str, Any]) -> SimpleStats:
    nulls = value.get("_NULL_COUNTS")
    return SimpleStats(value["_MIN_VALUES"], value["_MAX_VALUES"], None if nulls is None else tuple(nulls))


# -- compiled decoders ------------------------------------------------------------------------
# fastavro decodes a record into a dict through a generic per-field dispatch, and a reader schema
# adds per-record schema resolution on top, which makes projected reads *slower* than full ones
# (fastavro 1.13, 100k entries: full 0.86 s, projected 1.15 s; its skippers cost about as much as
# its readers). So for manifest entries we generate, per writer schema, one straight-line Python
# function that calls fastavro's compiled primitives (``fastavro._read``: read_long, read_bytes,
# read_utf8, skip_long, skip_bytes; the generic read/skip for anything else) field by field in
# writer order: wanted fields land in local variables, the others are skipped without building
# objects, and the output records are built directly. Field names only ever appear as keys of
# the spec below, never in generated source. Each block must be consumed to its exact end, the
# decoders are checked against fastavro.reader once per process, and any failure falls back to
# the fastavro.reader path, which has the final word.

#: Field name -> local variable, or a nested record spec.
_Spec = Mapping[str, "str | _Spec"]

_STATS_SPEC_K: Final[_Spec] = {"_MIN_VALUES": "ks0", "_MAX_VALUES": "ks1", "_NULL_COUNTS": "ks2"}
_STATS_SPEC_V: Final[_Spec] = {"_MIN_VALUES": "vs0", "_MAX_VALUES": "vs1", "_NULL_COUNTS": "vs2"}
_ENTRY_SPEC: Final[_Spec] = {
    "_VERSION": "v", "_KIND": "k", "_PARTITION": "p", "_BUCKET": "b", "_TOTAL_BUCKETS": "tb",
    "_FILE": {
        "_FILE_NAME": "fn", "_FILE_SIZE": "fsz", "_ROW_COUNT": "rc", "_MIN_KEY": "mnk", "_MAX_KEY": "mxk",
        "_KEY_STATS": _STATS_SPEC_K, "_VALUE_STATS": _STATS_SPEC_V,
        "_MIN_SEQUENCE_NUMBER": "mns", "_MAX_SEQUENCE_NUMBER": "mxs", "_SCHEMA_ID": "sid", "_LEVEL": "lv",
        "_EXTRA_FILES": "ef", "_CREATION_TIME": "ct", "_DELETE_ROW_COUNT": "drc", "_EMBEDDED_FILE_INDEX": "ei",
        "_FILE_SOURCE": "fs", "_VALUE_STATS_COLS": "vsc", "_EXTERNAL_PATH": "ep", "_FIRST_ROW_ID": "fri",
        "_WRITE_COLS": "wc", "_WRITE_COLS_SEQUENCES": "wcs",
    },
}
#: Built with ``tuple.__new__`` (``TN``): same objects as calling the NamedTuple classes, minus
#: their Python-level ``__new__`` frames (a tenth of the decode time).
_ENTRY_OUTPUT: Final = (
    "TN(Entry, (k, p, b, tb, TN(Meta, (fn, fsz, rc, mnk, mxk, "
    "TN(Stats, (ks0, ks1, None if ks2 is None else tuple(ks2))), "
    "TN(Stats, (vs0, vs1, None if vs2 is None else tuple(vs2))), "
    "mns, mxs, sid, lv, () if ef is None else tuple(ef), ct, drc, ei, fs, "
    "None if vsc is None else tuple(vsc), ep, fri, None if wc is None else tuple(wc), "
    "None if wcs is None else tuple(wcs)))))"
)
#: The fields ``read_manifest_refs`` keeps.
_REF_SPEC: Final[_Spec] = {
    "_VERSION": "v", "_KIND": "k", "_PARTITION": "p", "_BUCKET": "b",
    "_FILE": {"_FILE_NAME": "fn", "_FILE_SIZE": "fsz", "_LEVEL": "lv", "_EXTRA_FILES": "ef",
              "_EXTERNAL_PATH": "ep", "_FILE_SOURCE": "fs", "_EMBEDDED_FILE_INDEX": "ei"},
}
_REF_OUTPUT: Final = "TN(Ref, (k, p, b, lv, fn, () if ef is None else tuple(ef), ep, fs, ei, fsz))"
#: Manifest-list rows, every field (absent optional fields decode as None).
_LIST_SPEC: Final[_Spec] = {
    "_VERSION": "v", "_FILE_NAME": "fn", "_FILE_SIZE": "fsz", "_NUM_ADDED_FILES": "na",
    "_NUM_DELETED_FILES": "nd", "_PARTITION_STATS": {"_MIN_VALUES": "ps0", "_MAX_VALUES": "ps1",
                                                     "_NULL_COUNTS": "ps2"},
    "_SCHEMA_ID": "sid", "_MIN_BUCKET": "mnb", "_MAX_BUCKET": "mxb", "_MIN_LEVEL": "mnl", "_MAX_LEVEL": "mxl",
    "_MIN_ROW_ID": "mnr", "_MAX_ROW_ID": "mxr", "_TOTAL_BUCKETS": "tb", "_EXTRA_FILES": "ef",
}
_LIST_OUTPUT: Final = (
    "TN(ListMeta, (fn, fsz, na, nd, TN(Stats, (ps0, ps1, None if ps2 is None else tuple(ps2))), sid, "
    "mnb, mxb, mnl, mxl, mnr, mxr, tb, () if ef is None else tuple(ef)))"
)
#: Manifest-list rows as orphan cleanup needs them: the manifest's name and extra files.
_LIST_NAMES_SPEC: Final[_Spec] = {"_VERSION": "v", "_FILE_NAME": "fn", "_EXTRA_FILES": "ef"}
_LIST_NAMES_OUTPUT: Final = "(fn, () if ef is None else tuple(ef))"
_DECODER_KINDS: Final[dict[str, tuple[_Spec, str]]] = {
    "entry": (_ENTRY_SPEC, _ENTRY_OUTPUT),
    "ref": (_REF_SPEC, _REF_OUTPUT),
    "list": (_LIST_SPEC, _LIST_OUTPUT),
    "list-names": (_LIST_NAMES_SPEC, _LIST_NAMES_OUTPUT),
}

_Decoder = Callable[[Any, int, Callable[[Any], None]], None]


def _derive_reader_schema(writer: Mapping[str, Any], spec: _Spec) -> dict[str, Any]:
    """The writer schema cut down to the fields of ``spec``; names (also nested record names)
    stay the writer's, so Avro's by-name resolution matches whichever writer produced the file."""
    fields: list[dict[str, Any]] = []
    for field in writer["fields"]:
        want = spec.get(field["name"])
        if want is None:
            continue
        if not isinstance(want, str) and _record_fields(field["type"]) is not None:
            field = {**field, "type": _derive_reader_schema(field["type"], want)}
        fields.append(field)
    return {**writer, "fields": fields}


def primitive_type(schema: Any) -> str | None:
    if isinstance(schema, str) and schema in _PRIMITIVES:
        return schema
    if isinstance(schema, dict) and schema.get("type") in _PRIMITIVES and set(schema) <= {"type"}:
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


@functools.cache
def _fast() -> _FastAvro | None:
    """fastavro's compiled decoding primitives (imported on first use), or None for a build
    without them (they are internal API: their use is verified by a self-test before it is
    trusted)."""
    try:
        mod = importlib.import_module("fastavro._read")
        if not getattr(mod, "CYTHON_MODULE", 0):
            return None
        return _FastAvro(mod.read_long, mod.read_bytes, mod.read_utf8, mod.skip_long, mod.skip_bytes,
                         mod._read_data, mod._skip_data)
    except (ImportError, AttributeError):
        return None


#: None until the first compiled decode runs the self-test; tests set False to force fallback.
_fast_enabled: bool | None = None
#: The same for the manifest-list decoders alone, when only they were needed (orphan cleanup).
_fast_lists_enabled: bool | None = None


class FastDecodeError(Exception):
    """The compiled path could not decode a file: the fastavro.reader path decides."""


_READERS: Final = {"int": "RL", "long": "RL", "bytes": "RB", "string": "RU"}
_SKIPPERS: Final = {"int": "SL", "long": "SL", "bytes": "SB", "string": "SB"}
_INT64_MIN: Final = -(2**63)


def _compile_decoder(schema: Mapping[str, Any], spec: _Spec, output: str) -> _Decoder | None:
    """Generate the straight-line decoder of one (logical-type-free) writer schema; None when
    the schema has a shape it does not handle (named-type references, a spec'd record that is
    not a plain record), in which case fastavro.reader serves the file."""
    fast = _fast()
    if fast is None or _has_named_reference(schema):
        return None
    try:
        parsed = cast(dict[str, Any], fastavro_module().parse_schema(dict(schema), _write_hint=False))
    except Exception:
        return None
    types: list[Any] = []
    body: list[str] = []
    assigned: set[str] = set()

    def ref(t: Any) -> str:
        types.append(t)
        return f"T{len(types) - 1}"

    def simple(t: Any, readers: Mapping[str, str] = _READERS) -> str | None:
        """Inline code reading a value of ``t`` (primitive, or array of primitives), if any;
        with ``_SKIPPERS``: skipping it (no string is decoded, as the native decoder skips)."""
        prim = primitive_type(t)
        if prim is not None and prim in readers:
            return f"{readers[prim]}(s)"
        if isinstance(t, dict) and t.get("type") == "array":
            items = t.get("items")
            if primitive_type(items) in readers:
                return f"ARR(s, {readers[str(primitive_type(items))]})"
            if isinstance(items, list) and len(items) == 2 and "null" in items and \
                    primitive_type(items[1 - items.index("null")]) in readers:
                null = items.index("null")
                return f"ARRN(s, {readers[str(primitive_type(items[1 - null]))]}, {null})"
        return None

    def read(var: str, t: Any) -> None:
        inline = simple(t)
        if inline is not None:
            body.append(f"{var} = {inline}")
            return
        if isinstance(t, list) and len(t) == 2 and "null" in t and simple(t[1 - t.index("null")]) is not None:
            null = t.index("null")
            body.extend(["i = RL(s)", f"if i == {1 - null}: {var} = {simple(t[1 - null])}",
                         f"elif i == {null}: {var} = None", "else: raise Bad(i)"])
            return
        body.append(f"{var} = RD(s, {ref(t)}, NS, None, OPT)")

    def skip_one(t: Any) -> None:
        """Inline skipping: one compiled call per primitive beats fastavro's generic skipper
        (``skip_record`` dispatches per field and costs about as much as reading)."""
        prim = primitive_type(t)
        if prim in ("int", "long"):
            body.append("SL(s)")
        elif prim in ("bytes", "string"):
            body.append("SB(s)")
        elif prim == "null":
            pass
        elif _record_fields(t) is not None:
            for field in t["fields"]:
                skip_one(field["type"])
        elif isinstance(t, list) and len(t) == 2 and "null" in t and simple(t[1 - t.index("null")]) is not None:
            null = t.index("null")
            body.extend(["i = RL(s)", f"if i == {1 - null}: {simple(t[1 - null], _SKIPPERS)}",
                         f"elif i != {null}: raise Bad(i)"])
        else:
            body.append(f"SD(s, {ref(t)}, NS)")

    def skip(run: list[Mapping[str, Any]]) -> None:
        for field in run:
            skip_one(field["type"])

    def walk(record: Mapping[str, Any], want: _Spec) -> bool:
        run: list[Mapping[str, Any]] = []
        for field in record["fields"]:
            target = want.get(field["name"])
            if target is None:
                run.append(field)
                continue
            skip(run)
            run = []
            if isinstance(target, str):
                read(target, field["type"])
                assigned.add(target)
            elif _record_fields(field["type"]) is None or not walk(field["type"], target):
                return False
        skip(run)
        return True

    if not walk(parsed, spec):
        return None

    def variables(s: _Spec) -> Iterator[str]:
        for target in s.values():
            yield from ([target] if isinstance(target, str) else variables(target))

    absent = sorted(set(variables(spec)) - assigned)
    lines = ["def decode(s, n, append):"]
    lines += [f"    {var} = None" for var in absent]
    lines += ["    for _ in range(n):"] + [f"        {line}" for line in body]
    lines += [f"        if v != {MANIFEST_VERSION}: raise Version(v)", f"        append({output})"]
    arrays = _array_readers(fast.read_long)
    env: dict[str, Any] = {
        "RL": fast.read_long, "RB": fast.read_bytes, "RU": fast.read_utf8, "SL": fast.skip_long,
        "SB": fast.skip_bytes, "RD": fast.read_data, "SD": fast.skip_data,
        "ARR": arrays[0], "ARRN": arrays[1], "NS": {"writer": {}, "reader": {}}, "OPT": {},
        "Bad": FastDecodeError, "Version": VersionMismatch,
        "Entry": ManifestEntry, "Meta": DataFileMeta, "Stats": SimpleStats, "Ref": FileRef,
        "ListMeta": ManifestFileMeta,
        "tuple": tuple, "range": range, "TN": tuple.__new__,
    }
    env.update({f"T{i}": t for i, t in enumerate(types)})
    exec(compile("\n".join(lines), "<tablekeeper manifest decoder>", "exec"), env)  # noqa: S102
    return cast(_Decoder, env["decode"])


def _array_readers(read_long: Callable[[Any], int]) -> tuple[Callable[..., list[Any]], Callable[..., list[Any]]]:
    """Readers of Avro arrays of primitives and of nullable primitives (blocks of ``count``
    items; a negative count is followed by the block's byte size). Such arrays are short (extra
    files, column names, per-column null counts), where plain calls beat fastavro's generic
    dispatch. A count of -2**63 is refused, as the native decoder refuses it: its item count is
    not a 64-bit number (fastavro's compiled reader, the judge then, reads it as an empty block,
    Java's as the array's end: docs/robustness.md); so is a block whose items do not end where
    its byte size says (readers that skip the array seek by it)."""

    def read_array(s: Any, item: Callable[[Any], Any]) -> list[Any]:
        count = read_long(s)
        if count == 0:
            return []
        out: list[Any] = []
        while count != 0:
            end = None
            if count < 0:
                if count == _INT64_MIN:
                    raise FastDecodeError("array block count -2**63")
                count = -count
                end = read_long(s)
                end += s.tell()
            out.extend([item(s) for _ in range(count)])
            if end is not None and s.tell() != end:
                raise FastDecodeError("array block size does not match its items")
            count = read_long(s)
        return out

    def read_nullable_array(s: Any, item: Callable[[Any], Any], null: int) -> list[Any]:
        count = read_long(s)
        out: list[Any] = []
        while count != 0:
            end = None
            if count < 0:
                if count == _INT64_MIN:
                    raise FastDecodeError("array block count -2**63")
                count = -count
                end = read_long(s)
                end += s.tell()
            for _ in range(count):
                index = read_long(s)
                if index == null:
                    out.append(None)
                elif index == 1 - null:
                    out.append(item(s))
                else:
                    raise FastDecodeError(f"union index {index}")
            if end is not None and s.tell() != end:
                raise FastDecodeError("array block size does not match its items")
            count = read_long(s)
        return out

    return read_array, read_nullable_array


class VersionMismatch(Exception):
    def __init__(self, version: Any) -> None:
        super().__init__(version)
        self.version = version


def decode_compiled(decode: _Decoder, data: bytes) -> list[Any]:
    """Run a compiled decoder over every block; each block must be consumed exactly."""
    out: list[Any] = []
    try:
        for block in fastavro_module().block_reader(io.BytesIO(data)):
            stream = getattr(block, "bytes_")  # noqa: B009 - untyped attribute of fastavro's Block
            decode(stream, block.num_records, out.append)
            if stream.tell() != stream.getbuffer().nbytes:
                raise FastDecodeError("block not consumed exactly")
    except VersionMismatch:
        raise
    except Exception as e:
        raise FastDecodeError(str(e)) from e
    return out


def native_program(info: SchemaInfo, kind: str) -> manifest_native.Program | None:
    """The native program of decoder ``kind`` for this writer schema when the native decoder is
    built and trusted: the list kinds on the lists' own self-test (no fastavro), the others on
    the whole one (tests force fastavro.reader by setting _fast_enabled False: that turns off
    both fast decoders)."""
    if _fast_enabled is False:
        return None
    trusted = manifest_native.lists_usable() if kind in manifest_native.LIST_KINDS else manifest_native.usable()
    return info.native(kind) if trusted else None


def decode_fast(info: SchemaInfo, kind: str, data: bytes) -> list[Any] | None:
    """Every record of the container ``data`` by the fastest decoder that serves this writer
    schema: the native program (:mod:`.manifest_native`), else the generated Python decoder;
    None when neither does (fastavro.reader then reads the file).

    Raises:
        VersionMismatch: a record's version is not the one this decoder kind reads.
        FastDecodeError: the file did not decode exactly (fastavro.reader judges it).
    """
    program = native_program(info, kind)
    if program is not None:
        try:
            rows = manifest_native.decode(program, data)
        except manifest_native.NativeVersion as e:
            raise VersionMismatch(e.version) from None
        except manifest_native.NativeBad as e:
            raise FastDecodeError(str(e)) from None
        if rows is not None:
            return rows
    decoder = info.decoder(kind) if fast_usable() else None
    return None if decoder is None else decode_compiled(decoder, data)


def fast_usable() -> bool:
    global _fast_enabled
    if _fast_enabled is None:
        _fast_enabled = _self_test()
    return _fast_enabled


def fast_lists_usable() -> bool:
    """Whether the compiled manifest-list decoders are trusted: the whole self-test's verdict
    once it ran (or tests forced one), else the lists' part alone. Orphan cleanup decodes lists
    only; the entries' part is most of the self-test (~15 ms of a CLI process)."""
    global _fast_lists_enabled
    if _fast_enabled is not None:
        return _fast_enabled
    if _fast_lists_enabled is None:
        _fast_lists_enabled = _self_test(("list", "list-names"))
    return _fast_lists_enabled


def _self_test(only: tuple[str, ...] | None = None) -> bool:
    """Compiled decoders against fastavro.reader on files covering every shape they handle
    (both union orders, logical types, arrays, nested and skipped records, absent fields);
    ``only``: just these decoder kinds."""
    if _fast() is None:
        return False
    try:
        for schema, records, all_kinds in self_test_files():
            kinds = all_kinds if only is None else tuple(k for k in all_kinds if k in only)
            if not kinds:
                continue
            buf = io.BytesIO()
            fastavro = fastavro_module()
            fastavro.writer(buf, fastavro.parse_schema(schema), records, codec="deflate", sync_interval=512)
            data = buf.getvalue()
            info = SchemaInfo(schema)
            for kind in kinds:
                decoder = info.decoder(kind)
                if decoder is None or decode_compiled(decoder, data) != decode_by_reader(kind, data, info):
                    return False
        return True
    except Exception:
        return False


def decode_by_reader(kind: str, data: bytes, info: SchemaInfo) -> list[Any]:
    """What fastavro.reader makes of the container ``data`` for decoder ``kind`` (the rows every
    faster decoder must equal)."""
    buf = io.BytesIO(data)
    fastavro_module().schemaless_reader(buf, _header_schema(), None)
    container = Container(data, buf.tell())
    if kind in ("list", "list-names"):
        metas = list_by_reader(plain_bytes(container, info), "", "", info.reader_schema("list"))
        return metas if kind == "list" else [(m.file_name, m.extra_files) for m in metas]
    return entries_by_reader(container, info, "", "") if kind == "entry" else refs_by_reader(container, info, "", "")


def self_test_files() -> list[tuple[dict[str, Any], list[dict[str, Any]], tuple[str, ...]]]:
    """(writer schema, records, decoder kinds) of the self-tests: a manifest covering every
    shape the compiled decoders handle, and a manifest list with optional fields present and
    absent."""
    stats = {"type": "record", "name": "t.stats", "fields": [
        {"name": "_MIN_VALUES", "type": "bytes"}, {"name": "_MAX_VALUES", "type": "bytes"},
        {"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}]}]}
    schema = {"type": "record", "name": "t.record", "fields": [
        {"name": "_VERSION", "type": "int"}, {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"}, {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": {"type": "record", "name": "t.file", "fields": [
            {"name": "_FILE_NAME", "type": "string"}, {"name": "_FILE_SIZE", "type": "long"},
            {"name": "_ROW_COUNT", "type": "long"}, {"name": "_MIN_KEY", "type": "bytes"},
            {"name": "_MAX_KEY", "type": "bytes"}, {"name": "_KEY_STATS", "type": stats},
            {"name": "_VALUE_STATS", "type": {**stats, "name": "t.vstats"}},
            {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"}, {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
            {"name": "_SCHEMA_ID", "type": "long"}, {"name": "_LEVEL", "type": "int"},
            {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
            {"name": "_CREATION_TIME", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
            {"name": "_UNKNOWN", "type": {"type": "map", "values": "string"}},
            {"name": "_EMBEDDED_FILE_INDEX", "type": ["null", "bytes"]},
            {"name": "_FILE_SOURCE", "type": ["int", "null"]},
            {"name": "_VALUE_STATS_COLS", "type": ["null", {"type": "array", "items": "string"}]},
            {"name": "_EXTERNAL_PATH", "type": ["null", "string"]},
            {"name": "_WRITE_COLS_SEQUENCES", "type": ["null", {"type": "array", "items": "long"}]},
        ]}},
    ]}
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    records = [
        {"_VERSION": 2, "_KIND": i % 2, "_PARTITION": bytes([i % 256]) * (i % 40), "_BUCKET": i - 3,
         "_TOTAL_BUCKETS": 7, "_FILE": {
             "_FILE_NAME": f"data-{i}-é", "_FILE_SIZE": i * 1_000_003, "_ROW_COUNT": -i, "_MIN_KEY": b"k" * (i % 9),
             "_MAX_KEY": b"", "_KEY_STATS": {"_MIN_VALUES": b"x" * i, "_MAX_VALUES": b"y",
                                             "_NULL_COUNTS": [None, i] if i % 2 else None},
             "_VALUE_STATS": {"_MIN_VALUES": b"", "_MAX_VALUES": b"z" * (i % 5), "_NULL_COUNTS": [i] * (i % 4)},
             "_MIN_SEQUENCE_NUMBER": 2**62 - i, "_MAX_SEQUENCE_NUMBER": -(2**62), "_SCHEMA_ID": i % 3,
             "_LEVEL": i % 6, "_EXTRA_FILES": [f"data-{i}.index"] * (i % 3),
             "_CREATION_TIME": epoch + timedelta(milliseconds=i * 1001) if i % 4 else None,
             "_UNKNOWN": {"a": str(i)} if i % 2 else {},
             "_EMBEDDED_FILE_INDEX": b"\x01" * i if i % 2 else None, "_FILE_SOURCE": None if i % 3 else i % 2,
             "_VALUE_STATS_COLS": ["a", "b"][: i % 3] if i % 5 else None,
             "_EXTERNAL_PATH": f"s3://b/{i}" if i % 3 == 1 else None,
             "_WRITE_COLS_SEQUENCES": [i, -i] if i % 7 else None}}
        for i in range(84)  # every residue the fields cycle through (i % 2..42), several blocks
    ]
    list_fields = [
        {"name": "_VERSION", "type": "int"}, {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"}, {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"}, {"name": "_PARTITION_STATS", "type": stats},
        {"name": "_SCHEMA_ID", "type": "long"}, {"name": "_MIN_BUCKET", "type": ["null", "int"]},
        {"name": "_MAX_BUCKET", "type": ["int", "null"]}, {"name": "_UNKNOWN", "type": ["null", "string"]},
        {"name": "_MIN_ROW_ID", "type": ["null", "long"]},
        {"name": "_EXTRA_FILES", "type": ["null", {"type": "array", "items": "string"}]},
    ]
    list_records = [
        {"_VERSION": 2, "_FILE_NAME": f"manifest-{i}-é", "_FILE_SIZE": i * 7919, "_NUM_ADDED_FILES": i,
         "_NUM_DELETED_FILES": -i, "_PARTITION_STATS": {"_MIN_VALUES": b"a" * (i % 7), "_MAX_VALUES": b"",
                                                        "_NULL_COUNTS": [i, None] if i % 2 else None},
         "_SCHEMA_ID": i % 4, "_MIN_BUCKET": i if i % 3 else None, "_MAX_BUCKET": None if i % 4 else i,
         "_UNKNOWN": "u" if i % 2 else None, "_MIN_ROW_ID": 2**40 + i if i % 5 else None,
         "_EXTRA_FILES": [f"x-{i}"] * (i % 3) if i % 4 else None}
        for i in range(60)
    ]
    return [(schema, records, ("entry", "ref")),
            ({"type": "record", "name": "t.list", "fields": list_fields}, list_records, ("list", "list-names"))]


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


def list_by_reader(data: bytes, path: str, what: str,
                   reader_schema: dict[str, Any] | None = None) -> list[ManifestFileMeta]:
    out: list[ManifestFileMeta] = []
    for r in decode_records(data, path, what, reader_schema):
        if r["_VERSION"] != MANIFEST_LIST_VERSION:
            raise bad_version(path, what, r["_VERSION"], MANIFEST_LIST_VERSION)
        out.append(list_row(r))
    return out


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


def entries_by_reader(container: Container, info: SchemaInfo, path: str, what: str) -> list[ManifestEntry]:
    out: list[ManifestEntry] = []
    for r in decode_records(plain_bytes(container, info), path, what, info.reader_schema("entry")):
        if r["_VERSION"] != MANIFEST_VERSION:
            raise bad_version(path, what, r["_VERSION"], MANIFEST_VERSION)
        out.append(entry_row(r))
    return out


def refs_by_reader(container: Container, info: SchemaInfo, path: str, what: str) -> list[FileRef]:
    out: list[FileRef] = []
    for r in decode_records(container.data, path, what, info.ref_reader_schema):
        if r["_VERSION"] != MANIFEST_VERSION:
            raise bad_version(path, what, r["_VERSION"], MANIFEST_VERSION)
        out.append(ref_row(r))
    return out
