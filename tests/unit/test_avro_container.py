"""The Avro container framing of :mod:`tablekeeper.core.paimon.manifests.avro_container` against fastavro,
the manifest payload reader built on it (and its fastavro fallback), and the names-only manifest
list reader of :class:`Reachability` (including its appended-rows decoding) against the full
manifest-list reader."""

from __future__ import annotations

import functools
import io
import json
import os
import uuid
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest
import zstandard

from tablekeeper.core import errors
from tablekeeper.core.paimon import manifests
from tablekeeper.core.paimon.manifests import avro_container as ac
from tablekeeper.core.paimon.table import Table, open_table
from tablekeeper.core.reclaim.reach.reachability import Reachability
from tablekeeper.core.storage import FileIO, join
from tests.support import paimon as tp

IDENT = "db.orders"
CODECS = ("null", "deflate", "zstandard")

SCHEMA: dict[str, Any] = {
    "type": "record", "name": "t.row", "fields": [
        {"name": "name", "type": "string"},
        {"name": "n", "type": "long"},
        {"name": "blob", "type": "bytes"},
        {"name": "extra", "type": ["null", {"type": "array", "items": "string"}]},
    ],
}


def sample_rows(n: int) -> list[dict[str, Any]]:
    return [{"name": f"data-{i}-é" * (1 + i % 3), "n": (i * 7919) * (-1) ** i, "blob": bytes([i % 256]) * (i % 50),
             "extra": [f"x-{i}"] * (i % 3) if i % 4 else None} for i in range(n)]


def container(records: list[dict[str, Any]], *, codec: str = "null", sync_interval: int = 64,
              schema: dict[str, Any] = SCHEMA) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec, sync_interval=sync_interval)
    return buf.getvalue()


def avro_long(value: int) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, {"type": "long"}, value)
    return buf.getvalue()


def fastavro_blocks(data: bytes) -> list[tuple[int, bytes]]:
    """(record count, decompressed bytes) of every block, as fastavro frames and decompresses."""
    return [(b.num_records, getattr(b, "bytes_").getvalue())  # noqa: B009 - untyped fastavro attribute
            for b in fastavro.block_reader(io.BytesIO(data))]


def framed(data: bytes) -> ac.Framed:
    f = ac.frame(data)
    assert f is not None
    return f


def payload(data: bytes, block: ac.Block) -> bytes:
    return data[block.payload:block.end - 16]


# -- framing and decompression against fastavro -------------------------------------------------
@pytest.mark.parametrize("codec", CODECS)
def test_frame_and_decompress_match_fastavro(codec: str) -> None:
    records = sample_rows(300)
    data = container(records, codec=codec)
    f = framed(data)
    expected = fastavro_blocks(data)

    assert len(expected) > 20  # the small sync interval makes many blocks
    assert f.codec == codec
    assert f.meta["avro.codec"] == codec.encode()
    assert f.schema_json is not None and json.loads(f.schema_json) == fastavro.block_reader(io.BytesIO(data)).writer_schema
    assert [b.records for b in f.blocks] == [n for n, _ in expected]
    assert sum(b.records for b in f.blocks) == len(records)
    # the blocks tile the file: header, then block after block, each ending with the sync marker
    sync = data[f.header_end - 16:f.header_end]
    assert f.blocks[0].start == f.header_end
    for prev, block in zip(f.blocks, f.blocks[1:], strict=False):
        assert block.start == prev.end
    assert f.blocks[-1].end == len(data)
    for block in f.blocks:
        assert data[block.end - 16:block.end] == sync
        count, pos = ac.read_long(data, block.start)
        size, pos = ac.read_long(data, pos)
        assert (count, pos, pos + size + 16) == (block.records, block.payload, block.end)
    assert [ac.decompress(codec, payload(data, b)) for b in f.blocks] == [raw for _, raw in expected]
    # memoryview payloads (what the manifest readers pass) decompress the same
    view = memoryview(data)
    assert [ac.decompress(codec, view[b.payload:b.end - 16]) for b in f.blocks] == [raw for _, raw in expected]


