"""A real standalone cluster (master + two workers from pyspark 4.3's jars, executors in their own
JVMs, their Python without tablekeeper): ``spark-submit --master spark://... --py-files`` of the
package zip runs tasks on both workers, each importing tablekeeper's job modules from the zip; the
job itself runs there as it runs in process; without the zip it fails closed, saying to ship it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablekeeper.spark import result_artifact
from tests.maintenance.helpers import build_mixed_with_orphans
from tests.spark_versions.conftest import MAIN_FILE, STEPS, Parity, from_zip, run_probe
from tests.support.paimon import dir_listing
from tests.support.spark_clusters import SparkEnv, StandaloneCluster, project_env, spark_submit

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


def test_the_job_on_the_cluster_matches_in_process(standalone_cluster: StandaloneCluster, executor_env: SparkEnv,
                                                   pyfiles_zip: str, tmp_path: Path) -> None:
    """The job shipped as docs/spark.md says (main file + --py-files zip; executors on a Python with
    only the dependencies): expire, then clean-orphans, judged against the in-process engine."""
    built = str(tmp_path / "built")
    build_mixed_with_orphans(built)
    parity = Parity.of(built, tmp_path)
    work = tmp_path / "submit"
    work.mkdir()
    for operation, flags in STEPS:
        out = work / f"{operation}.json"
        spark_submit(project_env(), MAIN_FILE, [*parity.request(operation, flags, 4).to_args(), "--result", str(out)],
                     cwd=work, master=standalone_cluster.master_url, executor_python=executor_env.python,
                     py_files=[pyfiles_zip], conf=standalone_cluster.submit_conf())
        result = result_artifact.read_result(str(out))
        assert result.details["requestsCounted"] == "driver and executors"
        assert result.details["executorRequests"]["total"] > 0  # the executors' reads, summed on the driver
        assert result.spark_jobs is not None and result.spark_jobs > 0
        parity.check(operation, flags, result, 4)
    parity.check_views()


def test_executors_without_the_package_fail_closed_with_the_fix(standalone_cluster: StandaloneCluster,
                                                               executor_env: SparkEnv, tmp_path: Path) -> None:
    """Nothing shipped: the executors cannot import tablekeeper, the run fails before any delete and
    its artifact says to ship the package (not to check storage access)."""
    built = str(tmp_path / "built")
    build_mixed_with_orphans(built)
    parity = Parity.of(built, tmp_path)
    listing = dir_listing(parity.spark)
    work = tmp_path / "submit"
    work.mkdir()
    out = work / "failed.json"
    request = parity.request("clean-orphans", {})
    conf = {**standalone_cluster.submit_conf(), "spark.task.maxFailures": "1"}
    with pytest.raises(AssertionError, match="exited 1"):
        spark_submit(project_env(), MAIN_FILE, [*request.to_args(), "--result", str(out)], cwd=work,
                     master=standalone_cluster.master_url, executor_python=executor_env.python, conf=conf)
    failed = result_artifact.read_result(str(out))
    assert failed.status == "Failed" and failed.errors[0]["type"] == "IncompleteProtectionSetError"
    assert "cannot import tablekeeper" in failed.errors[0]["fix"], failed.errors
    assert dir_listing(parity.spark) == listing  # nothing deleted
