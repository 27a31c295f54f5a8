"""Spark runs of PaimonMaintenanceRun on the API server emulator (operator-design.md §7.7,
spark-jobs.md §8): the operator creates a SparkApplication or batch Job with the right spec, owned
by the run; the emulated status drives the run (COMPLETED / Complete -> the job's JSON result
artifact is read into the run's and the table's status; FAILED, SUBMISSION_FAILED, a failed Job,
a vanished object, a passed deadline or a missing artifact -> Failed with a stable reason and a
Warning Event); a restarted operator adopts the object it created instead of making a second one.

The artifacts are real: the SparkOperator test runs the launched arguments with the local Spark
engine (the shared ``local[2]`` session of ``tests/support/spark.py``) on a pypaimon-written
warehouse; the other tests run the same arguments with the in-process engine
(``tablekeeper.spark.dispatch.run_local``, same artifact format).

The emulator serves ``sparkoperator.k8s.io/v1beta2`` from a minimal structural CRD
(``data/crds``) with the status subresource, and ``batch/v1`` Jobs as a plain resource.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import kmock
import pytest
import yaml

from tablekeeper.core.paimon.table import open_table
from tablekeeper.operator import rbac
from tablekeeper.operator.runs import spark as sparkruns
from tablekeeper.operator.settings import OperatorConfig, SparkConfig
from tablekeeper.spark import dispatch, job_request, k8s_manifests, result_artifact
from tests.operator.conftest import FakeClock, Harness, basic_objects, fast_config, obj
from tests.support import paimon as P
from tests.support.k8s import VERBS, eventually, register_crds

pytestmark = pytest.mark.k8s

SPARK_CRD = Path(__file__).parent / "data" / "crds" / "sparkoperator.k8s.io_sparkapplications.yaml"
SPARK_APPS = kmock.resource("sparkoperator.k8s.io", "v1beta2", "sparkapplications")
JOBS = kmock.resource("batch", "v1", "jobs")
IMAGE = "registry.example.com/tablekeeper-spark:0.1.0"
RESOURCES = {"SparkOperator": SPARK_APPS, "SparkJob": JOBS}


@pytest.fixture
def spark_harness(harness: Harness) -> Harness:
    """The harness with SparkApplications (CRD with validation) and Jobs served."""
    register_crds(harness.emu, [yaml.safe_load(SPARK_CRD.read_text(encoding="utf-8"))])
    harness.emu.resources[JOBS] = kmock.ResourceInfo(kind="Job", singular="job", namespaced=True, verbs=VERBS)
    return harness


def spark_config(**overrides: Any) -> OperatorConfig:
    spark = SparkConfig(image=IMAGE, service_account="tk-spark", spark_version="4.0.1", ttl_seconds=3600,
                        **overrides.pop("spark", {}))
    return fast_config(spark=spark, **overrides)


def launched(h: Harness, resource: kmock.resource, namespace: str = "sales") -> list[dict[str, Any]]:
    return [dict(o.raw) for (res, ns, _), o in h.emu.objects.items()
            if res == resource and ns == namespace and not o.deleted]


async def the_launched(h: Harness, resource: kmock.resource, namespace: str = "sales") -> dict[str, Any]:
    found: list[dict[str, Any]] = await eventually(lambda: launched(h, resource, namespace), timeout=30)
    assert len(found) == 1, [o["metadata"]["name"] for o in found]
    return found[0]


async def set_status(h: Harness, resource: kmock.resource, body: dict[str, Any], status: dict[str, Any]) -> None:
    meta = body["metadata"]
    url = f"/apis/{resource.group}/{resource.version}/namespaces/{meta['namespace']}/{resource.plural}/{meta['name']}"
    if resource == SPARK_APPS:
        url += "/status"  # the real CRD has the status subresource; Jobs are stored whole here
    resp = await h.emu.patch(url, json={"status": status})
    assert resp.status == 200, await resp.text()


def run_status(h: Harness, name: str) -> dict[str, Any]:
    return h.status("PaimonMaintenanceRun", name)


async def wait_phase(h: Harness, name: str, phase: str, timeout: float = 30) -> dict[str, Any]:
    try:
        await eventually(lambda: run_status(h, name).get("phase") == phase, timeout=timeout)
    except AssertionError:
        raise AssertionError(f"run {name} not {phase}: {run_status(h, name)}") from None
    return run_status(h, name)


async def setup(h: Harness, warehouse: Path, config: OperatorConfig, **table_spec: Any) -> None:
    await h.start(config)
    catalog, table = basic_objects(warehouse)
    table["spec"].update(table_spec)
    await h.apply(catalog)
    await h.apply(table)
    await h.wait_condition("PaimonTable", "orders", reason="Reconciled")


async def manual_run(h: Harness, name: str, run_type: str, engine: str, **spec: Any) -> dict[str, Any]:
    return await h.apply(obj("PaimonMaintenanceRun", name, {"tableRef": {"name": "orders"}, "type": run_type,
                                                            "engine": engine, **spec}))


def job_arguments(job: dict[str, Any]) -> list[str]:
    """The ``python -m tablekeeper.spark`` arguments inside the Job's spark-submit command."""
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    return list(command[command.index(k8s_manifests.IMAGE_MAIN_FILE) + 1:])


