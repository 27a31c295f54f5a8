"""Manifest decoding in native code: a file's writer schema compiled to a flat program that the
C module ``_avro_native`` interprets per record (issue 13: an expiration of the peer table spends
most of its CPU decoding ~245k manifest entries, ~12 us an entry with the generated Python
decoders of :mod:`.manifest_decoding`, well under 1 us here).

Same contract as the generated Python decoders, which stay the fallback: the same fields (the
specs of :mod:`.manifest_decoding`), the same rows (``_TEMPLATES`` mirror its output expressions),
the same version check; any shape the program cannot express (maps that are read, enums, fixed,
records inside unions or arrays, named references) compiles to None and the Python decoders
serve the file; any malformed block raises :class:`NativeBad` and fastavro's reader judges the
file. The module is
trusted only after a self-test against fastavro's reader (:func:`usable`), and only if it was
built: a missing compiler at install time (it is an optional extension) just means the Python
decoders run.
"""

from __future__ import annotations

import importlib
import io
from collections.abc import Mapping
from typing import Any, Final, NamedTuple, cast

from tablekeeper.core.paimon.manifests import avro_container
from tablekeeper.core.paimon.manifests.records import (
    MANIFEST_LIST_VERSION,
    MANIFEST_VERSION,
    DataFileMeta,
    FileRef,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)

__all__ = ["Program", "compile_program", "decode", "decode_block", "usable", "lists_usable", "LIST_KINDS",
           "NativeBad", "NativeVersion"]

# op codes of _avro_native.c
_LONG, _BYTES, _STR, _FIXED, _UNION, _ARRAY, _MAP = range(7)
_PRIM_OPS: Final = {"int": _LONG, "long": _LONG, "bytes": _BYTES, "string": _STR}
_FIXED_SIZES: Final = {"boolean": 1, "float": 4, "double": 8}


class NativeBad(Exception):
    """A block the native program could not decode exactly (the fastavro reader decides)."""


class NativeVersion(Exception):
    def __init__(self, version: Any) -> None:
        super().__init__(version)
        self.version = version


class Program(NamedTuple):
    """A compiled writer schema: ops (four ints each), slot count, output template, the slot
    holding ``_VERSION`` and the version it must hold."""

    ops: tuple[int, ...]
    slots: int
    template: tuple[Any, ...]
    version_slot: int
    version: int


# Output templates by decoder kind, mirroring manifest_decoding's output expressions: (class or
# None, item, ...); an item is a variable ("ef": its value or None), "()ef" (its value, or ()
# when None) or a nested template.
_STATS_K: Final = (SimpleStats, "ks0", "ks1", "ks2")
_STATS_V: Final = (SimpleStats, "vs0", "vs1", "vs2")
_TEMPLATES: Final[dict[str, tuple[Any, ...]]] = {
    "entry": (ManifestEntry, "k", "p", "b", "tb", (
        DataFileMeta, "fn", "fsz", "rc", "mnk", "mxk", _STATS_K, _STATS_V, "mns", "mxs", "sid", "lv", "()ef", "ct",
        "drc", "ei", "fs", "vsc", "ep", "fri", "wc", "wcs")),
    "ref": (FileRef, "k", "p", "b", "lv", "fn", "()ef", "ep", "fs", "ei", "fsz"),
    "list": (ManifestFileMeta, "fn", "fsz", "na", "nd", (SimpleStats, "ps0", "ps1", "ps2"), "sid", "mnb", "mxb",
             "mnl", "mxl", "mnr", "mxr", "tb", "()ef"),
    "list-names": (None, "fn", "()ef"),
}
_VERSIONS: Final = {"entry": MANIFEST_VERSION, "ref": MANIFEST_VERSION, "list": MANIFEST_LIST_VERSION,
                    "list-names": MANIFEST_LIST_VERSION}


def _load() -> Any:
    try:
        return importlib.import_module("tablekeeper.core.paimon.manifests._avro_native")
    except ImportError:
        return None


