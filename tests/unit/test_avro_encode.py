"""The native manifest-list programs' self-test without fastavro (issue 13, CLI start-up): its
records are encoded by core/paimon/manifests/self_test.py, byte for byte what fastavro writes; the test
catches a decoder that builds other rows; and the names-only reader of orphan cleanup returns,
natively, exactly what the generated Python decoder and fastavro's reader return on pypaimon-
and Java-written lists (also from a start offset)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import fastavro
import pytest

from tablekeeper.core.paimon import manifests
from tablekeeper.core.paimon.manifests import avro_container, records, self_test
from tablekeeper.core.paimon.manifests import decoding as md
from tablekeeper.core.paimon.manifests import native as mn
from tablekeeper.core.storage import FileIO
from tests.support import paimon as tp

if os.environ.get("CI") == "true":
    assert mn._NATIVE is not None, "the native decoder was not built (scripts/bootstrap: pip install -e .)"
native = pytest.mark.skipif(mn._NATIVE is None, reason="the native decoder is not built here (no C compiler)")


def _list_file() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return next((schema, records) for schema, records, kinds in self_test.self_test_files() if "list" in kinds)


def test_encoding_equals_fastavro_byte_for_byte() -> None:
    schema, records = _list_file()
    parsed = fastavro.parse_schema(schema)
    for record in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, record)
        assert self_test.encode(schema, record) == buf.getvalue(), record


def test_blocks_hold_every_record_in_order() -> None:
    schema, records = _list_file()
    blocks = self_test.encode_blocks(schema, records, 23)
    assert [n for _b, n in blocks] == [23, 23, 14]
    stream = io.BytesIO(b"".join(b for b, _n in blocks))
    decoded = [fastavro.schemaless_reader(stream, fastavro.parse_schema(schema)) for _ in records]
    assert decoded == records


def test_shapes_it_does_not_write_are_refused() -> None:
    with pytest.raises(ValueError, match="no encoding"):
        self_test.encode({"type": "record", "name": "r", "fields": [
            {"name": "m", "type": {"type": "map", "values": "string"}}]}, {"m": {}})
    with pytest.raises(ValueError, match="not \\[null, T\\]"):
        self_test.encode({"type": "record", "name": "r", "fields": [
            {"name": "u", "type": ["int", "string"]}]}, {"u": 1})


@native
def test_lists_self_test_passes_without_importing_fastavro() -> None:
    code = ("import sys\nfrom tablekeeper.core.paimon.manifests import native as mn\n"
            "assert mn.lists_usable() and mn._enabled is None\n"
            "assert 'fastavro' not in sys.modules, sorted(m for m in sys.modules if 'avro' in m)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


@native
def test_lists_self_test_catches_other_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    assert mn._lists_self_test()
    row = records.list_row
    monkeypatch.setattr(records, "list_row", lambda r: row(r)._replace(schema_id=row(r).schema_id + 1))
    assert not mn._lists_self_test()


@native
def test_lists_verdict_follows_the_whole_test_or_a_forced_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mn, "_lists_enabled", None)
    monkeypatch.setattr(mn, "_enabled", False)
    assert mn.lists_usable() is False and mn._lists_enabled is None
    monkeypatch.setattr(mn, "_enabled", None)
    assert mn.lists_usable() is True and mn._lists_enabled is True


def _blocks(path: str) -> tuple[bytes, list[tuple[bytes, int]]]:
    with open(path, "rb") as f:
        data = f.read()
    framed = avro_container.frame(data)
    assert framed is not None and framed.schema_json is not None
    view = memoryview(data)
    out = []
    for b in framed.blocks:
        block = avro_container.decompress(framed.codec, view[b.payload:b.end - 16])
        assert block is not None
        out.append((block, b.records))
    return framed.schema_json, out


def _list_paths(tmp_path: Path) -> list[str]:
    tp.build_history(str(tmp_path / "py"), commits=6)
    warehouse = tp.extract_java_fixture(tmp_path / "java")
    dirs = [tmp_path / "py" / "db.db" / "orders" / "manifest",
            warehouse / "default.db" / tp.JAVA_TABLES[0] / "manifest"]
    return [str(d / n) for d in dirs for n in sorted(os.listdir(d)) if n.startswith("manifest-list-")]


@native
def test_names_only_reader_is_native_and_equals_the_other_decoders(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _list_paths(tmp_path)
    assert len(paths) > 4
    calls: list[int] = []
    decode_block = mn.decode_block
    monkeypatch.setattr(mn, "decode_block", lambda *a, **k: calls.append(1) or decode_block(*a, **k))
    monkeypatch.setattr(mn, "_enabled", None)
    monkeypatch.setattr(mn, "_lists_enabled", None)
    assert mn.lists_usable()  # (its own blocks are not counted below)
    calls.clear()

    def names(path: str, prefix: bytes = b"") -> list[Any]:
        schema, blocks = _blocks(path)
        return [manifests.read_list_block_names(schema, prefix + block, count, path, start=len(prefix))
                for block, count in blocks]

    fast = {p: names(p) for p in paths}
    assert len(calls) == sum(len(v) for v in fast.values())
    assert {p: names(p, b"\x00junk") for p in paths} == fast  # from a start offset
    monkeypatch.setattr(mn, "_enabled", False)  # the generated Python decoders
    calls.clear()
    assert {p: names(p) for p in paths} == fast
    assert {p: names(p, b"\x00junk") for p in paths} == fast
    assert not calls
    monkeypatch.setattr(md, "_fast_enabled", False)  # fastavro's reader
    for path in paths:
        reader = [(m.file_name, m.extra_files) for m in manifests.read_manifest_list(FileIO.for_uri("/tmp"), path)]
        assert [row for block in fast[path] for row in (block or [])] == reader
