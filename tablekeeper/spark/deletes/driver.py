"""Deletes by stage, where both operations end: the delete rows core's decision planned
(materialised) counted by kind and by partition, then deleted in core's deletion order
(``plans.stage_of``: Paimon's), one Spark action per stage, in bulk batches of
``execution.delete_batch_size`` keys numbered across tasks; and the directories the deletes may
have emptied. The executor side is :mod:`tablekeeper.spark.deletes.executor`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from tablekeeper.core import errors, values
from tablekeeper.core.safety import concurrency, trash
from tablekeeper.spark import executor as ex
from tablekeeper.spark import result_artifact
from tablekeeper.spark.deletes import executor as tasks
from tablekeeper.spark.stages import RunContext, short_error

__all__ = ["Stages", "record_planned", "delete_stages", "remove_empty_dirs", "remove_emptied_dirs"]

#: Rows of a delete plan per stage and per partition of the (materialised) plan:
#: ``{stage: {partition id: rows}}``, stages in Paimon's order.
Stages = dict[int, dict[int, int]]


def record_planned(ctx: RunContext, planned: DataFrame) -> Stages:
    """Per-kind counts and bytes, a bounded sample; returns the stages present with their rows
    per partition of ``planned`` (what :func:`delete_stages` numbers its batches from)."""
    rows = planned.groupBy("stage", "kind", F.spark_partition_id().alias("pid")).agg(
        F.count(F.lit(1)).alias("n"), F.sum("size").alias("bytes"),
        F.sum(F.when(F.col("size").isNull(), 1).otherwise(0)).alias("unsized")).collect()
    files: dict[str, int] = {}
    nbytes: dict[str, int] = {}
    stages: Stages = {}
    for r in rows:
        files[r["kind"]] = files.get(r["kind"], 0) + int(r["n"])
        nbytes[r["kind"]] = nbytes.get(r["kind"], 0) + int(r["bytes"] or 0)
        if r["unsized"]:
            ctx.result.planned_unsized[r["kind"]] = ctx.result.planned_unsized.get(r["kind"], 0) + int(r["unsized"])
        per_task = stages.setdefault(int(r["stage"]), {})
        per_task[int(r["pid"])] = per_task.get(int(r["pid"]), 0) + int(r["n"])
    for kind, n in files.items():
        ctx.result.planned_files[kind] = ctx.result.planned_files.get(kind, 0) + n
        ctx.result.planned_bytes[kind] = ctx.result.planned_bytes.get(kind, 0) + nbytes[kind]
    room = values.STATUS_SAMPLE_MAX - len(ctx.result.sample)
    if room > 0 and files:
        ctx.result.sample.extend(r["path"] for r in planned.select("path").limit(room).collect())
    return dict(sorted(stages.items()))


def delete_stages(ctx: RunContext, planned: DataFrame, stages: Stages, spec: Mapping[str, Any]) -> None:
    """One Spark action per stage, strictly in order: a stage starts after the previous one
    returned. A stage's rows are numbered across the partitions of ``planned`` (materialised,
    so its partitions are stable; ``stages`` holds their row counts) and cut into batches of
    ``spec["batch_size"]`` keys: ``ceil(rows / batch)`` bulk deletes per stage, as in process,
    spread over up to ``ctx.n`` tasks. The executors return one summary row per (stage, kind)
    and task, summed here."""
    fault = ctx.fault
    batch = int(spec["batch_size"])
    kept = trash.active()
    if kept is not None and stages and not kept.started:  # the run's record, before anything of it moves
        kept.record({"operation": ctx.request.operation, "table": ctx.request.table, "engine": "spark",
                     "files": dict(ctx.result.planned_files), "bytes": dict(ctx.result.planned_bytes)})
    for stage, per_task in stages.items():
        concurrency.point(f"before:spark-delete:{stage}")  # core's re-checks and the lease run here
        offsets: dict[str, int] = {}
        total = 0
        for pid in sorted(per_task):
            offsets[str(pid)] = total
            total += per_task[pid]
        stage_spec = {**spec, "fault": fault} if fault else spec
        numbered = _numbered(planned.filter(F.col("stage") == stage), offsets, batch)
        task_count = max(1, min(ctx.n, -(-total // batch)))
        numbered = numbered.repartition(task_count, "batch").sortWithinPartitions("batch")
        try:
            rows = numbered.mapInArrow(ctx.tally.bind(tasks.delete_files, stage_spec),
                                       ex.ddl(tasks.SUMMARY_FIELDS)).collect()
        except Exception as e:
            raise errors.StorageError(
                f"deletion stage {stage} failed after Spark's task retries: {short_error(e)}",
                fix="rerun the same job: it plans again and finishes the work (deleted files count as missing)") from e
        _add_summary(ctx.result, rows)


def _numbered(part: DataFrame, offsets: Mapping[str, int], batch: int) -> DataFrame:
    """``executor.number_batches``'s rule as Spark expressions, without a Python stage: a row's batch
    is ``(offsets[partition] + position in the partition) // batch``. ``part`` is a filter of
    the materialised plan (no shuffle in between), so ``spark_partition_id`` is the partition
    the driver counted, and the low 33 bits of ``monotonically_increasing_id`` are the row's
    position among the filtered rows of that partition (Spark numbers them in the projection
    right above the filter)."""
    pid = F.spark_partition_id()
    position = F.monotonically_increasing_id() - F.shiftleft(pid.cast("long"), 33)
    pairs = sorted((int(p), int(n)) for p, n in offsets.items())
    offset = F.create_map(*[F.lit(x) for pair in pairs for x in pair])[pid]
    names = [n for n, _ in tasks.DELETE_FIELDS]
    return part.select(*names, (offset.cast("long") + position).alias("n")).select(
        *names, F.expr(f"n div {max(1, batch)}").cast("long").alias("batch"))


def _add_summary(result: result_artifact.RunResult, rows: Iterable[Any]) -> None:
    for r in rows:
        kind = r["kind"]
        if r["deleted"]:
            result.deleted[kind] = result.deleted.get(kind, 0) + int(r["deleted"])
            result.deleted_bytes[kind] = result.deleted_bytes.get(kind, 0) + int(r["bytes"])
        if r["missing"]:
            result.missing[kind] = result.missing.get(kind, 0) + int(r["missing"])
        if r["unsized"]:
            result.unsized[kind] = result.unsized.get(kind, 0) + int(r["unsized"])
        result.failed_count += int(r["failed"])
        for line in r["failure_sample"] or ():
            if len(result.failure_sample) < values.STATUS_SAMPLE_MAX:
                path, _, error = line.partition(": ")
                result.failure_sample.append({"path": path, "error": error})


def remove_empty_dirs(ctx: RunContext, dirs: DataFrame, spec: Mapping[str, Any], depth: int) -> None:
    """Remove the directories ``dirs`` (a column ``dir``) that are empty, then their parents up
    to ``depth`` partition levels (``executor.remove_empty_dirs``); counted in the result."""
    _count_removed(ctx, ctx.io(dirs, tasks.remove_empty_dirs, tasks.REMOVED_FIELDS, {**spec, "depth": depth},
                               key="dir"))


def remove_emptied_dirs(ctx: RunContext, dirs: DataFrame, spec: Mapping[str, Any]) -> None:
    """As :func:`remove_empty_dirs`, for the directories ``dirs`` (``dir``, ``listed``,
    ``deleted``) the deletes may have emptied (``executor.remove_emptied_dirs``)."""
    _count_removed(ctx, ctx.io(dirs, tasks.remove_emptied_dirs, tasks.REMOVED_FIELDS, spec, key="dir"))


def _count_removed(ctx: RunContext, removed_rows: DataFrame) -> None:
    removed = removed_rows.agg(F.sum("removed").alias("removed")).collect()
    ctx.result.removed_dirs += int(removed[0]["removed"] or 0) if removed else 0