@pytest.mark.parametrize("codec", CODECS)
def test_frame_of_an_empty_container_has_no_blocks(codec: str) -> None:
    data = container([], codec=codec)
    f = framed(data)
    assert f.blocks == () and f.header_end == len(data) and f.codec == codec


def test_frame_reads_a_metadata_map_written_in_sized_blocks() -> None:
    # the Avro spec lets a writer split a map into blocks with a negative count followed by the
    # block's byte size; fastavro reads such headers, so must frame()
    data = container(sample_rows(40), codec="deflate")
    f = framed(data)
    pairs = [avro_long(len(k)) + k + avro_long(len(v)) + v
             for k, v in ((k.encode(), v) for k, v in f.meta.items())]
    first = b"".join(pairs[:1])
    rest = b"".join(pairs[1:])
    meta = (avro_long(-1) + avro_long(len(first)) + first
            + avro_long(-(len(pairs) - 1)) + avro_long(len(rest)) + rest + avro_long(0))
    sync = data[f.header_end - 16:f.header_end]
    rewritten = ac.MAGIC + meta + sync + data[f.header_end:]

    g = framed(rewritten)
    assert g.meta == f.meta
    assert [b.records for b in g.blocks] == [b.records for b in f.blocks]
    assert [ac.decompress("deflate", payload(rewritten, b)) for b in g.blocks] == \
        [raw for _, raw in fastavro_blocks(rewritten)] == [raw for _, raw in fastavro_blocks(data)]


def test_a_missing_codec_entry_means_null() -> None:
    data = container(sample_rows(5))
    f = framed(data)
    assert ac.Framed({k: v for k, v in f.meta.items() if k != "avro.codec"}, f.header_end, f.blocks).codec == "null"
    assert ac.Framed({**f.meta, "avro.codec": b""}, f.header_end, f.blocks).codec == "null"


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, -65, 8191, 2**31 - 1, -(2**31), 2**62, 2**63 - 1, -(2**63)])
def test_read_long_decodes_avro_varints(value: int) -> None:
    encoded = avro_long(value)
    assert ac.read_long(b"\xff" + encoded + b"\x01", 1) == (value, 1 + len(encoded))
    for cut in range(len(encoded)):
        with pytest.raises(IndexError):
            ac.read_long(encoded[:cut], 0)


def test_read_long_rejects_overlong_varints() -> None:
    with pytest.raises(IndexError):
        ac.read_long(b"\x80" * 10 + b"\x01", 0)


# -- strictness: anything unusual is None -------------------------------------------------------
@pytest.mark.parametrize("data", [b"", b"O", b"Obj", b"Obj\x00" + b"\x00" * 17, b"PAR1\x00\x00", b"obj\x01\x00" + b"\x00" * 16])
def test_frame_without_magic_is_none(data: bytes) -> None:
    assert ac.frame(data) is None


@pytest.mark.parametrize("codec", CODECS)
def test_every_truncation_is_none_except_at_block_boundaries(codec: str) -> None:
    data = container(sample_rows(12), codec=codec, sync_interval=128)
    full = framed(data)
    assert len(full.blocks) >= 3
    boundaries = {full.header_end: 0} | {b.end: i + 1 for i, b in enumerate(full.blocks)}
    for n in range(len(data)):
        got = ac.frame(data[:n])
        if n in boundaries:
            # a cut right after a sync marker is a well-formed shorter container
            assert got is not None and got.blocks == full.blocks[:boundaries[n]], n
        else:
            assert got is None, n


@pytest.mark.parametrize("codec", CODECS)
def test_a_corrupted_sync_marker_is_none(codec: str) -> None:
    data = container(sample_rows(12), codec=codec, sync_interval=128)
    f = framed(data)
    for block in f.blocks:
        for at in (block.end - 16, block.end - 1):
            broken = bytearray(data)
            broken[at] ^= 0x01
            assert ac.frame(bytes(broken)) is None
    broken = bytearray(data)
    broken[f.header_end - 8] ^= 0x80  # the header's marker: no block matches it any more
    assert ac.frame(bytes(broken)) is None


