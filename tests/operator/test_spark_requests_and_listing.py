"""The operator's Spark runs and issue 16: a RemoveOrphanFiles run passes the policy's
``orphanFiles.listing`` to the job, and the storage requests the job counted (driver and
executors) reach the run's status and the Prometheus counter (no Kubernetes needed)."""

from __future__ import annotations

import pytest

from tablekeeper.core import errors
from tablekeeper.core.policy.specs.run import PaimonMaintenanceRunSpec
from tablekeeper.operator.runs import spark as sparkruns
from tablekeeper.operator.runs.report import from_artifact
from tablekeeper.spark import job_request, result_artifact


def test_remove_orphan_files_on_spark_takes_the_policys_listing() -> None:
    spec = PaimonMaintenanceRunSpec.model_validate({"tableRef": {"name": "orders"}, "type": "RemoveOrphanFiles"})
    request = sparkruns.launch_request(spec, "s3://lake/wh", "sales.orders", {}, dry_run=False,
                                       policy={"orphanFiles.olderThan": "2 d",
                                               "orphanFiles.listing": "s3://inv/lake/daily/manifest.json"})
    assert request is not None and request.listing == "s3://inv/lake/daily/manifest.json"
    args = request.to_args()
    assert args[args.index("--listing") + 1] == "s3://inv/lake/daily/manifest.json"
    assert job_request.parse_args(args)[0] == request
    plain = sparkruns.launch_request(spec, "s3://lake/wh", "sales.orders", {}, dry_run=False,
                                     policy={"orphanFiles.olderThan": "2 d"})
    assert plain is not None and plain.listing is None and "--listing" not in plain.to_args()
    with pytest.raises(errors.InvalidInputError, match="--listing is for clean-orphans"):
        job_request.JobRequest(operation="expire", warehouse="s3://l/w", table="a.b", listing="x.csv")


def test_the_artifacts_requests_reach_the_run_status() -> None:
    artifact = result_artifact.RunResult(operation="clean-orphans", table="s.o", branch="main", dry_run=False,
                                         engine="spark", planned_files={"data": 2}, deleted={"data": 2},
                                         requests={"get": 30, "list": 12, "bulk_delete": 1, "total": 43})
    again = result_artifact.RunResult.from_dict(artifact.to_dict())
    assert again.requests == artifact.requests
    status = from_artifact(again, "RemoveOrphanFiles").to_status()
    assert status["storageRequests"] == {"get": 30, "list": 12, "bulk_delete": 1, "total": 43}
    older = artifact.to_dict()
    del older["requests"]  # an artifact of an older job: no requests, no storageRequests
    assert "storageRequests" not in from_artifact(result_artifact.RunResult.from_dict(older),
                                                  "RemoveOrphanFiles").to_status()
