"""Regression tests of a sanitizer-and-fuzzing probe of the manifest decoders:

1. an array block count of -2**63 (varint ``ff ff ff ff ff ff ff ff ff 01``): negating it was
   undefined behaviour in the native decoder, which read the array as empty while the generated
   Python decoder refused the same bytes. Both refuse it now (fastavro's reader, the judge of
   every block they refuse, then decides, with and without them alike);
2. a hand-built native call with an empty program and a record count of 2**62 appended rows
   without end: refused now;
3. a damaged embedded writer schema made the readers raise AttributeError, TypeError, KeyError or
   RecursionError at one site each: every one is a FormatError naming the file now, with the
   fast decoders and with fastavro's reader alone.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pytest

from tablekeeper.core import errors
from tablekeeper.core.paimon import manifests
from tablekeeper.core.paimon.manifests import avro_container, compiled, self_test
from tablekeeper.core.paimon.manifests import decoding as md
from tablekeeper.core.paimon.manifests import native as mn
from tablekeeper.core.storage import FileIO
from tests.support import avro as A
from tests.support import paimon as tp

IO = FileIO.for_uri("/")
INT64_MIN_COUNT = b"\xff" * 9 + b"\x01"  # zig-zag varint of -2**63

#: a manifest list's schema whose only array is ``_EXTRA_FILES`` (array of strings)
LIST_SCHEMA: dict[str, Any] = {"type": "record", "name": "t.list", "fields": [
    {"name": "_VERSION", "type": "int"}, {"name": "_FILE_NAME", "type": "string"},
    {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}}]}


def _block(extra_files: bytes) -> bytes:
    """One record of LIST_SCHEMA: version 2, name "m", then ``extra_files`` as the array."""
    return A.avro_long(2) + A.avro_long(1) + b"m" + extra_files


# -- 1: a block count of -2**63 -----------------------------------------------------------------
def test_an_int64_min_array_block_count_is_refused_by_both_decoders() -> None:
    # -2**63, then its (ignored) byte size 1, then the array's end: the native decoder used to read
    # the array as empty (the negation wrapped), the Python decoder read 2**63 items and failed
    block = _block(INT64_MIN_COUNT + A.avro_long(1) + A.avro_long(0))
    info = md.SchemaInfo(LIST_SCHEMA)
    program, decoder = info.native("list-names"), info.decoder("list-names")
    assert program is not None and decoder is not None
    with pytest.raises(mn.NativeBad):
        mn.decode_block(program, block, 1, [])
    with pytest.raises(compiled.FastDecodeError):
        decoder(io.BytesIO(block), 1, [].append)
    # a plain negative count (a block with its byte size: one item, the empty string) decodes ...
    ok = _block(A.avro_long(-1) + A.avro_long(1) + A.avro_long(0) + A.avro_long(0))
    rows: list[Any] = []
    mn.decode_block(program, ok, 1, rows)
    python: list[Any] = []
    decoder(io.BytesIO(ok), 1, python.append)
    assert rows == python == [("m", ("",))]
    # ... and one whose items do not end where its byte size says is refused by both
    wrong_size = _block(A.avro_long(-1) + A.avro_long(2) + A.avro_long(0) + A.avro_long(0))
    with pytest.raises(mn.NativeBad):
        mn.decode_block(program, wrong_size, 1, [])
    with pytest.raises(compiled.FastDecodeError):
        decoder(io.BytesIO(wrong_size), 1, [].append)


def test_a_manifest_list_with_an_int64_min_count_reads_as_fastavro_reads_it(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The public reader's verdict is fastavro's with and without the fast decoders (they refuse,
    fastavro judges): the same rows or the same FormatError either way."""
    schema = self_test.self_test_files()[1][0]  # a manifest list's schema, _EXTRA_FILES last: [null, array]
    record = {**self_test.self_test_files()[1][1][0], "_EXTRA_FILES": []}
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    encoded = buf.getvalue()
    assert encoded.endswith(b"\x02\x00")  # the union's array branch, then the empty array's end
    payload = encoded[:-1] + INT64_MIN_COUNT + A.avro_long(1) + A.avro_long(0)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [record], codec="null")
    data = buf.getvalue()
    framed = avro_container.frame(data)
    assert framed is not None
    b = framed.blocks[0]
    damaged = data[:b.start] + A.avro_long(1) + A.avro_long(len(payload)) + payload + data[b.end - 16:b.end]
    path = tmp_path / "manifest-list-int64min-0"
    path.write_bytes(damaged)

    def outcome() -> Any:
        try:
            return manifests.read_manifest_list(IO, str(path))
        except errors.FormatError as e:
            return type(e)

    # the names-only path of orphan cleanup declines the block (its decoders refuse it) ...
    assert manifests.read_list_block_names(framed.schema_json or b"", payload, 1, str(path)) is None
    fast = outcome()
    monkeypatch.setattr(md, "_fast_enabled", False)
    assert outcome() == fast  # ... and the full reader's verdict does not depend on the fast decoders
    assert [m.extra_files for m in fast] == [()]  # fastavro's: an empty block, then the array's end