@pytest.mark.parametrize("garbage", [b"\x00", b"\x00\x00", b"\x02", b"\x02\x02x", b"junk at the end", b"\x00" * 16,
                                     b"\x01\x00" + b"\x00" * 16, b"\x00\x01" + b"\x00" * 16])
def test_trailing_garbage_is_none(garbage: bytes) -> None:
    data = container(sample_rows(12), codec="zstandard", sync_interval=128)
    assert ac.frame(data + garbage) is None


def test_a_block_with_a_bad_length_is_none() -> None:
    data = container(sample_rows(12), codec="null", sync_interval=128)
    f = framed(data)
    block = f.blocks[1]
    body = payload(data, block)
    sync = data[block.end - 16:block.end]
    for count, size in ((block.records, len(body) + 1), (block.records, len(body) - 1), (block.records, -len(body)),
                        (-block.records, len(body))):
        forged = data[:block.start] + avro_long(count) + avro_long(size) + body + sync + data[block.end:]
        assert ac.frame(forged) is None, (count, size)


def test_a_zero_record_block_is_framed() -> None:
    data = container(sample_rows(12), codec="null", sync_interval=128)
    f = framed(data)
    extended = data + avro_long(0) + avro_long(0) + data[f.header_end - 16:f.header_end]
    g = framed(extended)
    assert g.blocks[:-1] == f.blocks and g.blocks[-1].records == 0
    assert fastavro_blocks(extended)[-1] == (0, b"")


def test_a_damaged_header_is_none() -> None:
    data = container(sample_rows(3))
    f = framed(data)
    key_at = data.index(b"avro.schema")
    assert ac.frame(data[:key_at] + b"\xff" + data[key_at + 1:]) is None  # key not UTF-8
    # a metadata value longer than the file
    length_at = key_at + len(b"avro.schema")
    value_length, _ = ac.read_long(data, length_at)
    assert value_length == len(f.meta["avro.schema"])
    assert ac.frame(data[:length_at] + avro_long(10**9) + data[length_at + len(avro_long(value_length)):]) is None
    assert ac.frame(data[:length_at] + avro_long(-2) + data[length_at + len(avro_long(value_length)):]) is None


def test_decompress_refuses_codecs_it_does_not_handle() -> None:
    data = container(sample_rows(30), codec="snappy")
    f = framed(data)
    assert f.codec == "snappy" and len(f.blocks) > 1
    for block in f.blocks:
        assert ac.decompress("snappy", payload(data, block)) is None
    assert ac.decompress("bzip2", b"BZh9") is None
    assert ac.decompress("", b"") is None
    assert ac.decompress("ZSTANDARD", zstandard.ZstdCompressor().compress(b"x")) is None


def test_decompress_zstandard_wants_exactly_one_frame() -> None:
    raw = b"".join(raw for _, raw in fastavro_blocks(container(sample_rows(40), sync_interval=10**9)))
    frame = zstandard.ZstdCompressor().compress(raw)
    assert ac.decompress("zstandard", frame) == raw
    assert ac.decompress("zstandard", frame + b"\x00") is None
    assert ac.decompress("zstandard", frame + frame) is None
    for cut in range(len(frame)):
        assert ac.decompress("zstandard", frame[:cut]) is None, cut
    assert ac.decompress("zstandard", b"garbage" * 10) is None
    # a frame without its content size in the header (streamed) is still one frame
    streamed = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    unsized = streamed.compress(raw) + streamed.flush()
    assert ac.decompress("zstandard", unsized) == raw


