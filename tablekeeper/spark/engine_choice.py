"""Which engine runs a request: the plan-size estimate (two small manifest-list reads) and the
threshold above which ``auto`` (CLI) and ``Auto`` (operator) pick Spark. No pyspark here: the
operator imports it."""

from __future__ import annotations

import os
from typing import Literal

from tablekeeper.core import errors, paimon
from tablekeeper.core.paimon import Table, manifests
from tablekeeper.core.storage import join

__all__ = ["DEFAULT_SPARK_THRESHOLD", "THRESHOLD_ENV", "estimate_plan_size", "spark_threshold", "choose_engine"]

#: Estimated live data files above which ``auto`` picks Spark (measured by ``bench/spark.py``;
#: see ``tablekeeper.spark.dispatch``). The operator and ``tablekeeper.spark.dispatch`` share it.
DEFAULT_SPARK_THRESHOLD = 500_000
THRESHOLD_ENV = "TABLEKEEPER_SPARK_THRESHOLD"


def estimate_plan_size(table: Table) -> int:
    """Live data files of the latest snapshot of main (manifest-list counters: added - deleted)
    plus its manifests: what a full read of one root costs. Orphan cleanup reads at least that
    (and lists as many files); expiration's protection sets read it per retained branch. Two
    small manifest-list reads; the engine choice of ``auto`` (CLI) and ``Auto`` (operator)."""
    main = table.on_branch(paimon.MAIN)
    latest = main.latest_snapshot()
    if latest is None:
        return 0
    manifest_dir = main.shared_dir(paimon.MANIFEST_DIR)
    total = 0
    for name in (latest.base_manifest_list, latest.delta_manifest_list):
        if not name:
            continue
        for meta in manifests.read_manifest_list(main.file_io, join(manifest_dir, name)):
            total += meta.num_added_files - meta.num_deleted_files + 1
    return max(total, 0)


def spark_threshold(threshold: int | None = None) -> int:
    if threshold is not None:
        return threshold
    raw = os.environ.get(THRESHOLD_ENV)
    if raw:
        try:
            return int(raw)
        except ValueError as e:
            raise errors.InvalidInputError(f"{THRESHOLD_ENV}={raw!r} is not an integer", fix="e.g. 1000000") from e
    return DEFAULT_SPARK_THRESHOLD


def choose_engine(size: int, threshold: int) -> Literal["local", "spark"]:
    return "spark" if size > threshold else "local"
