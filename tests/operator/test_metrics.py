"""Prometheus metrics (operator-design.md §7.10): reconcile counters and durations, object gauges
computed from the indexes at scrape time (resources, paused resources, conditions, tag CRs by
state), table statistics and maintenance results."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import REGISTRY, generate_latest

from tests.operator.conftest import Harness, basic_objects, obj
from tests.support.k8s import eventually

pytestmark = pytest.mark.k8s


def sample(name: str, labels: dict[str, str]) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


async def test_metrics_are_exposed(harness: Harness, warehouse: Path) -> None:
    await harness.start()
    catalog, table = basic_objects(warehouse)
    table["spec"]["retention"] = {"snapshots": {"minRetained": 1, "maxRetained": 3}}
    await harness.apply(catalog)
    await harness.apply(table)
    await harness.apply(obj("PaimonTag", "v1", {"tableRef": {"name": "orders"}, "snapshotId": 4}))
    await harness.apply(obj("PaimonTag", "held", {"tableRef": {"name": "orders"}, "snapshotId": 5},
                            annotations={"tablekeeper.io/paused": "true"}))
    await harness.wait_condition("PaimonTag", "v1", reason="Created")
    await harness.patch("PaimonTable", "orders", {"metadata": {"annotations": {
        "tablekeeper.io/run-now": "ExpireSnapshots"}}})
    await eventually(lambda: [r for r in harness.all("PaimonMaintenanceRun")
                              if (r.get("status") or {}).get("phase") == "Succeeded"])

    await eventually(lambda: sample("tablekeeper_resources", {"kind": "PaimonTag", "namespace": "sales"}) == 2)
    assert sample("tablekeeper_paused_resources", {"kind": "PaimonTag"}) == 1
    assert sample("tablekeeper_tag_crs", {"namespace": "sales", "state": "Ready"}) == 1
    assert sample("tablekeeper_condition", {"kind": "PaimonTag", "type": "Ready", "status": "True",
                                            "reason": "Created"}) == 1
    assert (sample("tablekeeper_reconciliations_total", {"kind": "PaimonTag", "result": "success"}) or 0) >= 1
    assert (sample("tablekeeper_maintenance_runs_total", {"type": "ExpireSnapshots", "engine": "Python",
                                                          "result": "success"}) or 0) >= 1
    assert (sample("tablekeeper_snapshots_expired_total", {"table": "sales/orders"}) or 0) >= 3
    await eventually(lambda: sample("tablekeeper_table_snapshots", {"table": "sales/orders"}) == 3)
    text = generate_latest(REGISTRY).decode()
    for name in ("tablekeeper_reconcile_duration_seconds_bucket", "tablekeeper_maintenance_run_duration_seconds",
                 "tablekeeper_maintenance_last_success_timestamp_seconds", "tablekeeper_table_tags",
                 "tablekeeper_files_deleted_total", "tablekeeper_bytes_reclaimed_total"):
        assert name in text, name
