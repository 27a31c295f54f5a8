"""pytest plugin: one ``local[2]`` Spark session for every test that needs Spark (spark-jobs.md §7).

Registered from ``tests/conftest.py`` (``pytest_plugins``) so the Spark suite (``tests/spark``) and
the operator's Spark-run tests (``tests/operator/test_spark_runs.py``) share one JVM per session.

- ``PYSPARK_PYTHON`` = this interpreter, set before the session starts;
- the package is shipped through ``spark.submit.pyFiles`` (a zip built by
  ``submit.build_pyfiles_zip``), the production path, so an unimportable executor module fails
  here too;
- master ``local[2,4]``: two cores like ``local[2]``, and up to 4 attempts per task.
  ``spark.task.maxFailures`` is set as well but plain ``local[N]`` ignores it (Spark's local
  scheduler takes the retry count from the master string only);
- 4 shuffle partitions and 4 default partitions (200 would make small tests slow).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tablekeeper.spark import submit

__all__ = ["SPARK_CONF", "spark"]

SPARK_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.task.maxFailures": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    "spark.python.worker.reuse": "true",
}


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    pyfiles = submit.build_pyfiles_zip(tmp_path_factory.mktemp("pyfiles"))
    builder = SparkSession.builder.master("local[2,4]").appName("tablekeeper-tests")
    for key, value in {**SPARK_CONF, "spark.submit.pyFiles": pyfiles}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
