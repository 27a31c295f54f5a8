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
from datetime import datetime, timedelta, timezone
from typing import Any

__all__ = ["encode", "encode_blocks", "self_test_files"]


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
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
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
