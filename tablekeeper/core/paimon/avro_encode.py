"""A minimal Avro binary encoder (Avro spec, "Binary Encoding"): records of int, long, bytes,
string, arrays and ``[null, T]`` unions: what the manifest-list self-test file contains.

Why: the native manifest-list decoder is trusted only after a self-test on known records; with
the records encoded here instead of by fastavro's writer, orphan cleanup (which decodes lists
only) never imports fastavro (~40 ms of a CLI process). tests/unit/test_avro_encode.py checks
that these bytes equal fastavro's for every record of that file, so the test is as strong as
one written by fastavro. Not a general writer: maps, enums, fixed, named references and other
unions raise ``ValueError``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["encode", "encode_blocks"]


def _long(value: int, out: bytearray) -> None:
    n = (value << 1) ^ (value >> 63)  # zig-zag
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _datum(schema: Any, value: Any, out: bytearray) -> None:
    if isinstance(schema, dict) and set(schema) <= {"type", "logicalType"} and isinstance(schema.get("type"), str):
        schema = schema["type"]
    if schema in ("int", "long"):
        _long(int(value), out)
    elif schema == "bytes":
        _long(len(value), out)
        out += value
    elif schema == "string":
        raw = value.encode("utf-8")
        _long(len(raw), out)
        out += raw
    elif isinstance(schema, list):
        if len(schema) != 2 or "null" not in schema:
            raise ValueError(f"union {schema!r} is not [null, T]")
        index = schema.index("null") if value is None else 1 - schema.index("null")
        _long(index, out)
        if value is not None:
            _datum(schema[index], value, out)
    elif isinstance(schema, dict) and schema.get("type") == "record":
        for field in schema["fields"]:
            _datum(field["type"], value[field["name"]], out)
    elif isinstance(schema, dict) and schema.get("type") == "array":
        if value:
            _long(len(value), out)
            for item in value:
                _datum(schema["items"], item, out)
        _long(0, out)
    else:
        raise ValueError(f"no encoding for Avro schema {schema!r}")


def encode(schema: Mapping[str, Any], record: Mapping[str, Any]) -> bytes:
    """One record in Avro's binary encoding."""
    out = bytearray()
    _datum(dict(schema), record, out)
    return bytes(out)


def encode_blocks(schema: Mapping[str, Any], records: Iterable[Mapping[str, Any]],
                  per_block: int) -> list[tuple[bytes, int]]:
    """The records as uncompressed container blocks of ``per_block`` records: (bytes, count)."""
    blocks: list[tuple[bytes, int]] = []
    current, count = bytearray(), 0
    for record in records:
        current += encode(schema, record)
        count += 1
        if count == per_block:
            blocks.append((bytes(current), count))
            current, count = bytearray(), 0
    if count:
        blocks.append((bytes(current), count))
    return blocks
