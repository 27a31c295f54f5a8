"""tablekeeper.core.paimon.manifests.native: the native manifest decoder returns exactly what the
generated Python decoders and fastavro's reader return (every decoder kind, on pypaimon- and
Java-written manifests and manifest lists), hands damaged files to fastavro's reader (same
errors as before), reports unknown versions as before, declines shapes it cannot express, and an
expiration plans the same with and without it."""

from __future__ import annotations

import io
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import fastavro
import pytest

from tablekeeper.core import errors
from tablekeeper.core.paimon import manifests
from tablekeeper.core.paimon.manifests import avro_container, compiled, fastavro_reader, self_test
from tablekeeper.core.paimon.manifests import decoding as md
from tablekeeper.core.paimon.manifests import native as mn
from tablekeeper.core.paimon.table import open_table, open_table_path
from tablekeeper.core.reclaim.expire import planning
from tablekeeper.core.reclaim.reach.reachability import Reachability
from tablekeeper.core.storage import FileIO, join
from tests.support import paimon as tp

IO = FileIO.for_uri("/tmp")

if os.environ.get("CI") == "true":
    assert mn._NATIVE is not None, "the native decoder was not built (scripts/bootstrap: pip install -e .)"
pytestmark = pytest.mark.skipif(mn._NATIVE is None, reason="the native decoder is not built here (no C compiler)")


def _files(manifest_dir: str) -> tuple[list[str], list[str]]:
    names = sorted(os.listdir(manifest_dir))
    lists = [join(manifest_dir, n) for n in names if n.startswith("manifest-list-")]
    entries = [join(manifest_dir, n) for n in names if n.startswith("manifest-") and not n.startswith("manifest-list-")]
    return lists, entries


def _three_ways(path: str, kinds: tuple[str, ...]) -> None:
    """Native rows == generated Python rows == fastavro.reader rows, row types included."""
    with open(path, "rb") as f:
        data = f.read()
    container, info = md.parse_container(data, path, "manifest")
    for kind in kinds:
        program = info.native(kind)
        assert program is not None, f"{path}: no native program for {kind}"
        native = mn.decode(program, data)
        decoder = info.decoder(kind)
        assert decoder is not None
        python = compiled.decode_compiled(decoder, container.data)
        reader = fastavro_reader.decode_by_reader(kind, data, info)
        assert native == python == reader
        assert native is not None and [type(r) for r in native] == [type(r) for r in reader]


def _check_dir(manifest_dir: str) -> int:
    lists, entries = _files(manifest_dir)
    assert lists and entries
    for path in lists:
        _three_ways(path, ("list", "list-names"))
    for path in entries:
        _three_ways(path, ("entry", "ref"))
    return len(lists) + len(entries)


def test_the_native_decoder_passes_its_self_test() -> None:
    assert mn.usable()


def test_pypaimon_written_manifests_decode_equally(tmp_path: Path) -> None:
    tp.build_history(str(tmp_path), commits=8)
    tp.build_history(str(tmp_path), "db.events", commits=5, primary_key=False)
    for name in ("orders", "events"):
        assert _check_dir(str(tmp_path / "db.db" / name / "manifest")) > 4


@pytest.mark.parametrize("table", tp.JAVA_TABLES)
def test_java_written_manifests_decode_equally(tmp_path: Path, table: str) -> None:
    warehouse = tp.extract_java_fixture(tmp_path)
    assert _check_dir(str(warehouse / "default.db" / table / "manifest")) > 4


def test_the_public_readers_use_it_and_return_what_fastavro_returns(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = tp.extract_java_fixture(tmp_path)
    lists, entries = _files(str(warehouse / "default.db" / tp.JAVA_TABLES[0] / "manifest"))
    calls: list[int] = []
    decode = mn.decode
    monkeypatch.setattr(mn, "decode", lambda *a: calls.append(1) or decode(*a))
    fast = ([manifests.read_manifest_list(IO, p) for p in lists],
            [(manifests.read_manifest(IO, p), manifests.read_manifest_refs(IO, p)) for p in entries])
    assert len(calls) == len(lists) + 2 * len(entries)
    monkeypatch.setattr(md, "_fast_enabled", False)  # fastavro.reader only
    slow = ([manifests.read_manifest_list(IO, p) for p in lists],
            [(manifests.read_manifest(IO, p), manifests.read_manifest_refs(IO, p)) for p in entries])
    assert len(calls) == len(lists) + 2 * len(entries)
    assert fast == slow


def _outcome(path: str) -> Any:
    try:
        return manifests.read_manifest_refs(IO, path)
    except errors.FormatError as e:
        return f"FormatError: {e}"


@pytest.mark.parametrize("delta", [1, -1])
def test_a_block_with_a_wrong_record_count_is_judged_by_fastavro_as_before(
        tmp_path: Path, delta: int, monkeypatch: pytest.MonkeyPatch) -> None:
    schema, records, _kinds = self_test.self_test_files()[0]
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records[:5], codec="null")
    data = buf.getvalue()
    framed = avro_container.frame(data)
    assert framed is not None and framed.blocks[0].records == 5
    start = framed.blocks[0].start
    assert data[start] == 10  # zig-zag 5
    damaged = data[:start] + bytes([2 * (5 + delta)]) + data[start + 1:]
    program = md.SchemaInfo(schema).native("ref")
    assert program is not None
    with pytest.raises(mn.NativeBad):  # too many records: truncated; too few: bytes left over
        mn.decode(program, damaged)
    path = tmp_path / "manifest-damaged-0"
    path.write_bytes(damaged)
    ours = _outcome(str(path))
    monkeypatch.setattr(md, "_fast_enabled", False)
    assert ours == _outcome(str(path))  # what fastavro's reader makes of it, error or rows
    if delta == 1:
        assert isinstance(ours, str) and ours.startswith("FormatError")


