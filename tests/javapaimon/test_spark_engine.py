"""``--engine spark`` judged by Java Paimon (issue 13 point 3): the same commands as
``test_operations.py``'s expiration and orphan cleanup, planned by core and executed by the
PySpark job on the session's shared ``local[2]`` Spark (``tests/support/spark.py``), on the
Java-written tables. Java reads every snapshot, tag and branch before and after; the reads are
equal except what the command meant to remove; Java's own procedure on a twin copy reads the
same; then Java commits to main and every branch and runs its own expire_snapshots and
remove_orphan_files. (``expire-changelog`` has no Spark engine: it runs in process only.)"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from tests.javapaimon import judge
from tests.javapaimon import warehouse as W
from tests.javapaimon.test_operations import _copy, _plant_orphans, _same_as_java, _snapshot_ids
from tests.support import javapaimon as J

pytestmark = [pytest.mark.javapaimon, pytest.mark.spark, pytest.mark.timeout(1200)]


def test_expire_on_spark(spark: Any, java: J.JavaPaimon, wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    _copy(wh)
    before, after = judge.judged(java, wh, W.ORDERS, lambda: judge.cli(
        capsys, "expire", "-w", wh, W.ORDERS, "--retain-min", "1", "--retain-max", "2", "--time-retained", "1 s",
        "--engine", "spark", "--parallelism", "2"))
    ids = _snapshot_ids(before)
    judge.unchanged_except(before, after, removed=[f"main@snapshot-{i}" for i in ids[:-1]])
    assert sorted(J.ids(J.table_root(wh, W.ORDERS) / "snapshot", "snapshot-")) == ids[-1:]
    _same_as_java(java, wh, W.ORDERS, after, "expire_snapshots", retain_max=2, retain_min=1, older_than_ms=1000)
    judge.java_still_works(java, wh, W.ORDERS, after)


def test_clean_orphans_on_spark(spark: Any, java: J.JavaPaimon, wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    planted = _plant_orphans(wh, W.ORDERS)
    before, after = judge.judged(java, wh, W.ORDERS, lambda: judge.cli(
        capsys, "clean-orphans", "-w", wh, W.ORDERS, "--older-than", "1 d", "--engine", "spark",
        "--parallelism", "2"))
    judge.unchanged_except(before, after)
    assert not any(p.exists() for p in planted)
    # Java's own cleanup with the same threshold finds nothing we missed.
    assert judge.java_deleted_nothing_we_kept(java, wh, W.ORDERS, J.now_ms() - 86_400_000) == []
    judge.java_still_works(java, wh, W.ORDERS, after)


def test_clean_orphans_on_spark_dynamic_bucket(spark: Any, java: J.JavaPaimon, wh: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The dynamic-bucket table with a decoupled changelog (index manifests, changelog-N)."""
    root = J.table_root(wh, W.DYN)
    planted = [next(root.glob("bucket-*")) / "data-orphan-0.parquet", root / "manifest" / "manifest-orphan-0",
               root / "index" / "index-orphan-0"]
    old = time.time() - 3 * 86400
    for p in planted:
        p.write_bytes(b"left behind by a failed writer")
        os.utime(p, (old, old))
    before, after = judge.judged(java, wh, W.DYN, lambda: judge.cli(
        capsys, "clean-orphans", "-w", wh, W.DYN, "--older-than", "1 d", "--engine", "spark", "--parallelism", "2"))
    judge.unchanged_except(before, after)
    assert not any(p.exists() for p in planted)
    assert judge.java_deleted_nothing_we_kept(java, wh, W.DYN, J.now_ms() - 86_400_000) == []
    judge.java_still_works(java, wh, W.DYN, after)
