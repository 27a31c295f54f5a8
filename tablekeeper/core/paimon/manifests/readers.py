"""Reading manifest lists, manifests and index manifests: full reads, the planning projection
(``read_manifest_refs``), names only (``read_list_block_names``) and raw payloads for the byte
scan of orphan cleanup. Missing files raise ``FileNotFoundError``; anything unreadable raises
``FormatError``."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Final, cast

from tablekeeper.core import errors
from tablekeeper.core.paimon.manifests import avro_container, native
from tablekeeper.core.paimon.manifests.avro_container import fastavro_module
from tablekeeper.core.paimon.manifests.avro_schema import primitive_type
from tablekeeper.core.paimon.manifests.compiled import FastDecodeError, VersionMismatch
from tablekeeper.core.paimon.manifests.decoding import (
    ENTRY_FILE_REQUIRED,
    ENTRY_TOP_REQUIRED,
    INDEX_REQUIRED,
    LIST_REQUIRED,
    REF_FILE_REQUIRED,
    SchemaInfo,
    decode_fast,
    fast_lists_usable,
    gc_paused,
    native_program,
    parse_container,
    read_container,
    reject_unknown_entry_fields,
    require_fields,
    schema_info,
)
from tablekeeper.core.paimon.manifests.fastavro_reader import (
    Container,
    bad_version,
    decode_records,
    entries_by_reader,
    format_error,
    list_by_reader,
    plain_bytes,
    refs_by_reader,
)
from tablekeeper.core.paimon.manifests.records import (
    ADD,
    DELETE,
    INDEX_MANIFEST_VERSION,
    MANIFEST_LIST_VERSION,
    MANIFEST_VERSION,
    DeletionVectorRange,
    FileRef,
    GlobalIndexMeta,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    as_tuple,
)
from tablekeeper.core.storage import FileIO

__all__ = ["read_manifest_list", "read_list_blocks", "read_list_block_names", "read_manifest", "read_manifest_refs",
           "read_manifest_payload", "read_index_manifest"]


# -- manifest lists ---------------------------------------------------------------------------
def read_manifest_list(file_io: FileIO, path: str) -> list[ManifestFileMeta]:
    """Read a manifest list (``manifest-list-*``): the manifests one snapshot half consists of.

    Raises:
        FileNotFoundError: the file does not exist.
        FormatError: the file is damaged or not a manifest list.
    """
    what = "manifest list"
    container, info = read_container(file_io, path, what)
    require_fields(info, path, what, LIST_REQUIRED, shapes="list")
    with gc_paused():
        try:
            rows = decode_fast(info, "list", container.data)
            if rows is not None:
                return cast(list[ManifestFileMeta], rows)
        except VersionMismatch as e:
            raise bad_version(path, what, e.version, MANIFEST_LIST_VERSION) from None
        except FastDecodeError:
            pass  # fastavro.reader decides
        return list_by_reader(plain_bytes(container, info), path, what, info.reader_schema("list"))


def read_list_block_names(schema_json: bytes, data: bytes, count: int, path: str,
                          start: int = 0) -> list[tuple[str, tuple[str, ...]]] | None:
    """The (manifest name, extra files) of the ``count`` rows of a decompressed manifest-list
    block from byte ``start`` on (framed by :mod:`tablekeeper.core.paimon.manifests.avro_container`):
    orphan cleanup needs no more, and a names-only decoder skips the partition statistics that
    make up most of a row.

    None when this path cannot serve the block (no compiled decoder, rows not consuming the
    bytes exactly): :func:`read_manifest_list` then reads the file and judges it.

    Raises:
        FormatError: the writer schema is not a manifest list's, or a row's version is unknown.
    """
    what = "manifest list"
    try:
        info = schema_info(schema_json.decode("utf-8"), path, what)
    except UnicodeDecodeError:
        return None
    require_fields(info, path, what, LIST_REQUIRED, shapes="list")
    out: list[tuple[str, tuple[str, ...]]] = []
    program = native_program(info, "list-names")
    if program is not None:  # (trusted without fastavro: a local orphan cleanup never imports it)
        try:
            with gc_paused():
                native.decode_block(program, data, count, out, start=start)
        except native.NativeVersion as e:
            raise bad_version(path, what, e.version, MANIFEST_LIST_VERSION) from None
        except native.NativeBad:
            return None
        return out
    decoder = info.decoder("list-names") if fast_lists_usable() else None
    if decoder is None:
        return None
    stream = io.BytesIO(data)
    stream.seek(start)
    try:
        with gc_paused():
            decoder(stream, count, out.append)
    except VersionMismatch as e:
        raise bad_version(path, what, e.version, MANIFEST_LIST_VERSION) from None
    except Exception:
        return None
    return out if stream.tell() == len(data) else None


def read_list_blocks(schema_json: bytes | None, codec: str, blocks: Sequence[tuple[bytes | memoryview, int]],
                     path: str) -> list[list[ManifestFileMeta]] | None:
    """The rows of some blocks of a manifest list, each given as (compressed payload, record
    count) with the file's writer schema and codec (framed by
    :mod:`tablekeeper.core.paimon.manifests.avro_container`), decoded natively block by block: the
    reader of :meth:`Reachability.manifest_list_blocks`, which otherwise re-frames a cut-down
    copy of the file (an expiration reads ~2,400 lists).

    None when this path cannot serve them (no native decoder, an unusual codec or schema, a
    block that does not decode exactly): :func:`read_manifest_list` then reads and judges.

    Raises:
        FormatError: the writer schema is not a manifest list's, or a row's version is unknown.
    """
    what = "manifest list"
    if schema_json is None or codec not in avro_container.CODECS:
        return None
    try:
        info = schema_info(schema_json.decode("utf-8"), path, what)
    except UnicodeDecodeError:
        return None
    require_fields(info, path, what, LIST_REQUIRED, shapes="list")
    program = native_program(info, "list")
    if program is None:
        return None
    out: list[list[ManifestFileMeta]] = []
    with gc_paused():
        for payload, count in blocks:
            data = avro_container.decompress(codec, payload)
            if data is None:
                return None
            rows: list[ManifestFileMeta] = []
            try:
                native.decode_block(program, data, count, rows)
            except native.NativeVersion as e:
                raise bad_version(path, what, e.version, MANIFEST_LIST_VERSION) from None
            except native.NativeBad:
                return None
            out.append(rows)
    return out


# -- manifests --------------------------------------------------------------------------------
def _read_entries(file_io: FileIO, path: str, kind: str, file_required: Iterable[str],
                  slow: Callable[[Container, SchemaInfo, str, str], list[Any]]) -> list[Any]:
    what = "manifest"
    container, info = read_container(file_io, path, what)
    require_fields(info, path, what, ENTRY_TOP_REQUIRED, file_required, shapes="manifest")
    reject_unknown_entry_fields(info, path, what)
    with gc_paused():
        rows: list[Any] | None = None
        try:
            rows = decode_fast(info, kind, container.data)
        except VersionMismatch as e:
            raise bad_version(path, what, e.version, MANIFEST_VERSION) from None
        except FastDecodeError:
            pass  # damaged, or a shape the compiled path misjudged: fastavro.reader decides
        if rows is None:
            rows = slow(container, info, path, what)
    _check_kinds(rows, path)
    return rows


_KNOWN_KINDS: Final = frozenset((ADD, DELETE))
_kind_of: Final = itemgetter(0)  # ``kind`` of both FileRef and ManifestEntry


def _check_kinds(rows: list[Any], path: str) -> None:
    """Fail closed on an entry kind other than ADD and DELETE (a newer Paimon's, or damage),
    naming the manifest: merging would otherwise stop later naming only a data file, and a
    planner must never guess what an unknown kind means for a file's liveness (issue 13)."""
    if not _KNOWN_KINDS.issuperset(map(_kind_of, rows)):
        bad = next(r for r in rows if r[0] not in _KNOWN_KINDS)
        name = bad.file_name if isinstance(bad, FileRef) else bad.file.file_name
        raise errors.FormatError(
            f"{path}: unsupported manifest entry kind {bad[0]!r} (for {name}; known: 0 = ADD, 1 = DELETE)",
            fix="the manifest was written by an unsupported Paimon version or is damaged; upgrade tablekeeper, "
                "or restore the manifest",
        )


def _is_string(t: Any, *, nullable: bool) -> bool:
    if nullable and isinstance(t, list) and len(t) == 2 and "null" in t:
        t = t[1 - t.index("null")]
    return primitive_type(t) == "string"


def _names_stored_as_strings(info: SchemaInfo) -> bool:
    """Whether every field naming a file is an Avro string, stored verbatim in the bytes."""
    file_fields = info.file_fields or {}
    extra = file_fields.get("_EXTRA_FILES")
    extra_items = extra.get("items") if isinstance(extra, dict) and extra.get("type") == "array" else None
    external = file_fields.get("_EXTERNAL_PATH")
    return (_is_string(file_fields.get("_FILE_NAME"), nullable=False)
            and extra_items is not None and _is_string(extra_items, nullable=True)
            and (external is None or _is_string(external, nullable=True)))


def read_manifest_payload(file_io: FileIO, path: str) -> list[bytes] | None:
    """The decompressed record bytes of every block of a manifest, for a byte-level name scan
    (:mod:`tablekeeper.core.reclaim.orphans.name_scan`) instead of decoding every entry.

    The writer schema is checked as for :func:`read_manifest_refs`, so an unknown format still
    fails closed; None when a field naming files is not a plain Avro string (the caller then
    decodes entries).

    Raises:
        FileNotFoundError: the file does not exist.
        FormatError: the file is damaged or not a manifest.
    """
    what = "manifest"
    data = file_io.read_bytes(path)
    framed = avro_container.frame(data)
    if framed is not None and framed.schema_json is not None and framed.codec in avro_container.CODECS:
        try:
            schema_json = framed.schema_json.decode("utf-8")
        except UnicodeDecodeError:
            schema_json = None
        if schema_json is not None:
            info = schema_info(schema_json, path, what)
            require_fields(info, path, what, ENTRY_TOP_REQUIRED, REF_FILE_REQUIRED, shapes="manifest")
            reject_unknown_entry_fields(info, path, what)
            if not _names_stored_as_strings(info):
                return None
            view = memoryview(data)
            blocks = [avro_container.decompress(framed.codec, view[b.payload:b.end - 16]) for b in framed.blocks]
            if all(b is not None for b in blocks):
                return cast(list[bytes], blocks)
    # anything unusual: fastavro frames and decompresses, and judges damage
    container, info = parse_container(data, path, what)
    require_fields(info, path, what, ENTRY_TOP_REQUIRED, REF_FILE_REQUIRED, shapes="manifest")
    reject_unknown_entry_fields(info, path, what)
    if not _names_stored_as_strings(info):
        return None
    try:
        return [getattr(block, "bytes_").getvalue()  # noqa: B009 - untyped attribute of fastavro's Block
                for block in fastavro_module().block_reader(io.BytesIO(container.data))]
    except Exception as e:  # codec errors, bad sync markers, truncation
        raise format_error(path, what, f"{type(e).__name__}: {e}") from e


def read_manifest(file_io: FileIO, path: str) -> list[ManifestEntry]:
    """Read every field of every entry of a manifest (``manifest-*``), in file order.

    Raises:
        FileNotFoundError: the file does not exist.
        FormatError: the file is damaged or not a manifest.
    """
    return _read_entries(file_io, path, "entry", ENTRY_FILE_REQUIRED, entries_by_reader)


def read_manifest_refs(file_io: FileIO, path: str) -> list[FileRef]:
    """Read only the planning fields of every entry of a manifest, in file order.

    Stats, keys and sequence numbers are skipped by fastavro's compiled skippers and never
    become Python objects: about two thirds of the time and under a third of the memory of
    ``read_manifest``. What is kept is derived from each file's writer schema (cached by its
    JSON text).

    Raises:
        FileNotFoundError: the file does not exist.
        FormatError: the file is damaged or not a manifest.
    """
    return _read_entries(file_io, path, "ref", REF_FILE_REQUIRED, refs_by_reader)


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
                           as_tuple(value.get("_EXTRA_FIELD_IDS")), value.get("_INDEX_META"),
                           value.get("_SOURCE_META"))