_NATIVE: Final = _load()
#: None until :func:`usable` ran the self-test; tests set False to force the Python decoders.
_enabled: bool | None = None
#: The same for the manifest-list programs alone (:func:`lists_usable`).
_lists_enabled: bool | None = None
#: The decoder kinds of manifest lists.
LIST_KINDS: Final = frozenset({"list", "list-names"})


def _primitive(t: Any) -> str | None:
    if isinstance(t, str):
        return t
    if isinstance(t, dict) and isinstance(t.get("type"), str) and set(t) <= {"type"}:
        return str(t["type"])
    return None


def _value_ops(t: Any, slot: int) -> list[int] | None:
    """Ops reading (slot >= 0) or skipping (slot -1) one non-union value of type ``t``."""
    prim = _primitive(t)
    if prim in _PRIM_OPS:
        return [_PRIM_OPS[prim], slot, 0, 0]
    if prim in _FIXED_SIZES and slot < 0:
        return [_FIXED, -1, _FIXED_SIZES[prim], 0]
    if isinstance(t, dict) and (t.get("type") == "array" or (t.get("type") == "map" and slot < 0)):
        op, items = (_ARRAY, t.get("items")) if t.get("type") == "array" else (_MAP, t.get("values"))
        if _primitive(items) in _PRIM_OPS:
            return [op, slot, _PRIM_OPS[str(_primitive(items))], -1]
        if isinstance(items, list) and len(items) == 2 and "null" in items:
            other = _primitive(items[1 - items.index("null")])
            if other in _PRIM_OPS:
                return [op, slot, _PRIM_OPS[other], items.index("null")]
    return None


def _field_ops(t: Any, slot: int) -> list[int] | None:
    """Ops for one field: a value, ``null``, a [null, value] union, or (skipped only) a record."""
    if _primitive(t) == "null":
        return []
    if isinstance(t, list):
        if len(t) != 2 or "null" not in t:
            return None
        body = _value_ops(t[1 - t.index("null")], slot)
        return None if body is None else [_UNION, -1, t.index("null"), 0, *body]
    fields = record_fields(t)
    if fields is not None:
        if slot >= 0:
            return None
        out: list[int] = []
        for f in fields:
            ops = _field_ops(f.get("type"), -1)
            if ops is None:
                return None
            out += ops
        return out
    return _value_ops(t, slot)


def record_fields(t: Any) -> list[Mapping[str, Any]] | None:
    if isinstance(t, dict) and t.get("type") == "record" and isinstance(t.get("fields"), list):
        return cast(list[Mapping[str, Any]], t["fields"])
    return None


def compile_program(schema: Mapping[str, Any], spec: Mapping[str, Any], kind: str) -> Program | None:
    """The program of one (logical-type-free) writer schema for the fields of ``spec`` (a
    manifest_decoding spec: field name -> variable, or a nested record spec) and the output of
    ``kind``; None when the schema has a shape the program cannot express."""
    if _NATIVE is None:
        return None
    slots: dict[str, int] = {}

    def variables(s: Mapping[str, Any]) -> None:
        for target in s.values():
            if isinstance(target, str):
                slots.setdefault(target, len(slots))
            else:
                variables(target)

    variables(spec)
    ops: list[int] = []

    def walk(record: Any, want: Mapping[str, Any]) -> bool:
        fields = record_fields(record)
        if fields is None:
            return False
        for field in fields:
            target = want.get(str(field.get("name")))
            if target is not None and not isinstance(target, str):
                if not walk(field.get("type"), target):
                    return False
                continue
            field_ops = _field_ops(field.get("type"), -1 if target is None else slots[target])
            if field_ops is None:
                return False
            ops.extend(field_ops)
        return True

    if not walk(schema, spec) or all(ops[i] == _FIXED and ops[i + 2] == 0 for i in range(0, len(ops), 4)):
        return None  # (a program that reads no byte of a record is refused by the C module)

    def template(t: tuple[Any, ...]) -> tuple[Any, ...]:
        items: list[Any] = [t[0]]
        for item in t[1:]:
            if isinstance(item, tuple):
                items.append(template(item))
            elif item.startswith("()"):
                items.append(~slots[item[2:]])
            else:
                items.append(slots[item])
        return tuple(items)

    return Program(tuple(ops), len(slots), template(_TEMPLATES[kind]), slots["v"], _VERSIONS[kind])


