"""``tablekeeper rollback`` on pypaimon-written tables (Paimon's rollback_to_as_latest tests,
ported: RollbackToAsLatestProcedureITCase): LATEST reads the target, every earlier view reads
as before, nothing is deleted; bad input changes nothing; a crash at every step then a rerun
ends in the same state; a pypaimon commit and our expiration work after it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tablekeeper.cli.main import main
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.safety.concurrency import seams
from tests.recovery.cli import ok, run
from tests.support import paimon as P

T = "db.orders"


@pytest.fixture
def wh(tmp_path: Path) -> str:
    P.build_history(str(tmp_path), commits=4)
    return str(tmp_path)




def files(wh: str) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), wh) for d, _, fs in os.walk(wh) for f in fs}


def test_restores_a_snapshot_as_latest_and_deletes_nothing(wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = P.snapshot_views(wh, T)
    kept = files(wh)
    doc = ok(capsys, "rollback", "-w", wh, T, "--to-snapshot", "2", "--keep-as-tag", "before-rollback")
    assert (doc["action"], doc["previous_snapshot_id"], doc["target_snapshot_id"], doc["current_snapshot_id"]) \
        == ("roll-back", 4, 2, 5)
    after = P.snapshot_views(wh, T)
    assert after["main@latest"] == before["main@snapshot-2"]
    assert after["main@tag-before-rollback"] == before["main@snapshot-4"]
    assert after["main@tag-rollback-to-as-latest-2-4"] == before["main@snapshot-2"]
    assert {k: v for k, v in after.items() if k in before and k != "main@latest"} == \
        {k: v for k, v in before.items() if k != "main@latest"}
    assert kept <= files(wh)  # nothing deleted
    # a writer commits after it: the new rows land on the restored state
    table = P.table_at(wh, T)
    P.write(table, P.orders_rows("2026-01-09", 1000, 2))
    latest = P.read_rows(P.table_at(wh, T))
    assert len(latest) == len(before["main@snapshot-2"]) + 2 and all(r in latest for r in before["main@snapshot-2"])


def test_to_tag_and_to_timestamp(wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    ok(capsys, "tag", "create", "-w", wh, T, "t1", "--snapshot", "1")
    before = P.snapshot_views(wh, T)
    doc = ok(capsys, "rollback", "-w", wh, T, "--to-tag", "t1")
    assert doc["target"] == "tag t1" and doc["current_snapshot_id"] == 5
    assert P.snapshot_views(wh, T)["main@latest"] == before["main@tag-t1"]
    snap3 = open_table(wh, T).snapshot(3)
    doc = ok(capsys, "rollback", "-w", wh, T, "--to-timestamp", str(snap3.time_millis))
    assert (doc["target_snapshot_id"], doc["current_snapshot_id"]) == (3, 6)
    assert P.snapshot_views(wh, T)["main@latest"] == before["main@snapshot-3"]
    # rolling back to what LATEST already reads changes nothing
    listing = P.dir_listing(wh)
    doc = ok(capsys, "rollback", "-w", wh, T, "--to-snapshot", "3")
    assert doc["action"] == "unchanged" and P.dir_listing(wh) == listing


def test_dry_run_writes_nothing(wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    listing = P.dir_listing(wh)
    doc = ok(capsys, "rollback", "-w", wh, T, "--to-snapshot", "1", "--dry-run")
    assert doc["action"] == "would-roll-back" and doc["dry_run"] is True
    assert any(w.endswith("snapshot/snapshot-5") for w in doc["writes"])
    assert P.dir_listing(wh) == listing


@pytest.mark.parametrize("args, words", [
    (("--to-snapshot", "9"), "newer than the latest"),
    (("--to-snapshot", "0"), "does not exist"),
    (("--to-tag", "nope"), "tag 'nope' does not exist"),
    (("--to-timestamp", "1000"), "at or before"),
    ((), "exactly one"),
    (("--to-snapshot", "1", "--to-tag", "x"), "exactly one"),
    (("--to-snapshot", "1", "--keep-as-tag", "12"), "tag"),
    (("--to-snapshot", "1", "--branch", "nobranch"), "branch"),
])
def test_bad_input_one_line_exit_2_nothing_changed(wh: str, capsys: pytest.CaptureFixture[str],
                                                   args: tuple[str, ...], words: str) -> None:
    listing = P.dir_listing(wh)
    code, out, err = run(capsys, "rollback", "-w", wh, T, *args)
    assert code == 2, (out, err)
    first, *rest = err.strip().splitlines()
    assert first.startswith("error: ") and words in first, err
    assert all(line.startswith("  fix: ") for line in rest)
    assert P.dir_listing(wh) == listing


class Crash(Exception):
    pass


def _crash_then_rerun(capsys: pytest.CaptureFixture[str], wh: str, args: tuple[str, ...], at: str) -> None:
    """``rollback ARGS`` crashes at seams point ``at``, then runs again to its end."""
    def crash(name: str) -> None:
        if name == at:
            raise Crash(name)

    with seams.installed(crash), pytest.raises(Crash):
        main(["rollback", "-w", wh, T, *args])
    capsys.readouterr()
    ok(capsys, "rollback", "-w", wh, T, *args)


@pytest.mark.parametrize("at", ["rollback:before:tags", "rollback:before:manifest-lists",
                                "rollback:before:commit", "rollback:before:latest"])
def test_crash_at_each_step_then_rerun_same_end_state(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      at: str) -> None:
    clean, crashed = str(tmp_path / "clean"), str(tmp_path / "crashed")
    P.build_history(clean, commits=4)
    shutil.copytree(clean, crashed)
    args = ("--to-snapshot", "2", "--keep-as-tag", "head")
    ok(capsys, "rollback", "-w", clean, T, *args)
    _crash_then_rerun(capsys, crashed, args, at)
    assert files(crashed) == files(clean)  # (manifest lists are named by the rollback's inputs)
    assert P.snapshot_views(crashed, T) == P.snapshot_views(clean, T)
    assert open_table(crashed, T).latest_snapshot_id() == 5


def test_on_a_branch(wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    ok(capsys, "tag", "create", "-w", wh, T, "base", "--snapshot", "3")
    ok(capsys, "branch", "create", "-w", wh, T, "dev", "--from-tag", "base")
    P.write(P.table_at(wh, T, "dev"), P.orders_rows("2026-01-05", 500, 2))
    before = P.snapshot_views(wh, T)
    doc = ok(capsys, "rollback", "-w", wh, T, "--branch", "dev", "--to-snapshot", "3")
    assert doc["branch"] == "dev" and doc["current_snapshot_id"] == 5
    after = P.snapshot_views(wh, T)
    assert after["dev@latest"] == before["dev@snapshot-3"]
    assert {k: v for k, v in after.items() if k in before and k != "dev@latest"} == \
        {k: v for k, v in before.items() if k != "dev@latest"}


def test_expiration_after_rollback_keeps_the_restored_snapshot_readable(
        wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = P.snapshot_views(wh, T)
    ok(capsys, "rollback", "-w", wh, T, "--to-snapshot", "1")
    for i in range(3):
        P.write(P.table_at(wh, T), P.orders_rows("2026-01-07", 900 + i, 1))
    ok(capsys, "expire", "-w", wh, T, "--retain-min", "1", "--retain-max", "1", "--time-retained", "1 ms")
    latest = P.read_rows(P.table_at(wh, T))
    assert all(r in latest for r in before["main@snapshot-1"]) and len(latest) == len(before["main@snapshot-1"]) + 3
    assert P.snapshot_views(wh, T)["main@tag-rollback-to-as-latest-1-4"] == before["main@snapshot-1"]


def test_discard_later_deletes_later_history_and_keeps_what_others_use(
        wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    ok(capsys, "tag", "create", "-w", wh, T, "early", "--snapshot", "2")
    ok(capsys, "tag", "create", "-w", wh, T, "late", "--snapshot", "4")
    ok(capsys, "branch", "create", "-w", wh, T, "dev", "--from-tag", "early")
    before = P.snapshot_views(wh, T)
    listing = P.dir_listing(wh)
    dry = ok(capsys, "rollback", "-w", wh, T, "--to-snapshot", "2", "--discard-later", "--dry-run")
    assert dry["files"]["snapshot"] == 2 and dry["files"]["tag"] == 1 and dry["files"]["data"] > 0
    assert P.dir_listing(wh) == listing
    doc = ok(capsys, "rollback", "-w", wh, T, "--to-snapshot", "2", "--discard-later")
    assert doc["result"]["deleted"] == dry["files"]  # the dry run's counts are what the run deleted
    table = open_table(wh, T)
    assert table.snapshot_ids() == [1, 2] and table.tag_names() == ["early"] and table.latest_snapshot_id() == 2
    after = P.snapshot_views(wh, T)
    assert after["main@latest"] == before["main@snapshot-2"]
    assert {k: v for k, v in after.items() if k != "main@latest"} == \
        {k: v for k, v in before.items() if k in after and k != "main@latest"}
    P.write(P.table_at(wh, T), P.orders_rows("2026-01-09", 700, 2))  # a writer continues from the target
    assert open_table(wh, T).latest_snapshot_id() == 3


@pytest.mark.parametrize("setup, args, words", [
    (("consumer", "reset", "{wh}", T, "job", "--next-snapshot", "4"), ("--to-snapshot", "2"), "consumer(s) job"),
    (("tag", "create", "{wh}", T, "t3", "--snapshot", "3"), ("--to-snapshot", "2", "--keep-as-tag", "x"), "keep-as-tag"),
    (("tag", "create", "{wh}", T, "t3", "--snapshot", "3"), ("--to-snapshot", "2", "--branch", "dev"), "main only"),
])
def test_discard_later_refusals_change_nothing(wh: str, capsys: pytest.CaptureFixture[str], setup: tuple[str, ...],
                                               args: tuple[str, ...], words: str) -> None:
    ok(capsys, "tag", "create", "-w", wh, T, "base", "--snapshot", "1")
    ok(capsys, "branch", "create", "-w", wh, T, "dev", "--from-tag", "base")
    ok(capsys, setup[0], setup[1], "-w", *[s.format(wh=wh) for s in setup[2:]])
    listing = P.dir_listing(wh)
    code, _out, err = run(capsys, "rollback", "-w", wh, T, *args, "--discard-later")
    assert code == 2 and words in err.splitlines()[0], err
    assert P.dir_listing(wh) == listing


@pytest.mark.parametrize("at", ["rollback-discard:intent", "rollback-discard:unpublished", "rollback-discard:verified",
                                "before:delete:data", "before:delete:manifest"])
def test_discard_later_crash_then_rerun_same_end_state(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       at: str) -> None:
    clean, crashed = str(tmp_path / "clean"), str(tmp_path / "crashed")
    P.build_history(clean, commits=5)
    ok(capsys, "tag", "create", "-w", clean, T, "late", "--snapshot", "4")
    shutil.copytree(clean, crashed)
    args = ("--to-snapshot", "2", "--discard-later")
    ok(capsys, "rollback", "-w", clean, T, *args)
    _crash_then_rerun(capsys, crashed, args, at)
    assert files(crashed) == files(clean)
    assert P.snapshot_views(crashed, T) == P.snapshot_views(clean, T)
