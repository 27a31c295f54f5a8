"""Decoding Paimon's Avro manifest files: the container and its writer schema (checked for the
fields every reader needs), fastavro's reader as the final judge, and per writer schema a
generated straight-line decoder over fastavro's compiled primitives for the hot paths.

Every file is decoded with its own embedded writer schema and fields are picked by name, with
defaults for fields a writer did not have: Java and pypaimon name nested records differently and
write different field sets (paimon-semantics.md §1.8), so one fixed reader schema cannot serve
both.
"""

from __future__ import annotations

import gc
import io
import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Final, cast

from tablekeeper.core import errors
from tablekeeper.core.paimon.manifests import avro_schema
from tablekeeper.core.paimon.manifests import native as manifest_native
from tablekeeper.core.paimon.manifests.avro_container import MAGIC, fastavro_module
from tablekeeper.core.paimon.manifests.avro_schema import (
    BYTES,
    INT,
    STRING,
    array,
    optional,
    record,
    record_fields,
)
from tablekeeper.core.paimon.manifests.compiled import (
    DECODER_KINDS,
    Decoder,
    FastDecodeError,
    VersionMismatch,
    compile_decoder,
    decode_compiled,
    fastavro_primitives,
)
from tablekeeper.core.paimon.manifests.fastavro_reader import (
    Container,
    ReaderSchemas,
    decode_by_reader,
    format_error,
    header_schema,
)
from tablekeeper.core.paimon.manifests.self_test import self_test_files
from tablekeeper.core.storage import FileIO

__all__ = ["SchemaInfo", "ENTRY_TOP_REQUIRED", "ENTRY_FILE_REQUIRED", "REF_FILE_REQUIRED", "LIST_REQUIRED",
    "INDEX_REQUIRED", "SHAPES", "schema_info", "read_container", "parse_container", "require_fields", "gc_paused",
    "decode_fast", "native_program", "fast_usable", "fast_lists_usable", "KNOWN_ENTRY_FIELDS", "KNOWN_FILE_FIELDS",
    "reject_unknown_entry_fields"]


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


class SchemaInfo(ReaderSchemas):
    """Everything derived from one writer schema, computed once and cached by its JSON text:
    field presence, the logical-type-free schema text, the reader schemas of fastavro's reader
    (:class:`.fastavro_reader.ReaderSchemas`) and the faster decoders, compiled lazily, on first
    use."""

    def __init__(self, schema: dict[str, Any]) -> None:
        super().__init__(schema)
        self.fields: dict[str, Any] = record_fields(schema) or {}
        self.file_fields: dict[str, Any] | None = record_fields(self.fields.get("_FILE"))
        self._decoders: dict[str, Decoder | None] = {}
        self._programs: dict[str, manifest_native.Program | None] = {}
        #: avro_schema.type_problem per file kind of SHAPES, computed once
        self.type_problems: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def native(self, kind: str) -> manifest_native.Program | None:
        """The native program of decoder ``kind`` (:mod:`.native`), or None."""
        if kind not in self._programs:
            with self._lock:
                if kind not in self._programs:
                    self._programs[kind] = manifest_native.compile_program(self.stripped, DECODER_KINDS[kind][0], kind)
        return self._programs[kind]

    def decoder(self, kind: str) -> Decoder | None:
        if kind not in self._decoders:
            with self._lock:
                if kind not in self._decoders:
                    self._decoders[kind] = compile_decoder(self.stripped, *DECODER_KINDS[kind])
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
    if not data.startswith(MAGIC):
        raise format_error(path, what, "no Avro container magic (empty, truncated or another format)")
    buf = io.BytesIO(data)
    try:
        header = cast(dict[str, Any], fastavro_module().schemaless_reader(buf, header_schema(), None))
        schema_json = bytes(header["meta"]["avro.schema"]).decode("utf-8")
    except Exception as e:  # fastavro raises EOFError/ValueError/KeyError... on damaged headers
        raise format_error(path, what, f"damaged Avro header ({type(e).__name__}: {e})") from e
    return Container(data, buf.tell()), schema_info(schema_json, path, what)


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


#: None until the first compiled decode runs the self-test; tests set False to force fallback.
_fast_enabled: bool | None = None
#: The same for the manifest-list decoders alone, when only they were needed (orphan cleanup).
_fast_lists_enabled: bool | None = None


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
    if fastavro_primitives() is None:
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


KNOWN_ENTRY_FIELDS: Final = frozenset(ENTRY_TOP_REQUIRED)


KNOWN_FILE_FIELDS: Final = frozenset({
    "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS", "_VALUE_STATS",
    "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL", "_EXTRA_FILES", "_CREATION_TIME",
    "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX", "_FILE_SOURCE", "_VALUE_STATS_COLS", "_EXTERNAL_PATH",
    "_FIRST_ROW_ID", "_WRITE_COLS", "_WRITE_COLS_SEQUENCES",
})


def reject_unknown_entry_fields(info: SchemaInfo, path: str, what: str) -> None:
    """Raises FormatError naming the file and the unknown fields of its writer schema."""
    unknown = sorted(set(info.fields) - KNOWN_ENTRY_FIELDS)
    unknown += sorted(f"_FILE.{n}" for n in set(info.file_fields or ()) - KNOWN_FILE_FIELDS)
    if unknown:
        raise errors.FormatError(
            f"{path}: unsupported {what} format (unknown field(s) {', '.join(unknown)})",
            fix="the file was written by a newer Paimon; upgrade tablekeeper before maintaining this table "
                "(nothing was changed)")