def test_an_unknown_entry_version_is_reported_as_before(tmp_path: Path) -> None:
    warehouse = tp.extract_java_fixture(tmp_path)
    _lists, entries = _files(str(warehouse / "default.db" / tp.JAVA_TABLES[0] / "manifest"))
    with open(entries[0], "rb") as f:
        reader = fastavro.reader(f)
        schema, records = reader.writer_schema, [dict(r) for r in reader if isinstance(r, dict)]
    records[-1]["_VERSION"] = 3
    path = tmp_path / "manifest-version-0"
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records)
    path.write_bytes(buf.getvalue())
    with pytest.raises(errors.FormatError, match="unsupported manifest format version 3"):
        manifests.read_manifest_refs(IO, str(path))
    with pytest.raises(errors.FormatError, match="unsupported manifest format version 3"):
        manifests.read_manifest(IO, str(path))


def test_shapes_it_cannot_express_compile_to_none() -> None:
    record_in_union = {"type": "record", "name": "r", "fields": [
        {"name": "_VERSION", "type": "int"}, {"name": "_FILE_NAME", "type": "string"},
        {"name": "_X", "type": ["null", {"type": "record", "name": "x", "fields": [{"name": "a", "type": "int"}]}]}]}
    enum_field = {"type": "record", "name": "r", "fields": [
        {"name": "_VERSION", "type": "int"}, {"name": "_FILE_NAME", "type": "string"},
        {"name": "_E", "type": {"type": "enum", "name": "e", "symbols": ["A"]}}]}
    for schema in (record_in_union, enum_field):
        assert mn.compile_program(schema, {"_VERSION": "v", "_FILE_NAME": "fn", "_EXTRA_FILES": "ef"},
                                  "list-names") is None


def test_an_expiration_plans_the_same_with_and_without_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tp.build_history(str(tmp_path), commits=14, primary_key=False)
    table = open_table(str(tmp_path), "db.orders")
    config = planning.ExpireConfig(retain_min=2, retain_max=3, time_retained=timedelta(0), expire_limit=100)
    now_ms = int(time.time() * 1000)
    with_native = planning.plan_expire(table, config, now_ms, reach=Reachability(table))
    monkeypatch.setattr(mn, "_enabled", False)
    without = planning.plan_expire(table, config, now_ms, reach=Reachability(table))
    assert with_native == without
    assert any(step.files for step in with_native.steps if hasattr(step, "files")), "nothing planned"


def test_a_java_table_plans_the_same_with_and_without_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = tp.extract_java_fixture(tmp_path)
    table = open_table_path(str(warehouse / "default.db" / tp.JAVA_TABLES[0]))
    config = planning.ExpireConfig(retain_min=1, retain_max=1, time_retained=timedelta(0), expire_limit=100)
    now_ms = int(time.time() * 1000)
    with_native = planning.plan_expire(table, config, now_ms, reach=Reachability(table))
    monkeypatch.setattr(mn, "_enabled", False)
    assert planning.plan_expire(table, config, now_ms, reach=Reachability(table)) == with_native


def test_a_version_that_is_not_an_int_is_a_version_mismatch_as_in_python() -> None:
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "_VERSION", "type": "string"}, {"name": "_FILE_NAME", "type": "string"},
        {"name": "_EXTRA_FILES", "type": ["null", {"type": "array", "items": "string"}]}]}
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [{"_VERSION": "2", "_FILE_NAME": "m", "_EXTRA_FILES": None}])
    info = md.SchemaInfo(schema)
    program, decoder = info.native("list-names"), info.decoder("list-names")
    assert program is not None and decoder is not None
    with pytest.raises(mn.NativeVersion) as native:
        mn.decode(program, buf.getvalue())
    with pytest.raises(compiled.VersionMismatch) as python:
        compiled.decode_compiled(decoder, buf.getvalue())
    assert native.value.version == python.value.version == "2"
