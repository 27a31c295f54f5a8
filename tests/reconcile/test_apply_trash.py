"""``retention.trash.keep`` through ``plan/apply -f``: what applying removes (a tag the manifests
no longer declare, expired snapshots) goes into one trash run of the table, which apply names, and
``tablekeeper undo`` puts it back: every view reads as before (pypaimon). A cluster policy's
minimum window applies to a table that sets none; under ``enforcement: TableOptions`` the window is
written as the table option ad-hoc commands read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tablekeeper.cli.main import main
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.safety import trash
from tests.support import paimon as P

HEAD = "apiVersion: tablekeeper.io/v1alpha1\n"
T = "db.orders"


def manifests(wh: Path, *, tag: bool, retention: str, enforcement: str = "Operator", cluster: str = "") -> str:
    docs = [
        HEAD + f"kind: PaimonCatalog\nmetadata: {{name: c, namespace: ns}}\nspec: {{warehouse: '{wh}'}}\n",
        HEAD + "kind: PaimonTable\nmetadata: {name: t, namespace: ns}\n"
               "spec:\n  catalogRef: {kind: PaimonCatalog, name: c}\n  database: db\n  table: orders\n"
               f"  enforcement: {enforcement}\n  retention: {retention}\n",
    ]
    if tag:
        docs.append(HEAD + "kind: PaimonTag\nmetadata: {name: audit, namespace: ns}\n"
                           "spec: {tableRef: {name: t}, snapshotId: 2}\n")
    if cluster:
        docs.append(HEAD + f"kind: ClusterPaimonRetentionPolicy\nmetadata: {{name: undo}}\nspec: {cluster}\n")
    return "---\n".join(docs)


def _applied_twice(tmp_path: Path, second: str) -> tuple[Path, Path, dict[str, object]]:
    """db.orders with 6 snapshots and the tag ``audit`` at 2 (applied); then ``second`` written as
    the manifests. Returns the warehouse, the manifests' folder and the views before the second apply."""
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=6)
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "all.yaml").write_text(manifests(wh, tag=True, retention="{}"))
    assert main(["apply", "-f", str(folder)]) == 0
    assert open_table(str(wh), T).tag_names() == ["audit"]
    before = P.snapshot_views(str(wh), T)
    (folder / "all.yaml").write_text(second.replace("WH", str(wh)))
    return wh, folder, before


def test_apply_keeps_what_it_removes_and_undo_puts_it_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh, folder, before = _applied_twice(tmp_path, manifests(
        Path("WH"), tag=False, retention="{snapshots: {minRetained: 1, maxRetained: 1}, trash: {keep: 7 d}}"))
    capsys.readouterr()
    assert main(["apply", "-f", str(folder)]) == 0
    out = capsys.readouterr().out
    table = open_table(str(wh), T)
    assert table.snapshot_ids() == [6] and table.tag_names() == []
    [record] = trash.list_runs(table.file_io, table.root)
    assert f"kept in the trash as run {record.run_id} until " in out
    assert f"'tablekeeper undo {T} {record.run_id}' puts it back" in out

    assert main(["undo", "-w", str(wh), T, record.run_id]) == 0
    assert P.snapshot_views(str(wh), T) == before  # the tag and every snapshot, as before the apply


def test_a_cluster_minimum_gives_apply_a_window_the_table_does_not_set(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh, folder, before = _applied_twice(tmp_path, manifests(
        Path("WH"), tag=False, retention="{snapshots: {minRetained: 1, maxRetained: 1}}",
        cluster="{constraints: {trash: {keep: {min: 2 d}}}}"))
    capsys.readouterr()
    assert main(["apply", "-f", str(folder), "-o", "json"]) == 0
    applied = json.loads(capsys.readouterr().out)
    [kept] = [k for p in applied["passes"] for k in p.get("trash", [])]
    assert kept["table"] == T and kept["movedFiles"] > 0
    assert main(["undo", "-w", str(wh), T, kept["run"]]) == 0
    assert P.snapshot_views(str(wh), T) == before


def test_under_table_options_the_window_is_written_for_ad_hoc_commands(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=3)
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "all.yaml").write_text(manifests(wh, tag=False, retention="{trash: {keep: 5 d}}",
                                               enforcement="TableOptions"))
    assert main(["apply", "-f", str(folder)]) == 0
    assert open_table(str(wh), T).options()["trash.keep"] == "5 d"
    capsys.readouterr()
    before = P.snapshot_views(str(wh), T)
    assert main(["expire", "-w", str(wh), T, "--retain-min", "1", "--retain-max", "1"]) == 0
    assert "kept in the trash as run " in capsys.readouterr().out  # the ad-hoc command read the option
    table = open_table(str(wh), T)
    [record] = trash.list_runs(table.file_io, table.root)
    assert main(["undo", "-w", str(wh), T, record.run_id]) == 0
    assert P.snapshot_views(str(wh), T) == before


def test_a_window_of_zero_is_refused_and_nothing_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=3)
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "all.yaml").write_text(manifests(wh, tag=False, retention="{trash: {keep: 0 s}}"))
    listing = P.dir_listing(wh)
    assert main(["apply", "-f", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "trash.keep" in err and "positive duration" in err
    assert P.dir_listing(wh) == listing
