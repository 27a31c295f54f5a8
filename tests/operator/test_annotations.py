"""``tablekeeper.io/paused``, ``tablekeeper.io/managed: "false"`` and ``tablekeeper.io/force-delete``,
plus conflicts (two CRs for one tag or one table: the oldest wins, the others never touch storage)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core.paimon.table import open_table
from tablekeeper.operator.main import FINALIZER
from tests.operator.conftest import Harness, basic_objects, fast_config, obj
from tests.support import paimon as P
from tests.support.k8s import eventually

pytestmark = pytest.mark.k8s

PAUSED = {"tablekeeper.io/paused": "true"}


def tag(name: str, annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return obj("PaimonTag", name, {"tableRef": {"name": "orders"}, **spec}, annotations=annotations)


def tags_of(warehouse: Path) -> dict[str, int]:
    return {t.name: t.snapshot_id for t in open_table(str(warehouse), "sales.orders").tags()}


def finalizers(harness: Harness, name: str) -> list[str]:
    return list(((harness.get("PaimonTag", name) or {}).get("metadata") or {}).get("finalizers") or [])


async def started(harness: Harness, warehouse: Path) -> None:
    await harness.start()
    for body in basic_objects(warehouse):
        await harness.apply(body)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")


async def test_paused_changes_nothing_until_resumed(harness: Harness, warehouse: Path) -> None:
    await started(harness, warehouse)
    before = P.dir_listing(warehouse)
    await harness.apply(tag("frozen", PAUSED, snapshotId=2))
    await harness.wait_condition("PaimonTag", "frozen", reason="Paused", type_="ReconciliationPaused")
    cond = harness.condition("PaimonTag", "frozen", "Synced")
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "ReconcilePaused")
    assert P.dir_listing(warehouse) == before and finalizers(harness, "frozen") == []

    await harness.patch("PaimonTag", "frozen", {"metadata": {"annotations": {"tablekeeper.io/paused": None}}})
    await harness.wait_condition("PaimonTag", "frozen", reason="Created")
    assert tags_of(warehouse) == {"frozen": 2}
    assert harness.condition("PaimonTag", "frozen", "ReconciliationPaused") is None


async def test_resume_alone_creates_without_the_periodic_check(harness: Harness, warehouse: Path) -> None:
    """Regression (CI flake): the resume reaction reported ``Creating`` with ownership but no
    finalizer, and the periodic check then waited for that finalizer forever. With the periodic
    check held off, the resume alone must write ahead and create the tag."""
    await harness.start(fast_config(timer_idle=3600, reconcile_interval=3600))
    for body in basic_objects(warehouse):
        await harness.apply(body)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")
    await harness.apply(tag("frozen", PAUSED, snapshotId=2))
    await harness.wait_condition("PaimonTag", "frozen", reason="Paused", type_="ReconciliationPaused")
    await harness.patch("PaimonTag", "frozen", {"metadata": {"annotations": {"tablekeeper.io/paused": None}}})
    await harness.wait_condition("PaimonTag", "frozen", reason="Created")
    assert tags_of(warehouse) == {"frozen": 2}
    await eventually(lambda: finalizers(harness, "frozen") == [FINALIZER])


async def test_a_pass_planned_from_an_older_version_changes_nothing(harness: Harness, warehouse: Path) -> None:
    """Regression (CI, real API server): the resume's pass recorded ownership and created the tag;
    the watch was still behind, so the periodic check that started next read the object and the
    view as they were before the resume, found the tag in storage without the CR's record, adopted
    it and rewrote ``origin`` as ``Adopted``. The ownership record is now written under the
    ``resourceVersion`` the pass planned from: a pass planned from an older version gets 409 and
    changes nothing, and the next pass (on the current version) finds the tag as created."""
    emu = harness.emu

    def the_ownership_record(request: Any) -> bool:
        status = (request.data or {}).get("status") if isinstance(request.data, dict) else None
        return request.name == "frozen" and request.subresource == "status" and bool((status or {}).get("owned"))

    await harness.start(fast_config())
    for body in basic_objects(warehouse):
        await harness.apply(body)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")
    await harness.apply(tag("frozen", PAUSED, snapshotId=2))
    await harness.wait_condition("PaimonTag", "frozen", reason="Paused", type_="ReconciliationPaused")
    emu.hold_watches_from = the_ownership_record  # the write-ahead's events and all later ones wait
    await harness.patch("PaimonTag", "frozen", {"metadata": {"annotations": {"tablekeeper.io/paused": None}}})
    await eventually(lambda: emu.watches_held)
    await asyncio.sleep(2.0)  # checks run on the version before the resume (every 0.3 s)
    emu.watches_held = False
    await harness.wait_condition("PaimonTag", "frozen", reason="Created")
    await asyncio.sleep(1.0)
    status = harness.status("PaimonTag", "frozen")
    assert (status["state"], status["origin"], status["snapshotId"]) == ("Ready", "Created", 2)
    assert harness.condition("PaimonTag", "frozen", "Ready")["reason"] == "Created"
    assert [e["reason"] for e in harness.events("frozen") if e["reason"] in ("Created", "Adopted")] == ["Created"]
    assert tags_of(warehouse) == {"frozen": 2}


async def test_deletion_is_processed_while_paused(harness: Harness, warehouse: Path) -> None:
    await started(harness, warehouse)
    await harness.apply(tag("doomed", snapshotId=3))
    await harness.wait_condition("PaimonTag", "doomed", reason="Created")
    await eventually(lambda: finalizers(harness, "doomed") == [FINALIZER])
    await harness.patch("PaimonTag", "doomed", {"metadata": {"annotations": PAUSED}})
    await harness.wait_condition("PaimonTag", "doomed", reason="Paused", type_="ReconciliationPaused")
    await harness.delete("PaimonTag", "doomed")
    await harness.wait_gone("PaimonTag", "doomed")
    assert tags_of(warehouse) == {}


async def test_unmanaged_detaches_and_deletion_never_touches_storage(harness: Harness, warehouse: Path) -> None:
    await started(harness, warehouse)
    await harness.apply(tag("detached", snapshotId=4))
    await harness.wait_condition("PaimonTag", "detached", reason="Created")
    await eventually(lambda: finalizers(harness, "detached") == [FINALIZER])
    await harness.patch("PaimonTag", "detached", {"metadata": {"annotations": {"tablekeeper.io/managed": "false"}}})
    await harness.wait_condition("PaimonTag", "detached", reason="Unmanaged", type_="Unmanaged")
    await eventually(lambda: finalizers(harness, "detached") == [])
    await harness.delete("PaimonTag", "detached")
    await harness.wait_gone("PaimonTag", "detached")
    assert tags_of(warehouse) == {"detached": 4}


async def test_force_delete_drops_the_finalizer_without_touching_storage(harness: Harness, warehouse: Path) -> None:
    await started(harness, warehouse)
    await harness.apply(tag("stuck", snapshotId=5))
    await harness.wait_condition("PaimonTag", "stuck", reason="Created")
    await eventually(lambda: finalizers(harness, "stuck") == [FINALIZER])
    await harness.patch("PaimonTag", "stuck", {"metadata": {"annotations": {"tablekeeper.io/force-delete": "true"}}})
    await harness.wait_event("stuck", "ForceDeleted")
    await eventually(lambda: finalizers(harness, "stuck") == [])
    await harness.delete("PaimonTag", "stuck")
    await harness.wait_gone("PaimonTag", "stuck")
    assert tags_of(warehouse) == {"stuck": 5}


async def test_two_tags_for_one_tag_name_the_oldest_wins(harness: Harness, warehouse: Path) -> None:
    await started(harness, warehouse)
    await harness.apply(tag("first", tagName="release", snapshotId=2))
    await harness.wait_condition("PaimonTag", "first", reason="Created")
    before = P.dir_listing(warehouse)
    await harness.apply(tag("second", tagName="release", snapshotId=5))
    cond = await harness.wait_condition("PaimonTag", "second", status="False", reason="ResourceConflict")
    assert cond["message"] == "Managed by sales/first"
    await harness.wait_event("second", "ResourceConflict")
    assert P.dir_listing(warehouse) == before and finalizers(harness, "second") == []
    await harness.delete("PaimonTag", "second")  # a loser's deletion never touches storage
    await harness.wait_gone("PaimonTag", "second")
    assert tags_of(warehouse) == {"release": 2}


async def test_two_tables_in_two_namespaces_for_one_table(harness: Harness, warehouse: Path) -> None:
    await harness.start()
    await harness.apply(obj("ClusterPaimonCatalog", "shared", {"warehouse": str(warehouse)}))
    spec = {"catalogRef": {"kind": "ClusterPaimonCatalog", "name": "shared"}, "database": "sales", "table": "orders"}
    # creationTimestamp has second resolution: a tie goes to namespace/name order (finance first)
    await harness.apply(obj("PaimonTable", "orders", spec, namespace="finance"))
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled", namespace="finance")
    await harness.apply(obj("PaimonTable", "orders-copy", spec, namespace="sales"))
    cond = await harness.wait_condition("PaimonTable", "orders-copy", status="False", reason="ResourceConflict")
    assert cond["message"] == "Managed by finance/orders"
    await harness.apply(obj("PaimonTag", "t", {"tableRef": {"name": "orders-copy"}, "fromLatest": True}))
    await harness.wait_condition("PaimonTag", "t", status="False", reason="TableNotReady")
    assert tags_of(warehouse) == {}
    # the winner goes away: the other table takes over
    await harness.delete("PaimonTable", "orders", namespace="finance")
    await harness.wait_condition("PaimonTable", "orders-copy", reason="Reconciled")
    await harness.wait_condition("PaimonTag", "t", reason="Created")
