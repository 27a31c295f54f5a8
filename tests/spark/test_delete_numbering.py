"""The delete stages number their rows in Spark expressions (``deletes.driver._numbered``): the
same batches as ``deletes.executor.number_batches``, the rule the unit tests pin, on a materialised
plan of several partitions whose rows are filtered by stage first, as ``delete_stages`` does."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from tablekeeper.spark import executor as ex
from tablekeeper.spark.deletes import driver as deletes
from tablekeeper.spark.deletes import executor as tasks

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("batch", [1, 3, 250])
def test_numbering_in_spark_matches_the_executor_rule(spark: Any, batch: int) -> None:
    rows = [(f"/t/f{i}", "data", i, f"/t/d{i % 3}", i % 2) for i in range(41)]
    planned = spark.createDataFrame(rows, ex.ddl(tasks.DELETE_FIELDS)).repartition(3).localCheckpoint(eager=True)
    counted = planned.groupBy("stage", F.spark_partition_id().alias("pid")).count().collect()
    assert len({r["pid"] for r in counted}) == 3  # several partitions, each with rows of both stages
    for stage in (0, 1):
        per_task = {int(r["pid"]): int(r["count"]) for r in counted if r["stage"] == stage}
        offsets, total = {}, 0
        for pid in sorted(per_task):
            offsets[str(pid)] = total
            total += per_task[pid]
        part = planned.filter(F.col("stage") == stage)
        got = sorted(tuple(r) for r in deletes._numbered(part, offsets, batch).collect())
        with_pid = part.select("*", F.spark_partition_id().alias("pid")).collect()
        # the rule, per partition in the partition's row order (what a task iterates)
        expected: list[tuple[Any, ...]] = []
        for pid in sorted(per_task):
            mine = [tuple(r)[:5] + (pid,) for r in with_pid if r["pid"] == pid]
            table = pa.RecordBatch.from_pylist(
                [dict(zip(["path", "kind", "size", "parent_dir", "stage", "pid"], r, strict=True)) for r in mine])
            for out in tasks.number_batches({"offsets": offsets, "batch_size": batch}, iter([table])):
                expected.extend(tuple(r.values()) for r in out.to_pylist())
        assert got == sorted(expected) and len(got) == total
        numbers = sorted(r[-1] for r in got)
        assert numbers == sorted(n // batch for n in range(total))  # 0..n-1 across partitions, cut in batches
