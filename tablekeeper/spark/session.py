"""The Spark session a run of the job starts from: tablekeeper's settings on top of what
spark-submit (or the caller) configured, classic or Spark Connect. What the job does on it is in
:mod:`tablekeeper.spark.job`.

Spark Connect (``--remote sc://...``, ``SPARK_REMOTE``, ``spark.remote`` or Spark 4's
``spark.api.mode=connect``) has no master of its own to set and no ``--py-files``: the session is
made with ``builder.remote`` and the package is added to it with ``addArtifacts`` (a zip of the pure
Python package), so the server's executors import tablekeeper without having it installed."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from tablekeeper.core import errors
from tablekeeper.spark import submit

__all__ = ["SESSION_DEFAULTS", "CONNECT_DEFAULTS", "local_session", "start", "remote_url", "is_connect",
           "ship_package"]

#: Spark settings tablekeeper sessions start from (spark-jobs.md §6.3, §7).
SESSION_DEFAULTS: Mapping[str, str] = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}
#: What a Connect client may set on its session (runtime SQL settings; the server owns the rest).
CONNECT_DEFAULTS: Mapping[str, str] = {k: v for k, v in SESSION_DEFAULTS.items() if k.startswith("spark.sql.")}


def remote_url(remote: str | None, conf: Mapping[str, str] | None = None) -> str | None:
    """The Spark Connect server a run uses: ``remote``, else ``spark.remote`` of ``conf``, else
    ``SPARK_REMOTE``; None for classic Spark."""
    return remote or (conf or {}).get("spark.remote") or os.environ.get("SPARK_REMOTE") or None


def local_session(master: str | None = None, conf: Mapping[str, str] | None = None,
                  app_name: str = "tablekeeper") -> SparkSession:
    """A classic Spark session for ``python -m tablekeeper.spark`` and the CLI's ``--engine spark``:
    the master given (or ``local[*]`` unless spark-submit set one), executors on this interpreter
    (``PYSPARK_PYTHON``)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    settings = dict(SESSION_DEFAULTS)
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:  # not started by spark-submit
        master = "local[*]"
    if master:
        builder = builder.master(master)
        if master.startswith("local"):  # results larger than 1 MB are fetched from the driver's address
            settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    for key, value in {**settings, **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def start(master: str | None = None, remote: str | None = None, conf: Mapping[str, str] | None = None,
          app_name: str = "tablekeeper") -> SparkSession:
    """The job's session: Spark Connect when a remote is given (see the module docstring), else
    :func:`local_session`; a Connect session gets the package added before the run.

    Raises:
        InvalidInputError: both a master and a remote (Connect's server has its own master).
    """
    url = remote_url(remote, conf)
    if url is None:
        spark = local_session(master, conf, app_name)
    else:
        if master:
            raise errors.InvalidInputError(f"--master {master} and the Spark Connect server {url} exclude each other",
                                           fix="give the master to the Connect server, or drop --remote/SPARK_REMOTE")
        builder = SparkSession.builder.remote(url)
        extra = {k: v for k, v in (conf or {}).items() if k != "spark.remote"}
        for key, value in {**CONNECT_DEFAULTS, **extra}.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    if is_connect(spark):
        ship_package(spark)
    return spark


def is_connect(spark: SparkSession) -> bool:
    """A Spark Connect session (no SparkContext, no accumulators, artifacts instead of py-files)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def ship_package(spark: SparkSession) -> str:
    """Add the pure-Python package to a Connect session (``addArtifacts(..., pyfile=True)``): the
    zip this process imports tablekeeper from, or one built from the installed package."""
    here = Path(__file__).resolve()
    zipped = next((p for p in here.parents if p.suffix == ".zip" and p.is_file()), None)
    path = str(zipped) if zipped is not None else submit.build_pyfiles_zip(tempfile.mkdtemp(prefix="tablekeeper-"))
    spark.addArtifacts(path, pyfile=True)
    return path
