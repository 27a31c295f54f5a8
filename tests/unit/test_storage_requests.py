"""Request accounting and pacing (core/storage/layers/requests.py): counted by kind, paced by a token
bucket on an injected clock (waits are counted, never measured), shown in the CLI's JSON, the
operator's run status and the Prometheus counter."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import fsspec
import pytest
from click.testing import CliRunner
from prometheus_client import REGISTRY

from tablekeeper.cli.main import cli
from tablekeeper.core import errors
from tablekeeper.core.storage import FileIO
from tablekeeper.core.storage.layers import requests as rq
from tablekeeper.operator.runs import controller as runs
from tablekeeper.operator.runs.report import RunReport
from tests.support.paimon import append_table, rows, write


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(round(seconds, 6))
        self.now += seconds


def test_token_bucket_waits_are_counted_on_an_injected_clock() -> None:
    clock = FakeClock()
    bucket = rq.TokenBucket(5, clock=clock)
    delays = [round(bucket.reserve(), 6) for _ in range(8)]
    assert delays == [0.0] * 5 + [0.2, 0.4, 0.6]  # a burst of 5, then one every 0.2 s, queued
    clock.now += 10  # refilled, but never above the burst
    assert [round(bucket.reserve(), 6) for _ in range(6)] == [0.0] * 5 + [0.2]


def test_pacer_keeps_a_file_io_below_its_cap() -> None:
    clock = FakeClock()
    layer = rq.RequestLayer(rq.Pacer(10, clock=clock, sleep=clock.sleep))
    io = FileIO("file", fsspec.filesystem("file"), requests=layer)
    for _ in range(25):
        io.list_dir("/")
    assert layer.counts.snapshot() == {"list": 25, "total": 25}
    assert len(clock.waits) == 15 and layer.pacer is not None and layer.pacer.waits == 15
    # 25 requests at 10/s with a burst of 10 take 1.5 s of the injected clock
    assert clock.now == pytest.approx(101.5)


def test_pacing_option_is_validated() -> None:
    assert rq.pacing_from_options({}) is None
    assert rq.pacing_from_options({rq.PACING_OPTION: "250"}) == 250.0
    for bad in ("0", "-3", "fast"):
        with pytest.raises(errors.InvalidInputError, match="max-requests-per-second"):
            rq.pacing_from_options({rq.PACING_OPTION: bad})
    io = FileIO.for_uri("/tmp", {rq.PACING_OPTION: "7"})
    assert io.requests.pacer is not None and io.requests.pacer.max_per_second == 7.0


def test_s3_operations_map_to_kinds() -> None:
    assert rq.kind_of_s3_operation("ListObjectsV2") is rq.RequestKind.LIST
    assert rq.kind_of_s3_operation("DeleteObjects") is rq.RequestKind.BULK_DELETE
    assert rq.kind_of_s3_operation("DeleteObject") is rq.RequestKind.DELETE
    assert rq.kind_of_s3_operation("CopyObject") is rq.RequestKind.COPY
    assert rq.kind_of_s3_operation("HeadObject") is rq.RequestKind.HEAD
    assert rq.kind_of_s3_operation("CreateBucket") is rq.RequestKind.OTHER
    assert rq.since({"get": 2, "total": 2}, {"get": 5, "list": 1, "total": 6}) == {"get": 3, "list": 1, "total": 4}


def test_local_calls_are_counted_by_kind(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))
    io.write_new(str(tmp_path / "a"), b"x")
    io.read_bytes(str(tmp_path / "a"))
    io.list_dir(str(tmp_path))
    io.exists(str(tmp_path / "b"))
    io.delete_files([str(tmp_path / "a")])
    assert io.requests.counts.snapshot() == {"delete": 1, "get": 1, "head": 1, "list": 1, "put": 1, "total": 5}


def test_cli_json_shows_requests_and_refuses_a_bad_cap(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    write(append_table(wh), rows("20260101", 0))
    result = CliRunner().invoke(cli, ["tag", "list", "db.orders", "--warehouse", wh, "--output", "json"])
    assert result.exit_code == 0, result.output  # a list: no room for the counts
    result = CliRunner().invoke(cli, ["expire", "db.orders", "--warehouse", wh, "--output", "json", "--dry-run",
                                      "--max-requests-per-second", "1000"])
    assert result.exit_code == 0, result.output
    counted = json.loads(result.output)["requests"]
    assert counted["total"] == sum(v for k, v in counted.items() if k != "total") > 0 and counted["get"] >= 1
    result = CliRunner().invoke(cli, ["expire", "db.orders", "--warehouse", wh, "--dry-run",
                                      "--max-requests-per-second", "0"])
    assert result.exit_code == 2 and "max-requests-per-second" in result.output


def test_run_status_and_metric_carry_the_requests() -> None:
    report = RunReport(dry_run=False, storage_requests={"list": 3, "get": 9, "total": 12})
    assert report.to_status()["storageRequests"] == {"list": 3, "get": 9, "total": 12}
    assert "storageRequests" not in RunReport(dry_run=True).to_status()
    def value(op: str) -> float:
        return REGISTRY.get_sample_value("tablekeeper_storage_requests_total",
                                         {"op": op, "type": "RemoveOrphanFiles"}) or 0.0

    before = value("list"), value("get")
    spec = SimpleNamespace(type="RemoveOrphanFiles")
    runs._record_metrics(spec, "Python", "ns/t", False, report, 1.0, datetime.now(UTC))  # type: ignore[arg-type]
    assert (value("list"), value("get")) == (before[0] + 3, before[1] + 9)
