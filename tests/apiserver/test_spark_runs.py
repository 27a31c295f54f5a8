"""Spark runs on a real API server with the chart's RBAC (``jobNamespaces``): the operator creates
the SparkApplication (into the stand-in CRD of tests/operator/data/crds, status subresource as the real one), the test plays the Spark
Operator by writing its status through the status subresource, and the run follows it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kopf

from tablekeeper.core.paimon.table import open_table
from tests.apiserver.conftest import install_rbac
from tests.apiserver.harness import RealHarness
from tests.operator.test_spark_runs import (
    RETAIN_TWO,
    job_arguments,
    manual_run,
    run_locally,
    setup,
    spark_config,
    wait_phase,
)
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


JOBS = "/apis/batch/v1/namespaces/sales/jobs"


async def test_spark_job_success_is_read_from_its_result_artifact(crds: Testenv, operator_settings: kopf.OperatorSettings,
                                                                 warehouse: Path) -> None:
    """The batch Job path to Succeeded: the operator creates the Job (validated by the real server)
    with the chart's RBAC; the test plays the Job's pod (the launched arguments run in process and
    write the result artifact where they say) and the Job controller (a complete Job status through
    the status subresource, as kube-controller-manager writes it); the run reads the artifact into
    its counts and the table's maintenance status."""
    token = install_rbac(crds, {"jobNamespaces": ["sales"]}, release="tkspark")
    h = RealHarness(crds, operator_settings, token)
    h.add_namespace("sales")
    try:
        await setup(h, warehouse, spark_config(), retention=RETAIN_TWO)
        await manual_run(h, "expire", "ExpireSnapshots", "SparkJob")

        def launched() -> list[dict[str, Any]]:
            return list((crds.admin.get(JOBS) or {}).get("items") or [])

        [job] = await eventually(launched, timeout=30)
        name = job["metadata"]["name"]
        assert job["metadata"]["ownerReferences"][0]["name"] == "expire"
        await eventually(lambda: h.status("PaimonMaintenanceRun", "expire").get("jobRef"))
        status = h.status("PaimonMaintenanceRun", "expire")
        assert status["phase"] == "Running" and status["engine"] == "SparkJob"

        result = await run_locally(job_arguments(job))  # the pod: expire, then the artifact
        assert result.status == "Succeeded" and result.total_deleted > 0
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        done = {"type": "Complete", "status": "True", "lastProbeTime": now, "lastTransitionTime": now}
        met = {**done, "type": "SuccessCriteriaMet"}
        resp = crds.admin.merge_patch(f"{JOBS}/{name}/status", {"status": {
            "startTime": now, "completionTime": now, "succeeded": 1, "ready": 0, "terminating": 0,
            "uncountedTerminatedPods": {}, "conditions": [met, done]}})
        assert resp.status_code == 200, resp.text

        final = await wait_phase(h, "expire", "Succeeded")
        got = final["result"]
        assert got["expiredSnapshots"] == 4 and got["dryRun"] is False
        assert got["deletedFiles"] == result.total_deleted
        assert got["executed"]["deleted"] == result.deleted
        assert final["jobRef"] == {"name": name, "namespace": "sales", "state": "Complete"}
        assert {c["type"]: c["status"] for c in final["conditions"]} == {"Ready": "True", "Complete": "True",
                                                                         "Failed": "False"}
        await eventually(lambda: (h.status("PaimonTable", "orders").get("maintenance") or {})
                         .get("snapshotExpiration", {}).get("lastResult", {}).get("expiredSnapshots") == 4)
        assert open_table(str(warehouse), "sales.orders").snapshot_ids() == [5, 6]
        await h.stop()
        assert h.forbidden() == []
    finally:
        await h.stop()
        h.clean()
