"""GitOps health of real objects: each kind's status judged by kstatus's rules (as Flux runs them)
and by the tablekeeper health check (docs/health-checks.md, tests/support/kstatus.py): Current
when done, InProgress while the operator works or has not seen the latest generation, Failed with
the reason on a permanent error, Terminating while a finalizer holds a deleted object. The
operator also writes kstatus's ``Reconciling`` / ``Stalled`` conditions, so plain kstatus (Flux
without health expressions) reaches the same verdicts once the operator has looked at an object."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lupa

from tests.apiserver.harness import RealHarness
from tests.operator.conftest import basic_objects, obj
from tests.support.k8s import REPO_ROOT, eventually
from tests.support.kstatus import health, kstatus

ARGOCD_LUA = REPO_ROOT / "docs" / "health" / "argocd-health.lua"
#: Argo CD's status for each of our verdicts (Suspended: paused, which kstatus has no word for)
ARGO = {"Current": {"Healthy"}, "InProgress": {"Progressing", "Suspended"}, "Failed": {"Degraded"},
        "Terminating": {"Progressing"}}


def argocd(body: dict[str, Any]) -> str:
    """docs/health/argocd-health.lua run as Argo CD runs it: ``obj`` global, a table returned."""
    lua = lupa.LuaRuntime(unpack_returned_tuples=True)

    def to_lua(value: Any) -> Any:
        if isinstance(value, dict):
            return lua.table_from({k: to_lua(v) for k, v in value.items()})
        if isinstance(value, list):
            return lua.table_from([to_lua(v) for v in value])
        return value

    lua.globals().obj = to_lua(body)
    result = lua.execute(ARGOCD_LUA.read_text(encoding="utf-8"))
    return str(result["status"])


def judged(body: dict[str, Any]) -> str:
    """The health check's verdict, after checking Argo CD's Lua agrees with it."""
    verdict = health(body).status
    assert argocd(body) in ARGO[verdict], (verdict, argocd(body), body.get("status"))
    return verdict


def tag(name: str, **spec: object) -> dict[str, Any]:
    return obj("PaimonTag", name, {"tableRef": {"name": "orders"}, **spec})


async def test_health_of_every_state(real_harness: RealHarness, warehouse: Path) -> None:
    h = real_harness
    # created before any operator runs: no status yet
    for body in basic_objects(warehouse):
        await h.apply(body)
    await h.apply(tag("nightly", snapshotId=3))
    fresh = h.get("PaimonTag", "nightly") or {}
    assert judged(fresh) == "InProgress"
    assert kstatus(fresh).status == "Current"  # kstatus alone cannot tell: hence the health check

    snapshots = warehouse / "sales.db" / "orders" / "snapshot"
    (snapshots / "snapshot-1").unlink()  # as if expired: a tag at snapshot 1 can never be created
    if (snapshots / "EARLIEST").exists():
        (snapshots / "EARLIEST").write_text("2")
    await h.start()
    await h.apply(tag("future", snapshotId=99))  # not committed yet: waits (transient)
    await h.apply(tag("past", snapshotId=1))  # expired: only an edit helps (permanent)
    await h.apply(obj("PaimonMaintenanceRun", "expire-now", {
        "tableRef": {"name": "orders"}, "type": "ExpireSnapshots"}))
    await h.wait_condition("PaimonTag", "nightly", reason="Created")
    await h.wait_condition("PaimonTag", "future", status="False", reason="SnapshotNotFound")
    await h.wait_condition("PaimonTag", "past", status="False", reason="SnapshotExpired")
    await eventually(lambda: health(h.get("PaimonMaintenanceRun", "expire-now") or {}).status != "InProgress",
                     timeout=30)
    for kind, name in (("PaimonCatalog", "lake"), ("PaimonTable", "orders"), ("PaimonTag", "nightly"),
                       ("PaimonMaintenanceRun", "expire-now")):
        body = h.get(kind, name) or {}
        assert (judged(body), kstatus(body).status) == ("Current", "Current"), (kind, body.get("status"))
    future = h.get("PaimonTag", "future") or {}
    assert (judged(future), kstatus(future).status, kstatus(future).reason) == \
        ("InProgress", "InProgress", "SnapshotNotFound")
    assert judged(h.get("PaimonTag", "past") or {}) == "Failed"
    failed = health(h.get("PaimonTag", "past") or {})
    assert (failed.status, failed.reason) == ("Failed", "SnapshotExpired") and failed.message
    # the operator's Stalled condition: plain kstatus (Flux without health expressions) agrees
    plain = kstatus(h.get("PaimonTag", "past") or {})
    assert (plain.status, plain.reason) == ("Failed", "SnapshotExpired") and plain.message

    # still working (a temporary failure, retried): Reconciling=True, InProgress for both
    await h.apply(obj("PaimonTag", "waiting", {"tableRef": {"name": "not-yet"}, "snapshotId": 1}))
    await h.wait_condition("PaimonTag", "waiting", status="False", reason="TableNotReady")
    waiting = h.get("PaimonTag", "waiting") or {}
    assert (judged(waiting), kstatus(waiting).status, kstatus(waiting).reason) == \
        ("InProgress", "InProgress", "TableNotReady")
    for kind, name in (("PaimonTag", "nightly"), ("PaimonMaintenanceRun", "expire-now")):
        types = {c["type"] for c in (h.get(kind, name) or {})["status"]["conditions"]}
        assert not types & {"Reconciling", "Stalled"}, (kind, types)  # abnormal-true: only while True

    # a spec change the operator has not observed yet: both say InProgress
    await h.stop()
    await h.patch("PaimonTag", "nightly", {"spec": {"deletionPolicy": "Retain"}})
    changed = h.get("PaimonTag", "nightly") or {}
    assert changed["metadata"]["generation"] == 2
    assert (judged(changed), kstatus(changed).status) == ("InProgress", "InProgress")
    await h.start()
    await eventually(lambda: health(h.get("PaimonTag", "nightly") or {}).status == "Current")
    # deleted while its finalizer holds it (operator stopped): Terminating
    await h.stop()
    await h.delete("PaimonTag", "future")
    await h.delete("PaimonTable", "orders")
    table = h.get("PaimonTable", "orders")
    if table is not None:  # only when it carries a finalizer
        assert judged(table) == kstatus(table).status == "Terminating"
