"""The operator's logs (issue 25, point 6): one line per action taken or refused, naming the
object, its table and what was done; Kopf's per-handler "succeeded" lines only at DEBUG; a
failure at WARNING with its reason, never "succeeded"; ``--log-format json``."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tablekeeper.cli.main import main as cli_main
from tablekeeper.operator import logs
from tablekeeper.operator.status import errors
from tablekeeper.operator.status.errors import Failure
from tablekeeper.operator.status.outcome import Outcome
from tests.operator.conftest import Harness, basic_objects, obj
from tests.support.k8s import eventually


class Records(logging.Handler):
    """Every record that reaches the root logger, at any level, formatted by the operator's text formatter."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.setFormatter(logs.TextFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def lines(self, level: int = logging.INFO) -> list[str]:
        return [self.format(r) for r in list(self.records) if r.levelno >= level]

    def about(self, name: str, level: int = logging.INFO) -> list[tuple[int, str]]:
        return [(r.levelno, r.getMessage()) for r in list(self.records)
                if r.levelno >= level and (getattr(r, "k8s_ref", None) or {}).get("name") == name]


@pytest.fixture
def records() -> Iterator[Records]:
    handler = Records()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)  # production's level: Kopf's lowered lines must be dropped, not just relabelled
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


pytestmark = pytest.mark.k8s


async def start(harness: Harness, warehouse: Path) -> None:
    await harness.start()
    for body in basic_objects(warehouse):
        await harness.apply(body)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")


def _kopf_success_at_info(records: Records) -> list[str]:
    return [line for line in records.lines(logging.INFO)
            if re.search(r"(?:Handler|Timer|Daemon) '[^']+' succeeded|is processed: \d+ succeeded", line)]


async def test_tag_create_and_delete_are_one_line_each(harness: Harness, warehouse: Path, records: Records) -> None:
    await start(harness, warehouse)
    await harness.apply(obj("PaimonTag", "nightly", {"tableRef": {"name": "orders"}, "snapshotId": 3,
                                                     "deletionPolicy": "Delete"}))
    await harness.wait_condition("PaimonTag", "nightly", reason="Created")
    created = await eventually(lambda: [m for lvl, m in records.about("nightly") if "Created" in m])
    [line] = created
    assert "'nightly'" in line and "snapshot 3" in line and "sales.orders" in line, line
    assert f"sales.orders in {warehouse}" in line, line  # the table and its warehouse

    await harness.delete("PaimonTag", "nightly")
    await harness.wait_gone("PaimonTag", "nightly")
    deleted = await eventually(lambda: [(lvl, m) for lvl, m in records.about("nightly") if "Deleted" in m])
    [(level, line)] = deleted
    assert level == logging.INFO and "nightly" in line and "sales.orders" in line, line
    text = [line for line in records.lines() if "[sales/nightly]" in line]
    assert any("PaimonTag of sales.orders" in line and "Created" in line for line in text), text
    assert _kopf_success_at_info(records) == []
    kopf_debug = [r for r in records.records if r.name == "kopf.objects" and "succeeded" in r.getMessage()]
    assert kopf_debug == []  # lowered to DEBUG and dropped at INFO, not merely relabelled


async def test_a_failing_tag_is_a_warning_with_its_reason(harness: Harness, warehouse: Path,
                                                          records: Records) -> None:
    await start(harness, warehouse)
    await harness.apply(obj("PaimonTag", "future", {"tableRef": {"name": "orders"}, "snapshotId": 99}))
    await harness.wait_condition("PaimonTag", "future", status="False", reason="SnapshotNotFound")
    failures = await eventually(lambda: [m for lvl, m in records.about("future", logging.WARNING)
                                         if "retrying in" in m and lvl == logging.WARNING])
    line = failures[0]  # the CreateFailed Event and the retry are one line (a line per retry)
    assert "CreateFailed: SnapshotNotFound:" in line and "snapshot 99" in line, line
    assert line.startswith(f"PaimonTag of sales.orders in {warehouse}: "), line
    assert [m for _, m in records.about("future") if "retrying in" not in m] == []
    assert all("succeeded" not in m for _, m in records.about("future")), records.about("future")
    # Kopf's own line about the same failure is lowered: the failure is told once, with its table
    kopf_failed = [r.getMessage() for r in records.records
                   if r.name == "kopf.objects" and "failed temporarily" in r.getMessage()
                   and "SnapshotNotFound" in r.getMessage()]
    assert kopf_failed == []
    assert _kopf_success_at_info(records) == []


