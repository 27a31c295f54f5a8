"""The Spark version tiers (markers ``spark_versions``, ``spark_cluster``, ``spark_connect``): the
environments, the standalone cluster and the Connect server are the fixtures of
``tests/support/spark_clusters.py``; here the probe's submission and its report, and
:class:`Parity`, how each tier judges the job against the in-process engine."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tablekeeper.spark import dispatch, result_artifact
from tests.maintenance.helpers import assert_views_kept, copy_tree, now_ms, spark_request, table_root, views
from tests.support.paimon import dir_listing
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


# -- the job judged against the in-process engine -------------------------------------------------
DAY_MS = 86_400_000
#: The job's main file as spark-submit runs it (tablekeeper itself comes from the zip or the image).
MAIN_FILE = Path(__file__).resolve().parents[2] / "tablekeeper" / "spark" / "__main__.py"
#: The planted orphan that is younger than the threshold and stays (build_mixed_with_orphans).
YOUNG = "dt=b/bucket-0/data-young.parquet"
#: What every tier runs: expiration, then orphan cleanup.
STEPS: tuple[tuple[str, dict[str, Any]], ...] = (("expire", {"retain_min": 2, "time_retained": "0 ms"}),
                                                  ("clean-orphans", {}))


@dataclass
class Parity:
    """Two copies of a table with history and orphans, one for the in-process engine and one for
    the Spark run under test, at a "now" when the planted orphans are old enough (the young one
    is not), with every view of the table read before."""

    local: str
    spark: str
    at: int
    before: dict[str, Any]

    @classmethod
    def of(cls, built: str, tmp_path: Path) -> Parity:
        local, spark = copy_tree(built, tmp_path / "local"), copy_tree(built, tmp_path / "spark")
        at = now_ms() + 2 * DAY_MS
        for wh in (local, spark):
            os.utime(f"{table_root(wh)}/{YOUNG}", ((at - 3_600_000) / 1000,) * 2)
        return cls(local, spark, at, views(spark))

    def request(self, operation: str, flags: dict[str, Any], parallelism: int = 2) -> Any:
        """The Spark run's request (on the spark copy)."""
        return spark_request(self.spark, operation, now_ms=self.at, parallelism=parallelism, **flags)

    def check(self, operation: str, flags: dict[str, Any], result: result_artifact.RunResult,
              parallelism: int = 2) -> None:
        """``result`` (the Spark run of ``operation``) against the in-process engine's run of the
        same request on the other copy: the same plan, deletes and files left."""
        local = dispatch.run_local(spark_request(self.local, operation, now_ms=self.at, parallelism=parallelism,
                                                 **flags))
        assert result.status == "Succeeded", result.errors
        assert result.planned_files == local.planned_files and result.planned_files, operation
        assert result.planned_bytes == local.planned_bytes
        assert result.deleted == local.deleted and result.failed_count == 0
        assert result.removed_dirs == local.removed_dirs
        assert set(dir_listing(self.spark)) == set(dir_listing(self.local)), operation

    def check_views(self) -> None:
        """After the steps: both copies read the same, every view not expired reads as before."""
        after = views(self.spark)
        assert after == views(self.local)
        expired = set(self.before) - set(after)
        assert expired and all("@snapshot-" in view for view in expired), sorted(expired)
        assert_views_kept(self.before, after, gone=expired)
        names = set(dir_listing(self.spark))
        assert f"db.db/orders/{YOUNG}" in names and "db.db/orders/dt=zz/" not in names
