"""pyspark 3.5, 4.0 and the project's 4.3, each in its own environment: ``spark-submit --py-files``
of the package zip on ``local[2]``, the driver and the executors importing tablekeeper's job
modules from the zip (the environments do not have tablekeeper installed), on Java 17. And pyspark
3.5 on CPython 3.10, whose import of tablekeeper is expected to fail until the job's import path
runs on 3.10."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.spark_versions.conftest import from_zip, run_probe
from tests.support.spark_clusters import SparkEnv, assert_lacks_tablekeeper, project_env, spark_env

pytestmark = pytest.mark.spark_versions

VERSION_ENVS = ("pyspark-3.5", "pyspark-4.0", "project")


def _env(name: str) -> SparkEnv:
    return project_env() if name == "project" else spark_env(name)


def _check_interpreters(report: dict[str, Any], env: SparkEnv) -> None:
    assert report["spark"] == env.pyspark
    assert report["java"].split(".")[0] == "17"
    assert report["master"] == "local[2]"
    assert len(report["tasks"]) == 2
    for side in [report["driver"], *report["tasks"]]:
        assert side["python"] == env.python
        assert side["version"] == env.python_version


@pytest.mark.parametrize("name", VERSION_ENVS)
def test_a_job_imports_tablekeeper_from_the_zip_on_driver_and_executors(name: str, pyfiles_zip: str,
                                                                        tmp_path: Path) -> None:
    env = _env(name)
    if name != "project":
        assert_lacks_tablekeeper(env.python, tmp_path)
    report = run_probe(env, pyfiles_zip, tmp_path)
    _check_interpreters(report, env)
    for task in report["tasks"]:
        for module, path in task["modules"].items():
            assert from_zip(path, pyfiles_zip), (module, path)
        assert task["native"] == dict.fromkeys(task["native"], False)  # the zip is pure Python
    for module, path in report["driver"]["modules"].items():
        assert from_zip(path, pyfiles_zip), (module, path)


@pytest.fixture(scope="module")
def py310_report(pyfiles_zip: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[SparkEnv, dict[str, Any]]:
    """One probe run on CPython 3.10 for both tests below."""
    env = spark_env("py3.10-pyspark-3.5")
    return env, run_probe(env, pyfiles_zip, tmp_path_factory.mktemp("py310"))


def test_pyspark_35_runs_on_cpython_310(py310_report: tuple[SparkEnv, dict[str, Any]]) -> None:
    env, report = py310_report
    assert env.python_version.startswith("3.10.")
    _check_interpreters(report, env)


@pytest.mark.xfail(strict=True, reason="the job's import path needs Python 3.11 (enum.StrEnum, datetime.UTC, "
                                      "typing.Self): remove this mark when it runs on 3.10")
def test_tablekeeper_imports_on_cpython_310(py310_report: tuple[SparkEnv, dict[str, Any]], pyfiles_zip: str) -> None:
    _, report = py310_report
    for side in [report["driver"], *report["tasks"]]:
        for module, path in side["modules"].items():
            assert from_zip(path, pyfiles_zip), (module, path)
