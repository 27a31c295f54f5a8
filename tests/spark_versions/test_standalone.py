"""A real standalone cluster (master + two workers from pyspark 4.3's jars, executors in their own
JVMs, their Python without tablekeeper): ``spark-submit --master spark://... --py-files`` of the
package zip runs tasks on both workers, each importing tablekeeper's job modules from the zip."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spark_versions.conftest import from_zip, run_probe
from tests.support.spark_clusters import SparkEnv, StandaloneCluster, project_env

pytestmark = pytest.mark.spark_cluster


def test_a_job_runs_on_both_workers_with_the_zip_shipped(standalone_cluster: StandaloneCluster,
                                                         executor_env: SparkEnv, pyfiles_zip: str,
                                                         tmp_path: Path) -> None:
    driver = project_env()
    report = run_probe(driver, pyfiles_zip, tmp_path, partitions=4, master=standalone_cluster.master_url,
                       executor_python=executor_env.python, conf=standalone_cluster.submit_conf())
    assert report["master"] == standalone_cluster.master_url
    assert report["driver"]["python"] == driver.python
    tasks = report["tasks"]
    assert sorted(t["partition"] for t in tasks) == [0, 1, 2, 3]
    # an executor's working directory is <worker work dir>/<app id>/<executor id>
    workers = {Path(t["cwd"]).parents[1].name for t in tasks}
    executors = {t["cwd"] for t in tasks}
    assert workers == {"worker-0", "worker-1"}, executors
    assert len(executors) == 2
    for task in tasks:
        assert task["python"] == executor_env.python
        for module, path in task["modules"].items():
            assert from_zip(path, pyfiles_zip), (module, path)
        assert task["native"] == dict.fromkeys(task["native"], False)
    # the application ran on the master and finished
    state = standalone_cluster.state()
    assert [app["name"] for app in state["completedapps"]].count("tablekeeper-probe") >= 1
    assert state["aliveworkers"] == 2
