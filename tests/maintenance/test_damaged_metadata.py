"""Damaged metadata files: one error naming the file, exit code 2, storage unchanged.

Two matrices on tables pypaimon writes (a partitioned primary-key table with tags, a branch and a
consumer; a dynamic-bucket table, whose snapshots have index manifests), through the CLI in this
process:

- every malformed input of :data:`JSON_CASES` (snapshot, tag, schema and consumer files) and of
  :data:`AVRO_CASES` (manifest lists, manifests, index manifests: bytes, embedded writer schemas,
  field types) makes ``expire`` stop with ``error: <the file> ...`` and a fix, exit 2, deleting and
  writing nothing;
- every destructive command on a table with one damaged file of each kind (:data:`COMMANDS` x
  :data:`KINDS`) does the same, except where the command never reads that kind of file
  (:func:`reads`): branch commands and tag replace move snapshot, tag and schema files only and
  read no manifest, and only an expiration reads consumers. A damaged hint is never an error: a
  hint is trusted only when the snapshots agree with it, so a damaged one is read as absent and
  the command does exactly what it does without it.
"""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pytest

from tablekeeper.cli.main import main
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.refs import branches, tags
from tests.support import avro as A
from tests.support import paimon as P

IDENT, DYN = "db.orders", "db.dyn"
Damage = Callable[[bytes], bytes]


# -- the tables -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("damaged") / "wh")
    P.build_history(wh, IDENT, commits=5)
    t = open_table(wh, IDENT)
    tags.create_tag(t, "t1", snapshot_id=2)
    tags.create_tag(t, "t2", snapshot_id=3)
    tags.create_tag(t, "old", snapshot_id=1)  # a tag of an expired snapshot: deleting it reads manifests
    os.remove(t.snapshot_path(1))
    Path(t.dir("snapshot"), "EARLIEST").write_text("2")
    branches.create_branch(t, "dev", from_tag="t1")
    P.write(P.branch_table(P.catalog(wh), IDENT, "dev"), P.orders_rows("2026-01-09", 100, 2))
    (Path(t.dir("consumer"))).mkdir(exist_ok=True)
    # (a consumer at the latest snapshot: the earliest snapshot an expiration keeps is the latest one,
    # so it reads the latest snapshot's manifest lists)
    Path(t.dir("consumer"), "consumer-reader").write_text('{\n  "nextSnapshot" : 5\n}')
    dyn = P.create_table(P.catalog(wh), DYN, P.ORDERS_SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "-1"})
    for i in range(3):
        P.write(dyn, P.orders_rows("2026-01-01", i, 3))
    old = 1_700_000_000  # every file old enough for any threshold
    for dirpath, _dirs, files in os.walk(wh):
        for name in files:
            os.utime(os.path.join(dirpath, name), (old, old))
    return wh


@pytest.fixture
def wh(template: str, tmp_path: Path) -> str:
    shutil.copytree(template, tmp_path / "wh", copy_function=shutil.copy2)
    return str(tmp_path / "wh")


def _root(wh: str, ident: str = IDENT) -> Path:
    db, name = ident.split(".")
    return Path(wh) / f"{db}.db" / name


def _latest(root: Path) -> dict[str, Any]:
    latest = max(int(p.name.split("-")[1]) for p in (root / "snapshot").glob("snapshot-*"))
    return dict(json.loads((root / "snapshot" / f"snapshot-{latest}").read_text()))


def file_of(wh: str, kind: str) -> Path:
    """The file of ``kind`` a damage is applied to."""
    root = _root(wh)
    if kind == "snapshot":  # an older snapshot of main: an expiration reads it, the guard does not
        return root / "snapshot" / "snapshot-2"
    if kind == "latest-snapshot":
        return root / "snapshot" / f"snapshot-{_latest(root)['id']}"
    if kind == "tag":
        return root / "tag" / "tag-t2"
    if kind == "schema":
        return root / "schema" / "schema-0"
    if kind == "consumer":
        return root / "consumer" / "consumer-reader"
    if kind == "hint":
        return root / "snapshot" / "LATEST"
    if kind == "list":
        return root / "manifest" / _latest(root)["baseManifestList"]
    if kind == "manifest":
        metas = fastavro.reader(io.BytesIO((root / "manifest" / _latest(root)["baseManifestList"]).read_bytes()))
        return root / "manifest" / next(iter(metas))["_FILE_NAME"]  # type: ignore[index]
    if kind == "index":
        dyn = _root(wh, DYN)
        return dyn / "manifest" / _latest(dyn)["indexManifest"]
    raise AssertionError(kind)


