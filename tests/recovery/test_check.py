"""``tablekeeper check`` on pypaimon-written tables: a healthy table (with tags and a branch) is
ok; a deleted data file, a deleted manifest and a truncated file are found, with the views they
break; exit 1 then, and nothing is changed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.cli.main import main
from tablekeeper.core.paimon import manifests
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.reclaim.reach.reachability import Reachability
from tests.support import paimon as P

T = "db.orders"


@pytest.fixture
def wh(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    w = str(tmp_path)
    P.build_history(w, commits=4)
    assert main(["tag", "create", "-w", w, T, "t1", "--snapshot", "2"]) == 0
    assert main(["branch", "create", "-w", w, T, "dev", "--from-tag", "t1"]) == 0
    capsys.readouterr()
    return w


def check(capsys: pytest.CaptureFixture[str], wh: str) -> tuple[int, dict[str, Any]]:
    code = main(["check", "-w", wh, T, "-o", "json"])
    out, _err = capsys.readouterr()
    return code, json.loads(out)


def _latest_data_file(wh: str) -> str:
    table = open_table(wh, T)
    snap = table.latest_snapshot()
    assert snap is not None
    reach = Reachability(table)
    ref = next(iter(reach.live_files(snap).values()))
    return reach.data_paths(ref)[0]


def test_a_healthy_table_is_ok(wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = check(capsys, wh)
    assert code == 0 and doc["ok"] is True and doc["problems"] == []
    assert doc["views_checked"] == 4 + 1 + 2  # snapshots, tag, the branch's snapshot and tag
    assert doc["files_checked"] > 10


def test_a_deleted_data_file_breaks_the_views_that_read_it(wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = _latest_data_file(wh)
    os.remove(path)
    listing = P.dir_listing(wh)
    code, doc = check(capsys, wh)
    assert code == 1 and doc["ok"] is False and P.dir_listing(wh) == listing
    [problem] = doc["problems"]
    assert (problem["kind"], problem["path"], problem["problem"]) == ("data", path, "missing")
    assert "main snapshot 4" in problem["views"]
    code = main(["check", "-w", wh, T])
    out, _ = capsys.readouterr()
    assert code == 1 and "BROKEN" in out and path in out


def test_a_truncated_data_file(wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = _latest_data_file(wh)
    with open(path, "r+b") as f:
        f.truncate(10)
    code, doc = check(capsys, wh)
    [problem] = doc["problems"]
    assert code == 1 and (problem["path"], problem["problem"], problem["actual_size"]) == (path, "size", 10)
    assert problem["expected_size"] > 10


def test_a_deleted_manifest_breaks_every_view_that_lists_it(wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    table = open_table(wh, T)
    manifest_dir = Path(table.shared_dir("manifest"))
    [meta] = manifests.read_manifest_list(table.file_io, str(manifest_dir / str(table.snapshot(1).delta_manifest_list)))
    os.remove(manifest_dir / meta.file_name)
    code, doc = check(capsys, wh)
    assert code == 1
    [gone] = [p for p in doc["problems"] if p["path"] == str(manifest_dir / meta.file_name)]
    assert gone["problem"] == "missing" and "main snapshot 1" in gone["views"] and "main tag t1" in gone["views"]
    assert set(doc["broken_views"]) >= {"main snapshot 1", "main tag t1"}
