"""``--output json`` that scripts can trust, on pypaimon-written tables: every command prints
exactly one JSON document on stdout, in one shape for every command that changes a table; the
bytes of every deleted kind equal the sizes of the files that went, measured before the run; an
error is one JSON document too (``{"error": {"message", "fix", "kind"}}``), exit code unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.cli.main import main
from tests.support import paimon as P
from tests.support.json_output import bytes_match, listing

IDENT = "db.orders"
COMMON = {"operation", "table", "branch", "engine", "dry_run", "action", "files", "bytes", "total_files",
          "total_bytes", "unsized", "writes", "notes", "result"}
RESULT = {"deleted", "deleted_bytes", "already_gone", "unsized", "failed", "failed_count", "written", "removed_dirs"}


@pytest.fixture
def wh(tmp_path: Path) -> str:
    """A primary-key table, 6 snapshots, a decoupled changelog lifecycle (expiry keeps changelog-N)."""
    wh = str(tmp_path / "wh")
    P.build_history(wh, commits=6, options={"snapshot.num-retained.max": "10", "changelog.num-retained.max": "50",
                                           "changelog.num-retained.min": "2"})
    return wh


def _doc(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> dict[str, Any]:
    got = main([*args, "-o", "json"])
    out, err = capsys.readouterr()
    assert got == code, f"{args}: exit {got}: {err}{out}"
    doc: dict[str, Any] = json.loads(out)  # exactly one document: json.loads fails on a second one
    return doc


def _changed(capsys: pytest.CaptureFixture[str], wh: str, *args: str, renames: bool = False) -> dict[str, Any]:
    """A changing command: the common shape, and bytes per kind as measured before (a rename
    moves files and deletes none)."""
    before = listing(wh)
    doc = _doc(capsys, *args)
    assert COMMON <= set(doc), sorted(COMMON - set(doc))
    assert doc["dry_run"] is False and set(doc["result"]) == RESULT
    assert doc["total_bytes"] == sum(doc["bytes"].values()) and doc["total_files"] == sum(doc["files"].values())
    if renames:
        assert doc["result"]["deleted"] == {} and doc["writes"], doc
    else:
        bytes_match(before, wh, doc)
    return doc


def _root(wh: str) -> Path:
    return Path(wh) / "db.db" / "orders"


def test_every_deleting_command_counts_the_bytes_of_what_it_deleted(wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    _changed(capsys, wh, "tag", "create", "-w", wh, IDENT, "t1", "--snapshot", "1")
    _changed(capsys, wh, "tag", "create", "-w", wh, IDENT, "t2", "--snapshot", "2")
    _changed(capsys, wh, "branch", "create", "-w", wh, IDENT, "b", "--from-tag", "t2")
    doc = _changed(capsys, wh, "expire", "-w", wh, IDENT, "--retain-min", "2", "--time-retained", "0 s")
    assert doc["result"]["deleted"]["snapshot"] == 4 and doc["result"]["deleted_bytes"]["snapshot"] > 0
    assert (_root(wh) / "changelog" / "changelog-4").exists()  # decoupled: the snapshots live on as changelog-N
    doc = _changed(capsys, wh, "expire-changelog", "-w", wh, IDENT)  # (table options: keeps 50)
    doc = _changed(capsys, wh, "tag", "delete", "-w", wh, IDENT, "t1")
    assert doc["result"]["deleted"]["tag"] == 1 and doc["result"]["deleted_bytes"]["tag"] > 0
    _changed(capsys, wh, "tag", "rename", "-w", wh, IDENT, "t2", "t2b", "--force", renames=True)
    _changed(capsys, wh, "tag", "replace", "-w", wh, IDENT, "t2b", "--snapshot", "6", "--force")
    _changed(capsys, wh, "branch", "rename", "-w", wh, IDENT, "b", "b2", renames=True)
    doc = _changed(capsys, wh, "branch", "drop", "-w", wh, IDENT, "b2")
    assert doc["operation"] == "drop-branch" and doc["action"] == "dropped"
    assert doc["result"]["deleted"]["snapshot"] >= 1 and doc["result"]["deleted"]["schema"] >= 1
    orphan = P.plant_orphan(_root(wh), "data-00000000-0000-0000-0000-000000000000-0.parquet", b"x" * 123)
    doc = _changed(capsys, wh, "clean-orphans", "-w", wh, IDENT, "--older-than", "1 d")
    assert not orphan.exists() and doc["result"]["deleted_bytes"].get("data", 0) >= 123


def test_a_changelog_expiration_counts_its_changelog_files_and_nothing_as_already_gone(
        wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    _changed(capsys, wh, "expire", "-w", wh, IDENT, "--retain-min", "1", "--time-retained", "0 s")
    logs = sorted(p.name for p in (_root(wh) / "changelog").glob("changelog-*"))
    assert len(logs) == 5
    from tablekeeper.core.paimon import table_options
    from tablekeeper.core.paimon.table import open_table

    table_options.alter_options(open_table(wh, IDENT), {"changelog.num-retained.max": "2"}, now_ms=0)
    dry = _doc(capsys, "expire-changelog", "-w", wh, IDENT, "--dry-run")
    assert dry["result"] is None and dry["files"]["changelog-meta"] >= 1 and not dry["unsized"]
    doc = _changed(capsys, wh, "expire-changelog", "-w", wh, IDENT)
    assert doc["result"]["deleted"] == dry["files"] and doc["result"]["deleted_bytes"] == dry["bytes"]
    assert doc["result"]["already_gone"] == {}


def test_branch_fast_forward_and_replace_main_count_the_metadata_they_replace(
        wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    _changed(capsys, wh, "tag", "create", "-w", wh, IDENT, "fork")
    _changed(capsys, wh, "branch", "create", "-w", wh, IDENT, "b", "--from-tag", "fork")
    P.write(P.branch_table(P.catalog(wh), IDENT, "b"), P.rows("2026-02-01", 500))
    doc = _changed(capsys, wh, "branch", "fast-forward", "-w", wh, IDENT, "b")
    assert doc["action"] == "fast-forwarded" and doc["writes"]
    P.write(P.branch_table(P.catalog(wh), IDENT, "b"), P.rows("2026-02-02", 600))
    P.write(P.table_at(wh, IDENT), P.rows("2026-02-03", 700))  # main diverges: its snapshot 8 is replaced
    doc = _changed(capsys, wh, "branch", "replace-main", "-w", wh, IDENT, "b", "--backup", "old")
    assert doc["result"]["deleted"]["snapshot"] >= 2  # main's replaced one, and the branch's own (its directory)


def test_expire_partitions_and_the_listing_commands_print_one_document(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path / "wh")
    t = P.append_table(wh)
    for dt in ("20260101", "20260102", "20260120"):
        P.write(t, P.rows(dt, 1))
    doc = _doc(capsys, "expire-partitions", "-w", wh, IDENT, "--expiration-time", "5 d", "--timestamp-formatter",
               "yyyyMMdd", "--zone-known", "--now", "2026-01-20T12:00:00")
    assert COMMON <= set(doc) and doc["dropped"] == 2 and doc["files"] == {} and doc["partition_files"] == 2
    assert isinstance(_doc(capsys, "tag", "list", "-w", wh, IDENT), list)
    assert isinstance(_doc(capsys, "branch", "list", "-w", wh, IDENT), list)
    assert _doc(capsys, "show", "-w", wh, IDENT)["table"] == IDENT


ERRORS = [
    ("tag", "create", "db.nope", "t"), ("tag", "delete", "db.nope", "t"), ("tag", "rename", "db.nope", "a", "b"),
    ("tag", "replace", "db.nope", "t"), ("tag", "list", "db.nope"), ("tag", "create", "db.orders"),
    ("branch", "create", "db.nope", "b", "--empty"), ("branch", "drop", "db.orders", "nope"),
    ("branch", "fast-forward", "db.orders", "nope"), ("branch", "replace-main", "db.orders", "nope"),
    ("branch", "rename", "db.orders", "nope", "x"), ("branch", "list", "db.nope"),
    ("expire", "db.orders", "--retain-min", "0"), ("expire-changelog", "db.nope"),
    ("expire-partitions", "db.orders", "--expiration-time", "never"),
    ("clean-orphans", "db.orders", "--older-than", "2999-01-01"), ("show", "db.nope"),
]


@pytest.mark.parametrize("args", ERRORS, ids=[" ".join(a[:2]) + ("" if "nope" in " ".join(a) else f" {a[-1]}")
                                               for a in ERRORS])
def test_an_error_is_one_json_document(wh: str, args: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    cut = 2 if args[0] in ("tag", "branch") else 1
    doc = _doc(capsys, *args[:cut], "-w", wh, *args[cut:], code=2)
    assert set(doc) == {"error"} and set(doc["error"]) == {"message", "fix", "kind"}, doc
    assert doc["error"]["message"] and doc["error"]["kind"], doc


@pytest.mark.parametrize("command", ["plan", "apply"])
def test_plan_and_apply_errors_are_one_json_document(tmp_path: Path, command: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: tablekeeper.io/v1alpha1\nkind: PaimonTag\nmetadata: {name: x}\nspec: {}\n")
    doc = _doc(capsys, command, "-f", str(bad), code=2)
    assert set(doc["error"]) == {"message", "fix", "kind"}


def test_tables_never_truncate_off_a_terminal(wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    name = "a-very-long-tag-name-that-no-terminal-column-would-hold-" + "x" * 60
    assert main(["tag", "create", "-w", wh, IDENT, name, "--time-retained", "400 d"]) == 0
    capsys.readouterr()
    assert main(["tag", "list", "-w", wh, IDENT]) == 0
    out = capsys.readouterr().out
    assert name in out and "…" not in out
    header, row = out.splitlines()[:2]
    assert header.split()[:2] == ["tag_name", "snapshot_id"] and row.split()[0] == name
