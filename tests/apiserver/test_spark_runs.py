"""Spark runs on a real API server with the chart's RBAC (``jobNamespaces``): the operator creates
the SparkApplication (into the stand-in CRD of tests/operator/data/crds, status subresource as the real one), the test plays the Spark
Operator by writing its status through the status subresource, and the run follows it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kopf

from tablekeeper.core.paimon.table import open_table
from tests.apiserver.conftest import install_rbac
from tests.apiserver.harness import RealHarness
from tests.operator.test_spark_runs import RETAIN_TWO, manual_run, setup, spark_config, wait_phase
from tests.support.apiserver import Testenv
from tests.support.k8s import eventually

APPS = "/apis/sparkoperator.k8s.io/v1beta2/namespaces/sales/sparkapplications"


async def test_spark_application_failure_is_followed(crds: Testenv, operator_settings: kopf.OperatorSettings,
                                                     warehouse: Path) -> None:
    token = install_rbac(crds, {"jobNamespaces": ["sales"]}, release="tkspark")
    h = RealHarness(crds, operator_settings, token)
    h.add_namespace("sales")
    try:
        await setup(h, warehouse, spark_config(), retention=RETAIN_TWO)
        await manual_run(h, "expire", "ExpireSnapshots", "SparkOperator")

        def launched() -> list[dict[str, Any]]:
            return list((crds.admin.get(APPS) or {}).get("items") or [])

        [app] = await eventually(launched, timeout=30)
        assert app["metadata"]["ownerReferences"][0]["name"] == "expire"
        await eventually(lambda: h.status("PaimonMaintenanceRun", "expire").get("sparkApplicationRef"))
        resp = crds.admin.merge_patch(f"{APPS}/{app['metadata']['name']}/status", {"status": {
            "applicationState": {"state": "FAILED", "errorMessage": "driver pod OOMKilled"}}})
        assert resp.status_code == 200, resp.text
        final = await wait_phase(h, "expire", "Failed")
        failed = next(c for c in final["conditions"] if c["type"] == "Failed")
        assert failed["reason"] == "SparkJobFailed" and "OOMKilled" in failed["message"]
        assert open_table(str(warehouse), "sales.orders").snapshot_ids() == [1, 2, 3, 4, 5, 6]
        await h.stop()
        assert h.forbidden() == []
    finally:
        await h.stop()
        h.clean()
