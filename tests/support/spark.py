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
- 2 shuffle partitions and 2 default partitions, one per core (200 would make small tests slow;
  4 only doubled the tasks of every shuffle: the jobs' I/O stages take their count from the
  request's ``parallelism``, which the tests set explicitly);
- no whole-stage code generation: on tables of a few dozen files, compiling the generated Java
  of each new query plan (Janino) costs more than it saves; the interpreted operators compute
  the same results. Adaptive execution stays on (the production default; turning it off measured
  slower here, as every join then shuffles), and the spark-submit test
  (``tests/spark/test_launch.py``) runs the job with Spark's defaults in its own JVM.
  Measured by alternating both settings on one session (2 rounds of expire + clean-orphans on
  copies of ``build_mixed``, 2 cores): expire 128 s -> 94 s and orphans 22 s -> 16 s at load 6-8;
  expire 76 s -> 52 s and orphans 8.7 s -> 9.3 s (noise) at load 1-5;
- the driver JVM compiles with C1 only (``-XX:TieredStopAtLevel=1``, as the other test JVMs in
  ``tests/support/javapaimon.py`` and ``tests/support/stores.py``): the JVM, not the Python
  workers, is where a Spark run's CPU goes (one expire batch of ``build_mixed``: ~50 s of JVM CPU
  against ~4 s in the Python workers), most of it C2 recompiling Catalyst's planner and AQE's
  re-planning, which are broad rather than hot. Measured on one expire batch of ``build_mixed``
  (``parallelism=2``, a fresh JVM per setting, warm = its second run): JVM CPU 113 s -> 52 s cold
  and 53 s -> 29 s warm; wall 89 s -> 37 s cold and 32 s -> 27 s warm at load 5 -> 3. It is a
  JIT setting: the queries, plans and results are the same.
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
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.codegen.wholeStage": "false",
    "spark.task.maxFailures": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    "spark.python.worker.reuse": "true",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
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
