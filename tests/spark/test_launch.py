"""Launch specs, run names, the result artifact and the engine choice: no JVM needed (these
tests are not marked ``spark``), plus the executor module's import hygiene (style.md §3.2)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core import errors
from tablekeeper.core.reclaim.expire.retention import Retention, RetentionFlags, from_options
from tablekeeper.core.values import rails
from tablekeeper.spark import (
    dispatch,
    engine_choice,
    job_request,
    k8s_manifests,
    result_artifact,
    run_names,
    run_steps,
    submit,
)
from tests.maintenance.helpers import IDENT, build_mixed, check_retained, now_ms, spark_request, views

OWNER = k8s_manifests.OwnerReference(name="orders-expire-1", uid="0b6e3c7a-1111-2222-3333-444455556666")


def req(**kw: Any) -> job_request.JobRequest:
    kw.setdefault("operation", "expire")
    return job_request.JobRequest(warehouse="s3://lake/wh", table="sales.orders", **kw)


# -- import hygiene -----------------------------------------------------------------------------------
@pytest.mark.parametrize("module, forbidden", [
    *[(f"tablekeeper.spark.{m}", ("pyspark", "kopf", "pypaimon", "pypaimon_rust", "pyarrow", "fsspec"))
      for m in ("executor", "orphans.executor", "expire.executor", "deletes.executor")],
    *[(f"tablekeeper.spark.{m}", ("pyspark", "kopf", "pypaimon", "pypaimon_rust"))
      for m in ("job_request", "run_names", "submit", "k8s_manifests", "result_artifact", "engine_choice")],
    ("tablekeeper.spark.dispatch", ("pyspark", "kopf", "pypaimon_rust")),
    ("tablekeeper.spark", ("pyspark", "kopf", "pypaimon", "pypaimon_rust")),
])
def test_module_imports_nothing_heavy_in_a_fresh_interpreter(module: str, forbidden: tuple[str, ...]) -> None:
    code = (f"import sys, json, {module}\n"
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2]).stdout
    loaded = set(json.loads(out))
    assert not loaded & set(forbidden), sorted(loaded & set(forbidden))


def test_executor_functions_run_in_a_fresh_interpreter_without_pyspark(tmp_path: Path) -> None:
    """The executor's listing and deleting path imports pyarrow and fsspec lazily, never pyspark
    or pypaimon."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f1").write_bytes(b"abc")
    code = f"""
import json, sys, pyarrow as pa
from tablekeeper.spark import executor as ex
from tablekeeper.spark.deletes import executor as deletes
from tablekeeper.spark.orphans import executor as orphans
spec = {{"storage": {{"uri": {str(tmp_path)!r}, "options": {{}}}}, "older_than_ms": 2**62, "batch_size": 250}}
batch = pa.RecordBatch.from_pydict({{"dir": [{str(tmp_path / "d")!r}], "mode": ["all"], "kind": ["data"]}})
listed = [b.to_pylist() for b in orphans.list_files(spec, iter([batch]))][0]
rows = pa.RecordBatch.from_pylist([{{**{{k: r[k] for k in ("path", "kind", "size", "parent_dir", "stage")}}, "batch": 0}}
                                   for r in listed], schema=ex.arrow_schema(deletes.BATCHED_FIELDS))
summary = [b.to_pylist() for b in deletes.delete_files(spec, iter([rows]))][0]
print(json.dumps({{"listed": len(listed), "summary": summary,
                  "mods": sorted({{m.split('.')[0] for m in sys.modules}})}}))
"""
    out = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                                    cwd=Path(__file__).resolve().parents[2]).stdout)
    assert out["listed"] == 1
    assert out["summary"] == [{"stage": 0, "kind": "data", "deleted": 1, "missing": 0, "failed": 0, "bytes": 3,
                               "failure_sample": [], "unsized": 0}]
    assert not {"pyspark", "pypaimon", "pypaimon_rust", "kopf"} & set(out["mods"])
    assert not (tmp_path / "d" / "f1").exists()


# -- names --------------------------------------------------------------------------------------------
def test_run_names_are_short_unique_dns_labels() -> None:
    names = {run_names.run_name("prod/sales.orders", "clean-orphans") for _ in range(50)}
    assert len(names) == 50
    for name in names:
        assert len(name) <= rails.SPARK_NAME_MAX
        assert name.startswith("tk-") and "-orp-" in name
        run_names.check_name(name)
    assert run_names.run_name("t", "expire", suffix="abcd") == run_names.run_name("t", "expire", suffix="abcd")
    assert run_names.run_name("t", "expire", suffix="abcd") != run_names.run_name("u", "expire", suffix="abcd")
    with pytest.raises(errors.InvalidInputError):
        run_names.run_name("t", "compact")
    with pytest.raises(errors.InvalidInputError):
        run_names.check_name("x" * (rails.SPARK_NAME_MAX + 1))


