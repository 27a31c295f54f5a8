"""Fail closed on what we do not know (issue 13 point 6), on Java-written tables (both Paimon
versions): a snapshot or schema of an unknown format version, a manifest with an unknown field or
an unknown entry kind makes every destructive command stop with exit code 2 and an error naming
the file (and the version or kind), deleting nothing. Exception, by design: clean-orphans scans
manifests for names without decoding kinds and keeps every named file (an unknown kind can only
make it keep more)."""

from __future__ import annotations

import copy
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pytest

from tablekeeper.cli.main import main
from tests.javapaimon import warehouse as W
from tests.support import javapaimon as J

pytestmark = [pytest.mark.javapaimon, pytest.mark.timeout(900)]


def _bump_version(path: Path, version: int) -> str:
    data = json.loads(path.read_text())
    data["version"] = version
    path.write_text(json.dumps(data, indent=2))
    return str(path)


def _newer_snapshot(wh: str) -> tuple[str, str]:
    root = J.table_root(wh, W.ORDERS)
    latest = J.ids(root / "snapshot", "snapshot-")[-1]
    return _bump_version(root / "snapshot" / f"snapshot-{latest}", 4), "version 4"


def _newer_schema(wh: str) -> tuple[str, str]:
    root = J.table_root(wh, W.ORDERS)
    return _bump_version(root / "schema" / "schema-0", 9), "version 9"


def _rewrite_data_manifests(wh: str, edit_schema: Callable[[dict[str, Any]], None],
                            edit_record: Callable[[dict[str, Any]], None]) -> list[Path]:
    """Every data manifest of the orders table decoded, edited and written back (same codec)."""
    root = J.table_root(wh, W.ORDERS)
    manifests = [p for p in (root / "manifest").glob("manifest-*")
                 if not p.name.startswith("manifest-list-") and "orphan" not in p.name]
    for path in manifests:
        with path.open("rb") as f:
            reader = fastavro.reader(f)
            schema, codec, records = copy.deepcopy(reader.writer_schema), reader.codec, list(reader)
        assert isinstance(schema, dict)
        edit_schema(schema)
        for r in records:
            assert isinstance(r, dict)
            edit_record(r)
        with path.open("wb") as f:
            fastavro.writer(f, schema, records, codec=codec)
    return manifests


def _newer_manifest(wh: str) -> tuple[str, str]:
    """Every data manifest rewritten with one more entry field, as a newer writer would."""
    _rewrite_data_manifests(wh, lambda schema: schema["fields"].append({"name": "_NEW_FIELD", "type": "long",
                                                                         "default": 0}),
                            lambda r: r.__setitem__("_NEW_FIELD", 1))
    return str(J.table_root(wh, W.ORDERS) / "manifest"), "_NEW_FIELD"


def _unknown_kind(wh: str) -> Path:
    """Every entry of every data manifest gets a file kind no Paimon version has written (Java
    knows 0 = ADD and 1 = DELETE); one of those manifests is returned."""
    return _rewrite_data_manifests(wh, lambda _schema: None, lambda r: r.__setitem__("_KIND", 7))[0]


def _commands(wh: str) -> list[tuple[str, ...]]:
    t = W.ORDERS
    return [
        ("expire", "-w", wh, t, "--retain-min", "1", "--time-retained", "1 s", "--now", str(J.now_ms() + 60_000)),
        ("expire-changelog", "-w", wh, t),
        ("expire-partitions", "-w", wh, t, "--expiration-time", "30 d", "--timestamp-formatter", "yyyy-MM-dd"),
        ("clean-orphans", "-w", wh, t, "--older-than", str(J.now_ms() - 1000), "--force"),
        ("tag", "delete", "-w", wh, t, "t1", "--force"),
        ("branch", "drop", "-w", wh, t, "dev"),
        ("branch", "fast-forward", "-w", wh, t, "dev"),
        ("branch", "replace-main", "-w", wh, t, "dev", "--backup", "old-main"),
        ("tag", "replace", "-w", wh, t, "t2", "--snapshot", str(J.ids(J.table_root(wh, t) / "snapshot", "snapshot-")[0])),
    ]


def _changelogs_to_expire(java: J.JavaPaimon, wh: str) -> None:
    """Java lowers the changelog retention to the snapshot retention, so that expire-changelog
    has changelog-N files to expire and must read what they reference."""
    java.call("alter_table", warehouse=wh, table=W.ORDERS, changes=[["set_option", "changelog.num-retained.max", "5"]])
    assert J.ids(J.table_root(wh, W.ORDERS) / "changelog", "changelog-"), "no decoupled changelog to expire"


def _reads_manifests(command: tuple[str, ...]) -> bool:
    """Whether a command decides anything from manifests (branch commands and tag replace only
    move snapshot, tag and schema files, and delete no data or manifest file, as Java's do)."""
    return command[0] != "branch" and command[:2] != ("tag", "replace")


def _listing(wh: str) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(Path(wh).rglob("*")) if p.is_file()}


@pytest.mark.parametrize("edit", [_newer_snapshot, _newer_schema, _newer_manifest],
                         ids=["snapshot-version", "schema-version", "manifest-field"])
def test_unknown_format_stops_every_destructive_command(java: J.JavaPaimon, wh: str, edit: object,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    orphan = J.table_root(wh, W.ORDERS) / "manifest" / "manifest-orphan-0"
    orphan.write_bytes(b"x")  # something clean-orphans would delete
    old = time.time() - 3 * 86400
    os.utime(orphan, (old, old))
    assert callable(edit)
    _changelogs_to_expire(java, wh)
    named, detail = edit(wh)
    before = _listing(wh)
    # Branch commands and tag replace read no manifest and delete no data or manifest file (they
    # move snapshot, tag and schema files, whose versions are checked): not run for a manifest field.
    commands = [c for c in _commands(wh) if _reads_manifests(c) or detail != "_NEW_FIELD"]
    for args in commands:
        code = main(list(args))
        out, err = capsys.readouterr()
        assert code == 2, (args, out, err)
        assert "error: " in err and detail in err and (named in err or Path(named).name in err), (args, err)
    assert _listing(wh) == before


def test_unknown_entry_kind_stops_every_destructive_command(java: J.JavaPaimon, wh: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown manifest entry kind stops every command that decides a file's liveness from
    entries, naming a manifest and the kind. clean-orphans scans manifests for file names without
    decoding kinds (docs/compatibility.md): it keeps every file any manifest names, whatever its
    kind, so it deletes only the planted orphan. Branch commands and tag replace read no manifest."""
    orphan = J.table_root(wh, W.ORDERS) / "manifest" / "manifest-orphan-0"
    orphan.write_bytes(b"x")
    old = time.time() - 3 * 86400
    os.utime(orphan, (old, old))
    _changelogs_to_expire(java, wh)
    _unknown_kind(wh)
    before = _listing(wh)
    for args in _commands(wh):
        if not _reads_manifests(args) or args[0] == "clean-orphans":
            continue
        code = main(list(args))
        out, err = capsys.readouterr()
        assert code == 2, (args, out, err)
        assert re.search(r"/manifest/manifest-[0-9a-f-]+: unsupported manifest entry kind 7 ", err), (args, err)
    assert _listing(wh) == before
    [clean] = [c for c in _commands(wh) if c[0] == "clean-orphans"]
    assert main(list(clean)) == 0, capsys.readouterr()
    assert _listing(wh) == {k: v for k, v in before.items() if k != str(orphan)}
