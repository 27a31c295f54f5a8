"""How many writes the operator spends on a PaimonTag, counted by the real API server
(``apiserver_request_total`` from ``/metrics``): at most three to reach Ready, none for a periodic
re-check that changes nothing (issue 14; docs/operator.md "Writes per object").

Counted: successful POST/PATCH/PUT/DELETE of ``paimontags`` and ``paimontags/status`` made by the
operator (the test's own POST of the tag is subtracted). Events are separate objects and counted
separately (one ``Created`` Event per tag). Requests the server refuses (409/422) change nothing
in etcd; there must be none either.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import kopf
import pytest
from kopf._cogs.clients import watching
from prometheus_client import REGISTRY

from tablekeeper.operator import persistence
from tests.apiserver.harness import RealHarness
from tests.operator.conftest import basic_objects, obj
from tests.support.apiserver import metric_counts
from tests.support.k8s import eventually

WRITE_VERBS = {"POST", "PATCH", "PUT", "DELETE"}


def requests(h: RealHarness) -> Counter[tuple[str, str]]:
    """``(resource[/subresource], "ok" | "refused")`` -> write requests so far."""
    out: Counter[tuple[str, str]] = Counter()
    for labels, value in metric_counts(h.testenv.metrics()):
        if labels.get("verb") not in WRITE_VERBS:
            continue
        resource = labels.get("resource", "") + (f"/{labels['subresource']}" if labels.get("subresource") else "")
        out[(resource, "ok" if labels.get("code", "").startswith("2") else "refused")] += int(value)
    return out


def tag_writes(delta: Counter[tuple[str, str]], kind: str = "ok") -> int:
    return delta[("paimontags", kind)] + delta[("paimontags/status", kind)]


def checks() -> float:
    return REGISTRY.get_sample_value("tablekeeper_reconciliations_total",
                                     {"kind": "PaimonTag", "result": "success"}) or 0.0


async def passes(count: int) -> None:
    """Wait until the operator has reconciled PaimonTags ``count`` more times (periodic checks)."""
    seen = checks()
    await eventually(lambda: checks() >= seen + count, timeout=30)


async def test_a_tag_reaches_ready_in_three_writes_and_an_idle_check_writes_nothing(
        real_harness: RealHarness, warehouse: Path) -> None:
    h = real_harness
    await h.start()
    for body in basic_objects(warehouse):
        await h.apply(body)
    await h.wait_condition("PaimonTable", "orders", reason="Reconciled")

    for name, policy, finalizers in (("nightly", "Delete", ["tablekeeper.io/finalizer"]), ("kept", "Retain", [])):
        before = requests(h)
        await h.apply(obj("PaimonTag", name, {"tableRef": {"name": "orders"}, "snapshotId": 3,
                                              "deletionPolicy": policy}))
        await h.wait_condition("PaimonTag", name, reason="Created")
        await h.wait_event(name, "Created")
        # settled: the table counted the tag (its own status write, not the tag's) and two checks passed
        await passes(2)
        delta = requests(h) - before
        body = h.get("PaimonTag", name) or {}
        assert body["metadata"].get("finalizers", []) == finalizers
        assert body["metadata"]["labels"]["tablekeeper.io/tag-state"] == "Ready"
        assert tag_writes(delta) - 1 <= 3, (name, dict(delta))  # minus the test's own POST
        assert tag_writes(delta, "refused") == 0, (name, dict(delta))  # no wasted request either
        assert delta[("events", "ok")] == len(h.events(name)) == 1, (name, dict(delta))

    # the idle periodic re-check: several passes over both tags write nothing at all
    before = requests(h)
    await passes(6)
    delta = requests(h) - before
    assert tag_writes(delta) == tag_writes(delta, "refused") == 0, dict(delta)
    assert delta[("events", "ok")] == 0, dict(delta)


async def test_a_watch_seconds_behind_costs_no_extra_write(real_harness: RealHarness, warehouse: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A busy operator (1,000 tags) sees the watch event of its own Ready write seconds late. Kopf
    then still holds the older events of the write-ahead PATCHes; it must wait for its write to
    come back instead of running the create handler again on a body without the diff base (which
    wrote Ready and the labels a second time: 3.15 writes per tag at 1,000 tags; main.py
    ``CONSISTENCY_TIMEOUT_S``). The watch of PaimonTags is held back here, once, for longer than
    Kopf's default wait."""
    lag = kopf.OperatorSettings().persistence.consistency_timeout + 1.0
    held: list[str] = []
    released: list[str] = []
    original = watching.infinite_watch

    async def lagging_watch(**kwargs: Any) -> AsyncIterator[Any]:
        async for event in original(**kwargs):
            body = event.get("object") if isinstance(event, dict) else None
            if isinstance(body, dict) and body.get("kind") == "PaimonTag" and not held \
                    and persistence.handled(body.get("metadata"), body.get("status")):
                held.append(body["metadata"]["name"])  # Kopf's own Ready write: delivered late
                await asyncio.sleep(lag)
                released.append(body["metadata"]["name"])
            yield event

    monkeypatch.setattr(watching, "infinite_watch", lagging_watch)
    h = real_harness
    await h.start()
    for body in basic_objects(warehouse):
        await h.apply(body)
    await h.wait_condition("PaimonTable", "orders", reason="Reconciled")

    before = requests(h)
    await h.apply(obj("PaimonTag", "late", {"tableRef": {"name": "orders"}, "snapshotId": 3}))
    await h.wait_condition("PaimonTag", "late", reason="Created")
    await eventually(lambda: released == ["late"], timeout=lag + 30)
    await passes(2)  # the object's events all handled and two periodic checks past them
    delta = requests(h) - before
    assert tag_writes(delta) - 1 <= 3, dict(delta)  # minus the test's own POST
    assert tag_writes(delta, "refused") == 0, dict(delta)
    assert delta[("events", "ok")] == len(h.events("late")) == 1, dict(delta)
