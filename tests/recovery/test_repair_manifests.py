"""``tablekeeper repair --remove-missing-manifests`` (Paimon's RemoveUnexistingManifestsActionITCase,
ported) and the crash safety of both repairs: a manifest gone from storage makes the latest
snapshot unreadable; the repair (shown first, committed with ``--apply``) commits one snapshot
that lists the other manifests, deletes no file, and pypaimon reads it as the old latest
snapshot without the rows of the lost manifest. Refused while a tag lists the manifest; a crash
at every step, then a rerun, ends as an uninterrupted run."""

from __future__ import annotations

import io
import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import fastavro
import pytest

from tablekeeper.cli.main import main
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.reclaim.reach.reachability import Reachability
from tablekeeper.core.safety.concurrency import seams
from tests.support import paimon as P

T = "db.orders"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = main([*args, "-o", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def _manifests(wh: str, snapshot_id: int, branch: str = "main") -> list[str]:
    """The manifests ``snapshot_id`` lists, base then delta (the order Paimon's reader uses)."""
    table = open_table(wh, T).on_branch(branch)
    snap = table.snapshot(snapshot_id)
    out: list[str] = []
    for name in (snap.base_manifest_list, snap.delta_manifest_list):
        data = Path(table.root, "manifest", str(name)).read_bytes()
        out += [str(r["_FILE_NAME"]) for r in fastavro.reader(io.BytesIO(data)) if isinstance(r, dict)]
    return out


def _manifest_path(wh: str, name: str) -> str:
    return os.path.join(open_table(wh, T).root, "manifest", name)


def _rows(wh: str, branch: str = "main", **options: str) -> Counter[Any]:
    return Counter(P.read_rows(P.table_at(wh, T, branch), options or None))


def test_a_lost_manifest_is_dropped_from_the_latest_snapshot(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=3, primary_key=False)
    before, first = _rows(wh), _rows(wh, **{"scan.snapshot-id": "1"})
    second = _rows(wh, **{"scan.snapshot-id": "2"}) - _rows(wh, **{"scan.snapshot-id": "1"})
    listed = _manifests(wh, 3)
    assert len(listed) == 3
    os.remove(_manifest_path(wh, listed[1]))  # commit 2's manifest, as Paimon's test drops allManifests[1]
    with pytest.raises(Exception):  # noqa: B017 - pypaimon's own error for the missing manifest
        P.read_rows(P.table_at(wh, T))

    listing = P.dir_listing(wh)
    code, doc, _ = _run(capsys, "repair", "-w", wh, T, "--remove-missing-manifests")
    assert code == 0 and doc["dry_run"] is True and doc["action"] == "would-remove"
    assert doc["manifests"]["missing_manifests"] == [listed[1]] and doc["manifests"]["snapshot_id"] == 3
    assert P.dir_listing(wh) == listing  # shown only

    code, doc, _ = _run(capsys, "repair", "-w", wh, T, "--remove-missing-manifests", "--apply")
    assert code == 0 and doc["action"] == "removed" and doc["result"]["removed_manifests"] == 1
    assert set(listing) <= set(P.dir_listing(wh))  # no file deleted
    table = open_table(wh, T)
    latest = table.latest_snapshot()
    assert latest is not None and latest.id == 4 and latest.fields["commitKind"] == "OVERWRITE"
    assert _manifests(wh, 4) == [listed[0], listed[2]]
    assert _rows(wh) == before - second  # as Paimon's test: 2 of the 3 commits' rows
    assert latest.fields["totalRecordCount"] == sum((before - second).values())
    assert _rows(wh, **{"scan.snapshot-id": "1"}) == first  # an older view that lost nothing reads as before

    code, doc, _ = _run(capsys, "repair", "-w", wh, T, "--remove-missing-manifests", "--apply")
    assert code == 0 and doc["action"] == "unchanged" and open_table(wh, T).latest_snapshot_id() == 4
    code, report, _ = _run(capsys, "check", "-w", wh, T)
    assert code == 1 and report["broken_views"] == ["main snapshot 2", "main snapshot 3"]  # expire with time


def test_a_branch_is_repaired_without_touching_main(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=3, primary_key=False)
    assert main(["tag", "create", "-w", wh, T, "t3", "--snapshot", "3"]) == 0
    assert main(["branch", "create", "-w", wh, T, "rt", "--from-tag", "t3"]) == 0
    capsys.readouterr()
    branch = P.table_at(wh, T, "rt")
    for i in range(3):
        P.write(branch, P.orders_rows("2026-01-09", 100 + i * 10, 2))
    latest = open_table(wh, T).on_branch("rt").latest_snapshot_id()
    assert latest == 6
    main_rows, main_listing = _rows(wh), P.dir_listing(os.path.join(open_table(wh, T).root, "snapshot"))
    before = _rows(wh, "rt")
    own = [m for m in _manifests(wh, 6, "rt") if m not in _manifests(wh, 3)]
    lost_rows = _rows(wh, "rt", **{"scan.snapshot-id": "4"}) - _rows(wh, "rt", **{"scan.snapshot-id": "3"})
    os.remove(_manifest_path(wh, own[0]))  # the branch's first own commit

    code, doc, _ = _run(capsys, "repair", "-w", wh, T, "--branch", "rt", "--remove-missing-manifests", "--apply")
    assert code == 0 and doc["manifests"]["missing_manifests"] == [own[0]]
    assert _rows(wh, "rt") == before - lost_rows
    assert _rows(wh) == main_rows  # main is not affected
    assert P.dir_listing(os.path.join(open_table(wh, T).root, "snapshot")) == main_listing


def test_refused_while_a_tag_lists_the_lost_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=3, primary_key=False)
    assert main(["tag", "create", "-w", wh, T, "t3", "--snapshot", "3"]) == 0
    capsys.readouterr()
    os.remove(_manifest_path(wh, _manifests(wh, 3)[0]))
    listing = P.dir_listing(wh)
    for flags in ((), ("--apply",)):
        code, doc, err = _run(capsys, "repair", "-w", wh, T, "--remove-missing-manifests", *flags)
        assert code == 2 and "main tag t3" in err.splitlines()[0] and "tag delete" in doc["error"]["fix"]
        assert P.dir_listing(wh) == listing


def test_both_repairs_in_one_command_make_the_table_readable(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=4, primary_key=False)
    listed = _manifests(wh, 4)
    table = open_table(wh, T)
    reach = Reachability(table)
    def files(sid: int) -> set[str]:
        return {reach.data_paths(ref)[0] for ref in reach.live_files(table.snapshot(sid)).values()}
    [lost_file] = sorted(files(4) - files(3))
    os.remove(_manifest_path(wh, listed[1]))
    os.remove(lost_file)
    code, doc, _ = _run(capsys, "repair", "-w", wh, T, "--remove-missing-manifests", "--remove-missing", "--apply")
    assert code == 0 and doc["result"] == {"removed_entries": 1, "removed_manifests": 1, "deleted": {}}
    assert open_table(wh, T).latest_snapshot_id() == 6
    assert P.read_rows(P.table_at(wh, T))  # readable again


def _crash_then_rerun(capsys: pytest.CaptureFixture[str], wh: str, args: tuple[str, ...], at: str) -> None:
    class Crash(Exception):
        pass

    def crash(name: str) -> None:
        if name == at:
            raise Crash(name)

    with seams.installed(crash), pytest.raises(Crash):
        main(["repair", "-w", wh, T, *args])
    capsys.readouterr()
    assert main(["repair", "-w", wh, T, *args]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("at", ["repair-manifests:before:lists", "repair-manifests:before:commit",
                                "repair-manifests:before:latest", "repair:before:commit", "repair:after:commit"])
def test_crash_at_each_step_then_rerun_same_end_state(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      at: str) -> None:
    clean, crashed = str(tmp_path / "clean"), str(tmp_path / "crashed")
    P.build_history(clean, commits=3, primary_key=False)
    manifests = at.startswith("repair-manifests")
    if manifests:
        os.remove(_manifest_path(clean, _manifests(clean, 3)[1]))
    else:
        table = open_table(clean, T)
        reach = Reachability(table)
        live = {reach.data_paths(ref)[0] for ref in reach.live_files(table.snapshot(3)).values()}
        before = {reach.data_paths(ref)[0] for ref in reach.live_files(table.snapshot(2)).values()}
        [lost] = sorted(live - before)
        os.remove(lost)
    shutil.copytree(clean, crashed)
    args = ("--remove-missing-manifests" if manifests else "--remove-missing", "--apply")
    assert main(["repair", "-w", clean, T, *args]) == 0
    capsys.readouterr()
    _crash_then_rerun(capsys, crashed, args, at)
    for wh in (clean, crashed):
        assert open_table(wh, T).latest_snapshot_id() == 4
    assert _rows(crashed) == _rows(clean)
    snap = {wh: open_table(wh, T).snapshot(4) for wh in (clean, crashed)}
    assert snap[crashed].total_record_count == snap[clean].total_record_count
    if manifests:  # the lists are named by the repair's inputs: a rerun rewrote the same files
        assert _manifests(crashed, 4) == _manifests(clean, 4)
        assert sorted(os.listdir(os.path.join(crashed, "db.db", "orders", "manifest"))) == \
            sorted(os.listdir(os.path.join(clean, "db.db", "orders", "manifest")))
