"""Writing table options as Paimon's ALTER TABLE ... SET does: a new schema file in Java's byte
layout, create-if-absent (a concurrent schema change is never overwritten), and the table still
reads identically through pypaimon."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tablekeeper.core import errors
from tablekeeper.core.paimon import table_options
from tablekeeper.core.paimon.metadata import jackson
from tablekeeper.core.paimon.table import open_table, open_table_path
from tests.support import paimon as P

NOW_MS = 1_790_000_000_000


def test_diff_skips_protected_and_equal_options() -> None:
    diff = table_options.diff_options({"snapshot.time-retained": "1 h", "bucket": "2", "x": "1"},
                                      {"snapshot.time-retained": "2 d", "x": "1", "snapshot.num-retained.min": "5",
                                       "tag.num-retained-max": "9"},
                                      protected={"tag.num-retained-max"})
    assert dict(diff.set) == {"snapshot.num-retained.min": "5", "snapshot.time-retained": "2 d"}
    assert dict(diff.previous) == {"snapshot.num-retained.min": None, "snapshot.time-retained": "1 h"}
    assert dict(diff.protected) == {"tag.num-retained-max": (None, "9")}
    assert table_options.diff_options({"a": "1"}, {"a": "1"}).is_empty
    assert table_options.options_hash({"a": "1", "b": "2"}) == table_options.options_hash({"b": "2", "a": "1"})


def test_java_schema_keeps_its_byte_layout(tmp_path: Path) -> None:
    wh = P.extract_java_fixture(tmp_path / "java")
    root = wh / "default.db" / "test_pk_full_text_golden"
    raw = (root / "schema" / "schema-0").read_bytes()
    assert jackson.dumps(json.loads(raw)).encode("utf-8") == raw  # the writer is Java's layout
    table = open_table_path(str(root))
    before = table.schema()
    result = table_options.alter_options(table, {"snapshot.time-retained": "2 d"}, now_ms=NOW_MS)
    assert result.schema_id == before.id + 1
    written = (root / "schema" / f"schema-{before.id + 1}").read_bytes()
    expected = raw.replace(b'"deletion-vectors.enabled" : "true",\n    "pk-full-text.index.columns" : "content"\n',
                           b'"deletion-vectors.enabled" : "true",\n    "pk-full-text.index.columns" : "content",\n'
                           b'    "snapshot.time-retained" : "2 d"\n') \
        if b"pk-full-text.index.columns" in raw else None
    assert expected is not None
    data = json.loads(written)
    assert data["id"] == before.id + 1 and data["timeMillis"] == NOW_MS
    assert data["fields"] == json.loads(raw)["fields"] and data["options"]["snapshot.time-retained"] == "2 d"
    assert list(data) == list(json.loads(raw))  # same fields, same order
    if expected is not None:  # everything but id, the new option and timeMillis is byte-identical
        expected = expected.replace(b'"id" : 0,', f'"id" : {before.id + 1},'.encode(), 1)
        expected = expected.replace(str(json.loads(raw)["timeMillis"]).encode(), str(NOW_MS).encode())
        assert written == expected
    assert (root / "schema" / "schema-0").read_bytes() == raw  # never rewritten
    assert open_table_path(str(root)).options()["snapshot.time-retained"] == "2 d"


def test_alter_options_then_pypaimon_reads_identically(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    P.build_history(wh, commits=4)
    before = P.snapshot_views(wh, "db.orders")
    table = open_table(wh, "db.orders")
    result = table_options.alter_options(table, {"snapshot.num-retained.min": "3", "snapshot.time-retained": "7 d"},
                                         now_ms=NOW_MS)
    assert result.schema_id == 1 and result.previous == {"snapshot.num-retained.min": None,
                                                         "snapshot.time-retained": None}
    assert P.snapshot_views(wh, "db.orders") == before
    cat_table = P.table_at(wh, "db.orders")  # pypaimon reads the new schema
    assert cat_table.table_schema.id == 1 and cat_table.table_schema.options["snapshot.time-retained"] == "7 d"
    assert open_table(wh, "db.orders").options()["snapshot.num-retained.min"] == "3"
    # idempotent: nothing differs, nothing is written
    again = table_options.alter_options(open_table(wh, "db.orders"), {"snapshot.time-retained": "7 d"},
                                        now_ms=NOW_MS)
    assert again.schema_id is None and open_table(wh, "db.orders").schema_ids() == [0, 1]
    # a later commit through pypaimon still works and reads the new schema's options
    P.write(P.table_at(wh, "db.orders"), P.orders_rows("2026-01-09", 100, 2))
    assert len(P.read_rows(P.table_at(wh, "db.orders"))) == len(before["main@latest"]) + 2


def test_concurrent_schema_change_is_never_overwritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wh = str(tmp_path / "wh")
    P.build_history(wh, commits=2)
    table = open_table(wh, "db.orders")
    other = table_options.schema_with_options(table.schema(), {"foreign": "writer"}, NOW_MS - 1)
    real_write_new = table.file_io.write_new
    raced = []

    def racing_write_new(path: str, data: bytes | str) -> None:
        if path.endswith("schema-1") and not raced:  # another writer commits schema-1 first
            raced.append(path)
            real_write_new(path, other)
        real_write_new(path, data)

    monkeypatch.setattr(table.file_io, "write_new", racing_write_new)
    result = table_options.alter_options(table, {"snapshot.time-retained": "3 d"}, now_ms=NOW_MS)
    assert raced and result.schema_id == 2 and result.attempts == 2
    opts = open_table(wh, "db.orders").options()
    assert opts["foreign"] == "writer" and opts["snapshot.time-retained"] == "3 d"  # both changes survive

    def always_lose(path: str, data: bytes | str) -> None:
        raise FileExistsError(path)

    monkeypatch.setattr(table.file_io, "write_new", always_lose)
    with pytest.raises(errors.ConcurrentModificationError):
        table_options.alter_options(table, {"snapshot.time-retained": "4 d"}, now_ms=NOW_MS)