def _files(wh: str) -> dict[str, bytes]:
    """Every regular file and its bytes (the lease of a command that failed after taking it
    leaves no file, but directories may change: contents are what must not)."""
    return {str(p): p.read_bytes() for p in sorted(Path(wh).rglob("*")) if p.is_file()}


def assert_refused(wh: str, args: list[str], damaged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _files(wh)
    code = main(args)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (args, out, err)
    assert lines and lines[0].startswith("error: ") and len(lines) == 2 and lines[1].startswith("  fix: "), err
    assert str(damaged) in lines[0] or damaged.name in lines[0], (damaged, err)
    assert "Traceback" not in out + err
    assert _files(wh) == before, args


# -- malformed JSON metadata ------------------------------------------------------------------------
def _json(edit: Callable[[dict[str, Any]], None]) -> Damage:
    def damage(data: bytes) -> bytes:
        doc = json.loads(data)
        edit(doc)
        return json.dumps(doc, indent=2).encode()
    return damage


def _set(key: str, value: Any) -> Damage:
    return _json(lambda d: d.__setitem__(key, value))


def _drop(key: str) -> Damage:
    return _json(lambda d: d.pop(key, None))


_GENERIC_JSON: list[tuple[str, Damage]] = [
    ("empty", lambda d: b""),
    ("truncated", lambda d: d[: len(d) // 2]),
    ("not-json", lambda d: b"snapshot, but not JSON"),
    ("json-array", lambda d: b"[1, 2, 3]"),
    ("deeply-nested", lambda d: b"[" * 100_000 + b"]" * 100_000),
    ("nested-past-the-limit", lambda d: d.rstrip()[:-1] + b', "x": ' + b'{"a": ' * 80 + b"1" + b"}" * 80 + b"}"),
    ("not-utf8", lambda d: b"\xff\xfe" + d),
]
_SNAPSHOT_FIELDS: list[tuple[str, Damage]] = [
    ("id-a-string", _set("id", "2")), ("id-null", _set("id", None)), ("id-a-float", _set("id", 2.5)),
    ("id-a-boolean", _set("id", True)), ("no-id", _drop("id")), ("schemaId-a-list", _set("schemaId", [0])),
    ("timeMillis-text", _set("timeMillis", "yesterday")), ("commitKind-a-number", _set("commitKind", 7)),
    ("baseManifestList-a-number", _set("baseManifestList", 5)),
    ("baseManifestList-a-path", _set("baseManifestList", "../../other.db/t/manifest/manifest-list-x-0")),
    ("deltaManifestList-empty", _set("deltaManifestList", "")), ("indexManifest-a-list", _set("indexManifest", ["x"])),
    ("statistics-an-object", _set("statistics", {})), ("listSize-text", _set("baseManifestListSize", "big")),
    ("totalRecordCount-text", _set("totalRecordCount", "1")), ("version-99", _set("version", 99)),
    ("version-text", _set("version", "3")), ("properties-a-list", _set("properties", [])),
]
_TAG_FIELDS: list[tuple[str, Damage]] = [
    ("createTime-month-13", _set("tagCreateTime", [2026, 13, 1, 0, 0])),
    ("createTime-text-items", _set("tagCreateTime", ["2026", "1", "1"])),
    ("createTime-not-a-time", _set("tagCreateTime", "yesterday")),
    ("createTime-too-long", _set("tagCreateTime", [2026, 1, 1, 0, 0, 0, 0, 0])),
    ("timeRetained-nan", _set("tagTimeRetained", "NaN")),
    ("timeRetained-too-big", _set("tagTimeRetained", 1e300)),
    ("timeRetained-a-list", _set("tagTimeRetained", [1])),
]
_SCHEMA_FIELDS: list[tuple[str, Damage]] = [
    ("fields-text", _set("fields", "id, dt")), ("fields-of-text", _set("fields", ["id"])),
    ("no-fields", _drop("fields")), ("id-text", _set("id", "0")), ("options-a-list", _set("options", [])),
    ("option-an-object", _json(lambda d: d.setdefault("options", {}).__setitem__("bucket", {"n": 2}))),
    ("partitionKeys-numbers", _set("partitionKeys", [1])), ("primaryKeys-text", _set("primaryKeys", "id")),
    ("version-9", _set("version", 9)),
]
_CONSUMER_FIELDS: list[tuple[str, Damage]] = [
    ("nextSnapshot-text", _set("nextSnapshot", "3")), ("nextSnapshot-null", _set("nextSnapshot", None)),
    ("nextSnapshot-a-float", _set("nextSnapshot", 2.5)), ("no-nextSnapshot", _drop("nextSnapshot")),
]

JSON_CASES = [
    *[pytest.param(kind, damage, id=f"{kind}-{name}") for kind in ("snapshot", "latest-snapshot")
      for name, damage in _GENERIC_JSON + _SNAPSHOT_FIELDS],
    *[pytest.param("tag", damage, id=f"tag-{name}") for name, damage in _GENERIC_JSON[:3] + _TAG_FIELDS
      + _SNAPSHOT_FIELDS[:2]],
    *[pytest.param("schema", damage, id=f"schema-{name}") for name, damage in _GENERIC_JSON[:4] + _SCHEMA_FIELDS],
    *[pytest.param("consumer", damage, id=f"consumer-{name}") for name, damage in _GENERIC_JSON[:4]
      + _CONSUMER_FIELDS],
]


#: "now" for the commands: a day after the tables were written, so that retention expires snapshots
_NOW = str(int(__import__("time").time() * 1000) + 86_400_000)


def _expire(wh: str, ident: str = IDENT) -> list[str]:
    return ["expire", "-w", wh, ident, "--retain-min", "1", "--time-retained", "1 s", "--now", _NOW]


@pytest.mark.parametrize(("kind", "damage"), JSON_CASES)
def test_malformed_json_metadata_stops_expire(wh: str, kind: str, damage: Damage,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = file_of(wh, kind)
    path.write_bytes(damage(path.read_bytes()))
    assert_refused(wh, _expire(wh), path, capsys)


# -- malformed Avro files ---------------------------------------------------------------------------
def _schema(edit: Callable[[Any], None]) -> Damage:
    def damage(data: bytes) -> bytes:
        schema = copy.deepcopy(A.schema_of(data))
        edit(schema)
        return A.with_schema(data, schema)
    return damage


def _records(edit_schema: Callable[[Any], None], edit_record: Callable[[Any], None]) -> Damage:
    return lambda data: A.rewritten(data, edit_schema, edit_record)


def _field_type(name: str, t: Any, value: Any) -> Damage:
    """Field ``name`` (top level, or in ``_FILE``) of another type, its values rewritten."""
    def where(schema: Any) -> Any:
        top = [f for f in schema["fields"] if f["name"] == name]
        return top[0] if top else next(f for f in next(f for f in schema["fields"] if f["name"] == "_FILE")
                                       ["type"]["fields"] if f["name"] == name)

    def record(r: Any) -> None:
        (r if name in r else r["_FILE"])[name] = value
    return _records(lambda s: where(s).__setitem__("type", t), record)


def _truncate(data: bytes) -> bytes:
    return data[: len(data) - 7]


def _deep(data: bytes) -> bytes:
    schema = A.schema_of(data)
    text = json.dumps({**schema, "fields": [*schema["fields"], {"name": "_X", "type": "@"}]})
    return A.with_schema_json(data, text.replace('"@"', '{"type": "array", "items": ' * 60 + '"int"' + "}" * 60).encode())


_GENERIC_AVRO: list[tuple[str, Damage]] = [
    ("empty", lambda d: b""), ("garbage", lambda d: b"not avro at all"), ("magic-only", lambda d: b"Obj\x01"),
    ("truncated", _truncate), ("flipped-tail", lambda d: d[:-20] + bytes(b ^ 0xFF for b in d[-20:])),
    ("header-only", lambda d: d[: d.index(b"avro.schema") + 40]),
    ("schema-not-json", lambda d: A.with_schema_json(d, b"{not json")),
    ("schema-an-array", lambda d: A.with_schema_json(d, b"[]")),
    ("schema-deeply-nested", lambda d: A.with_schema_json(d, b"[" * 100_000 + b"]" * 100_000)),
    ("schema-nested-past-the-limit", _deep),
    ("schema-last-field-a-string", _schema(lambda s: s["fields"].__setitem__(-1, "oops"))),
    ("schema-a-null-field", _schema(lambda s: s["fields"].insert(1, None))),
    ("schema-a-nameless-field", _schema(lambda s: s["fields"].append({"type": "int"}))),
    ("schema-unknown-type", _schema(lambda s: s["fields"].append({"name": "_X", "type": "no.such.Type"}))),
    ("schema-union-in-union", _schema(lambda s: s["fields"].append({"name": "_X", "type": [["null", "int"]]}))),
    ("schema-array-of-nulls", _schema(lambda s: s["fields"].append(
        {"name": "_X", "type": {"type": "array", "items": "null"}}))),
    ("schema-fixed-negative-size", _schema(lambda s: s["fields"].append(
        {"name": "_X", "type": {"type": "fixed", "name": "f", "size": -1}}))),
    ("schema-enum-without-symbols", _schema(lambda s: s["fields"].append(
        {"name": "_X", "type": {"type": "enum", "name": "e", "symbols": []}}))),
    ("version-field-text", _field_type("_VERSION", "string", "2")),
    ("version-3", _records(lambda s: None, lambda r: r.__setitem__("_VERSION", 3))),
]
_LIST_FIELDS: list[tuple[str, Damage]] = [
    ("file-name-a-long", _field_type("_FILE_NAME", "long", 7)),
    ("file-name-nullable", _field_type("_FILE_NAME", ["null", "string"], None)),
    ("stats-without-min-values", _records(
        lambda s: next(f for f in s["fields"] if f["name"] == "_PARTITION_STATS")["type"].__setitem__(
            "fields", [f for f in next(f for f in s["fields"] if f["name"] == "_PARTITION_STATS")["type"]["fields"]
                       if f["name"] != "_MIN_VALUES"]),
        lambda r: r["_PARTITION_STATS"].pop("_MIN_VALUES"))),
    ("extra-files-of-longs", _field_type("_EXTRA_FILES", ["null", {"type": "array", "items": "long"}], [1])),
]
_MANIFEST_FIELDS: list[tuple[str, Damage]] = [
    ("kind-an-array", _field_type("_KIND", {"type": "array", "items": "int"}, [0])),
    ("kind-7", _records(lambda s: None, lambda r: r.__setitem__("_KIND", 7))),
    ("data-file-name-bytes", _field_type("_FILE_NAME", "bytes", b"data-x.orc")),
    ("extra-files-a-long", _field_type("_EXTRA_FILES", "long", 7)),
    ("level-text", _field_type("_LEVEL", "string", "0")),
    ("an-unknown-field", _records(lambda s: s["fields"].append({"name": "_NEW", "type": "int", "default": 0}),
                                  lambda r: r.__setitem__("_NEW", 1))),
]

AVRO_CASES = [
    *[pytest.param("list", damage, id=f"list-{name}") for name, damage in _GENERIC_AVRO + _LIST_FIELDS],
    *[pytest.param("manifest", damage, id=f"manifest-{name}") for name, damage in _GENERIC_AVRO + _MANIFEST_FIELDS],
    *[pytest.param("index", damage, id=f"index-{name}") for name, damage in _GENERIC_AVRO[:12]],
]


@pytest.mark.parametrize(("kind", "damage"), AVRO_CASES)
def test_malformed_avro_metadata_stops_expire(wh: str, kind: str, damage: Damage,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = file_of(wh, kind)
    path.write_bytes(damage(path.read_bytes()))
    assert_refused(wh, _expire(wh, DYN if kind == "index" else IDENT), path, capsys)


# -- every destructive command, one damaged file of each kind -----------------------------------------
KINDS = ("latest-snapshot", "snapshot", "tag", "schema", "consumer", "list", "manifest", "index")
COMMANDS: dict[str, Callable[[str, str], list[str]]] = {
    "expire": lambda wh, t: _expire(wh, t),
    "expire-changelog": lambda wh, t: ["expire-changelog", "-w", wh, t],
    "expire-partitions": lambda wh, t: ["expire-partitions", "-w", wh, t, "--expiration-time", "1 d",
                                        "--timestamp-formatter", "yyyy-MM-dd", "--now", _NOW],
    "clean-orphans": lambda wh, t: ["clean-orphans", "-w", wh, t, "--older-than", "1 d", "--now", _NOW],
    "tag-delete": lambda wh, t: ["tag", "delete", "-w", wh, t, "old"],
    "tag-replace": lambda wh, t: ["tag", "replace", "-w", wh, t, "t2", "--snapshot", "2"],
    "branch-drop": lambda wh, t: ["branch", "drop", "-w", wh, t, "dev"],
    "branch-fast-forward": lambda wh, t: ["branch", "fast-forward", "-w", wh, t, "dev"],
    "branch-replace-main": lambda wh, t: ["branch", "replace-main", "-w", wh, t, "dev", "--backup", "old"],
}
_DAMAGE: dict[str, Damage] = {"list": _GENERIC_AVRO[10][1], "manifest": _GENERIC_AVRO[3][1],
                              "index": _GENERIC_AVRO[10][1], "consumer": _set("nextSnapshot", "x"),
                              "tag": _set("id", "x"), "schema": _set("fields", "x"),
                              "snapshot": _set("baseManifestList", 5), "latest-snapshot": _set("id", [1])}


def reads(command: str, kind: str) -> bool:
    """Whether ``command`` must read a file of ``kind`` to decide (else it runs as without it)."""
    if kind in ("latest-snapshot", "schema"):  # the guard every destructive command runs first
        return True
    if command.startswith("branch") or command == "tag-replace":
        return kind in ("snapshot", "tag")  # they parse every snapshot and tag they move, read no manifest
    if kind == "consumer":
        return command == "expire"
    if command == "expire-changelog":
        return False  # these tables have no long-lived changelog files: it reads nothing more
    if command == "expire-partitions":
        return kind in ("list", "manifest")  # the latest snapshot's files; an OVERWRITE reads no index
    return True


MATRIX = [pytest.param(command, kind, id=f"{command}-{kind}") for command in COMMANDS for kind in KINDS
          if reads(command, kind) and not (kind == "index" and command.startswith(("tag", "branch")))]


@pytest.mark.parametrize(("command", "kind"), MATRIX)
def test_every_destructive_command_stops_on_a_damaged_file(wh: str, command: str, kind: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    ident = DYN if kind == "index" else IDENT  # (the table with index manifests has no tags or branches)
    path = file_of(wh, kind)
    path.write_bytes(_DAMAGE[kind](path.read_bytes()))
    assert_refused(wh, COMMANDS[command](wh, ident), path, capsys)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_damaged_hint_changes_nothing_a_command_decides(wh: str, template: str, command: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The same outcome (exit code, files) as on the table without any LATEST hint (hint files
    themselves aside: a backup of main copies the damaged one as it is)."""
    clean = str(tmp_path / "clean")
    shutil.copytree(template, clean, copy_function=shutil.copy2)
    (_root(clean) / "snapshot" / "LATEST").unlink()
    hint = file_of(wh, "hint")
    hint.write_bytes(b"\xff\xfe not a snapshot id")
    outcomes = []
    for warehouse in (wh, clean):
        before = {str(Path(p).relative_to(warehouse)) for p in _files(warehouse) if not p.endswith("/snapshot/LATEST")}
        code = main(COMMANDS[command](warehouse, IDENT))
        _out, err = capsys.readouterr()
        assert "Traceback" not in err
        after = {str(Path(p).relative_to(warehouse)) for p in _files(warehouse) if not p.endswith("/snapshot/LATEST")}
        # (a commit names its new files by UUID: what is compared is what was kept, and how many came)
        outcomes.append((code, sorted(before & after), len(after - before)))
    assert outcomes[0] == outcomes[1]


def test_the_matrices_are_large_enough() -> None:
    assert len(JSON_CASES) >= 25 and len(AVRO_CASES) >= 25
    assert {kind for _command, kind in (p.values for p in MATRIX)} == set(KINDS)
