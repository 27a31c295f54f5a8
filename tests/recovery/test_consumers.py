"""``tablekeeper consumer`` on pypaimon-written tables (Paimon's ConsumerManagerTest and the
clear_consumers / reset_consumer procedure tests, ported): a consumer pinning 50 snapshots
expires by its file's modification time, and the next ``expire`` reclaims them."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tablekeeper.core.paimon.table import open_table
from tests.recovery.cli import ok, run
from tests.support import paimon as P

T = "db.orders"




def _age(wh: str, consumer: str, days: float) -> None:
    path = Path(wh) / "db.db" / "orders" / "consumer" / f"consumer-{consumer}"
    then = time.time() - days * 86_400
    os.utime(path, (then, then))


def test_a_consumer_pinning_50_snapshots_expires_and_expire_reclaims_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=52)
    ok(capsys, "consumer", "reset", "-w", wh, T, "stopped-job", "--next-snapshot", "2")
    ok(capsys, "consumer", "reset", "-w", wh, T, "live-job", "--next-snapshot", "52")
    _age(wh, "stopped-job", 8)
    retention = ("--retain-min", "1", "--retain-max", "1", "--time-retained", "1 ms")
    ok(capsys, "expire", "-w", wh, T, *retention)
    assert open_table(wh, T).snapshot_ids() == list(range(2, 53))  # the consumer holds 2..52
    rows = {r["consumer_id"]: r for r in ok(capsys, "consumer", "list", "-w", wh, T, "--older-than", "7 d")}
    assert (rows["stopped-job"]["next_snapshot_id"], rows["stopped-job"]["snapshots_held"],
            rows["stopped-job"]["expired"]) == (2, 51, True)
    assert rows["live-job"]["expired"] is False
    listing = P.dir_listing(wh)
    doc = ok(capsys, "consumer", "expire", "-w", wh, T, "--older-than", "7 d", "--dry-run")
    assert doc["consumers"] == ["stopped-job"] and P.dir_listing(wh) == listing
    before = P.snapshot_views(wh, T)
    doc = ok(capsys, "consumer", "expire", "-w", wh, T, "--older-than", "7 d")
    assert doc["consumers"] == ["stopped-job"] and doc["result"]["deleted"] == {"other": 1}
    assert [c.consumer_id for c in open_table(wh, T).consumers()] == ["live-job"]
    doc = ok(capsys, "expire", "-w", wh, T, *retention)
    assert doc["files"]["snapshot"] == 50  # 2..51: the live consumer holds 52
    assert open_table(wh, T).snapshot_ids() == [52]
    assert P.snapshot_views(wh, T)["main@latest"] == before["main@latest"]


def test_expire_uses_the_table_option_and_refuses_without_one(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    unset, configured = str(tmp_path / "unset"), str(tmp_path / "set")
    P.build_history(unset, commits=2)
    P.build_history(configured, commits=2, options={"consumer.expiration-time": "1 h"})
    for wh in (unset, configured):
        ok(capsys, "consumer", "reset", "-w", wh, T, "c1", "--next-snapshot", "1")
        ok(capsys, "consumer", "reset", "-w", wh, T, "fresh", "--next-snapshot", "1")
        _age(wh, "c1", 1)
    listing = P.dir_listing(unset)
    code, _out, err = run(capsys, "consumer", "expire", "-w", unset, T)
    assert code == 2 and "consumer.expiration-time" in err.splitlines()[0] and P.dir_listing(unset) == listing
    doc = ok(capsys, "consumer", "expire", "-w", configured, T)
    assert doc["consumers"] == ["c1"]
    assert [c.consumer_id for c in open_table(configured, T).consumers()] == ["fresh"]


def test_clear_by_patterns_and_reset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=3)
    for cid in ("job-a", "job-b", "keep-job", "other"):
        ok(capsys, "consumer", "reset", "-w", wh, T, cid, "--next-snapshot", "1")
    doc = ok(capsys, "consumer", "clear", "-w", wh, T, "--including", "job-.*|keep-.*", "--excluding", "keep-.*")
    assert doc["consumers"] == ["job-a", "job-b"]
    assert [c.consumer_id for c in open_table(wh, T).consumers()] == ["keep-job", "other"]
    ok(capsys, "consumer", "reset", "-w", wh, T, "other", "--next-snapshot", "3")
    assert {c.consumer_id: c.next_snapshot for c in open_table(wh, T).consumers()} == {"keep-job": 1, "other": 3}
    ok(capsys, "consumer", "reset", "-w", wh, T, "other")  # no snapshot: deleted, as reset_consumer
    ok(capsys, "consumer", "clear", "-w", wh, T)  # default: every consumer
    assert open_table(wh, T).consumers() == []


@pytest.mark.parametrize("args, words", [
    (("reset", "c1", "--next-snapshot", "99"), "snapshot 99 does not exist"),
    (("reset", "ghost"), "does not exist"),
    (("clear", "--including", "("), "not a regular expression"),
    (("expire", "--older-than", "soon"), "older-than"),
])
def test_bad_input_exit_2_nothing_changed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          args: tuple[str, ...], words: str) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=2)
    ok(capsys, "consumer", "reset", "-w", wh, T, "c1", "--next-snapshot", "1")
    listing = P.dir_listing(wh)
    code, _out, err = run(capsys, "consumer", args[0], "-w", wh, T, *args[1:])
    assert code == 2 and err.startswith("error: ") and words in err.splitlines()[0], err
    assert P.dir_listing(wh) == listing