# -- request and argv -----------------------------------------------------------------------------------
def test_request_round_trips_through_the_command_line() -> None:
    r = req(operation="clean-orphans", options={"s3.endpoint": "http://m:9000"}, dry_run=True, older_than="2 d",
            force=True, now_ms=123, parallelism=8, batch_size=500, run_name="tk-1", result="s3://r/x.json")
    parsed, settings = job_request.parse_args([*r.to_args(), "--master", "local[2]", "--conf", "a.b=c"])
    assert parsed == r
    assert settings == {"master": "local[2]", "remote": None, "conf": {"a.b": "c"}}
    _, remote = job_request.parse_args([*r.to_args(), "--remote", "sc://connect:15002"])
    assert remote["remote"] == "sc://connect:15002" and remote["master"] is None
    kept = from_options({}, RetentionFlags(retain_min=2, retain_max=9, time_retained=timedelta(hours=1),
                                           expire_limit=5))
    assert not kept.changelog_decoupled  # unset changelog values follow the snapshot values
    e = req(branch="b1", retention=kept, batches=100)
    assert "--batches" in e.to_args() and job_request.parse_args(e.to_args())[0] == e
    c = req(operation="expire", with_changelog=True, retention=Retention(
        changelog_retain_min=30, changelog_retain_max=40, changelog_time_retained=timedelta(days=2)))
    assert c.retention is not None and c.retention.changelog_decoupled
    assert "--with-changelog" in c.to_args() and job_request.parse_args(c.to_args())[0] == c
    with pytest.raises(errors.InvalidInputError):
        job_request.parse_args([*req().to_args(), "--retention", "[1]"])


@pytest.mark.parametrize("bad", [{"operation": "compact"}, {"batch_size": 0}, {"batches": 0},
                                 {"batch_size": rails.DELETE_BATCH_MAX + 1}, {"parallelism": 0},
                                 {"operation": "clean-orphans", "branch": "b1"},
                                 {"operation": "expire-changelog", "with_changelog": True},
                                 {"operation": "clean-orphans", "retention": Retention()}])
def test_bad_requests_are_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(errors.InvalidInputError):
        req(**bad)


def test_spark_submit_argv_runs_the_entry_point_on_this_interpreter(tmp_path: Path) -> None:
    zip_path = submit.build_pyfiles_zip(tmp_path)
    argv = submit.spark_submit_argv(req(run_name="tk-x"), master="local[2]", py_files=[zip_path],
                                    conf={"spark.sql.shuffle.partitions": "4"})
    assert argv[:5] == ["spark-submit", "--master", "local[2]", "--name", "tk-x"]
    assert f"spark.pyspark.python={sys.executable}" in argv
    assert "spark.sql.shuffle.partitions=4" in argv
    assert argv[argv.index("--py-files") + 1] == zip_path
    main = next(a for a in argv if a.endswith(".py"))
    assert Path(main).resolve() == Path(submit.__file__).resolve().with_name("__main__.py")
    assert argv[argv.index(main) + 1:] == req(run_name="tk-x").to_args()
    import zipfile

    assert "tablekeeper/spark/executor.py" in zipfile.ZipFile(zip_path).namelist()


# -- Kubernetes manifests --------------------------------------------------------------------------------
def test_job_manifest() -> None:
    name = run_names.run_name("sales.orders", "expire")
    m = k8s_manifests.job_manifest(req(), name=name, namespace="jobs", owner=OWNER, image="tk:1", service_account="tk-spark",
                            active_deadline_seconds=7200, ttl_seconds_after_finished=604800,
                            credentials_secret="s3-creds")
    assert m["apiVersion"] == "batch/v1" and m["kind"] == "Job"
    meta = m["metadata"]
    assert meta["name"] == name and meta["namespace"] == "jobs"
    assert meta["ownerReferences"] == [{"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonMaintenanceRun",
                                        "name": OWNER.name, "uid": OWNER.uid, "controller": True,
                                        "blockOwnerDeletion": True}]
    assert meta["labels"]["tablekeeper.io/run"] == name and meta["labels"]["tablekeeper.io/table"] == "sales.orders"
    spec = m["spec"]
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"], spec["ttlSecondsAfterFinished"]) == (0, 7200, 604800)
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["serviceAccountName"] == "tk-spark"
    (container,) = pod["containers"]
    cmd = container["command"]
    assert cmd[:5] == ["/opt/spark/bin/spark-submit", "--master", "k8s://https://kubernetes.default.svc",
                       "--deploy-mode", "client"]
    assert "spark.kubernetes.driver.pod.name=$(TK_POD_NAME)" in cmd
    assert f"spark.kubernetes.executor.podNamePrefix={name}" in cmd
    assert "spark.kubernetes.executor.secretKeyRef.AWS_ACCESS_KEY_ID=s3-creds:AWS_ACCESS_KEY_ID" in cmd
    assert cmd[cmd.index(k8s_manifests.IMAGE_MAIN_FILE) + 1:] == req().to_args()
    assert container["envFrom"] == [{"secretRef": {"name": "s3-creds"}}]
    assert {e["name"] for e in container["env"]} >= {"TK_POD_NAME", "TK_POD_IP", "TK_POD_NAMESPACE"}
    assert container["resources"]["limits"]["memory"] == "2432Mi"  # 2g + 384 MiB overhead
    json.dumps(m)  # plain data


