"""The Spark session a run of the job starts from: tablekeeper's settings on top of what
spark-submit (or the caller) configured. What the job does on it is in :mod:`tablekeeper.spark.job`."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

__all__ = ["SESSION_DEFAULTS", "local_session"]

#: Spark settings tablekeeper sessions start from (spark-jobs.md §6.3, §7).
SESSION_DEFAULTS: Mapping[str, str] = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


def local_session(master: str | None = None, conf: Mapping[str, str] | None = None,
                  app_name: str = "tablekeeper") -> SparkSession:
    """A Spark session for ``python -m tablekeeper.spark`` and the CLI's ``--engine spark``:
    the master given (or ``local[*]`` unless spark-submit set one), executors on this
    interpreter (``PYSPARK_PYTHON``)."""
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
