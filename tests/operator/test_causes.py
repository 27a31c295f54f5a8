"""Causes, not symptoms: with the catalog's warehouse missing, every dependent names the cause
(the table ``CatalogNotReady``, its tags and branches ``TableNotReady``, each with the
dependency's own reason in the message) as transient (``Reconciling``, never ``Stalled``,
never ``state: Failed``) and recovers by itself once the warehouse is there; a run whose
``tableRef`` names no PaimonTable fails ``TableNotFound`` after the grace period instead of
waiting forever."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.operator.conftest import Harness, basic_objects, fast_config, obj
from tests.support.k8s import eventually

pytestmark = pytest.mark.k8s


def kstatus_of(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["reason"] for c in status.get("conditions") or () if c["type"] in ("Reconciling", "Stalled")}


async def test_an_unreachable_warehouse_is_the_catalogs_cause_and_transient(harness: Harness, warehouse: Path,
                                                                           tmp_path: Path) -> None:
    h = harness
    late = tmp_path / "late-warehouse"  # does not exist yet
    await h.start(fast_config(missing_table_grace=1.0))
    await h.apply(obj("PaimonCatalog", "lake", {"warehouse": str(late), "writerTimeZone": "UTC"}))
    await h.wait_condition("PaimonCatalog", "lake", status="False", reason="CatalogUnreachable")
    await h.apply(obj("PaimonTable", "orders", {"catalogRef": {"kind": "PaimonCatalog", "name": "lake"},
                                                "database": "sales", "table": "orders"}))
    await h.apply(obj("PaimonTag", "nightly", {"tableRef": {"name": "orders"}, "snapshotId": 3}))
    await h.apply(obj("PaimonBranch", "fix", {"tableRef": {"name": "orders"}, "fromTag": "nightly"}))
    await h.apply(obj("PaimonMaintenanceRun", "typo", {"tableRef": {"name": "ordres"}, "type": "ExpireSnapshots"}))

    table = await h.wait_condition("PaimonTable", "orders", status="False", reason="CatalogNotReady")
    assert "CatalogUnreachable" in table["message"] and str(late) in table["message"]
    assert kstatus_of(h.status("PaimonTable", "orders")) == {"Reconciling": "CatalogNotReady"}
    for kind, name in (("PaimonTag", "nightly"), ("PaimonBranch", "fix")):
        cond = await h.wait_condition(kind, name, status="False", reason="TableNotReady")
        assert "CatalogNotReady" in cond["message"], cond
        status = h.status(kind, name)
        assert status["state"] == "Pending" and kstatus_of(status) == {"Reconciling": "TableNotReady"}, status

    failed = await h.wait_condition("PaimonMaintenanceRun", "typo", reason="TableNotFound", type_="Failed")
    assert "'ordres'" in failed["message"] and "spec.tableRef.name" in failed["message"]
    assert h.status("PaimonMaintenanceRun", "typo")["phase"] == "Failed"

    shutil.copytree(warehouse, late)  # the warehouse appears: everything recovers, no edit
    await h.wait_condition("PaimonCatalog", "lake", reason="Connected")
    await h.wait_condition("PaimonTable", "orders", reason="Reconciled")
    await h.wait_condition("PaimonTag", "nightly", reason="Created")
    await h.wait_condition("PaimonBranch", "fix", reason="Created")
    for kind, name in (("PaimonTable", "orders"), ("PaimonTag", "nightly"), ("PaimonBranch", "fix")):
        assert kstatus_of(h.status(kind, name)) == {}


async def test_the_recheck_annotation_and_a_ready_catalog_wake_every_dependent(harness: Harness, warehouse: Path,
                                                                               tmp_path: Path) -> None:
    """With retries and periodic checks far away (10 min), only the re-check annotation on the
    catalog and the nudges of its dependents can bring the table, a tag and a branch from that
    tag to Ready within the test's wait."""
    h = harness
    late = tmp_path / "late-warehouse"
    await h.start(fast_config(reconcile_interval=600.0, retry_base_delay=600.0, retry_max_delay=600.0))
    await h.apply(obj("PaimonCatalog", "lake", {"warehouse": str(late), "writerTimeZone": "UTC"}))
    await h.apply(obj("PaimonTable", "orders", {"catalogRef": {"kind": "PaimonCatalog", "name": "lake"},
                                                "database": "sales", "table": "orders"}))
    await h.apply(obj("PaimonTag", "nightly", {"tableRef": {"name": "orders"}, "snapshotId": 3}))
    await h.apply(obj("PaimonBranch", "fix", {"tableRef": {"name": "orders"}, "fromTag": "nightly"}))
    await h.wait_condition("PaimonTable", "orders", status="False", reason="CatalogNotReady")
    await h.wait_condition("PaimonTag", "nightly", status="False", reason="TableNotReady")
    await h.wait_condition("PaimonBranch", "fix", status="False", reason="TableNotReady")
    shutil.copytree(warehouse, late)
    await h.patch("PaimonCatalog", "lake", {"metadata": {"annotations": {"tablekeeper.io/recheck": "now"}}})
    await h.wait_condition("PaimonCatalog", "lake", reason="Connected", timeout=30)
    await h.wait_condition("PaimonTable", "orders", reason="Reconciled", timeout=30)
    await h.wait_condition("PaimonTag", "nightly", reason="Created", timeout=30)
    await h.wait_condition("PaimonBranch", "fix", reason="Created", timeout=30)


async def test_a_policys_table_count_follows_the_tables_without_a_periodic_check(harness: Harness,
                                                                                 warehouse: Path) -> None:
    """A policy applied before its tables counts them as soon as a table lists it as applied, and
    again when a table stops applying it (the periodic checks are held off for an hour)."""
    await harness.start(fast_config(timer_idle=3600, reconcile_interval=3600))
    await harness.apply(obj("PaimonRetentionPolicy", "std", {"defaults": {"snapshots": {"minRetained": 2}}}))
    await harness.wait_condition("PaimonRetentionPolicy", "std", reason="Reconciled")
    assert harness.status("PaimonRetentionPolicy", "std")["matchedTables"] == 0
    for body in basic_objects(warehouse):
        await harness.apply(body)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")
    assert harness.status("PaimonTable", "orders")["appliedPolicies"]
    await eventually(lambda: harness.status("PaimonRetentionPolicy", "std").get("matchedTables") == 1, timeout=10)
    await harness.delete("PaimonRetentionPolicy", "std")
    await harness.apply(obj("PaimonRetentionPolicy", "other", {"defaults": {"snapshots": {"minRetained": 3}}}))
    await eventually(lambda: harness.status("PaimonRetentionPolicy", "other").get("matchedTables") == 1, timeout=10)
