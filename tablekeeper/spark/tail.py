"""The tail of an expiration on Spark: what core's decision leaves for last (changelog copies,
snapshot or changelog files, the hints: ``ExpirationDecision.tail_plan``) executed by core's
executor (``core.execution.execute``) on the driver, after the staged deletes, in Paimon's order:
data and changelog files, the directories they emptied, index, statistics, manifests, then the
tail. A decision that reads nothing (hints only) is its tail alone.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from tablekeeper.core import plans, values
from tablekeeper.core.paimon import Table
from tablekeeper.spark import run_steps
from tablekeeper.spark.deletes import driver as deletes
from tablekeeper.spark.stages import RunContext

__all__ = ["count_tail", "finish", "run_tail"]

def count_tail(ctx: RunContext, tail: plans.Plan) -> None:
    """Count the files of ``tail`` as planned (by kind, with bytes) and sample their paths."""
    summary = tail.summary()
    for kind, n in summary["files"].items():
        ctx.result.planned_files[kind] = ctx.result.planned_files.get(kind, 0) + n
        ctx.result.planned_bytes[kind] = ctx.result.planned_bytes.get(kind, 0) + summary["bytes"].get(kind, 0)
    for kind, n in summary["unsized"].items():
        ctx.result.planned_unsized[kind] = ctx.result.planned_unsized.get(kind, 0) + n
    room = values.STATUS_SAMPLE_MAX - len(ctx.result.sample)
    ctx.result.sample.extend(f.path for f in tail.files[:max(0, room)])


#: The last stage of data and changelog files in core's deletion order (``plans.stage_of``).
_DATA_STAGES_END = plans.STAGE_ORDER.index(plans.FileKind.CHANGELOG_DATA) * 3 + 2


def finish(ctx: RunContext, table: Table, planned: DataFrame, stages: deletes.Stages, spec: Mapping[str, Any],
           tail: plans.Plan, t0: float, *, empty_dirs_depth: int | None = None) -> None:
    """Execute in core's order: data and changelog files, (emptied directories), index,
    statistics, manifests — each stage a Spark action that must return before the next — then
    the metadata tail (changelog copies, snapshot files, EARLIEST) through core's executor."""
    count_tail(ctx, tail)
    ctx.result.timings["planSeconds"] = round(time.perf_counter() - t0, 3)
    if ctx.request.dry_run:
        return
    t1 = time.perf_counter()
    data_stages = {s: n for s, n in stages.items() if s <= _DATA_STAGES_END}
    deletes.delete_stages(ctx, planned, data_stages, spec)
    if empty_dirs_depth is not None and data_stages:
        touched = planned.filter(F.col("stage") <= _DATA_STAGES_END).select(F.col("parent_dir").alias("dir")) \
            .distinct()
        deletes.remove_empty_dirs(ctx, touched, spec, empty_dirs_depth)
    deletes.delete_stages(ctx, planned, {s: n for s, n in stages.items() if s > _DATA_STAGES_END}, spec)
    run_steps.merge_execution(ctx.result, plans.execute(tail, table.file_io, batch_size=ctx.request.batch_size))
    ctx.result.timings["deleteSeconds"] = round(time.perf_counter() - t1, 3)


def run_tail(ctx: RunContext, table: Table, plan: plans.Plan, t0: float) -> None:
    """A plan with nothing to read or distribute (hints only): core plans and executes it."""
    ctx.result.details.update(dict(plan.details))
    ctx.result.notes.extend(plan.notes)
    count_tail(ctx, plan)
    ctx.result.timings["planSeconds"] = round(time.perf_counter() - t0, 3)
    if not ctx.request.dry_run and plan.steps:
        run_steps.merge_execution(ctx.result, plans.execute(plan, table.file_io,
                                                             batch_size=ctx.request.batch_size))
