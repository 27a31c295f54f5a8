"""A periodic check that finds nothing new writes nothing: after the objects are Ready, several
passes of every timer produce no PATCH of the objects or their status (counted by the emulator)."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from tests.operator.conftest import Harness, basic_objects, obj
from tests.support.k8s import eventually

pytestmark = pytest.mark.k8s

PLURALS = ("paimontables", "paimontags", "paimonbranches", "paimoncatalogs", "paimonretentionpolicies")


def reconciles(kind: str) -> float:
    return REGISTRY.get_sample_value("tablekeeper_reconciliations_total",
                                     {"kind": kind, "result": "success"}) or 0.0


async def test_no_status_write_on_a_no_op_resync(harness: Harness, warehouse: Path) -> None:
    await harness.start()
    for body in basic_objects(warehouse):
        await harness.apply(body)
    await harness.apply(obj("PaimonRetentionPolicy", "std", {"defaults": {"snapshots": {"minRetained": 2}}}))
    await harness.apply(obj("PaimonTag", "v1", {"tableRef": {"name": "orders"}, "snapshotId": 2}))
    await harness.apply(obj("PaimonBranch", "dev", {"tableRef": {"name": "orders"}, "fromTag": "v1"}))
    await harness.wait_condition("PaimonBranch", "dev", reason="Created")
    await harness.wait_condition("PaimonTag", "v1", reason="Created")
    await harness.wait_condition("PaimonRetentionPolicy", "std", reason="Reconciled")
    await eventually(lambda: harness.status("PaimonRetentionPolicy", "std").get("matchedTables") == 1)
    await eventually(lambda: harness.status("PaimonTag", "v1").get("forkPointOf") == ["dev"])

    # settle: every kind has been checked at least twice since the last change
    seen = {kind: reconciles(kind) for kind in ("PaimonTable", "PaimonTag", "PaimonBranch")}
    await eventually(lambda: all(reconciles(k) >= v + 2 for k, v in seen.items()))
    writes = {plural: harness.writes(plural) for plural in PLURALS}
    seen = {kind: reconciles(kind) for kind in ("PaimonTable", "PaimonTag", "PaimonBranch")}
    await eventually(lambda: all(reconciles(k) >= v + 4 for k, v in seen.items()), timeout=20)
    assert {plural: harness.writes(plural) for plural in PLURALS} == writes

    # a restart re-examines everything (resume handlers) and writes nothing either
    await harness.stop()
    await harness.start()
    seen = {kind: reconciles(kind) for kind in ("PaimonTable", "PaimonTag", "PaimonBranch")}
    await eventually(lambda: all(reconciles(k) >= v + 3 for k, v in seen.items()), timeout=20)
    assert {plural: harness.writes(plural) for plural in PLURALS} == writes
