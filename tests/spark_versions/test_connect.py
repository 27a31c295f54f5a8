"""A Spark Connect server (pyspark 4.3's ``sbin/start-connect-server.sh``, its Python without
tablekeeper): a client session ``SparkSession.builder.remote("sc://...")``, and modules made
importable on the server's executors by ``addArtifacts(zip, pyfile=True)`` for ``mapInArrow`` and
``mapInPandas``; artifacts belong to the session that added them. And the job itself as a Connect
client (``--remote``, ``SPARK_REMOTE``), judged against the in-process engine."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.spark import result_artifact
from tests.maintenance.helpers import build_mixed_with_orphans
from tests.spark_versions.conftest import STEPS, Parity
from tests.support.spark_clusters import ConnectServer, SparkEnv, clean_env, project_env, run_checked

pytestmark = pytest.mark.spark_connect

CLIENT = Path(__file__).with_name("connect_probe.py")


def _probe_zip(tmp_path: Path) -> str:
    target = tmp_path / "tk-artifact-probe.zip"
    with zipfile.ZipFile(target, "w") as zf:
        zf.writestr("tk_artifact_probe.py", 'MARKER = "from-an-artifact"\n')
    return str(target)


def _run_client(server: ConnectServer, tk_zip: str, probe_zip: str, cwd: Path) -> dict[str, Any]:
    client = project_env()
    proc = run_checked([client.python, str(CLIENT), server.url, tk_zip, probe_zip],
                       env=clean_env(None, cwd / "conf"), cwd=cwd, timeout=600, what="Spark Connect client")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("PROBE ")]
    assert len(lines) == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    report: dict[str, Any] = json.loads(lines[0].removeprefix("PROBE "))
    return report


def test_added_artifacts_are_importable_on_the_servers_executors(connect_server: ConnectServer,
                                                                 executor_env: SparkEnv, pyfiles_zip: str,
                                                                 tmp_path: Path) -> None:
    report = _run_client(connect_server, pyfiles_zip, _probe_zip(tmp_path), tmp_path)
    assert report["spark"] == project_env().pyspark
    for side in report["before"]:  # the server's Python has no tablekeeper of its own
        assert side["python"] == executor_env.python
        assert side["tablekeeper"].startswith("error: ModuleNotFoundError"), side
        assert side["probe"].startswith("error: ModuleNotFoundError"), side
    for side in report["after_arrow"] + report["after_pandas"]:
        assert side["python"] == executor_env.python
        assert f"{Path(pyfiles_zip).name}/tablekeeper/core/plans/plan.py" in side["tablekeeper"], side
        assert side["probe"] == "from-an-artifact", side
    assert len(report["after_arrow"]) == len(report["after_pandas"]) == 2
    # adding the same file again is accepted; another session of the server does not see them
    assert report["add_again"] == "ok", report["add_again"]
    assert report["is_connect"] is True and report["slots"] is None  # no SparkContext: the job divides by partitions
    for side in report["other_session"]:
        assert side["tablekeeper"].startswith("error: ModuleNotFoundError"), side


def _job_on_connect(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m tablekeeper.spark ARGS`` of the project's environment (the Connect client)."""
    return subprocess.run([project_env().python, "-m", "tablekeeper.spark", *args], cwd=cwd,
                          env=clean_env(None, cwd / "conf", **env), capture_output=True, text=True, timeout=600)


def test_the_job_runs_on_spark_connect_like_in_process(connect_server: ConnectServer, executor_env: SparkEnv,
                                                       tmp_path: Path) -> None:
    built = str(tmp_path / "built")
    build_mixed_with_orphans(built)
    parity = Parity.of(built, tmp_path)
    work = tmp_path / "client"
    work.mkdir()
    # expire with --remote, clean-orphans with SPARK_REMOTE (as Databricks and Spark 4 clients set it)
    remotes: list[tuple[list[str], dict[str, str]]] = [(["--remote", connect_server.url], {}),
                                                       ([], {"SPARK_REMOTE": connect_server.url})]
    for (operation, flags), (remote, env) in zip(STEPS, remotes, strict=True):
        out = work / f"{operation}.json"
        proc = _job_on_connect([*parity.request(operation, flags).to_args(), "--result", str(out), *remote], work,
                               **env)
        assert proc.returncode == 0, proc.stdout[-1500:] + proc.stderr[-3000:]
        result = result_artifact.read_result(str(out))
        assert result.versions["spark"] == project_env().pyspark
        assert result.details["requestsCounted"] == "driver"  # no accumulators on Connect
        assert result.spark_jobs is None  # nor a status tracker
        parity.check(operation, flags, result)
    parity.check_views()


def test_a_session_that_cannot_start_is_the_runs_failure_in_its_artifact(tmp_path: Path) -> None:
    """No server needed: SPARK_REMOTE beside --master is refused when the session is made, inside
    the run, so the artifact says why (the operator reads it instead of ResultArtifactMissing)."""
    out = tmp_path / "failed.json"
    proc = _job_on_connect(["--operation", "expire", "--warehouse", str(tmp_path / "wh"), "--table", "db.t",
                            "--master", "local[1]", "--result", str(out)], tmp_path, SPARK_REMOTE="sc://127.0.0.1:1")
    assert proc.returncode == 1, proc.stderr[-2000:]
    failed = result_artifact.read_result(str(out))
    assert failed.status == "Failed" and failed.errors[0]["type"] == "InvalidInputError"
    assert "exclude each other" in failed.errors[0]["message"]
    both = _job_on_connect(["--operation", "expire", "--warehouse", str(tmp_path / "wh"), "--table", "db.t",
                            "--master", "local[1]", "--remote", "sc://127.0.0.1:1"], tmp_path)
    assert both.returncode == 2 and both.stderr.startswith("error: --master local[1] and --remote"), both.stderr
