"""Which engine runs a request, and the in-process engine behind the same request/result types as Spark.

``run(request, engine="auto")`` estimates the plan size from the table's metadata (two small
manifest-list reads: the live data files of the latest snapshot) and runs the in-process
planner + executor (``tablekeeper.core``) below ``threshold`` files, Spark above it
(``tablekeeper.spark.job``, imported only then; it never imports this module). Both engines
return a ``result_artifact.RunResult`` with the same fields, and for the same table and policy
the same planned counts; both repeat batches with ``core.expire_batches``.

The threshold defaults to ``DEFAULT_SPARK_THRESHOLD`` (measured by ``bench/spark.py``) and can be
set with ``TABLEKEEPER_SPARK_THRESHOLD``. This module imports pyspark only when Spark runs.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any, Literal

from tablekeeper.core import paimon, plans, values
from tablekeeper.core.paimon import Table
from tablekeeper.core.reclaim import expire, orphans
from tablekeeper.spark import job_request, result_artifact
from tablekeeper.spark.engine_choice import choose_engine, estimate_plan_size, spark_threshold
from tablekeeper.spark.run_steps import (
    BATCH_UNIT,
    changelog_config,
    changelog_due,
    expire_config,
    maintenance_lease,
    merge_execution,
    merge_step,
    new_result,
    open_request_table,
    orphan_threshold,
    step_name,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["EngineChoice", "plan_local", "run_local", "run", "describe"]


EngineChoice = Literal["auto", "local", "spark"]


def plan_local(request: job_request.JobRequest, table: Table, now: int) -> plans.Plan:
    """The in-process plan of ``request`` (core planners)."""
    if request.operation == "clean-orphans":
        return orphans.plan_orphan_clean(table.on_branch(paimon.MAIN),
                                         orphans.OrphanConfig(orphan_threshold(request, now)))
    if request.operation == "expire":
        return expire.plan_expire(table, expire_config(request, table), now)
    return expire.plan_expire_changelog(table, changelog_config(request, table), now)


def run_local(request: job_request.JobRequest) -> result_artifact.RunResult:
    """Plan with the core planner and execute in process (thread pool), as the CLI does, in up to
    ``request.batches`` batches (``core.expire_batches``). With ``with_changelog``, changelog
    expiration follows when it was due before the snapshot expiration (see
    :func:`changelog_due`), re-planned on the table as the snapshot batches left it.

    Raises:
        TablekeeperError: planning failed (nothing was deleted).
    """
    started = values.now_ms()
    now = request.now_ms if request.now_ms is not None else started
    due = False
    if request.with_changelog:
        table = open_request_table(request)
        due = changelog_due(table, changelog_config(request, table), now)
    steps: list[result_artifact.RunResult] = []

    def batch_of(operation: job_request.Operation, name: str) -> expire.Batch:
        def batch(n: int) -> int:
            step = _run_local_step(request, operation, now)
            if steps:
                merge_step(steps[0], step, step_name(name, n))
                if operation == request.operation:
                    steps[0].details["batches"] = n
            steps.append(step)
            return step.planned_files.get(BATCH_UNIT[operation], 0)
        return batch

    if request.operation in BATCH_UNIT:
        expire.run_with_changelog(batch_of(request.operation, "batch"), batch_of("expire-changelog", "changelog"),
                                          changelog_due=due, max_batches=request.batches, dry_run=request.dry_run)
    else:
        steps.append(_run_local_step(request, request.operation, now))
    result = steps[0]
    result.timings["totalSeconds"] = round(sum(s.timings["totalSeconds"] for s in steps), 3)
    result.started_at = values.iso_ms(started)
    result.finished_at = values.iso_ms(values.now_ms())
    return result


def _run_local_step(request: job_request.JobRequest, operation: job_request.Operation, now: int) -> result_artifact.RunResult:
    step = dataclasses.replace(request, operation=operation, with_changelog=False)
    result = new_result(request, "local")
    t0 = time.perf_counter()
    table = open_request_table(step)
    plan = plan_local(step, table, now)
    summary = plan.summary()
    result.planned_files = dict(summary["files"])
    result.planned_bytes = dict(summary["bytes"])
    result.sample = [f.path for f in plan.files[:values.STATUS_SAMPLE_MAX]]
    result.notes = list(plan.notes)
    result.details = dict(plan.details)
    result.timings["planSeconds"] = round(time.perf_counter() - t0, 3)
    if not request.dry_run:
        t1 = time.perf_counter()

        def runner(p: plans.Plan) -> plans.ExecutionResult:
            return plans.execute(p, table.file_io, parallelism=request.parallelism, batch_size=request.batch_size)

        # the dry-run plan above is what is reported as planned; the run itself re-plans in
        # core's phases (unpublish, verify, delete), as the CLI does
        if operation == "expire":
            made, executed = expire.run_expire(table, expire_config(step, table), now, runner)
        elif operation == "expire-changelog":
            made, executed = expire.run_expire_changelog(table, changelog_config(step, table), now, runner)
        else:
            made, executed = plan, runner(plan)
        result.notes.extend(n for n in made.notes if n not in result.notes)
        merge_execution(result, executed)
        result.timings["deleteSeconds"] = round(time.perf_counter() - t1, 3)
    result.timings["totalSeconds"] = round(time.perf_counter() - t0, 3)
    return result


def run(request: job_request.JobRequest, *, engine: EngineChoice = "auto", threshold: int | None = None,
        spark: SparkSession | None = None) -> result_artifact.RunResult:
    """Run ``request`` on the chosen engine; ``auto`` estimates the plan size first.

    Raises:
        TablekeeperError: planning failed (nothing was deleted), or bad input.
    """
    chosen: Literal["local", "spark"]
    estimate: int | None = None
    if engine == "auto":
        estimate = estimate_plan_size(open_request_table(request))
        chosen = choose_engine(estimate, spark_threshold(threshold))
    else:
        chosen = engine
    with maintenance_lease(request):
        if chosen == "local":
            result = run_local(request)
        else:
            from tablekeeper.spark import job, session

            started = spark if spark is not None else session.local_session()
            result = job.run(started, request)
    if estimate is not None:
        result.details["estimatedFiles"] = estimate
        result.details["sparkThreshold"] = spark_threshold(threshold)
    return result


def describe(result: result_artifact.RunResult) -> dict[str, Any]:
    """A compact summary for CLI output."""
    data = result.to_dict()
    return {k: data[k] for k in ("operation", "table", "branch", "engine", "dryRun", "status", "planned",
                                 "executed", "failures", "sample", "details", "notes", "timings", "errors",
                                 "requests")}