async def run_locally(arguments: list[str]) -> result_artifact.RunResult:
    """Carry out the launched arguments in process and write the artifact where they say."""
    request, _ = job_request.parse_args(arguments)
    assert request.result
    result = await asyncio.to_thread(dispatch.run_local, request)
    result_artifact.write_result(request.result, result, request.options)
    return result


RETAIN_TWO = {"snapshots": {"minRetained": 1, "maxRetained": 2}}


# -- SparkApplication with a real Spark-produced artifact -------------------------------------------

@pytest.mark.spark
async def test_spark_operator_run_launches_and_completes_with_the_spark_artifact(
        spark_harness: Harness, warehouse: Path, spark: Any) -> None:
    from tablekeeper.spark import job as spark_job

    h = spark_harness
    # with an undo window (trash.keep): the job moves what it removes into the run the operator opened
    await setup(h, warehouse, spark_config(), retention={**RETAIN_TWO, "trash": {"keep": "7 d"}},
                maintenance={"engine": "SparkOperator"})
    before = P.snapshot_views(str(warehouse), "sales.orders")
    await h.patch("PaimonTable", "orders", {"metadata": {"annotations": {"tablekeeper.io/run-now": "ExpireSnapshots"}}})
    app = await the_launched(h, SPARK_APPS)
    [run] = h.all("PaimonMaintenanceRun")
    run_name, run_uid = run["metadata"]["name"], run["metadata"]["uid"]
    name = app["metadata"]["name"]

    # the object: owned by the run, labelled, a Python application of the image with the job's arguments
    meta, spec = app["metadata"], app["spec"]
    assert len(name) <= 40 and name.startswith("tk-") and "-exp-" in name
    assert meta["ownerReferences"] == [{"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonMaintenanceRun",
                                        "name": run_name, "uid": run_uid, "controller": True,
                                        "blockOwnerDeletion": True}]
    assert meta["labels"]["tablekeeper.io/run"] == name and meta["labels"]["tablekeeper.io/table"] == "sales.orders"
    assert meta["annotations"][sparkruns.RUN_UID_ANNOTATION] == run_uid
    assert meta["annotations"][k8s_manifests.DEADLINE_ANNOTATION] == "7200"  # the table's activeDeadlineSeconds
    assert (spec["type"], spec["mode"], spec["image"], spec["sparkVersion"]) == ("Python", "cluster", IMAGE, "4.0.1")
    assert spec["mainApplicationFile"] == f"local://{k8s_manifests.IMAGE_MAIN_FILE}"
    assert spec["restartPolicy"] == {"type": "Never"} and spec["timeToLiveSeconds"] == 3600
    assert spec["driver"]["serviceAccount"] == "tk-spark" and spec["executor"]["instances"] >= 1
    artifact_uri = f"{warehouse}/.tablekeeper/results/sales/{name}.json"
    request, _ = job_request.parse_args(spec["arguments"])
    assert (request.operation, request.warehouse, request.table, request.dry_run) == \
        ("expire", str(warehouse), "sales.orders", False)
    assert request.retention is not None
    assert (request.retention.retain_min, request.retention.retain_max,
            request.retention.time_retained) == (1, 2, timedelta(hours=1))
    assert (request.run_name, request.result) == (name, artifact_uri)
    status = await wait_phase(h, run_name, "Running")
    await eventually(lambda: run_status(h, run_name).get("sparkApplicationRef"))
    status = run_status(h, run_name)
    assert status["engine"] == "SparkOperator" and status["artifact"] == artifact_uri
    # recorded at launch as a poll of the fresh object reads it, so the value does not change under a poll
    assert status["sparkApplicationRef"] == {"name": name, "namespace": "sales", "state": "NEW"}
    await h.wait_event(run_name, "Created")

    # the emulated Spark operator reports progress; the run mirrors it
    await set_status(h, SPARK_APPS, app, {"applicationState": {"state": "RUNNING"}})
    await eventually(lambda: run_status(h, run_name)["sparkApplicationRef"]["state"] == "RUNNING")
    assert run_status(h, run_name)["phase"] == "Running"

    # the driver runs for real (local Spark, the launched arguments) and writes the artifact
    result = await asyncio.to_thread(spark_job.run_to_result, spark, request)
    assert result.status == "Succeeded" and result.engine == "spark"
    result_artifact.write_result(artifact_uri, result, request.options)
    await set_status(h, SPARK_APPS, app, {"applicationState": {"state": "COMPLETED"}})

    status = await wait_phase(h, run_name, "Succeeded")
    got = status["result"]
    assert got["expiredSnapshots"] == 4 and got["dryRun"] is False
    assert got["notes"] == list(dict.fromkeys(result.notes)) and result.notes  # the job's plan notes
    assert all(note in next(c["message"] for c in status["conditions"] if c["type"] == "Complete")
               for note in result.notes)
    assert got["deletedFiles"] == result.total_deleted > 0
    assert got["reclaimedBytes"] == sum(result.deleted_bytes.values()) > 0
    assert got["planned"]["files"] == result.planned_files and got["executed"]["deleted"] == result.deleted
    assert {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]} == \
        {"Ready": ("True", "Succeeded"), "Complete": ("True", "Succeeded"), "Failed": ("False", "Succeeded")}
    assert status["sparkApplicationRef"]["state"] == "COMPLETED" and status["completionTime"]
    await h.wait_event(run_name, "MaintenanceSucceeded")
    await eventually(lambda: (h.status("PaimonTable", "orders").get("maintenance") or {})
                     .get("snapshotExpiration", {}).get("lastResult", {}).get("expiredSnapshots") == 4)
    entry = h.status("PaimonTable", "orders")["maintenance"]["snapshotExpiration"]
    assert entry["state"] == "Succeeded" and entry["lastRunRef"] == run_name
    assert entry["lastResult"]["deletedFiles"] == result.total_deleted

    # the table: two snapshots left, each reads back exactly as before through pypaimon
    assert open_table(str(warehouse), "sales.orders").snapshot_ids() == [5, 6]
    after = P.snapshot_views(str(warehouse), "sales.orders")
    assert set(after) == {"main@latest", "main@snapshot-5", "main@snapshot-6"}
    assert all(after[key] == before[key] for key in after)
    assert len(launched(h, SPARK_APPS)) == 1

    # the status names the trash run the job filled; an Undo run puts every snapshot back
    assert request.trash_run is not None
    kept = got["trash"]
    assert kept["run"] == request.trash_run["run_id"] and kept["keepUntil"]
    assert (kept["movedFiles"], kept["movedBytes"]) == (result.total_deleted, sum(result.deleted_bytes.values()))
    await h.apply(obj("PaimonMaintenanceRun", "undo", {"tableRef": {"name": "orders"}, "type": "Undo",
                                                       "parameters": {"undoRun": kept["run"]}}))
    await wait_phase(h, "undo", "Succeeded")
    assert P.snapshot_views(str(warehouse), "sales.orders") == before