def test_decompress_deflate_raw_streams_and_fastavro_trailers() -> None:
    raw = b"".join(raw for _, raw in fastavro_blocks(container(sample_rows(40), sync_interval=10**9)))
    deflater = zlib.compressobj(wbits=-15)
    java_style = deflater.compress(raw) + deflater.flush()  # Java's Avro: raw deflate, nothing after
    assert ac.decompress("deflate", java_style) == raw
    for cut in range(len(java_style)):
        assert ac.decompress("deflate", java_style[:cut]) is None, cut

    # fastavro writes zlib.compress(raw)[2:-1]: raw deflate + 3 of the 4 Adler-32 bytes
    fastavro_style = zlib.compress(raw)[2:-1]
    assert fastavro_style[:len(java_style)] == java_style and len(fastavro_style) == len(java_style) + 3
    assert ac.decompress("deflate", fastavro_style) == raw
    assert ac.decompress("deflate", zlib.compress(raw)[2:]) == raw  # the whole checksum
    for extra in range(4):  # cut into the checksum: the stream itself is complete
        assert ac.decompress("deflate", java_style + fastavro_style[len(java_style):][:extra]) == raw
    checksum = zlib.adler32(raw).to_bytes(4, "big")
    wrong = bytes([checksum[0] ^ 0xFF]) + checksum[1:]
    assert ac.decompress("deflate", java_style + wrong[:3]) is None
    assert ac.decompress("deflate", java_style + checksum + b"\x00") is None
    assert ac.decompress("deflate", java_style + b"garbage") is None
    assert ac.decompress("deflate", java_style + java_style) is None

    assert ac.decompress("deflate", b"\xff" * 20) is None
    assert ac.decompress("deflate", b"") is None
    assert ac.decompress("null", memoryview(b"abc")) == b"abc"
    assert ac.decompress("null", b"") == b""


# -- tables -------------------------------------------------------------------------------------
def build_table(warehouse: Path, commits: int, *, options: dict[str, str] | None = None) -> Table:
    t = tp.append_table(str(warehouse), IDENT, options=options)
    for i in range(commits):
        tp.write(t, tp.rows(f"2026-01-0{1 + i % 3}", i * 2, 2))
    return open_table(str(warehouse), IDENT)


@pytest.fixture(scope="module")
def long_table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    """An append table with 160 commits (zstd manifests): its base lists grow past one block, so
    later lists share their first block and extend the last."""
    return build_table(tmp_path_factory.mktemp("long"), 160)


@pytest.fixture(scope="module")
def deflate_table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    return build_table(tmp_path_factory.mktemp("deflate"), 45, options={"manifest.compression": "deflate"})


@pytest.fixture(scope="module")
def null_codec_table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    return build_table(tmp_path_factory.mktemp("nullcodec"), 45, options={"manifest.compression": "null"})


@pytest.fixture(scope="module")
def java_tables(tmp_path_factory: pytest.TempPathFactory) -> list[Table]:
    warehouse = tp.extract_java_fixture(tmp_path_factory.mktemp("java"))
    return [open_table(str(warehouse), f"default.{name}") for name in tp.JAVA_TABLES]


def manifest_files(table: Table, prefix: str) -> list[str]:
    """Names in the table's manifest dir with ``prefix`` (``manifest-`` excludes lists)."""
    names = os.listdir(table.shared_dir("manifest"))
    return sorted(n for n in names if n.startswith(prefix) and not (prefix == "manifest-" and n.startswith("manifest-list-")))


def lists_in_snapshot_order(table: Table) -> list[str]:
    return list(dict.fromkeys(n for s in sorted(table.snapshots(), key=lambda s: s.id) for n in s.manifest_lists))