async def test_a_maintenance_run_logs_its_request_start_and_result(harness: Harness, warehouse: Path,
                                                                  records: Records) -> None:
    await harness.start()
    catalog, table = basic_objects(warehouse)
    table["spec"]["retention"] = {"snapshots": {"minRetained": 1, "maxRetained": 2}}
    for body in (catalog, table):
        await harness.apply(body)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")
    await harness.patch("PaimonTable", "orders",
                        {"metadata": {"annotations": {"tablekeeper.io/run-now": "ExpireSnapshots"}}})
    run = await eventually(lambda: next(iter(harness.all("PaimonMaintenanceRun")), None))
    name = run["metadata"]["name"]
    await harness.wait_event(name, "MaintenanceSucceeded")
    lines = await eventually(lambda: [m for _, m in records.about(name)
                                      if "MaintenanceStarted" in m or "MaintenanceSucceeded" in m] or None)
    assert len(lines) == 2, lines
    assert all(m.startswith(f"PaimonMaintenanceRun of sales.orders in {warehouse}: ") for m in lines), lines
    assert "ExpireSnapshots started on the Python engine" in lines[0], lines
    assert "MaintenanceSucceeded: expired 4 snapshot(s)" in lines[1], lines
    requested = [m for _, m in records.about("orders") if "MaintenanceRequested" in m]
    assert requested and requested[0].startswith("PaimonTable of sales.orders"), requested
    assert _kopf_success_at_info(records) == []


def test_json_lines() -> None:
    record = logging.LogRecord("tablekeeper.operator.objects", logging.WARNING, __file__, 1,
                               "PaimonTag of %s: %s", ("sales.orders", "CreateFailed"), None)
    record.k8s_ref = {"kind": "PaimonTag", "namespace": "sales", "name": "nightly", "uid": "u1"}
    plain = logging.LogRecord("kopf.activities.startup", logging.INFO, __file__, 1, "started", (), None)
    formatter = logs.JsonFormatter()
    about, other = (json.loads(formatter.format(r)) for r in (record, plain))
    assert about["level"] == "WARNING" and about["logger"] == "tablekeeper.operator.objects"
    assert about["message"] == "PaimonTag of sales.orders: CreateFailed"
    assert about["object"] == {"kind": "PaimonTag", "namespace": "sales", "name": "nightly"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", about["timestamp"])
    assert set(other) == {"timestamp", "level", "logger", "message"} and other["message"] == "started"
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        failed = logging.LogRecord("kopf.objects", logging.ERROR, __file__, 1, "it broke", (), sys.exc_info())
    line = formatter.format(failed)
    assert "\n" not in line and "ValueError: boom" in json.loads(line)["exception"]


def test_a_permanent_failure_is_an_error_told_once(records: Records) -> None:
    """Not retried: ERROR with its reason; the refusal's Warning Event is folded into that line,
    and Kopf's "failed permanently" line about the same failure is lowered."""
    body = {"kind": "PaimonTag", "metadata": {"namespace": "sales", "name": "release", "uid": "u-release"},
            "spec": {"tableRef": {"name": "orders"}},
            "status": {"table": {"database": "sales", "table": "orders", "warehouse": "s3://lake/wh"}}}
    outcome = Outcome()
    message = "tag 'release' exists at snapshot 2, not 5"
    outcome.event("Warning", "AlreadyExistsDifferentSnapshot", message)
    outcome.failure = Failure("AlreadyExistsDifferentSnapshot", message, temporary=False)
    logs.log_outcome(outcome, body)
    [(level, line)] = records.about("release")
    assert level == logging.ERROR and line.startswith("PaimonTag of sales.orders in s3://lake/wh: "
                                                      "AlreadyExistsDifferentSnapshot: tag 'release'"), line
    kopf_line = logging.LogRecord("kopf.objects", logging.ERROR, __file__, 1,
                                  f"Handler 'tag-reconcile' failed permanently: {errors.to_kopf(outcome.failure, 0)}",
                                  (), None)
    kopf_line.k8s_ref = {"kind": "PaimonTag", "namespace": "sales", "name": "release", "uid": "u-release"}
    assert logs.KopfNoiseFilter().filter(kopf_line) is False and kopf_line.levelno == logging.DEBUG


def test_noise_filter_keeps_real_errors() -> None:
    noise = logs.KopfNoiseFilter()
    success = logging.LogRecord("kopf.objects", logging.INFO, __file__, 1, "Handler 'tag-events' succeeded.", (), None)
    error = logging.LogRecord("kopf.objects", logging.ERROR, __file__, 1,
                              "Handler 'tag-reconcile' failed temporarily: recording ownership failed", (), None)
    error.k8s_ref = {"kind": "PaimonTag", "namespace": "sales", "name": "x", "uid": "never-logged"}
    logger = logging.getLogger("kopf.objects")
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        assert noise.filter(success) is False and success.levelno == logging.DEBUG
        assert noise.filter(error) is True and error.levelno == logging.ERROR  # not a failure tablekeeper logged
    finally:
        logger.setLevel(level)


def test_log_format_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["operator", "--log-format", "xml"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("Error")]
    assert errors == ["Error: Invalid value for '--log-format': 'xml' is not one of 'text', 'json'."], err
    assert cli_main(["operator", "--help"]) == 0
    assert "--log-format [text|json]" in capsys.readouterr().out
