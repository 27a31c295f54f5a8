"""Every API call the real controllers make (Kopf's own and the operator's through Kopf's client:
Secrets, Namespaces, runs created and pruned, a branch CR deleted by its TTL, status writes,
Events) is covered by ``tablekeeper.operator.rbac``, cluster-wide and for a namespaced operator."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tablekeeper.operator import rbac
from tests.operator.conftest import FakeClock, Harness, fast_config, obj
from tests.support.k8s import eventually

pytestmark = pytest.mark.k8s


def _covered(call: tuple[str | None, str, str, str], grants: set[rbac.Grant]) -> bool:
    return rbac.covers(grants, *call)


@pytest.mark.parametrize("namespaces", [None, ["sales"]], ids=["cluster-wide", "namespaced"])
async def test_controller_calls_are_covered(harness: Harness, warehouse: Path, namespaces: list[str] | None) -> None:
    clock = FakeClock()
    harness.add_secret("sales", "creds", {"s3.region": "eu-west-1"})
    harness.add_secret("default", "shared-creds", {"s3.region": "eu-west-1"})
    await harness.start(replace(fast_config(clock=clock), operator_namespace="default"), namespaces=namespaces)
    await harness.apply(obj("ClusterPaimonCatalog", "shared", {
        "warehouse": str(warehouse), "credentialsSecretRef": {"name": "shared-creds"},
        "allowedNamespaces": {"selector": {"matchLabels": {"team": "sales"}}}}))
    await harness.apply(obj("PaimonCatalog", "lake", {"warehouse": str(warehouse),
                                                      "credentialsSecretRef": {"name": "creds"}}))
    await harness.apply(obj("PaimonTable", "orders", {
        "catalogRef": {"kind": "ClusterPaimonCatalog", "name": "shared"}, "database": "sales", "table": "orders",
        "retention": {"snapshots": {"minRetained": 1, "maxRetained": 5}},
        "maintenance": {"successfulRunsHistoryLimit": 0}}))
    await harness.apply(obj("PaimonTag", "v1", {"tableRef": {"name": "orders"}, "snapshotId": 2}))
    await harness.apply(obj("PaimonBranch", "tmp", {"tableRef": {"name": "orders"}, "fromTag": "v1",
                                                    "ttl": {"maxAge": "1 d"}}))
    await harness.wait_condition("PaimonCatalog", "lake", reason="Connected")
    await harness.wait_condition("PaimonBranch", "tmp", reason="Created")
    await harness.patch("PaimonTable", "orders", {"metadata": {"annotations": {
        "tablekeeper.io/run-now": "ExpireSnapshots"}}})
    await eventually(lambda: any(c[4] == "delete" and c[3] == "paimonmaintenanceruns"
                                 for c in harness.emu.api_calls))  # created, then pruned (limit 0)
    clock.advance(days=2)
    await harness.wait_gone("PaimonBranch", "tmp")  # its TTL: dropped and the CR deleted
    await harness.delete("PaimonTag", "v1")
    await harness.wait_gone("PaimonTag", "v1")

    calls = {call[1:] for call in harness.emu.api_calls if call[0].startswith("kopf")}
    verbs = {(call[2], call[3]) for call in calls}
    assert {("secrets", "get"), ("namespaces", "get"), ("paimonmaintenanceruns", "create"),
            ("paimonmaintenanceruns", "delete"), ("paimonbranches", "delete"), ("events", "create"),
            ("paimontags/status", "patch")} <= verbs
    grants = rbac.required_grants(operator_namespace="default", watch_namespaces=namespaces or ())
    assert not {call for call in calls if not _covered(call, grants)}
