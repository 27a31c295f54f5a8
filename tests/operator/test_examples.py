"""Every object of ``examples/`` applied to the emulator (as ``kubectl apply -f examples/`` would),
the catalog pointed at a copy of the demo warehouse (``examples/01`` names a relative path, which
the CRD rejects). The operator ends with every object Ready: manual tags at their snapshots, the
branch from its tag, the retention policies matched with their sources in the tables' status,
policy auto-tags created; then ``run-now`` maintenance applies the retention."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tablekeeper.core.paimon.table import open_table
from tests.operator.conftest import Harness
from tests.support.k8s import REPO_ROOT, eventually

pytestmark = pytest.mark.k8s

EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.yaml"))


def example_objects(warehouse: Path) -> list[dict[str, Any]]:
    out = []
    for path in EXAMPLES:
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not isinstance(doc, dict) or doc["apiVersion"] == "v1":
                continue  # examples/00's Namespace: the harness adds namespaces itself
            doc = copy.deepcopy(doc)
            if doc["kind"] == "PaimonCatalog":
                doc["spec"]["warehouse"] = str(warehouse)  # the adapted copy: an absolute path
            out.append(doc)
    return out


async def test_every_example_is_applied_and_becomes_ready(harness: Harness, demo_warehouse: Path) -> None:
    harness.add_namespace("demo")
    await harness.start()
    objects = example_objects(demo_warehouse)
    assert {o["kind"] for o in objects} == {"PaimonCatalog", "PaimonTable", "PaimonTag", "PaimonBranch",
                                            "PaimonRetentionPolicy", "ClusterPaimonRetentionPolicy"}
    for body in objects:
        await harness.apply(body)
    for body in objects:
        ns = body["metadata"].get("namespace")
        await harness.wait_condition(body["kind"], body["metadata"]["name"], namespace=ns, timeout=30)

    orders = open_table(str(demo_warehouse), "sales.orders")
    events = open_table(str(demo_warehouse), "sales.events")
    assert orders.tag("baseline").snapshot_id == 12
    assert "audit-1" in events.tag_names()
    assert orders.branch_names() == ["backfill"]
    assert harness.status("PaimonBranch", "backfill", "demo")["basedOnTag"] == "baseline"

    status = harness.status("PaimonTable", "orders", "demo")
    policy = status["effectivePolicy"]
    assert policy["snapshots.minRetained"] == {"value": 5, "source": "policy/demo/standard"}
    assert policy["orphanFiles.olderThan"]["source"] == "policy/demo/standard"
    # the cluster policy may be Ready after the table was: its next periodic check applies it
    await eventually(lambda: "cluster/guardrails" in harness.status("PaimonTable", "orders", "demo")["appliedPolicies"],
                     timeout=30)
    assert harness.status("PaimonTable", "events", "demo")["effectivePolicy"]["partitions.expiration"] == \
        {"value": "3 d", "source": "policy/demo/events-hot"}
    await eventually(lambda: harness.status("PaimonRetentionPolicy", "standard", "demo").get("matchedTables") == 2)
    await eventually(lambda: harness.status("ClusterPaimonRetentionPolicy", "guardrails", None)
                     .get("matchedTables") == 2)
    # policy auto-tags (daily, process-time) exist next to the manual ones
    await eventually(lambda: [t for t in open_table(str(demo_warehouse), "sales.orders").tag_names()
                              if t.startswith("20")])

    # the retention, on demand: snapshots of sales.orders expire, the fork-point tag stays
    before = len(orders.snapshot_ids())
    await harness.patch("PaimonTable", "orders", {"metadata": {"annotations": {
        "tablekeeper.io/run-now": "ExpireSnapshots"}}}, namespace="demo")
    await eventually(lambda: [r for r in harness.all("PaimonMaintenanceRun", "demo")
                              if (r.get("status") or {}).get("phase") == "Succeeded"], timeout=30)
    after = open_table(str(demo_warehouse), "sales.orders")
    assert len(after.snapshot_ids()) < before
    assert after.tag("baseline").snapshot_id == 12 and after.branch_names() == ["backfill"]
