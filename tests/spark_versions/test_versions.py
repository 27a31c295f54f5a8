"""pyspark 3.5, 4.0 and the project's 4.3, each in its own environment: ``spark-submit --py-files``
of the package zip on ``local[2]``, the driver and the executors importing tablekeeper's job
modules from the zip (the environments do not have tablekeeper installed), on Java 17. And pyspark
3.5 on CPython 3.10 (the Python of the official Spark images), where the job's modules import too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.maintenance.helpers import assert_views_kept, build_mixed, copy_tree, views
from tests.spark_versions.conftest import from_zip, run_probe
from tests.support.paimon import dir_listing
from tests.support.spark_clusters import SparkEnv, assert_lacks_tablekeeper, clean_env, project_env, spark_env

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


def test_tablekeeper_imports_on_cpython_310(py310_report: tuple[SparkEnv, dict[str, Any]], pyfiles_zip: str) -> None:
    _, report = py310_report
    for side in [report["driver"], *report["tasks"]]:
        for module, path in side["modules"].items():
            assert from_zip(path, pyfiles_zip), (module, path)


def _cli_on(env: SparkEnv, zip_path: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``tablekeeper ARGS`` on ``env``'s Python, tablekeeper imported from the zip (pure Python)."""
    return subprocess.run([env.python, "-c", "import sys; from tablekeeper.cli.main import main; sys.exit(main())",
                           *args], cwd=cwd, env=clean_env(None, cwd / "conf", PYTHONPATH=zip_path),
                          capture_output=True, text=True, timeout=300)


def test_the_cli_runs_on_cpython_310_and_the_operator_says_it_needs_311(pyfiles_zip: str, tmp_path: Path) -> None:
    env = spark_env("py3.10-pyspark-3.5")
    built = str(tmp_path / "built")
    build_mixed(built)
    on_310, on_311 = copy_tree(built, tmp_path / "py310"), copy_tree(built, tmp_path / "py311")
    before = views(on_310)
    expire = ["expire", "db.orders", "--retain-min", "2", "--retain-max", "3", "--output", "json"]
    for args in (["show", "db.orders", "--output", "json"], [*expire, "--dry-run"], expire):
        old = _cli_on(env, pyfiles_zip, [*args[:1], "-w", on_310, *args[1:]], tmp_path)
        new = subprocess.run([sys.executable, "-m", "tablekeeper.cli.main", *args[:1], "-w", on_311, *args[1:]],
                             capture_output=True, text=True, timeout=300)
        assert old.returncode == new.returncode == 0, (args, old.stderr[-1500:], new.stderr[-1500:])
        assert json.loads(old.stdout.replace(on_310, "WH")) == json.loads(new.stdout.replace(on_311, "WH")), args
    assert set(dir_listing(on_310)) == set(dir_listing(on_311))
    after = views(on_310)
    assert after == views(on_311) and set(before) - set(after)
    assert_views_kept(before, after, gone=set(before) - set(after))

    refused = _cli_on(env, pyfiles_zip, ["operator"], tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.splitlines()[0] == f"error: the operator needs Python 3.11 or newer, this is {env.python_version}"