# -- read_manifest_payload ------------------------------------------------------------------------
def test_manifest_payload_of_pypaimon_manifests(long_table: Table, deflate_table: Table,
                                                null_codec_table: Table, java_tables: list[Table],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    cases: list[tuple[FileIO, str, list[bytes]]] = []
    for table in (long_table, deflate_table, null_codec_table, *java_tables):
        names = manifest_files(table, "manifest-")
        assert names
        for name in names:
            path = join(table.shared_dir("manifest"), name)
            data = table.file_io.read_bytes(path)
            cases.append((table.file_io, path, [raw for _, raw in fastavro_blocks(data)]))
    codecs = {framed(io_.read_bytes(path)).codec for io_, path, _ in cases}
    assert codecs == {"zstandard", "deflate", "null"}

    def refuse(*_args: Any, **_kwargs: Any) -> Iterator[Any]:
        raise AssertionError("fastavro.block_reader used")

    monkeypatch.setattr(fastavro, "block_reader", refuse)  # every one of them takes the fast path
    for file_io, path, expected in cases:
        assert manifests.read_manifest_payload(file_io, path) == expected, path


def test_manifest_payload_of_a_snappy_copy_falls_back_to_fastavro(long_table: Table, tmp_path: Path) -> None:
    file_io = long_table.file_io
    for name in manifest_files(long_table, "manifest-")[:5]:
        path = join(long_table.shared_dir("manifest"), name)
        data = file_io.read_bytes(path)
        reader = fastavro.reader(io.BytesIO(data))
        schema = reader.writer_schema
        records = list(reader)
        assert records
        buf = io.BytesIO()
        fastavro.writer(buf, schema, records, codec="snappy", sync_interval=256)
        copy = tmp_path / f"{name}.snappy"
        copy.write_bytes(buf.getvalue())
        assert framed(buf.getvalue()).codec == "snappy"
        assert len(framed(buf.getvalue()).blocks) > 0

        calls: list[int] = []
        real = fastavro.block_reader

        def spy(fo: Any, *args: Any, _real: Callable[..., Any] = real, _calls: list[int] = calls, **kw: Any) -> Any:
            _calls.append(1)
            return _real(fo, *args, **kw)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(fastavro, "block_reader", spy)
            got = manifests.read_manifest_payload(file_io, str(copy))
        assert calls  # the fallback served it
        assert got is not None
        assert got == [raw for _, raw in fastavro_blocks(buf.getvalue())]
        assert b"".join(got) == b"".join(manifests.read_manifest_payload(file_io, path) or [])


def test_manifest_payload_of_a_damaged_manifest_is_a_format_error(long_table: Table, tmp_path: Path) -> None:
    name = manifest_files(long_table, "manifest-")[0]
    data = long_table.file_io.read_bytes(join(long_table.shared_dir("manifest"), name))
    f = framed(data)
    damaged = {
        "truncated": data[:-5],
        "bad-sync": data[:-1] + bytes([data[-1] ^ 1]),
        "bad-payload": data[:f.blocks[0].payload] + b"\x00" * (f.blocks[0].end - 16 - f.blocks[0].payload)
        + data[f.blocks[0].end - 16:],
        "no-magic": b"XXXX" + data[4:],
    }
    for label, content in damaged.items():
        path = tmp_path / label
        path.write_bytes(content)
        with pytest.raises(errors.FormatError):
            manifests.read_manifest_payload(long_table.file_io, str(path))
    with pytest.raises(FileNotFoundError):
        manifests.read_manifest_payload(long_table.file_io, str(tmp_path / "missing"))


# -- manifest_list_names against manifest_list_blocks --------------------------------------------
Names = list[tuple[tuple[str, tuple[str, ...]], ...]]


def names_of_blocks(reach: Reachability, name: str) -> Names:
    return [tuple((m.file_name, m.extra_files) for m in metas) for _, metas in reach.manifest_list_blocks(name)]


def names_only(reach: Reachability, name: str) -> Names:
    return [names for _, names in reach.manifest_list_names(name)]


class Spy:
    """Counts the tail decodes (``start > 0``) of read_list_block_names."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tails = 0
        self.calls = 0
        real = manifests.read_list_block_names

        def spy(schema_json: bytes, data: bytes, count: int, path: str, start: int = 0) -> Any:
            self.calls += 1
            self.tails += start > 0
            return real(schema_json, data, count, path, start)

        monkeypatch.setattr(manifests, "read_list_block_names", spy)


def no_fallback(reach: Reachability) -> None:
    def refuse(name: str) -> Any:
        raise AssertionError(f"fell back to manifest_list_blocks for {name}")

    reach.manifest_list_blocks = refuse  # type: ignore[method-assign]


def assert_parity(table: Table, monkeypatch: pytest.MonkeyPatch) -> Spy:
    lists = lists_in_snapshot_order(table)
    assert set(lists) == set(manifest_files(table, "manifest-list-"))
    expected = {name: names_of_blocks(Reachability(table), name) for name in lists}
    spy = Spy(monkeypatch)
    for name in lists:  # fresh caches on both sides
        fresh = Reachability(table)
        no_fallback(fresh)
        assert names_only(fresh, name) == expected[name], name
    spy.tails = 0
    for order in (lists, lists[::-1]):  # one reader for all: shared blocks, appended rows
        shared = Reachability(table)
        no_fallback(shared)
        for name in order:
            assert names_only(shared, name) == expected[name], name
        # a second read of every list (all blocks cached) gives the same
        for name in order:
            assert names_only(shared, name) == expected[name], name
    return spy


def test_list_names_parity_on_a_long_pypaimon_history(long_table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    lists = lists_in_snapshot_order(long_table)
    blocks = {name: framed(long_table.file_io.read_bytes(join(long_table.shared_dir("manifest"), name))).blocks
              for name in lists}
    assert len(lists) >= 300 and max(len(b) for b in blocks.values()) >= 2  # multi-block base lists
    spy = assert_parity(long_table, monkeypatch)
    # in snapshot order most base lists only extend the previous one's last block
    assert spy.tails >= 100
    # block ids: equal ids mean equal names, and the shared first blocks get one id
    reach = Reachability(long_table)
    seen: dict[int, tuple[tuple[str, tuple[str, ...]], ...]] = {}
    for name in lists:
        for block_id, names in reach.manifest_list_names(name):
            assert seen.setdefault(block_id, names) == names
    assert len(seen) < sum(len(b) for b in blocks.values())


@pytest.mark.parametrize("fixture", ["deflate_table", "null_codec_table"])
def test_list_names_parity_on_other_codecs(fixture: str, request: pytest.FixtureRequest,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    table: Table = request.getfixturevalue(fixture)
    spy = assert_parity(table, monkeypatch)
    assert spy.tails >= 30


def test_list_names_parity_on_the_java_fixture(java_tables: list[Table], monkeypatch: pytest.MonkeyPatch) -> None:
    for table in java_tables:
        assert_parity(table, monkeypatch)


# -- adversarial blocks -----------------------------------------------------------------------------
def list_rows(n: int, tag: str = "r") -> list[dict[str, Any]]:
    return [{
        "_VERSION": 2, "_FILE_NAME": f"manifest-{uuid.uuid4()}-{tag}{i}", "_FILE_SIZE": 1000 + i,
        "_NUM_ADDED_FILES": i, "_NUM_DELETED_FILES": i % 2,
        "_PARTITION_STATS": {"_MIN_VALUES": bytes([i % 256]) * (i % 9), "_MAX_VALUES": b"\x00\x01" * (i % 4),
                             "_NULL_COUNTS": [0, None][: i % 3] if i % 5 else None},
        "_SCHEMA_ID": 0, "_MIN_BUCKET": 0, "_MAX_BUCKET": i % 4, "_MIN_LEVEL": None, "_MAX_LEVEL": None,
        "_MIN_ROW_ID": None, "_MAX_ROW_ID": None, "_TOTAL_BUCKETS": None,
        "_EXTRA_FILES": [f"manifest-{tag}{i}.idx"] * (i % 3) if i % 4 else ([] if i % 8 else None),
    } for i in range(n)]


class ListWriter:
    """Writes manifest lists with a real pypaimon list's schema and codec into a table's manifest
    dir, with blocks made of any rows and any record count."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.dir = table.shared_dir("manifest")
        sample = lists_in_snapshot_order(table)[0]
        data = table.file_io.read_bytes(join(self.dir, sample))
        f = framed(data)
        assert f.schema_json is not None and f.codec == "zstandard"
        self.schema_dict: dict[str, Any] = json.loads(f.schema_json)
        self.schema = fastavro.parse_schema(self.schema_dict)
        self.header = data[:f.header_end]
        self.sync = data[f.header_end - 16:f.header_end]

    def raw(self, rows: list[dict[str, Any]]) -> bytes:
        buf = io.BytesIO()
        for row in rows:
            fastavro.schemaless_writer(buf, self.schema, row)
        return buf.getvalue()

    def write(self, blocks: list[tuple[int, bytes]]) -> str:
        """A list whose blocks hold (record count, decompressed bytes) as given."""
        body = b""
        for count, raw in blocks:
            compressed = zstandard.ZstdCompressor().compress(raw)
            body += avro_long(count) + avro_long(len(compressed)) + compressed + self.sync
        name = f"manifest-list-{uuid.uuid4()}-0"
        Path(self.dir, name).write_bytes(self.header + body)
        return name


@pytest.fixture
def small_table(tmp_path: Path) -> Table:
    return build_table(tmp_path / "wh", 1)


def outcome(fn: Callable[[], Names]) -> Names | type[BaseException]:
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return type(e)


def test_appended_rows_are_decoded_exactly(small_table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    w = ListWriter(small_table)
    rows = list_rows(9)
    other = list_rows(9, "o")
    bad_version = [{**list_rows(1, "v")[0], "_VERSION": 3}]
    a = w.raw(rows[:5])
    assert len(a) > 64
    lists = {
        "A": w.write([(5, a)]),
        "B (A + 4 rows)": w.write([(9, w.raw(rows))]),
        "B2 (A + other rows)": w.write([(8, a + w.raw(other[:3]))]),
        "B3 (A in a later block)": w.write([(2, w.raw(other[:2])), (9, w.raw(rows))]),
        "B4 (A + 1 row)": w.write([(6, w.raw(rows[:6]))]),
        "A-prefix-then-differs": w.write([(7, w.raw(rows[:1] + other[1:7]))]),
        "C (A's bytes, fewer rows)": w.write([(3, a)]),
        "C2 (9 rows' bytes, count 6)": w.write([(6, w.raw(rows))]),
        "C3 (9 rows' bytes, count 12)": w.write([(12, w.raw(rows))]),
        "C4 (A's bytes + garbage)": w.write([(6, a + b"\x04garbage\xff\xff")]),
        "C5 (A's bytes + a row of version 3)": w.write([(6, a + w.raw(bad_version))]),
        "C6 (A's bytes + one row, count of A)": w.write([(5, w.raw(rows[:6]))]),
        "C7 (A's bytes, count 0)": w.write([(0, a)]),
        "A again": w.write([(5, a)]),
    }
    legit = {
        "A": [rows[:5]], "B (A + 4 rows)": [rows], "B2 (A + other rows)": [rows[:5] + other[:3]],
        "B3 (A in a later block)": [other[:2], rows], "B4 (A + 1 row)": [rows[:6]],
        "A-prefix-then-differs": [rows[:1] + other[1:7]], "A again": [rows[:5]],
    }

    def as_names(block_rows: list[list[dict[str, Any]]]) -> Names:
        return [tuple((r["_FILE_NAME"], tuple(r["_EXTRA_FILES"] or ())) for r in block) for block in block_rows]

    def judged(name: str) -> Names | type[BaseException]:
        """What the full reader makes of the list (the judge of odd files), block by block."""
        def read() -> Names:
            return names_of_blocks(Reachability(small_table), name)

        whole = outcome(lambda: [tuple((m.file_name, m.extra_files) for m in manifests.read_manifest_list(
            small_table.file_io, join(w.dir, name)))])
        by_blocks = outcome(read)
        if isinstance(whole, list) and isinstance(by_blocks, list):
            assert [n for block in by_blocks for n in block] == list(whole[0])
        else:
            assert whole == by_blocks
        return by_blocks

    expected = {label: judged(name) for label, name in lists.items()}
    for label, block_rows in legit.items():
        assert expected[label] == as_names(block_rows), label
    # the odd ones are what fastavro.reader makes of them
    assert expected["C (A's bytes, fewer rows)"] == as_names([rows[:3]])
    assert expected["C2 (9 rows' bytes, count 6)"] == as_names([rows[:6]])
    assert expected["C3 (9 rows' bytes, count 12)"] is errors.FormatError
    assert expected["C5 (A's bytes + a row of version 3)"] is errors.FormatError
    assert expected["C6 (A's bytes + one row, count of A)"] == as_names([rows[:5]])
    assert expected["C7 (A's bytes, count 0)"] == [()]

    spy = Spy(monkeypatch)
    # one reader in this order (A decoded first: the others start with its bytes), then in the
    # reverse order, and each list alone
    for order in (list(lists), list(lists)[::-1]):
        reach = Reachability(small_table)
        for label in order:
            assert outcome(functools.partial(names_only, reach, lists[label])) == expected[label], label
    for label, name in lists.items():
        assert outcome(functools.partial(names_only, Reachability(small_table), name)) == expected[label], label
    assert spy.tails >= 4  # B, B2, B3, B4 (and the odd ones that try it)


def test_a_block_extending_a_block_of_another_schema_is_decoded_whole(small_table: Table) -> None:
    """Same rows, different header (codec): the earlier block must not serve as a prefix."""
    w = ListWriter(small_table)
    rows = list_rows(9)
    a = w.write([(5, w.raw(rows[:5]))])
    name = f"manifest-list-{uuid.uuid4()}-0"
    data = container(rows, codec="deflate", sync_interval=10**9, schema=w.schema_dict)
    assert framed(data).codec == "deflate" and len(framed(data).blocks) == 1
    Path(w.dir, name).write_bytes(data)
    reach = Reachability(small_table)
    assert names_only(reach, a) == names_of_blocks(Reachability(small_table), a)
    assert names_only(reach, name) == names_of_blocks(Reachability(small_table), name) == \
        [tuple((r["_FILE_NAME"], tuple(r["_EXTRA_FILES"] or ())) for r in rows)]


def test_a_prefix_decoded_under_another_header_is_not_reused(small_table: Table) -> None:
    """A block whose bytes start with a decoded block of *another* header must be judged under its
    own schema: here ``_FILE_NAME`` is ``bytes`` (same encoding as a string), a type no manifest
    list has, so the file is refused, though its first rows are A's bytes."""
    w = ListWriter(small_table)
    rows = list_rows(7)
    a_raw = w.raw(rows[:5])
    a = w.write([(5, a_raw)])
    schema2 = {**w.schema_dict, "fields": [{**f, "type": "bytes"} if f["name"] == "_FILE_NAME" else f
                                           for f in w.schema_dict["fields"]]}
    header2 = container([], codec="zstandard", schema=schema2)
    f2 = framed(header2)
    assert header2[4:f2.header_end - 16] != w.header[4:len(w.header) - 16]
    raw = w.raw(rows)  # byte-identical under both schemas
    compressed = zstandard.ZstdCompressor().compress(raw)
    name = f"manifest-list-{uuid.uuid4()}-0"
    Path(w.dir, name).write_bytes(header2 + avro_long(len(rows)) + avro_long(len(compressed)) + compressed
                                  + header2[f2.header_end - 16:f2.header_end])

    expected = outcome(functools.partial(names_of_blocks, Reachability(small_table), name))
    assert expected is errors.FormatError
    reach = Reachability(small_table)
    assert names_only(reach, a) == names_of_blocks(Reachability(small_table), a)
    assert outcome(functools.partial(names_only, reach, name)) == expected