# -- batch Job ----------------------------------------------------------------------------------------

async def test_spark_job_run_in_another_namespace_completes_on_the_job_condition(
        spark_harness: Harness, warehouse: Path) -> None:
    h = spark_harness
    h.add_namespace("spark-jobs")
    orphan = warehouse / "sales.db" / "orders" / "dt=2026-01-01" / "bucket-0" / "data-orphan.parquet"
    orphan.write_bytes(b"x" * 10)
    os.utime(orphan, (1_600_000_000, 1_600_000_000))
    await setup(h, warehouse, spark_config(spark={"namespace": "spark-jobs"}),
                retention={"orphanFiles": {"state": "Enabled", "olderThan": "2 d"}})
    await manual_run(h, "clean", "RemoveOrphanFiles", "SparkJob", parameters={"dryRun": False},
                     activeDeadlineSeconds=900)
    job = await the_launched(h, JOBS, "spark-jobs")
    meta, spec = job["metadata"], job["spec"]
    # another namespace: no ownerReference (Kubernetes would garbage-collect the Job), annotations instead
    assert "ownerReferences" not in meta
    assert meta["annotations"][sparkruns.RUN_ANNOTATION] == "sales/clean"
    run = h.get("PaimonMaintenanceRun", "clean")
    assert run is not None and meta["annotations"][sparkruns.RUN_UID_ANNOTATION] == run["metadata"]["uid"]
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"], spec["ttlSecondsAfterFinished"]) == (0, 900, 3600)
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["serviceAccountName"] == "tk-spark"
    [container] = pod["containers"]
    assert container["image"] == IMAGE
    command = container["command"]
    assert command[command.index("--deploy-mode") + 1] == "client"
    arguments = job_arguments(job)
    request, _ = job_request.parse_args(arguments)
    assert (request.operation, request.table, request.older_than, request.dry_run) == \
        ("clean-orphans", "sales.orders", "2 d", False)
    status = await wait_phase(h, "clean", "Running")
    await eventually(lambda: run_status(h, "clean").get("jobRef"))
    assert run_status(h, "clean")["engine"] == "SparkJob"

    result = await run_locally(arguments)
    assert result.total_deleted == 1 and not orphan.exists()
    await set_status(h, JOBS, job, {"active": 1})
    await eventually(lambda: run_status(h, "clean")["jobRef"]["state"] == "Active")
    await set_status(h, JOBS, job, {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1})
    status = await wait_phase(h, "clean", "Succeeded")
    assert status["result"]["orphanFiles"] == 1 and status["result"]["deletedFiles"] == 1
    assert status["result"]["executed"]["deleted"] == {"data": 1}
    assert status["jobRef"] == {"name": job["metadata"]["name"], "namespace": "spark-jobs", "state": "Complete"}
    await eventually(lambda: (h.status("PaimonTable", "orders").get("maintenance") or {})
                     .get("orphanFileCleanup", {}).get("lastResult", {}).get("orphanFiles") == 1)


# -- failures -----------------------------------------------------------------------------------------

FAILURES = [
    ("SparkOperator", {"applicationState": {"state": "FAILED", "errorMessage": "driver pod OOMKilled"}},
     "SparkJobFailed", "driver pod OOMKilled"),
    ("SparkOperator", {"applicationState": {"state": "SUBMISSION_FAILED", "errorMessage": "image pull"}},
     "SparkSubmissionFailed", "image pull"),
    ("SparkJob", {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                                  "message": "Job has reached the specified backoff limit"}]},
     "SparkJobFailed", "BackoffLimitExceeded"),
    ("SparkJob", {"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
                                  "message": "Job was active longer than specified deadline"}]},
     "DeadlineExceeded", "active longer"),
]


@pytest.mark.parametrize(("engine", "status", "reason", "detail"), FAILURES,
                         ids=["app-failed", "app-submission-failed", "job-failed", "job-deadline"])
