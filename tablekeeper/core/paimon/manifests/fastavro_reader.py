"""fastavro's reader: the final judge of a manifest file, and the rows every faster decoder
must equal. Any file the faster decoders cannot read exactly is read here; anything unreadable
becomes a ``FormatError`` naming the file."""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Iterator
from typing import Any, Final, NamedTuple, cast

from tablekeeper.core import errors
from tablekeeper.core.paimon.manifests.avro_container import fastavro_module
from tablekeeper.core.paimon.manifests.avro_schema import strip_logical_types
from tablekeeper.core.paimon.manifests.compiled import DECODER_KINDS, REF_SPEC, derive_reader_schema
from tablekeeper.core.paimon.manifests.records import (
    MANIFEST_LIST_VERSION,
    MANIFEST_VERSION,
    FileRef,
    ManifestEntry,
    ManifestFileMeta,
    entry_row,
    list_row,
    ref_row,
)

__all__ = ["format_error", "bad_version", "Container", "ReaderSchemas", "plain_bytes", "decode_records", "decode_by_reader",
    "list_by_reader", "entries_by_reader", "refs_by_reader"]


@functools.cache
def header_schema() -> Any:
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


_FIX_DAMAGED: Final = ("the file is damaged or was not written by Paimon: restore it from a backup, or roll the "
                       "table back to a snapshot that does not reference it")


def format_error(path: str, what: str, detail: str) -> errors.FormatError:
    return errors.FormatError(f"{path} is not a readable Paimon {what}: {detail}", fix=_FIX_DAMAGED)


def bad_version(path: str, what: str, got: Any, expected: int) -> errors.FormatError:
    return errors.FormatError(
        f"{path}: unsupported {what} format version {got!r} (expected {expected})",
        fix="the file was written by an unsupported Paimon version; upgrade tablekeeper",
    )


class Container(NamedTuple):
    data: bytes
    header_end: int


class ReaderSchemas:
    """One writer schema as fastavro's reader reads it: free of logical types (``stripped``, and
    its JSON where it differs from the file's), and cut down to the fields each decoder kind reads
    (:meth:`reader_schema`). :class:`.decoding.SchemaInfo` adds the faster decoders of the same
    schema."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        stripped = strip_logical_types(schema)
        self.stripped: dict[str, Any] = stripped
        self.stripped_json: bytes | None = None if stripped == schema else json.dumps(stripped).encode("utf-8")
        self._ref_reader_schema: dict[str, Any] | None = None
        self._reader_schemas: dict[str, dict[str, Any]] = {}

    @property
    def ref_reader_schema(self) -> dict[str, Any]:
        if self._ref_reader_schema is None:
            self._ref_reader_schema = derive_reader_schema(self.stripped, REF_SPEC)
        return self._ref_reader_schema

    def reader_schema(self, kind: str) -> dict[str, Any]:
        """The writer schema cut down to the fields decoder ``kind`` reads: fastavro's reader,
        the judge, then skips what the fast decoders skip (a field no reader needs is not judged,
        whichever decoder runs)."""
        if kind == "ref":
            return self.ref_reader_schema
        if kind not in self._reader_schemas:
            self._reader_schemas[kind] = derive_reader_schema(self.stripped, DECODER_KINDS[kind][0])
        return self._reader_schemas[kind]


def plain_bytes(container: Container, info: ReaderSchemas) -> bytes:
    """The container with its embedded schema free of logical types, for fastavro.reader."""
    if info.stripped_json is None:
        return container.data
    buf = io.BytesIO(container.data)
    header = cast(dict[str, Any], fastavro_module().schemaless_reader(buf, header_schema(), None))
    header["meta"] = {**header["meta"], "avro.schema": info.stripped_json}
    out = io.BytesIO()
    fastavro_module().schemaless_writer(out, header_schema(), header)
    return out.getvalue() + container.data[container.header_end:]


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


def decode_by_reader(kind: str, data: bytes, info: ReaderSchemas) -> list[Any]:
    """What fastavro.reader makes of the container ``data`` for decoder ``kind`` (the rows every
    faster decoder must equal)."""
    buf = io.BytesIO(data)
    fastavro_module().schemaless_reader(buf, header_schema(), None)
    container = Container(data, buf.tell())
    if kind in ("list", "list-names"):
        metas = list_by_reader(plain_bytes(container, info), "", "", info.reader_schema("list"))
        return metas if kind == "list" else [(m.file_name, m.extra_files) for m in metas]
    return entries_by_reader(container, info, "", "") if kind == "entry" else refs_by_reader(container, info, "", "")


def list_by_reader(data: bytes, path: str, what: str,
                   reader_schema: dict[str, Any] | None = None) -> list[ManifestFileMeta]:
    out: list[ManifestFileMeta] = []
    for r in decode_records(data, path, what, reader_schema):
        if r["_VERSION"] != MANIFEST_LIST_VERSION:
            raise bad_version(path, what, r["_VERSION"], MANIFEST_LIST_VERSION)
        out.append(list_row(r))
    return out


def entries_by_reader(container: Container, info: ReaderSchemas, path: str, what: str) -> list[ManifestEntry]:
    out: list[ManifestEntry] = []
    for r in decode_records(plain_bytes(container, info), path, what, info.reader_schema("entry")):
        if r["_VERSION"] != MANIFEST_VERSION:
            raise bad_version(path, what, r["_VERSION"], MANIFEST_VERSION)
        out.append(entry_row(r))
    return out


def refs_by_reader(container: Container, info: ReaderSchemas, path: str, what: str) -> list[FileRef]:
    out: list[FileRef] = []
    for r in decode_records(container.data, path, what, info.ref_reader_schema):
        if r["_VERSION"] != MANIFEST_VERSION:
            raise bad_version(path, what, r["_VERSION"], MANIFEST_VERSION)
        out.append(ref_row(r))
    return out