def test_spark_application_manifest() -> None:
    name = run_names.run_name("sales.orders", "clean-orphans")
    m = k8s_manifests.spark_application_manifest(
        req(operation="clean-orphans", dry_run=True), name=name, namespace="jobs", owner=OWNER, image="tk:1",
        spark_version="4.0.1", service_account="tk-spark", active_deadline_seconds=3600,
        ttl_seconds_after_finished=86400, executor=k8s_manifests.SparkResources(cores=2, memory="4g", instances=4))
    assert m["apiVersion"] == "sparkoperator.k8s.io/v1beta2" and m["kind"] == "SparkApplication"
    assert m["metadata"]["ownerReferences"][0]["kind"] == "PaimonMaintenanceRun"
    assert m["metadata"]["annotations"] == {k8s_manifests.DEADLINE_ANNOTATION: "3600"}
    assert m["metadata"]["labels"]["tablekeeper.io/type"] == "RemoveOrphanFiles"
    spec = m["spec"]
    assert (spec["type"], spec["mode"], spec["pythonVersion"], spec["sparkVersion"]) == ("Python", "cluster", "3",
                                                                                          "4.0.1")
    assert spec["restartPolicy"] == {"type": "Never"} and spec["timeToLiveSeconds"] == 86400
    assert spec["mainApplicationFile"] == f"local://{k8s_manifests.IMAGE_MAIN_FILE}"
    assert spec["arguments"] == req(operation="clean-orphans", dry_run=True).to_args()
    assert spec["executor"] == {**spec["executor"], "instances": 4, "cores": 2, "memory": "4g"}
    assert spec["driver"]["serviceAccount"] == "tk-spark"
    assert spec["sparkConf"]["spark.sql.shuffle.partitions"] == "32"


def test_manifests_refuse_credentials_in_arguments() -> None:
    leaky = req(options={"s3.endpoint": "http://x", "s3.secret-key": "hunter2"})
    for build in (k8s_manifests.job_manifest, k8s_manifests.spark_application_manifest):
        kwargs: dict[str, Any] = {"name": "tk-12345678-exp-abcd", "namespace": "n", "owner": OWNER, "image": "i",
                                  "service_account": "sa", "active_deadline_seconds": 60,
                                  "ttl_seconds_after_finished": 60}
        if build is k8s_manifests.spark_application_manifest:
            kwargs["spark_version"] = "4.0.1"
        with pytest.raises(errors.InvalidInputError, match="credentials"):
            build(leaky, **kwargs)
    with pytest.raises(errors.InvalidInputError):
        k8s_manifests.job_manifest(req(), name="Not_A_Label", namespace="n", owner=OWNER, image="i", service_account="sa",
                            active_deadline_seconds=60, ttl_seconds_after_finished=60)
    assert leaky.redacted_options() == {"s3.endpoint": "http://x", "s3.secret-key": "***"}


# -- result artifact -----------------------------------------------------------------------------------------
def test_result_artifact_round_trip_and_validation(tmp_path: Path) -> None:
    r = result_artifact.RunResult("expire", "db.t", "main", False, "spark", run_name="tk-1", planned_files={"data": 3},
                         planned_bytes={"data": 30}, deleted={"data": 2}, deleted_bytes={"data": 20},
                         missing={"data": 1}, sample=[f"/p/{i}" for i in range(30)],
                         failure_sample=[{"path": "/x", "error": "denied"}], failed_count=1,
                         timings={"totalSeconds": 1.5}, details={"end_exclusive": 7})
    path = tmp_path / "out" / "r.json"
    result_artifact.write_result(str(path), r)
    data = json.loads(path.read_text())
    assert data["kind"] == result_artifact.RESULT_KIND and data["schemaVersion"] == result_artifact.RESULT_SCHEMA_VERSION
    assert data["planned"]["totalFiles"] == 3 and data["executed"]["totalDeleted"] == 2
    assert len(data["sample"]) == rails.STATUS_SAMPLE_MAX
    back = result_artifact.read_result(str(path))
    assert back.planned_files == r.planned_files and back.missing == r.missing and back.failed_count == 1
    assert back.details == {"end_exclusive": 7} and back.sample == r.sample[:rails.STATUS_SAMPLE_MAX]
    for broken in ({**data, "kind": "Other"}, {**data, "schemaVersion": 99}, {**data, "status": "Weird"},
                   {k: v for k, v in data.items() if k != "planned"}):
        path.write_text(json.dumps(broken))
        with pytest.raises(errors.FormatError):
            result_artifact.read_result(str(path))
    path.write_text("{nope")
    with pytest.raises(errors.FormatError):
        result_artifact.read_result(str(path))
    with pytest.raises(FileNotFoundError):
        result_artifact.read_result(str(tmp_path / "missing.json"))
    failed = result_artifact.RunResult("expire", "db.t", "main", False, "spark")
    failed.fail(errors.IncompleteProtectionSetError("manifest gone", fix="repair"))
    assert failed.status == "Failed"
    assert failed.errors == [{"type": "IncompleteProtectionSetError", "message": "manifest gone", "fix": "repair"}]


