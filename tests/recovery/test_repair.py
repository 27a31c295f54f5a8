"""``tablekeeper repair --remove-missing`` on pypaimon-written tables (Paimon's
RemoveUnexistingFilesActionITCase, ported): a data file gone from storage makes the latest
snapshot unreadable; the repair (shown first, committed with ``--apply``) commits one snapshot
without it, deletes no file, and pypaimon reads the new latest snapshot as the old one minus that
file's rows, every other view as before. Refused while a tag reads the missing file; a rerun and a
writer's commit in between are safe."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.cli.main import main
from tablekeeper.core import errors, recovery
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.reclaim.reach.reachability import Reachability
from tests.support import paimon as P

T = "db.orders"


def _data_paths(wh: str, snapshot_id: int) -> set[str]:
    table = open_table(wh, T)
    reach = Reachability(table)
    return {reach.data_paths(ref)[0] for ref in reach.live_files(table.snapshot(snapshot_id)).values()}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = main([*args, "-o", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def test_a_lost_data_file_is_removed_from_the_latest_snapshot(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=4, primary_key=False)
    assert main(["tag", "create", "-w", wh, T, "t1", "--snapshot", "2"]) == 0
    capsys.readouterr()
    [lost] = sorted(_data_paths(wh, 4) - _data_paths(wh, 3))  # written by the last commit only
    before = P.snapshot_views(wh, T)
    os.remove(lost)
    with pytest.raises(Exception):  # noqa: B017 - pypaimon's own error for the missing file
        P.read_rows(P.table_at(wh, T))

    listing = P.dir_listing(wh)
    code, doc, _ = _run(capsys, "repair", "-w", wh, T, "--remove-missing")
    assert code == 0 and doc["dry_run"] is True and doc["action"] == "would-remove"
    assert doc["missing_data_files"] == [lost] and doc["snapshot_id"] == 4 and doc["refused"] is False
    assert P.dir_listing(wh) == listing  # shown only

    code, doc, _ = _run(capsys, "repair", "-w", wh, T, "--remove-missing", "--apply")
    assert code == 0 and doc["action"] == "removed" and doc["removed_entries"] == 1
    table = open_table(wh, T)
    assert table.snapshot_ids() == [1, 2, 3, 4, 5]
    assert set(listing) - set(P.dir_listing(wh)) == set()  # no file deleted
    t = P.table_at(wh, T)
    latest = P.read_rows(t)
    written_last = [tuple(sorted(r.items())) for r in P.orders_rows("2026-01-01", 6, 4)]
    assert Counter(latest) == Counter(before["main@latest"]) - Counter(written_last)
    for sid in (1, 2, 3):  # snapshot 4 still names the lost file: it stays broken until it expires
        assert P.read_rows(t, {"scan.snapshot-id": str(sid)}) == before[f"main@snapshot-{sid}"]
    assert P.read_rows(t, {"scan.tag-name": "t1"}) == before["main@tag-t1"]

    # a rerun finds nothing left to do; check names only the old latest snapshot, which expires with it
    code, doc, _ = _run(capsys, "repair", "-w", wh, T, "--remove-missing", "--apply")
    assert code == 0 and doc["action"] == "unchanged" and open_table(wh, T).snapshot_ids() == [1, 2, 3, 4, 5]
    code, report, _ = _run(capsys, "check", "-w", wh, T)
    assert code == 1 and report["broken_views"] == ["main snapshot 4"]


def test_refused_while_a_tag_reads_the_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=3, primary_key=False)
    assert main(["tag", "create", "-w", wh, T, "t1", "--snapshot", "1"]) == 0
    capsys.readouterr()
    [shared] = sorted(_data_paths(wh, 1))  # snapshot 1's file: the tag and the latest read it
    os.remove(shared)
    listing = P.dir_listing(wh)
    for flags in ((), ("--apply",)):
        code, doc, err = _run(capsys, "repair", "-w", wh, T, "--remove-missing", *flags)
        assert code == 2 and "main tag t1" in err.splitlines()[0] and "tag delete" in doc["error"]["fix"]
        assert P.dir_listing(wh) == listing


def test_without_a_repair_named_it_says_what_to_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=1, primary_key=False)
    code, _doc, err = _run(capsys, "repair", "-w", wh, T)
    assert code == 2 and "--remove-missing" in err.strip().splitlines()[0]


def test_a_commit_since_the_plan_stops_the_repair_and_a_rerun_finishes(tmp_path: Path) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=3, primary_key=False)
    [lost] = sorted(_data_paths(wh, 3) - _data_paths(wh, 2))
    os.remove(lost)
    table = open_table(wh, T)
    plan = recovery.plan_remove_missing(table)
    assert plan.files == (lost,)
    P.write(P.table_at(wh, T), P.orders_rows("2026-01-02", 100, 2))  # a writer commits snapshot 4
    listing = P.dir_listing(wh)
    with pytest.raises(errors.ConcurrentModificationError):
        recovery.remove_missing(table, plan)
    assert P.dir_listing(wh) == listing
    again = recovery.plan_remove_missing(table)
    assert again.snapshot_id == 4 and recovery.remove_missing(table, again) == 1
    assert P.read_rows(P.table_at(wh, T))  # readable again


def test_a_primary_key_table_is_readable_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=4)
    [lost, *_] = sorted(_data_paths(wh, 4) - _data_paths(wh, 3))
    os.remove(lost)
    code, doc, _ = _run(capsys, "repair", "-w", wh, T, "--remove-missing", "--apply")
    assert code == 0 and doc["missing_data_files"] == [lost] and doc["removed_entries"] == 1
    assert P.read_rows(P.table_at(wh, T))
    code, report, _ = _run(capsys, "check", "-w", wh, T)
    assert report["broken_views"] == ["main snapshot 4"]