def read_index_manifest(file_io: FileIO, path: str) -> list[IndexManifestEntry]:
    """Read an index manifest (``index-manifest-*``): HASH, deletion-vector and global index
    files of one snapshot. Unlike pypaimon, a missing file is an error, not an empty list.

    Raises:
        FileNotFoundError: the file does not exist.
        FormatError: the file is damaged or not an index manifest.
    """
    what = "index manifest"
    container, info = read_container(file_io, path, what)
    require_fields(info, path, what, INDEX_REQUIRED, shapes="index")
    out: list[IndexManifestEntry] = []
    with gc_paused():
        for r in decode_records(plain_bytes(container, info), path, what):
            if r["_VERSION"] != INDEX_MANIFEST_VERSION:
                raise bad_version(path, what, r["_VERSION"], INDEX_MANIFEST_VERSION)
            try:
                dv = _dv_ranges(r.get("_DELETIONS_VECTORS_RANGES"))
                gi = _global_index(r.get("_GLOBAL_INDEX"))
            except (KeyError, TypeError) as e:
                raise format_error(path, what, f"malformed nested record ({e})") from e
            out.append(IndexManifestEntry(
                r["_KIND"], r["_PARTITION"], r["_BUCKET"], r["_INDEX_TYPE"], r["_FILE_NAME"],
                r["_FILE_SIZE"], r["_ROW_COUNT"], dv, r.get("_EXTERNAL_PATH"), gi,
            ))
    return out
