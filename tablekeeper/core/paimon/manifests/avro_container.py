"""Framing of Avro object container files without fastavro: header metadata, sync marker,
blocks (record count and payload), and block decompression.

Why: orphan planning reads every manifest of a table once, and fastavro's block reader costs
about as much per file as the work itself (a second header parse, a Python-level codec wrapper
per block). The framing here is strict: anything unusual (no magic, a bad sync marker, trailing
bytes, truncation, a codec it does not know) yields None and the caller hands the file to the
fastavro-based readers of :mod:`tablekeeper.core.paimon.manifests`, which stay the only judges
of damaged files."""

from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import zstandard

__all__ = ["Block", "Framed", "frame", "decompress", "read_long", "fastavro_module"]

MAGIC: Final = b"Obj\x01"

#: Codecs decompressed here; any other makes :func:`decompress` return None.
CODECS: Final = frozenset({"null", "deflate", "zstandard"})


def read_long(data: bytes, pos: int) -> tuple[int, int]:
    """An Avro zig-zag varint at ``pos``: (value, next position). IndexError when truncated."""
    byte = data[pos]
    if not byte & 0x80:  # one byte: most counts and lengths of a header
        return (byte >> 1) ^ -(byte & 1), pos + 1
    shift = acc = 0
    while True:
        byte = data[pos]
        pos += 1
        acc |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (acc >> 1) ^ -(acc & 1), pos
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")


class Block(NamedTuple):
    """One data block: its record count and where it lies in the file (a tuple: files have
    thousands of blocks, and frozen dataclasses are slow to build)."""

    records: int
    #: offset of the block (its count varint)
    start: int
    #: offset of the (compressed) payload
    payload: int
    #: offset just past the block's sync marker
    end: int


@dataclass(frozen=True)
class Framed:
    """A container's header and blocks."""

    meta: dict[str, bytes]
    header_end: int
    blocks: tuple[Block, ...]

    @property
    def codec(self) -> str:
        return self.meta.get("avro.codec", b"null").decode("ascii", "replace") or "null"

    @property
    def schema_json(self) -> bytes | None:
        return self.meta.get("avro.schema")


def frame(data: bytes) -> Framed | None:
    """Split a container into header and blocks; None when anything is unusual."""
    try:
        if not data.startswith(MAGIC):
            return None
        pos = len(MAGIC)
        meta: dict[str, bytes] = {}
        while True:  # the metadata map: blocks of (count [, byte size]) then key/value pairs
            count, pos = read_long(data, pos)
            if count == 0:
                break
            if count < 0:
                _, pos = read_long(data, pos)
                count = -count
            for _ in range(count):
                length, pos = read_long(data, pos)
                if length < 0 or pos + length > len(data):
                    return None
                key = data[pos:pos + length].decode("utf-8")
                pos += length
                length, pos = read_long(data, pos)
                if length < 0 or pos + length > len(data):
                    return None
                meta[key] = data[pos:pos + length]
                pos += length
        sync = data[pos:pos + 16]
        pos += 16
        if len(sync) != 16 or pos > len(data):
            return None
        header_end = pos
        blocks: list[Block] = []
        while pos < len(data):
            start = pos
            count, pos = read_long(data, pos)
            size, pos = read_long(data, pos)
            if count < 0 or size < 0:
                return None
            payload = pos
            pos += size
            if data[pos:pos + 16] != sync:
                return None
            pos += 16
            blocks.append(Block(count, start, payload, pos))
        return Framed(meta, header_end, tuple(blocks))
    except (IndexError, UnicodeDecodeError):
        return None


_local = threading.local()


def _zstd() -> zstandard.ZstdDecompressor:
    """One decompression context per thread (contexts are not thread-safe; creating one per
    block costs more than the decompression of a small block)."""
    dctx: zstandard.ZstdDecompressor | None = getattr(_local, "zstd", None)
    if dctx is None:
        dctx = _local.zstd = zstandard.ZstdDecompressor()
    return dctx


def decompress(codec: str, payload: bytes | memoryview) -> bytes | None:
    """A block's records, decompressed; None for a codec not handled here or a payload that is
    not exactly one well-formed compressed unit (the fastavro readers then decide).

    zstd and deflate release the GIL while they run."""
    try:
        if codec == "null":
            return bytes(payload)
        if codec == "deflate":
            d = zlib.decompressobj(-15)
            out = d.decompress(payload)
            if not d.eof:
                return None
            # fastavro (so pypaimon) writes ``zlib.compress(...)[2:-1]``: the raw stream followed
            # by the first three bytes of zlib's big-endian Adler-32 trailer. Accept exactly that
            # (checked), as fastavro's and Java's readers, which ignore bytes after the stream.
            tail = d.unused_data
            if tail and (len(tail) > 4 or tail != zlib.adler32(out).to_bytes(4, "big")[:len(tail)]):
                return None
            return out
        if codec == "zstandard":
            z = _zstd().decompressobj()
            out = z.decompress(payload)
            return out if z.eof and not z.unused_data else None
    except (zlib.error, zstandard.ZstdError):
        return None
    return None


def fastavro_module() -> Any:
    """fastavro, imported on first use: the judge of unusual files and the primitives of the
    generated decoders, but a local orphan cleanup decodes its lists natively and never needs
    it (its import is ~40 ms of a CLI process; tests/cli/test_startup.py)."""
    import fastavro

    return fastavro
