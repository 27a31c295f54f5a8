"""``tablekeeper explain`` on pypaimon-written tables: what holds the oldest retained snapshot,
and each pin's count equals what ``expire`` then removes once that pin is gone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablekeeper.cli.main import main
from tablekeeper.core.paimon.table import open_table
from tests.recovery.cli import ok
from tests.support import paimon as P

T = "db.orders"



def test_consumer_pin_counts_what_expire_then_removes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=12, options={"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"})
    ok(capsys, "tag", "create", "-w", wh, T, "t2", "--snapshot", "2")
    ok(capsys, "consumer", "reset", "-w", wh, T, "stopped", "--next-snapshot", "4")
    ok(capsys, "branch", "create", "-w", wh, T, "dev", "--from-tag", "t2")
    [main_pins, dev] = ok(capsys, "explain", "-w", wh, T)["branches"]
    assert dev["branch"] == "dev"
    assert (main_pins["earliest"], main_pins["latest"], main_pins["expirable_now"], main_pins["oldest_retained"]) \
        == (1, 12, 3, 4)
    assert main_pins["held_by"] == "consumer stopped at 4"
    pins = {(p["kind"], p["name"]): p for p in main_pins["pins"]}
    consumer = pins[("consumer", "stopped")]
    assert consumer["holds_oldest"] is True and consumer["snapshots_held"] == 8  # 4..11 (min 1 keeps 12)
    assert pins[("tag", "t2")]["snapshot_id"] == 2 and pins[("fork point", "dev")]["snapshot_id"] == 2
    doc = ok(capsys, "expire", "-w", wh, T)
    assert doc["files"]["snapshot"] == main_pins["expirable_now"]
    ok(capsys, "consumer", "clear", "-w", wh, T, "--including", "stopped")
    doc = ok(capsys, "expire", "-w", wh, T)
    assert doc["files"]["snapshot"] == consumer["snapshots_held"]
    assert doc["total_bytes"] == consumer["bytes_held"] > 0  # explain's bytes: what expire then deleted
    assert open_table(wh, T).snapshot_ids() == [12]
    [after, _dev] = ok(capsys, "explain", "-w", wh, T)["branches"]
    assert after["expirable_now"] == 0 and after["held_by"] == "snapshot.num-retained.min=1"
    tag = next(p for p in after["pins"] if p["kind"] == "tag")
    doc = ok(capsys, "tag", "delete", "-w", wh, T, "t2", "--force")  # (dev was created from it)
    assert doc["total_bytes"] - doc["bytes"].get("tag", 0) == tag["bytes_held"]


def test_retain_min_and_time_pins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path)
    P.build_history(wh, commits=6, options={"snapshot.num-retained.min": "3"})  # time-retained: 1 h default
    [b] = ok(capsys, "explain", "-w", wh, T)["branches"]
    assert b["expirable_now"] == 0 and "snapshot.time-retained" in b["held_by"]
    pins = {p["kind"]: p for p in b["pins"]}
    assert pins["time-retained"]["holds_oldest"] is True
    assert "retain-min" not in pins  # without it alone nothing more expires: the time rule holds every snapshot
    code = main(["explain", "-w", wh, T])
    out, _ = capsys.readouterr()
    assert code == 0 and "held by snapshot" in out
