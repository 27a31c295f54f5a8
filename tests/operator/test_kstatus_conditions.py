"""kstatus's abnormal-true conditions (``Reconciling`` / ``Stalled``), derived in one place
(``conditions.kstatus``, applied by ``status.render``): present only while True, with the reason
of the condition they summarise, and judged by kstatus's own rules (tests/support/kstatus.py) the
way the tablekeeper health check judges the object."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tablekeeper.operator.status import conditions
from tablekeeper.operator.status import outcome as status
from tests.support.kstatus import health, kstatus

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def cond(type_: str, value: bool | str, reason: str, message: str = "m") -> dict[str, Any]:
    return conditions.condition(type_, value, reason, message, generation=1, now=NOW)


def body(outcome: status.Outcome, current: dict[str, Any] | None = None) -> dict[str, Any]:
    current = dict(current or {})
    merged = {**current, **status.render(current, outcome)}
    return {"kind": "PaimonTag", "metadata": {"generation": 1}, "status": merged}


@pytest.mark.parametrize(("state", "ready", "expected", "types"), [
    ("Ready", cond("Ready", True, "Created"), "Current", set()),
    ("Creating", cond("Ready", "Unknown", "Creating"), "InProgress", {"Reconciling"}),
    ("Pending", cond("Ready", False, "TableNotReady"), "InProgress", {"Reconciling"}),
    ("Failed", cond("Ready", False, "SnapshotExpired"), "Failed", {"Stalled"}),
    # a transient cause is never Stalled, whatever state an older writer left
    ("Failed", cond("Ready", False, "CatalogNotReady"), "InProgress", {"Reconciling"}),
])
def test_tag_states(state: str, ready: dict[str, Any], expected: str, types: set[str]) -> None:
    outcome = status.Outcome(fields={"state": state}, conditions=[ready, cond("Synced", True, "ReconcileSuccess")],
                             generation=1)
    obj = body(outcome)
    got = {c["type"] for c in obj["status"]["conditions"]} & {"Reconciling", "Stalled"}
    assert got == types
    assert kstatus(obj).status == health(obj).status == expected
    if types:
        assert kstatus(obj).reason == ready["reason"]


def test_runs_follow_complete_and_failed() -> None:
    running = status.Outcome(fields={"phase": "Running"}, generation=1,
                             conditions=[cond("Complete", False, "Running"), cond("Failed", False, "Running")])
    failed = status.Outcome(fields={"phase": "Failed"}, generation=1,
                            conditions=[cond("Complete", False, "SparkJobFailed"), cond("Failed", True, "SparkJobFailed")])
    done = status.Outcome(fields={"phase": "Succeeded"}, generation=1,
                          conditions=[cond("Complete", True, "Succeeded"), cond("Failed", False, "Succeeded")])
    assert [kstatus(body(o)).status for o in (running, failed, done)] == ["InProgress", "Failed", "Current"]
    assert {c["type"] for c in body(done)["status"]["conditions"]} == {"Complete", "Failed"}


def test_no_write_when_nothing_changed_and_removed_when_done() -> None:
    creating = status.Outcome(fields={"state": "Creating"}, generation=1,
                              conditions=[cond("Ready", "Unknown", "Creating")])
    current = body(creating)["status"]
    assert status.render(current, creating) == {}  # derived conditions are stable: no write
    ready = status.Outcome(fields={"state": "Ready"}, generation=1, conditions=[cond("Ready", True, "Created")])
    patch = status.render(current, ready)
    assert [c["type"] for c in patch["conditions"]] == ["Ready"]
