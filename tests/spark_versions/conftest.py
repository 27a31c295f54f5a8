"""The Spark version tiers (markers ``spark_versions``, ``spark_cluster``, ``spark_connect``): the
environments, the standalone cluster and the Connect server are the fixtures of
``tests/support/spark_clusters.py``; here only the probe's submission and its report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.spark_clusters import SparkEnv, spark_submit

PROBE_JOB = Path(__file__).with_name("probe_job.py")


def run_probe(env: SparkEnv, zip_path: str, cwd: Path, *, partitions: int = 2, master: str = "local[2]",
              executor_python: str | None = None, conf: dict[str, str] | None = None) -> dict[str, Any]:
    """Submit ``probe_job.py`` with the package zip and return its report."""
    proc = spark_submit(env, PROBE_JOB, [str(partitions)], cwd=cwd, master=master, executor_python=executor_python,
                        py_files=[zip_path], conf=conf)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("PROBE ")]
    assert len(lines) == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    report: dict[str, Any] = json.loads(lines[0].removeprefix("PROBE "))
    return report


def from_zip(path: str, zip_path: str) -> bool:
    """A module file inside the shipped zip (a Spark copy of it keeps the zip's name)."""
    return f"{Path(zip_path).name}/" in path
