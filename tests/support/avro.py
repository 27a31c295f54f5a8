"""Avro container surgery for tests of damaged files: a container's embedded writer schema
replaced (blocks kept byte for byte), a file re-encoded with codec ``null`` (so that byte-level
damage lands in records, not in a compressed stream), and Avro's zig-zag varints."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from typing import Any

import fastavro

from tablekeeper.core.paimon.manifests import avro_container

__all__ = ["avro_long", "with_schema_json", "with_schema", "schema_of", "uncompressed", "records_of", "rewritten"]


def avro_long(value: int) -> bytes:
    """Avro's zig-zag varint of a signed 64-bit ``value``."""
    n = ((value << 1) ^ (value >> 63)) & 0xFFFF_FFFF_FFFF_FFFF
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def schema_of(data: bytes) -> Any:
    """The embedded writer schema of a container, parsed."""
    framed = avro_container.frame(data)
    assert framed is not None and framed.schema_json is not None
    return json.loads(framed.schema_json)


def with_schema_json(data: bytes, schema_json: bytes) -> bytes:
    """``data`` with its ``avro.schema`` metadata replaced by ``schema_json`` (any bytes: the
    point is damage); the other metadata, the sync marker and every block are kept."""
    framed = avro_container.frame(data)
    assert framed is not None, "not a well-framed container"
    meta = {**framed.meta, "avro.schema": schema_json}
    header = bytearray(avro_container.MAGIC)
    header += avro_long(len(meta))
    for key, value in meta.items():
        raw = key.encode("utf-8")
        header += avro_long(len(raw)) + raw + avro_long(len(value)) + value
    header += avro_long(0)
    sync = data[framed.header_end - 16:framed.header_end]
    return bytes(header) + sync + data[framed.header_end:]


def with_schema(data: bytes, schema: Any) -> bytes:
    return with_schema_json(data, json.dumps(schema).encode("utf-8"))


def records_of(data: bytes) -> tuple[Any, list[Any], str]:
    """(writer schema, records, codec) of a container, decoded by fastavro."""
    reader = fastavro.reader(io.BytesIO(data))
    return reader.writer_schema, list(reader), reader.codec


def uncompressed(data: bytes, *, sync_interval: int = 16000) -> bytes:
    """The same records under the same writer schema, written with codec ``null``."""
    schema, records, _codec = records_of(data)
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec="null", sync_interval=sync_interval)
    return out.getvalue()


def rewritten(data: bytes, edit_schema: Callable[[Any], None], edit_record: Callable[[Any], None]) -> bytes:
    """The records of ``data`` written again (same codec) under an edited, valid schema, each
    record edited to fit it."""
    schema, records, codec = records_of(data)
    schema = copy.deepcopy(schema)
    edit_schema(schema)
    for r in records:
        edit_record(r)
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec)
    return out.getvalue()
