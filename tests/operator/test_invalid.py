"""Semantically invalid CRs (valid for the CRD schema, wrong for the cluster or the table) end with
``Ready=False`` and the right stable reason, a Warning Event, no finalizer, and storage unchanged
(the warehouse's directory listing, names, sizes and mtimes, is identical)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.refs import tags as core_tags
from tests.operator.conftest import Harness, basic_objects, obj
from tests.support import paimon as P

pytestmark = pytest.mark.k8s


async def started(harness: Harness, warehouse: Path) -> None:
    await harness.start()
    for body in basic_objects(warehouse):
        await harness.apply(body)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")


async def assert_refused(harness: Harness, kind: str, name: str, reason: str, warehouse: Path,
                         before: dict[str, Any], namespace: str = "sales") -> None:
    cond = await harness.wait_condition(kind, name, status="False", reason=reason, namespace=namespace)
    assert cond["message"]
    event = await harness.wait_event(name, reason)
    assert event["type"] == "Warning"
    body = harness.get(kind, name, namespace) or {}
    assert not body["metadata"].get("finalizers")
    assert P.dir_listing(warehouse) == before


async def test_unknown_snapshot(harness: Harness, warehouse: Path) -> None:
    await started(harness, warehouse)
    before = P.dir_listing(warehouse)
    await harness.apply(obj("PaimonTag", "future", {"tableRef": {"name": "orders"}, "snapshotId": 99}))
    await assert_refused(harness, "PaimonTag", "future", "SnapshotNotFound", warehouse, before)
    assert harness.status("PaimonTag", "future")["state"] == "Failed"


async def test_tag_exists_at_another_snapshot(harness: Harness, warehouse: Path) -> None:
    core_tags.create_tag(open_table(str(warehouse), "sales.orders"), "release", snapshot_id=2)
    await started(harness, warehouse)
    before = P.dir_listing(warehouse)
    await harness.apply(obj("PaimonTag", "release", {"tableRef": {"name": "orders"}, "snapshotId": 5}))
    await assert_refused(harness, "PaimonTag", "release", "AlreadyExistsDifferentSnapshot", warehouse, before)
    assert open_table(str(warehouse), "sales.orders").tag("release").snapshot_id == 2  # never moved


async def test_branch_from_a_missing_tag(harness: Harness, warehouse: Path) -> None:
    await started(harness, warehouse)
    before = P.dir_listing(warehouse)
    await harness.apply(obj("PaimonBranch", "hotfix", {"tableRef": {"name": "orders"}, "fromTag": "nope"}))
    await assert_refused(harness, "PaimonBranch", "hotfix", "TagNotFound", warehouse, before)


async def test_table_outside_the_catalogs_warehouse(harness: Harness, warehouse: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    P.build_history(str(elsewhere), "finance.ledger", commits=2)
    os.symlink(elsewhere / "finance.db", warehouse / "finance.db")  # a database escaping the warehouse
    await harness.start()
    await harness.apply(obj("PaimonCatalog", "lake", {"warehouse": str(warehouse)}))
    await harness.apply(obj("PaimonTable", "ledger", {"catalogRef": {"kind": "PaimonCatalog", "name": "lake"},
                                                       "database": "finance", "table": "ledger"}))
    before_outside = P.dir_listing(elsewhere)
    await harness.apply(obj("PaimonTag", "q1", {"tableRef": {"name": "ledger"}, "fromLatest": True}))
    cond = await harness.wait_condition("PaimonTable", "ledger", status="False", reason="TableOutsideWarehouse")
    assert str(elsewhere) in cond["message"]
    await harness.wait_event("ledger", "TableOutsideWarehouse")
    await harness.wait_condition("PaimonTag", "q1", status="False", reason="TableOutsideWarehouse")
    assert P.dir_listing(elsewhere) == before_outside
    assert open_table(str(elsewhere), "finance.ledger").tag_names() == []


async def test_namespace_not_allowed_by_the_cluster_catalog(harness: Harness, warehouse: Path) -> None:
    await harness.start()
    await harness.apply(obj("ClusterPaimonCatalog", "shared", {
        "warehouse": str(warehouse), "allowedNamespaces": {"names": ["finance"], "selector": {
            "matchLabels": {"team": "platform"}}}}))
    table_spec = {"catalogRef": {"kind": "ClusterPaimonCatalog", "name": "shared"}, "database": "sales",
                  "table": "orders"}
    before = P.dir_listing(warehouse)
    await harness.apply(obj("PaimonTable", "orders", table_spec, namespace="sales"))
    await harness.apply(obj("PaimonTag", "t1", {"tableRef": {"name": "orders"}, "fromLatest": True},
                            namespace="sales"))
    await assert_refused(harness, "PaimonTable", "orders", "NamespaceNotAllowed", warehouse, before)
    await harness.wait_condition("PaimonTag", "t1", status="False", reason="TableNotReady")
    # allowed by name in finance; by label once the namespace carries team=platform
    await harness.apply(obj("PaimonTable", "orders", table_spec, namespace="finance"))
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled", namespace="finance")
    assert P.dir_listing(warehouse) == before


async def test_namespace_allowed_by_label_selector(harness: Harness, warehouse: Path) -> None:
    harness.add_namespace("platform-data", {"team": "platform"})
    await harness.start()
    await harness.apply(obj("ClusterPaimonCatalog", "shared", {
        "warehouse": str(warehouse), "allowedNamespaces": {"selector": {"matchLabels": {"team": "platform"}}}}))
    await harness.apply(obj("PaimonTable", "orders", {
        "catalogRef": {"kind": "ClusterPaimonCatalog", "name": "shared"}, "database": "sales", "table": "orders"},
        namespace="platform-data"))
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled", namespace="platform-data")


async def test_credentials_only_from_the_catalogs_secret(harness: Harness, warehouse: Path) -> None:
    await harness.start()
    await harness.apply(obj("PaimonCatalog", "lake", {"warehouse": str(warehouse),
                                                      "credentialsSecretRef": {"name": "lake-creds"}}))
    await harness.wait_condition("PaimonCatalog", "lake", status="False", reason="AuthFailed")
    harness.add_secret("finance", "lake-creds", {"s3.access-key": "x"})  # another namespace's Secret
    await harness.wait_condition("PaimonCatalog", "lake", status="False", reason="AuthFailed")
    harness.add_secret("sales", "lake-creds", {"s3.access-key": "x"})
    await harness.wait_condition("PaimonCatalog", "lake", reason="Connected")
    reads = [c for c in harness.emu.api_calls if c[3] == "secrets"]
    assert {c[1] for c in reads} == {"sales"}  # never read outside the catalog's namespace


async def test_policy_reference_missing(harness: Harness, warehouse: Path) -> None:
    await harness.start()
    await harness.apply(obj("PaimonCatalog", "lake", {"warehouse": str(warehouse)}))
    await harness.apply(obj("PaimonTable", "orders", {
        "catalogRef": {"kind": "PaimonCatalog", "name": "lake"}, "database": "sales", "table": "orders",
        "policyRefs": [{"name": "gold"}]}))
    await harness.wait_condition("PaimonTable", "orders", status="False", reason="PolicyNotFound")


@pytest.mark.parametrize("metastore", ["hive", "rest"])
async def test_a_metastore_the_operator_does_not_read_is_refused(harness: Harness, warehouse: Path,
                                                                  metastore: str) -> None:
    """``metastore`` was accepted and ignored (the warehouse treated as a filesystem): now refused."""
    await harness.start()
    before = P.dir_listing(warehouse)
    await harness.apply(obj("PaimonCatalog", "lake", {"warehouse": str(warehouse), "metastore": metastore}))
    await assert_refused(harness, "PaimonCatalog", "lake", "InvalidSpec", warehouse, before)
    await harness.apply(obj("PaimonTable", "orders", {"catalogRef": {"kind": "PaimonCatalog", "name": "lake"},
                                                      "database": "sales", "table": "orders"}))
    table = await harness.wait_condition("PaimonTable", "orders", status="False")
    assert table["reason"] != "Reconciled"
    assert P.dir_listing(warehouse) == before
