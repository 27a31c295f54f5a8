"""The job itself on the Spark versions and Pythons users run: ``spark-submit`` of
``tablekeeper/spark/__main__.py`` with the package zip (the environments do not have tablekeeper
installed), expire and then clean-orphans on ``local[2]``, on pyspark 3.5 and 4.0 (Python 3.11) and
on pyspark 3.5 on CPython 3.10 (the Python of the official Spark images). Judged like the parity
tests of tests/spark: the same planned and deleted counts as the in-process engine on a copy of the
same table, the same files left, and every retained view re-read equal through pypaimon."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tablekeeper.spark import result_artifact
from tests.maintenance.helpers import build_mixed_with_orphans
from tests.spark_versions.conftest import MAIN_FILE, STEPS, Parity
from tests.support.spark_clusters import SparkEnv, spark_env, spark_submit

pytestmark = pytest.mark.spark_versions

JOB_ENVS = ("py3.10-pyspark-3.5", "pyspark-3.5", "pyspark-4.0")


@pytest.fixture(scope="module")
def table_with_orphans(tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("versions-mixed") / "wh")
    build_mixed_with_orphans(wh)
    return wh


def submit_job(env: SparkEnv, request: Any, zip_path: str, cwd: Path) -> result_artifact.RunResult:
    """One ``spark-submit`` of the job's main file; its result artifact."""
    out = cwd / f"result-{len(list(cwd.glob('result-*.json')))}.json"
    spark_submit(env, MAIN_FILE, [*request.to_args(), "--result", str(out)], cwd=cwd, py_files=[zip_path])
    return result_artifact.read_result(str(out))


@pytest.mark.parametrize("name", JOB_ENVS)
def test_expire_then_clean_orphans_match_in_process(name: str, table_with_orphans: str, pyfiles_zip: str,
                                                    tmp_path: Path) -> None:
    env = spark_env(name)
    parity = Parity.of(table_with_orphans, tmp_path)
    work = tmp_path / "submit"
    work.mkdir()
    for operation, flags in STEPS:
        result = submit_job(env, parity.request(operation, flags), pyfiles_zip, work)
        assert result.engine == "spark" and result.versions["spark"] == env.pyspark
        assert result.versions["python"] == env.python_version
        assert result.spark_jobs is not None and result.spark_jobs > 0
        parity.check(operation, flags, result)
    parity.check_views()