def decode(program: Program, data: bytes) -> list[Any] | None:
    """Every record of the container ``data``; None when its framing or codec is unusual (the
    other decoders then read it).

    Raises:
        NativeBad: a block does not decode exactly.
        NativeVersion: a record's version is not the program's.
    """
    framed = avro_container.frame(data)
    if framed is None or framed.codec not in avro_container.CODECS:
        return None
    out: list[Any] = []
    view = memoryview(data)
    for b in framed.blocks:
        block = avro_container.decompress(framed.codec, view[b.payload:b.end - 16])
        if block is None:
            return None
        decode_block(program, block, b.records, out)
    return out


def decode_block(program: Program, block: bytes, count: int, out: list[Any], start: int = 0) -> None:
    """Append the ``count`` records of one decompressed block, from byte ``start`` on, to
    ``out``; the block must be consumed exactly.

    Raises:
        NativeBad: the block does not decode exactly.
        NativeVersion: a record's version is not the program's.
    """
    end = _NATIVE.decode(block, start, count, program.ops, program.slots, program.template, program.version_slot,
                         program.version, NativeBad, NativeVersion, out)
    if end != len(block):
        raise NativeBad("block not consumed exactly")


def usable() -> bool:
    """Whether the native module is built and agrees with fastavro's reader on the self-test
    files (run once per process)."""
    global _enabled
    if _enabled is None:
        _enabled = _NATIVE is not None and _self_test()
    return _enabled


def lists_usable() -> bool:
    """Whether the manifest-list programs are trusted: the whole self-test's verdict once it ran
    (or a test forced one), else the lists' part alone, on records encoded by
    :mod:`.avro_encode` and compared with the rows fastavro's reader would build
    (``manifest_decoding.list_row``): orphan cleanup decodes lists only and so never imports
    fastavro."""
    global _lists_enabled
    if _enabled is not None:
        return _enabled
    if _lists_enabled is None:
        _lists_enabled = _NATIVE is not None and _lists_self_test()
    return _lists_enabled


#: Records per block of the lists' self-test (several blocks, the last one partial).
_SELF_TEST_BLOCK: Final = 23


def _program(schema: dict[str, Any], kind: str) -> Program | None:
    """The program of decoder ``kind`` for a self-test writer schema."""
    from tablekeeper.core.paimon.manifests.avro_schema import strip_logical_types
    from tablekeeper.core.paimon.manifests.compiled import DECODER_KINDS

    return compile_program(strip_logical_types(schema), DECODER_KINDS[kind][0], kind)


def _lists_self_test() -> bool:
    from tablekeeper.core.paimon.manifests import records, self_test

    try:
        for schema, rows_written, kinds in self_test.self_test_files():
            list_kinds = [k for k in kinds if k in LIST_KINDS]
            if not list_kinds:
                continue
            blocks = self_test.encode_blocks(schema, rows_written, _SELF_TEST_BLOCK)
            expected = [records.list_row(r) for r in rows_written]
            for kind in list_kinds:
                program = _program(schema, kind)
                if program is None:
                    return False
                rows: list[Any] = []
                for block, count in blocks:
                    decode_block(program, block, count, rows)
                want = expected if kind == "list" else [(m.file_name, m.extra_files) for m in expected]
                if rows != want:
                    return False
        return True
    except Exception:
        return False


def _self_test() -> bool:
    from tablekeeper.core.paimon.manifests import fastavro_reader, self_test

    try:
        fastavro = avro_container.fastavro_module()
        for schema, records, kinds in self_test.self_test_files():
            buf = io.BytesIO()
            fastavro.writer(buf, fastavro.parse_schema(schema), records, codec="deflate", sync_interval=512)
            data = buf.getvalue()
            info = fastavro_reader.ReaderSchemas(schema)
            for kind in kinds:
                program = _program(schema, kind)
                if program is None or decode(program, data) != fastavro_reader.decode_by_reader(kind, data, info):
                    return False
        return True
    except Exception:
        return False