# -- 2: the unbounded loop of a hand-built call ----------------------------------------------------
def test_an_empty_program_with_a_huge_record_count_is_refused_at_once() -> None:
    """Run in a child process limited to 1 GiB and 60 s: before the guard the call appended rows
    without end (a MemoryError there, or the timeout)."""
    code = textwrap.dedent("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from tablekeeper.core.paimon.manifests import native as mn
        out = []
        try:
            mn._NATIVE.decode(b"", 0, 2**62, (), 0, (None,), -1, 0, mn.NativeBad, mn.NativeVersion, out)
        except ValueError as e:
            print("refused:", e, len(out))
        else:
            print("decoded", len(out))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.startswith("refused:"), (done.stdout, done.stderr[-2000:])
    assert done.stdout.strip().endswith(" 0")  # no row appended


def test_a_record_count_beyond_the_block_is_refused_before_decoding() -> None:
    program = md.SchemaInfo(LIST_SCHEMA).native("list-names")
    assert program is not None
    out: list[Any] = []
    with pytest.raises(mn.NativeBad):
        mn.decode_block(program, _block(A.avro_long(0)), 2**62, out)
    assert out == []


# -- 3: damaged writer schemas, one site each -----------------------------------------------------
@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A manifest list and a manifest pypaimon wrote."""
    wh = tmp_path_factory.mktemp("wh")
    tp.build_history(str(wh), commits=2)
    manifest_dir = wh / "db.db" / "orders" / "manifest"
    names = sorted(p.name for p in manifest_dir.iterdir())
    return {"list": (manifest_dir / next(n for n in names if n.startswith("manifest-list-"))).read_bytes(),
            "manifest": (manifest_dir / next(n for n in names if n.startswith("manifest-")
                                             and not n.startswith("manifest-list-"))).read_bytes()}


def _field(schema: Any, name: str) -> dict[str, Any]:
    return next(f for f in schema["fields"] if isinstance(f, dict) and f.get("name") == name)


def _last_field_a_string(data: bytes) -> bytes:  # avro_schema.has_named_reference: str.get
    schema = A.schema_of(data)
    schema["fields"][-1] = "oops"
    return A.with_schema(data, schema)


def _a_field_null(data: bytes) -> bytes:  # manifest_native.compile_program: None.get
    schema = A.schema_of(data)
    schema["fields"].insert(1, None)
    return A.with_schema(data, schema)


def _a_skipped_record_field_a_string(data: bytes) -> bytes:  # manifest_native._field_ops: str.get
    schema = A.schema_of(data)
    _field(schema, "_PARTITION_STATS")["type"]["fields"][0] = "oops"
    return A.with_schema(data, schema)


def _deeply_nested(data: bytes) -> bytes:  # avro_schema.strip_logical_types: RecursionError
    return A.with_schema_json(data, _deep_json(A.schema_of(data)))


def _deep_json(schema: Any) -> bytes:
    """json.dumps of a 5000-deep structure would itself recurse too deep: spliced as text."""
    shallow = {**schema, "fields": [*schema["fields"], {"name": "_DEEP", "type": "@DEEP@"}]}
    deep = '{"type": "array", "items": ' * 5000 + '"string"' + "}" * 5000
    return json.dumps(shallow).replace('"@DEEP@"', deep).encode("utf-8")


def _stats_without_min_values(data: bytes) -> bytes:  # manifest_decoding.simple_stats: KeyError
    def edit(schema: Any) -> None:
        stats = _field(schema, "_PARTITION_STATS")["type"]
        stats["fields"] = [f for f in stats["fields"] if f["name"] != "_MIN_VALUES"]
    return A.rewritten(data, edit, lambda r: r["_PARTITION_STATS"].pop("_MIN_VALUES"))


def _a_field_without_a_name(data: bytes) -> bytes:  # compiled.derive_reader_schema: KeyError
    schema = A.schema_of(data)
    schema["fields"].append({"type": "int"})
    return A.with_schema(data, schema)


def _extra_files_a_long(data: bytes) -> bytes:  # manifest_decoding entries/refs_by_reader: tuple(int)
    def edit(schema: Any) -> None:
        _field(_field(schema, "_FILE")["type"], "_EXTRA_FILES")["type"] = "long"
    return A.rewritten(data, edit, lambda r: r["_FILE"].__setitem__("_EXTRA_FILES", 7))


def _kind_an_array(data: bytes) -> bytes:  # manifest_readers._check_kinds: unhashable list
    def edit(schema: Any) -> None:
        _field(schema, "_KIND")["type"] = {"type": "array", "items": "int"}
    return A.rewritten(data, edit, lambda r: r.__setitem__("_KIND", [r["_KIND"]]))


READ_LIST = ("list", manifests.read_manifest_list)
READ_ENTRIES = ("manifest", manifests.read_manifest)
READ_REFS = ("manifest", manifests.read_manifest_refs)
READ_PAYLOAD = ("manifest", manifests.read_manifest_payload)

SITES = [
    pytest.param(_last_field_a_string, [READ_LIST], id="has_named_reference-str-field"),
    pytest.param(_a_field_null, [READ_LIST, READ_ENTRIES], id="compile_program-null-field"),
    pytest.param(_a_skipped_record_field_a_string, [READ_LIST], id="field_ops-str-in-skipped-record"),
    pytest.param(_deeply_nested, [READ_LIST, READ_REFS], id="strip_logical_types-deep-nesting"),
    pytest.param(_stats_without_min_values, [READ_LIST], id="simple_stats-no-min-values"),
    pytest.param(_a_field_without_a_name, [READ_REFS, READ_LIST], id="derive_reader_schema-nameless-field"),
    pytest.param(_extra_files_a_long, [READ_ENTRIES, READ_REFS, READ_PAYLOAD], id="by_reader-extra-files-long"),
    pytest.param(_kind_an_array, [READ_ENTRIES, READ_REFS], id="check_kinds-kind-array"),
]


@pytest.mark.parametrize("fast", [True, False], ids=["fast-decoders", "fastavro-only"])
@pytest.mark.parametrize(("damage", "readers"), SITES)
def test_a_damaged_writer_schema_is_a_format_error_naming_the_file(
        originals: dict[str, bytes], damage: Callable[[bytes], bytes],
        readers: list[tuple[str, Callable[[FileIO, str], Any]]], fast: bool, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if not fast:
        monkeypatch.setattr(md, "_fast_enabled", False)
    md._SCHEMAS.clear()  # (the schema cache would otherwise remember the verdict across parameters)
    for source, reader in readers:
        path = tmp_path / f"{source}-damaged-{reader.__name__}"
        path.write_bytes(damage(originals[source]))
        with pytest.raises(errors.FormatError) as info:
            reader(IO, str(path))
        assert str(path) in info.value.message and info.value.fix, info.value
