"""A Spark Connect server (pyspark 4.3's ``sbin/start-connect-server.sh``, its Python without
tablekeeper): a client session ``SparkSession.builder.remote("sc://...")``, and modules made
importable on the server's executors by ``addArtifacts(zip, pyfile=True)`` for ``mapInArrow`` and
``mapInPandas``; artifacts belong to the session that added them."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

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
    for side in report["other_session"]:
        assert side["tablekeeper"].startswith("error: ModuleNotFoundError"), side