async def test_failed_spark_object_fails_the_run(spark_harness: Harness, warehouse: Path, engine: str,
                                                 status: dict[str, Any], reason: str, detail: str) -> None:
    h = spark_harness
    await setup(h, warehouse, spark_config(), retention=RETAIN_TWO)
    await manual_run(h, "expire", "ExpireSnapshots", engine)
    body = await the_launched(h, RESOURCES[engine])
    await eventually(lambda: sparkruns.Ref.of(run_status(h, "expire")))
    await set_status(h, RESOURCES[engine], body, status)
    final = await wait_phase(h, "expire", "Failed")
    failed = next(c for c in final["conditions"] if c["type"] == "Failed")
    assert failed["status"] == "True" and failed["reason"] == reason and detail in failed["message"]
    event = await h.wait_event("expire", "MaintenanceFailed")
    assert event["type"] == "Warning" and detail in event["message"]
    assert open_table(str(warehouse), "sales.orders").snapshot_ids() == [1, 2, 3, 4, 5, 6]  # nothing ran


async def test_completed_without_an_artifact_is_a_failure(spark_harness: Harness, warehouse: Path) -> None:
    h = spark_harness
    await setup(h, warehouse, spark_config(), retention=RETAIN_TWO)
    await manual_run(h, "expire", "ExpireSnapshots", "SparkOperator")
    app = await the_launched(h, SPARK_APPS)
    await eventually(lambda: run_status(h, "expire").get("sparkApplicationRef"))
    await set_status(h, SPARK_APPS, app, {"applicationState": {"state": "COMPLETED"}})
    final = await wait_phase(h, "expire", "Failed")
    failed = next(c for c in final["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "ResultArtifactMissing" and final["artifact"] in failed["message"]
    assert "result" not in final
    assert (await h.wait_event("expire", "MaintenanceFailed"))["type"] == "Warning"


async def test_artifact_of_another_launch_is_rejected(spark_harness: Harness, warehouse: Path) -> None:
    h = spark_harness
    await setup(h, warehouse, spark_config(), retention=RETAIN_TWO)
    await manual_run(h, "expire", "ExpireSnapshots", "SparkJob")
    job = await the_launched(h, JOBS)
    await eventually(lambda: run_status(h, "expire").get("jobRef"))
    arguments = job_arguments(job)
    stale = [*arguments[:arguments.index("--run-name") + 1], "tk-00000000-exp-zzzz",
             *arguments[arguments.index("--run-name") + 2:]]
    await run_locally(stale)
    await set_status(h, JOBS, job, {"conditions": [{"type": "Complete", "status": "True"}]})
    final = await wait_phase(h, "expire", "Failed")
    failed = next(c for c in final["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "ResultArtifactInvalid" and "tk-00000000-exp-zzzz" in failed["message"]


async def test_deadline_passed_without_a_terminal_state(spark_harness: Harness, warehouse: Path) -> None:
    h = spark_harness
    clock = FakeClock()
    await setup(h, warehouse, spark_config(clock=clock), retention=RETAIN_TWO)
    await manual_run(h, "expire", "ExpireSnapshots", "SparkOperator", activeDeadlineSeconds=600)
    app = await the_launched(h, SPARK_APPS)
    await eventually(lambda: run_status(h, "expire").get("sparkApplicationRef"))
    await set_status(h, SPARK_APPS, app, {"applicationState": {"state": "SUBMITTED"}})
    await eventually(lambda: run_status(h, "expire")["sparkApplicationRef"]["state"] == "SUBMITTED")
    clock.advance(seconds=601)  # the operator's clock; hung in SUBMITTED (ImagePullBackOff)
    final = await wait_phase(h, "expire", "Failed")
    failed = next(c for c in final["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "DeadlineExceeded" and "SUBMITTED" in failed["message"]
    event = await h.wait_event("expire", "MaintenanceFailed")
    assert event["type"] == "Warning" and "activeDeadlineSeconds" in event["message"]
    await eventually(lambda: not launched(h, SPARK_APPS))  # the hung application is deleted


async def test_vanished_spark_application_fails_the_run(spark_harness: Harness, warehouse: Path) -> None:
    h = spark_harness
    await setup(h, warehouse, spark_config(), retention=RETAIN_TWO)
    await manual_run(h, "expire", "ExpireSnapshots", "SparkOperator")
    app = await the_launched(h, SPARK_APPS)
    await eventually(lambda: run_status(h, "expire").get("sparkApplicationRef"))
    resp = await h.emu.delete(f"/apis/sparkoperator.k8s.io/v1beta2/namespaces/sales/sparkapplications/"
                              f"{app['metadata']['name']}")
    assert resp.status in (200, 202)
    final = await wait_phase(h, "expire", "Failed")
    assert next(c for c in final["conditions"] if c["type"] == "Failed")["reason"] == "SparkApplicationMissing"


# -- restarts -----------------------------------------------------------------------------------------

async def test_restarted_operator_adopts_the_object_it_created(spark_harness: Harness, warehouse: Path) -> None:
    """Stopped between the create and the status write: the next operator derives the same name,
    finds its object (run uid annotation) and adopts it; stopped again while the application
    runs: the next one keeps observing it. One SparkApplication throughout."""
    h = spark_harness
    reached = threading.Event()

    async def block_after_create(step: str, ref: str) -> None:
        if step == "run/launched":
            reached.set()
            await asyncio.sleep(3600)  # cancelled when the operator stops

    config = spark_config()
    await setup(h, warehouse, replace(config, step_hook=block_after_create), retention=RETAIN_TWO)
    await manual_run(h, "expire", "ExpireSnapshots", "SparkOperator")
    await eventually(reached.is_set, timeout=30)
    app = await the_launched(h, SPARK_APPS)
    assert "sparkApplicationRef" not in run_status(h, "expire")
    await h.stop()

    await h.start(config)
    await eventually(lambda: run_status(h, "expire").get("sparkApplicationRef"), timeout=30)
    assert run_status(h, "expire")["sparkApplicationRef"]["name"] == app["metadata"]["name"]
    await h.wait_event("expire", "Adopted")
    assert [a["metadata"]["uid"] for a in launched(h, SPARK_APPS)] == [app["metadata"]["uid"]]
    await set_status(h, SPARK_APPS, app, {"applicationState": {"state": "RUNNING"}})
    await eventually(lambda: run_status(h, "expire")["sparkApplicationRef"]["state"] == "RUNNING")
    await h.stop()

    result = await run_locally(app["spec"]["arguments"])
    await set_status(h, SPARK_APPS, app, {"applicationState": {"state": "COMPLETED"}})
    await h.start(config)
    final = await wait_phase(h, "expire", "Succeeded")
    assert final["result"]["expiredSnapshots"] == 4 and final["result"]["deletedFiles"] == result.total_deleted
    assert [a["metadata"]["uid"] for a in launched(h, SPARK_APPS)] == [app["metadata"]["uid"]]
    creates = [c for c in h.emu.api_calls if c[3] == "sparkapplications" and c[4] == "create"]
    assert len(creates) == 1
    assert open_table(str(warehouse), "sales.orders").snapshot_ids() == [5, 6]


# -- engine choice and RBAC ---------------------------------------------------------------------------

async def test_auto_engine_runs_small_tables_in_process_and_large_ones_on_spark(
        spark_harness: Harness, warehouse: Path) -> None:
    h = spark_harness
    await setup(h, warehouse, spark_config(spark={"threshold": 1_000, "auto_engine": "SparkOperator"}),
                retention=RETAIN_TWO)
    await h.apply(obj("PaimonMaintenanceRun", "auto-small", {"tableRef": {"name": "orders"},
                                                             "type": "ExpireSnapshots"}))
    status = await wait_phase(h, "auto-small", "Succeeded")
    assert status["engine"] == "Python" and status["result"]["expiredSnapshots"] == 4
    assert not launched(h, SPARK_APPS) and not launched(h, JOBS)

    await h.stop()
    await h.start(spark_config(spark={"threshold": 0, "auto_engine": "SparkOperator"}))
    await h.apply(obj("PaimonMaintenanceRun", "auto-large", {"tableRef": {"name": "orders"},
                                                             "type": "ExpireSnapshots"}))
    await the_launched(h, SPARK_APPS)
    await eventually(lambda: run_status(h, "auto-large").get("sparkApplicationRef"))
    assert run_status(h, "auto-large")["engine"] == "SparkOperator"
    # every call the operator made about launched objects is granted by rbac.py (job namespace = sales)
    grants = rbac.required_grants(operator_namespace="tablekeeper-system", job_namespaces=["sales"])
    calls = {c[1:] for c in h.emu.api_calls if c[0].startswith("kopf") and c[3] in ("sparkapplications", "jobs")}
    assert calls and all(rbac.covers(grants, *call) for call in calls)


async def test_spark_off_or_unsupported_type_runs_in_process(spark_harness: Harness, warehouse: Path) -> None:
    h = spark_harness
    await setup(h, warehouse, fast_config(), retention=RETAIN_TWO)  # no Spark image: Spark runs are off
    await manual_run(h, "off", "ExpireSnapshots", "SparkOperator")
    status = await wait_phase(h, "off", "Succeeded")
    assert status["engine"] == "Python" and "Spark runs are off" in status["message"]
    assert status["result"]["expiredSnapshots"] == 4
    await h.stop()
    await h.start(spark_config())
    await manual_run(h, "tags", "ExpireTags", "SparkJob")
    status = await wait_phase(h, "tags", "Succeeded")
    assert status["engine"] == "Python" and "does not do ExpireTags" in status["message"]
    assert not launched(h, SPARK_APPS) and not launched(h, JOBS)


# -- pure pieces --------------------------------------------------------------------------------------

def test_observe_maps_states() -> None:
    app = sparkruns.observe
    assert app("SparkApplication", {}) == sparkruns.Observation("NEW")
    assert app("SparkApplication", {"status": {"applicationState": {"state": "PENDING_RERUN"}}}).terminal is False
    done = app("SparkApplication", {"status": {"applicationState": {"state": "COMPLETED"}}})
    assert done.terminal and done.succeeded
    failed = app("SparkApplication", {"status": {"applicationState": {"state": "FAILED", "errorMessage": "boom"}}})
    assert (failed.terminal, failed.succeeded, failed.reason) == (True, False, "SparkJobFailed") and "boom" in failed.message
    assert app("Job", {"status": {"active": 1}}).state == "Active" and not app("Job", {}).terminal
    ok = app("Job", {"status": {"conditions": [{"type": "Failed", "status": "False"},
                                               {"type": "Complete", "status": "True"}]}})
    assert ok.terminal and ok.succeeded


def test_launch_names_are_derived_from_run_and_attempt() -> None:
    first = sparkruns.launch_name("/wh/sales.orders", "expire", "uid-1", 1)
    assert first == sparkruns.launch_name("/wh/sales.orders", "expire", "uid-1", 1)
    assert first != sparkruns.launch_name("/wh/sales.orders", "expire", "uid-1", 2)
    assert first != sparkruns.launch_name("/wh/sales.orders", "expire", "uid-2", 1)
    assert len(first) <= 40 and first.startswith("tk-") and "-exp-" in first
    assert sparkruns.result_uri(SparkConfig(), "s3://lake/wh", "sales", first) == \
        f"s3://lake/wh/.tablekeeper/results/sales/{first}.json"
    assert sparkruns.result_uri(SparkConfig(results="s3://lake/results"), "s3://lake/wh", "sales", first) == \
        f"s3://lake/results/sales/{first}.json"


def test_spark_settings_from_the_environment() -> None:
    spark = OperatorConfig.from_env({"TABLEKEEPER_SPARK_IMAGE": "img:1", "TABLEKEEPER_SPARK_ENGINE": "SparkOperator",
                                     "TABLEKEEPER_SPARK_THRESHOLD": "1000", "TABLEKEEPER_SPARK_RESULTS": "s3://r/"}).spark
    assert (spark.enabled, spark.auto_engine, spark.threshold, spark.results) == (True, "SparkOperator", 1000, "s3://r")
    assert not OperatorConfig.from_env({}).spark.enabled
    from tablekeeper.core import errors

    for bad in ({"TABLEKEEPER_SPARK_ENGINE": "Flink"}, {"TABLEKEEPER_SPARK_THRESHOLD": "1.5"}):
        with pytest.raises(errors.InvalidInputError):
            OperatorConfig.from_env(bad)


# -- ExpireSnapshots on Spark also expires the decoupled changelog ----------------------------------

#: Snapshots keep 2, the changelog 4: decoupled (changelog-N outlive their snapshots).
DECOUPLED_RETENTION = {"snapshots": {"minRetained": 1, "maxRetained": 2},
                       "changelog": {"minRetained": 1, "maxRetained": 4}}


def _table_files(root: Path) -> set[str]:
    """Every file and directory of the warehouse except the result artifacts."""
    return {name for name in P.dir_listing(root) if not name.startswith(".tablekeeper")}


@pytest.mark.spark
async def test_spark_expire_snapshots_run_expires_the_decoupled_changelog_like_the_in_process_run(
        spark_harness: Harness, tmp_path: Path, spark: Any) -> None:
    """Two copies of a table with ``changelog-producer: input``, one maintained by in-process runs,
    one by SparkApplication runs whose launched arguments run on local[2]. Round 1: snapshots
    expire into changelog-N files (nothing for changelog expiration yet); round 2, after two more
    commits: snapshots expire again and the changelog past its own retention expires in the same
    Spark job. Both copies end identical, with the same counts in the runs' status."""
    from tablekeeper.spark import job as spark_job

    h = spark_harness
    template = tmp_path / "template"
    P.build_history(str(template), "sales.orders", commits=6, options={"changelog-producer": "input"})
    copies = {"local": tmp_path / "local", "spark": tmp_path / "spark"}
    for root in copies.values():
        shutil.copytree(template, root, copy_function=shutil.copy2)
    await h.start(spark_config())
    for which, root in copies.items():
        await h.apply(obj("PaimonCatalog", f"lake-{which}", {"warehouse": str(root), "writerTimeZone": "UTC"}))
        await h.apply(obj("PaimonTable", f"orders-{which}", {
            "catalogRef": {"kind": "PaimonCatalog", "name": f"lake-{which}"}, "database": "sales",
            "table": "orders", "retention": DECOUPLED_RETENTION,
            "maintenance": {"engine": "Python" if which == "local" else "SparkOperator"}}))
        await h.wait_condition("PaimonTable", f"orders-{which}", reason="Reconciled")

    results: dict[str, list[dict[str, Any]]] = {"local": [], "spark": []}
    for round_ in (1, 2):
        if round_ == 2:  # two more commits, the same files in both copies (identical after round 1)
            table = P.table_at(str(copies["local"]), "sales.orders")
            for i in range(2):
                P.write(table, P.orders_rows("2026-01-01", 100 + 10 * i, 2))
            shutil.rmtree(copies["spark"] / "sales.db")
            shutil.copytree(copies["local"] / "sales.db", copies["spark"] / "sales.db", copy_function=shutil.copy2)
        await h.apply(obj("PaimonMaintenanceRun", f"local-{round_}", {
            "tableRef": {"name": "orders-local"}, "type": "ExpireSnapshots"}))
        await h.apply(obj("PaimonMaintenanceRun", f"spark-{round_}", {
            "tableRef": {"name": "orders-spark"}, "type": "ExpireSnapshots"}))
        ref = await eventually(lambda run=f"spark-{round_}": run_status(h, run).get("sparkApplicationRef"),
                               timeout=30)
        [body] = [a for a in launched(h, SPARK_APPS) if a["metadata"]["name"] == ref["name"]]
        request, _ = job_request.parse_args(body["spec"]["arguments"])
        assert request.operation == "expire" and request.with_changelog
        assert request.retention is not None
        assert (request.retention.changelog_retain_min, request.retention.changelog_retain_max) == (1, 4)
        result = await asyncio.to_thread(spark_job.run_to_result, spark, request)
        assert result.status == "Succeeded", result.errors
        assert request.result
        result_artifact.write_result(request.result, result, request.options)
        await set_status(h, SPARK_APPS, body, {"applicationState": {"state": "COMPLETED"}})
        for which in ("local", "spark"):
            status = await wait_phase(h, f"{which}-{round_}", "Succeeded")
            results[which].append(status["result"])
        assert run_status(h, f"local-{round_}")["engine"] == "Python"
        assert run_status(h, f"spark-{round_}")["engine"] == "SparkOperator"
        assert _table_files(copies["spark"]) == _table_files(copies["local"]), f"round {round_}"

    handles = {which: open_table(str(root), "sales.orders") for which, root in copies.items()}
    assert handles["spark"].snapshot_ids() == handles["local"].snapshot_ids() == [7, 8]
    assert handles["spark"].changelog_ids() == handles["local"].changelog_ids() == [5, 6]
    first, second = results["spark"]
    assert first["expiredSnapshots"] == results["local"][0]["expiredSnapshots"] == 4
    assert first.get("expiredChangelogs", 0) == results["local"][0].get("expiredChangelogs", 0) == 0  # none yet
    assert second["expiredSnapshots"] == results["local"][1]["expiredSnapshots"] == 2
    # changelog-1..4 went (changelog-5 and -6, written by this round's snapshot expiration, stay);
    # both engines report what was executed, not a count planned before the snapshot expiration
    assert second["expiredChangelogs"] == results["local"][1]["expiredChangelogs"] == 4
    assert second["deletedFiles"] == results["local"][1]["deletedFiles"] > 0
    assert second["executed"]["deleted"]["changelog-meta"] == second["expiredChangelogs"]
    # both say why snapshot expiration stopped where it did, in the core plan's words; the
    # changelog step's notes are prefixed alike ("changelog: ...")
    for local, spark_result in zip(results["local"], results["spark"], strict=True):
        assert local["notes"][0] == spark_result["notes"][0] and "younger than" in local["notes"][0]
    assert any(n.startswith("changelog: expiring changelogs") for n in results["local"][1]["notes"])
    assert any(n.startswith("changelog: expiring changelogs") for n in results["spark"][1]["notes"])
    # every view still readable through pypaimon reads the same in both copies
    views = {which: P.snapshot_views(str(root), "sales.orders") for which, root in copies.items()}
    assert views["spark"] == views["local"]


# -- tags and branches wait for a Spark run of their table --------------------------------------------

async def test_tag_creation_waits_for_the_spark_run_of_its_table(spark_harness: Harness, warehouse: Path) -> None:
    """In process, a run holds the table's lock and a tag creation waits for it; a Spark run holds
    no lock in this process, so tag changes of its table wait for the run instead: Synced=False
    reason TableLocked naming the run, nothing written, then created once the run is over."""
    h = spark_harness
    await setup(h, warehouse, spark_config(), retention=RETAIN_TWO)
    await manual_run(h, "expire", "ExpireSnapshots", "SparkOperator")
    app = await the_launched(h, SPARK_APPS)
    await eventually(lambda: run_status(h, "expire").get("sparkApplicationRef"))
    await h.apply(obj("PaimonTag", "v6", {"tableRef": {"name": "orders"}, "snapshotId": 6}))

    synced = await h.wait_condition("PaimonTag", "v6", status="False", reason="TableLocked", type_="Synced")
    assert "expire" in synced["message"] and "ExpireSnapshots" in synced["message"]
    event = await h.wait_event("v6", "TableLocked")
    assert event["type"] == "Normal" and "expire" in event["message"]
    assert h.status("PaimonTag", "v6").get("state") != "Ready"
    table = open_table(str(warehouse), "sales.orders")
    assert table.tag_names() == []  # nothing written while the run is in flight
    # still waiting after more retries (the run is still RUNNING)
    await set_status(h, SPARK_APPS, app, {"applicationState": {"state": "RUNNING"}})
    await eventually(lambda: run_status(h, "expire")["sparkApplicationRef"]["state"] == "RUNNING")
    assert table.tag_names() == [] and (h.condition("PaimonTag", "v6", "Synced") or {}).get("reason") == "TableLocked"

    await run_locally(app["spec"]["arguments"])
    await set_status(h, SPARK_APPS, app, {"applicationState": {"state": "COMPLETED"}})
    await wait_phase(h, "expire", "Succeeded")
    await h.wait_condition("PaimonTag", "v6", reason="Created")
    assert (h.condition("PaimonTag", "v6", "Synced") or {}).get("status") == "True"
    assert open_table(str(warehouse), "sales.orders").tag("v6").snapshot_id == 6
    assert open_table(str(warehouse), "sales.orders").snapshot_ids() == [5, 6]


async def test_branch_creation_waits_for_the_spark_run_of_its_table(spark_harness: Harness,
                                                                   warehouse: Path) -> None:
    """As for tags: a branch of a table whose Spark expiry is in flight waits (TableLocked), its
    storage untouched, and is created from its tag once the run is over."""
    h = spark_harness
    await setup(h, warehouse, spark_config(), retention=RETAIN_TWO)
    await h.apply(obj("PaimonTag", "v6", {"tableRef": {"name": "orders"}, "snapshotId": 6}))
    await h.wait_condition("PaimonTag", "v6", reason="Created")
    await manual_run(h, "expire", "ExpireSnapshots", "SparkOperator")
    app = await the_launched(h, SPARK_APPS)
    await eventually(lambda: run_status(h, "expire").get("sparkApplicationRef"))
    await h.apply(obj("PaimonBranch", "fix", {"tableRef": {"name": "orders"}, "fromTag": "v6"}))

    synced = await h.wait_condition("PaimonBranch", "fix", status="False", reason="TableLocked", type_="Synced")
    assert "expire" in synced["message"]
    assert open_table(str(warehouse), "sales.orders").branch_names() == []  # nothing written meanwhile

    await run_locally(app["spec"]["arguments"])
    await set_status(h, SPARK_APPS, app, {"applicationState": {"state": "COMPLETED"}})
    await wait_phase(h, "expire", "Succeeded")
    await h.wait_condition("PaimonBranch", "fix", reason="Created")
    table = open_table(str(warehouse), "sales.orders")
    assert table.branch_names() == ["fix"] and table.snapshot_ids() == [5, 6]
    main_at_6 = P.read_rows(P.table_at(str(warehouse), "sales.orders"), {"scan.snapshot-id": "6"})
    assert P.read_rows(P.table_at(str(warehouse), "sales.orders", "fix")) == main_at_6  # the branch reads tag v6


# -- engine Auto: Spark Operator detection ----------------------------------------------------------

def _crd_gets(h: Harness) -> int:
    return sum(1 for c in h.emu.api_calls
               if c[0].startswith("kopf") and c[3] == "customresourcedefinitions" and c[4] == "get")


async def _auto_run(h: Harness, name: str) -> tuple[str, sparkruns.Ref]:
    """An Auto run launched on Spark (threshold 0): (its engine, the launched object); then it is
    failed through the object's status so the next run of the table may start."""
    await h.apply(obj("PaimonMaintenanceRun", name, {"tableRef": {"name": "orders"}, "type": "ExpireSnapshots"}))
    ref = await eventually(lambda: sparkruns.Ref.of(run_status(h, name)), timeout=30)
    engine = run_status(h, name)["engine"]
    resource = SPARK_APPS if ref.kind == "SparkApplication" else JOBS
    [body] = [b for b in launched(h, resource) if b["metadata"]["name"] == ref.name]
    await set_status(h, resource, body, {"applicationState": {"state": "FAILED", "errorMessage": "test"}}
                     if ref.kind == "SparkApplication" else
                     {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]})
    await wait_phase(h, name, "Failed")
    return str(engine), ref


async def test_auto_detects_the_spark_operator_crd(harness: Harness, warehouse: Path) -> None:
    """Engine Auto above the threshold (TABLEKEEPER_SPARK_ENGINE=Detect, the default) launches a
    batch Job without the SparkApplication CRD and a SparkApplication with it; the answer is
    cached for TABLEKEEPER_SPARK_DETECT_TTL; every lookup is the one named GET rbac.py grants."""
    h = harness
    h.emu.resources[JOBS] = kmock.ResourceInfo(kind="Job", singular="job", namespaced=True, verbs=VERBS)
    crd = yaml.safe_load(SPARK_CRD.read_text(encoding="utf-8"))
    assert crd["metadata"]["name"] == sparkruns.SPARK_APPLICATION_CRD
    assert SparkConfig().auto_engine == "Detect"
    await setup(h, warehouse, spark_config(spark={"threshold": 0, "detect_ttl": 0}), retention=RETAIN_TWO)

    engine, ref = await _auto_run(h, "no-crd")  # the Spark Operator is not installed
    assert (engine, ref.kind) == ("SparkJob", "Job") and not launched(h, SPARK_APPS)
    assert _crd_gets(h) == 1
    register_crds(h.emu, [crd])  # installed now; TTL 0: asked again
    engine, ref = await _auto_run(h, "with-crd")
    assert (engine, ref.kind) == ("SparkOperator", "SparkApplication")
    assert _crd_gets(h) == 2

    await h.stop()
    await h.start(spark_config(spark={"threshold": 0}))  # the default TTL (300 s)
    engine, _ = await _auto_run(h, "cached-1")
    assert engine == "SparkOperator" and _crd_gets(h) == 3
    resp = await h.emu.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                              f"{sparkruns.SPARK_APPLICATION_CRD}")
    assert resp.status in (200, 202)
    engine, _ = await _auto_run(h, "cached-2")
    assert engine == "SparkOperator" and _crd_gets(h) == 3  # the cached answer, no second lookup

    # a pinned engine never asks
    await h.stop()
    await h.start(spark_config(spark={"threshold": 0, "auto_engine": "SparkJob"}))
    engine, _ = await _auto_run(h, "pinned")
    assert engine == "SparkJob" and _crd_gets(h) == 3
    grants = rbac.required_grants(operator_namespace="tablekeeper-system", job_namespaces=["sales"])
    assert rbac.covers(grants, None, "apiextensions.k8s.io", "customresourcedefinitions", "get",
                       sparkruns.SPARK_APPLICATION_CRD)
    calls = {c[1:] for c in h.emu.api_calls if c[0].startswith("kopf") and c[3] in ("sparkapplications", "jobs")}
    assert calls and all(rbac.covers(grants, *call) for call in calls)