# -- engine choice -----------------------------------------------------------------------------------------
def test_auto_engine_uses_the_plan_size_threshold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wh = str(tmp_path / "wh")
    build_mixed(wh)
    table = run_steps.open_request_table(job_request.JobRequest("expire", wh, IDENT))
    size = engine_choice.estimate_plan_size(table)
    assert 0 < size < 100
    assert engine_choice.choose_engine(size, size) == "local" and engine_choice.choose_engine(size, size - 1) == "spark"
    assert engine_choice.spark_threshold() == engine_choice.DEFAULT_SPARK_THRESHOLD
    monkeypatch.setenv(engine_choice.THRESHOLD_ENV, "5")
    assert engine_choice.spark_threshold() == 5 and engine_choice.spark_threshold(7) == 7
    monkeypatch.setenv(engine_choice.THRESHOLD_ENV, "many")
    with pytest.raises(errors.InvalidInputError):
        engine_choice.spark_threshold()
    monkeypatch.delenv(engine_choice.THRESHOLD_ENV)
    result = dispatch.run(spark_request(wh, "expire", IDENT, dry_run=True, retain_min=1, time_retained="0 ms",
                                    now_ms=now_ms() + 1000), engine="auto")
    assert result.engine == "local" and result.details["estimatedFiles"] == size
    assert result.planned_files["snapshot"] == 6 and result.deleted == {}


@pytest.mark.parametrize("value, expected_delta", [("2 d", 2 * 86_400_000), ("90 min", 90 * 60_000)])
def test_orphan_threshold_parses_ages_and_times(value: str, expected_delta: int) -> None:
    now = 1_800_000_000_000
    assert run_steps.orphan_threshold(job_request.JobRequest("clean-orphans", "/w", "d.t", older_than=value), now) \
        == now - expected_delta
    assert run_steps.orphan_threshold(job_request.JobRequest("clean-orphans", "/w", "d.t", older_than=str(now - 10**8)),
                                   now) == now - 10**8
    with pytest.raises(errors.UnsafePolicyError):
        run_steps.orphan_threshold(job_request.JobRequest("clean-orphans", "/w", "d.t", older_than="10 min"), now)


@pytest.mark.spark
@pytest.mark.slow
def test_a_real_spark_submit_process_runs_the_job(tmp_path: Path) -> None:
    """The production entry: spark-submit in its own JVM (about 40 s on 2 cores)."""
    wh = str(tmp_path / "wh")
    build_mixed(wh)
    before = views(wh)
    result = tmp_path / "out" / "result.json"
    r = spark_request(wh, "expire", IDENT, retain_min=1, time_retained="0 ms", now_ms=now_ms() + 1000,
                          parallelism=2, result=str(result), run_name=run_names.run_name(IDENT, "expire"))
    argv = submit.spark_submit_argv(r, spark_submit=submit.default_spark_submit(), master="local[2]",
                                    py_files=[submit.build_pyfiles_zip(tmp_path)],
                                    conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
                                          "spark.driver.bindAddress": "127.0.0.1",
                                          # a JIT setting only (tests/support/spark.py): the job's
                                          # Spark settings stay Spark's defaults
                                          "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"})
    done = subprocess.run(argv, capture_output=True, text=True, env=submit.local_submit_env(), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    artifact = result_artifact.read_result(str(result))
    assert artifact.status == "Succeeded" and artifact.engine == "spark"
    assert artifact.planned_files["snapshot"] == 6 and artifact.deleted["data"] > 0
    gone = [k for k in before if k.startswith("main@snapshot-")][:6]
    check_retained(wh, before, gone=gone)  # what is left reads as before and has all its files
