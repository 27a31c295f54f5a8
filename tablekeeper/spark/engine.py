"""Engine choice and the in-process engine behind the same request/result types as Spark.

``run(request, engine="auto")`` estimates the plan size from the table's metadata (two small
manifest-list reads: the live data files of the latest snapshot) and runs the in-process
planner + executor (``tablekeeper.core``) below ``threshold`` files, Spark above it
(``tablekeeper.spark.job``). Both engines return a ``launch.RunResult`` with the same fields,
and for the same table and policy the same planned counts.

The threshold defaults to ``DEFAULT_SPARK_THRESHOLD`` (measured by ``bench/spark.py``) and can be
set with ``TABLEKEEPER_SPARK_THRESHOLD``. This module imports pyspark only when Spark runs.
"""

from __future__ import annotations

import importlib.metadata
import os
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from tablekeeper.core import durations, errors, execution, expire, orphans, plans, safety
from tablekeeper.core.paimon import layout
from tablekeeper.core.paimon.table import Table, open_table
from tablekeeper.spark import launch

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_SPARK_THRESHOLD", "EngineChoice", "spark_threshold", "estimate_plan_size", "choose_engine",
           "run", "run_local", "plan_local", "orphan_threshold", "expire_config", "now_ms", "versions"]

#: Estimated live data files above which ``auto`` picks Spark. On one machine the in-process
#: engine is faster at every size bench/spark.py measured (1M files on disk, ~200k live: 60 s vs
#: ~145-225 s for local[2] Spark), so the threshold is about memory: the in-process planner needed
#: ~850 MB there and grows with the table (~0.85 KB per file on disk), Spark's driver stays flat
#: (~140 MB). 500k live files is about 2 GB in process for histories like the benchmark's.
DEFAULT_SPARK_THRESHOLD = launch.DEFAULT_SPARK_THRESHOLD
THRESHOLD_ENV = launch.THRESHOLD_ENV

EngineChoice = Literal["auto", "local", "spark"]


def now_ms() -> int:
    return int(time.time() * 1000)


def _iso(ms: float) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def versions() -> dict[str, str]:
    out = {}
    for package in ("tablekeeper", "pypaimon", "pyspark"):
        try:
            out[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


# -- request -> planner inputs --------------------------------------------------------------------
def _timestamp_ms(value: str) -> int:
    if value.isdigit():
        return int(value)
    try:
        return int(datetime.fromisoformat(value).timestamp() * 1000)
    except ValueError as e:
        raise errors.InvalidInputError(f"--older-than {value!r} is neither an age, epoch ms nor ISO-8601",
                                       fix="write e.g. '2 d', 2026-01-31T23:00:00 or 1769900400000") from e


def orphan_threshold(request: launch.JobRequest, now: int) -> int:
    """The orphan age threshold, parsed like the CLI's ``--older-than`` (an age such as
    ``2 d``, or a time as ISO-8601 / epoch ms) and checked by ``orphans.resolve_older_than``."""
    at = age = None
    value = request.older_than
    if value is not None:
        if value.isdigit() or "T" in value or value.count("-") >= 2:
            at = _timestamp_ms(value)
        else:
            age = durations.parse_duration(value, field="--older-than")
    return orphans.resolve_older_than(now, older_than_ms=at, older_than_age=age, force=request.force)


def expire_config(request: launch.JobRequest, table: Table) -> expire.ExpireConfig:
    time_retained = (durations.parse_duration(request.time_retained, field="--time-retained")
                     if request.time_retained is not None else None)
    return expire.config_from_options(table.options(), retain_min=request.retain_min,
                                      retain_max=request.retain_max, time_retained=time_retained,
                                      expire_limit=request.expire_limit)


def open_request_table(request: launch.JobRequest) -> Table:
    return open_table(request.warehouse, request.table, branch=request.branch, options=dict(request.options))


def plan_local(request: launch.JobRequest, table: Table, now: int) -> plans.Plan:
    """The in-process plan of ``request`` (core planners)."""
    if request.operation == "clean-orphans":
        return orphans.plan_orphan_clean(table.on_branch(layout.MAIN),
                                         orphans.OrphanConfig(orphan_threshold(request, now)))
    if request.operation == "expire":
        return expire.plan_expire(table, expire_config(request, table), now)
    return expire.plan_expire_changelog(table, expire.changelog_config_from_options(table.options()), now)


# -- engine choice -------------------------------------------------------------------------------
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


def estimate_plan_size(table: Table) -> int:
    """See :func:`tablekeeper.spark.launch.estimate_plan_size` (shared with the operator)."""
    return launch.estimate_plan_size(table)


def choose_engine(size: int, threshold: int) -> Literal["local", "spark"]:
    return "spark" if size > threshold else "local"


# -- running ----------------------------------------------------------------------------------------
def _new_result(request: launch.JobRequest, engine_name: str) -> launch.RunResult:
    return launch.RunResult(operation=request.operation, table=request.table, branch=request.branch,
                            dry_run=request.dry_run, engine=engine_name, run_name=request.run_name,
                            warehouse=request.warehouse, versions=versions())


def run_local(request: launch.JobRequest) -> launch.RunResult:
    """Plan with the core planner and execute in process (thread pool), as the CLI does.

    Raises:
        TablekeeperError: planning failed (nothing was deleted).
    """
    started = now_ms()
    result = _new_result(request, "local")
    result.started_at = _iso(started)
    t0 = time.perf_counter()
    table = open_request_table(request)
    plan = plan_local(request, table, request.now_ms if request.now_ms is not None else started)
    summary = plan.summary()
    result.planned_files = dict(summary["files"])
    result.planned_bytes = dict(summary["bytes"])
    result.sample = [f.path for f in plan.files[:safety.STATUS_SAMPLE_MAX]]
    result.notes = list(plan.notes)
    result.details = dict(plan.details)
    result.timings["planSeconds"] = round(time.perf_counter() - t0, 3)
    if not request.dry_run:
        t1 = time.perf_counter()
        executed = execution.execute(plan, table.file_io, parallelism=request.parallelism,
                                     batch_size=request.batch_size)
        merge_execution(result, executed)
        result.timings["deleteSeconds"] = round(time.perf_counter() - t1, 3)
    result.timings["totalSeconds"] = round(time.perf_counter() - t0, 3)
    result.finished_at = _iso(now_ms())
    return result


def merge_execution(result: launch.RunResult, executed: execution.ExecutionResult) -> None:
    """Add an in-process ExecutionResult to a run result."""
    for kind, n in executed.deleted.items():
        result.deleted[kind] = result.deleted.get(kind, 0) + n
    for kind, n in executed.deleted_bytes.items():
        result.deleted_bytes[kind] = result.deleted_bytes.get(kind, 0) + n
    for kind, n in executed.missing.items():
        result.missing[kind] = result.missing.get(kind, 0) + n
    result.failed_count += len(executed.failed)
    for r in executed.failed:
        if len(result.failure_sample) < safety.STATUS_SAMPLE_MAX:
            result.failure_sample.append({"path": r.path, "error": str(r.error)})
    result.written.extend(executed.written)
    result.removed_dirs += len(executed.removed_dirs)


def run(request: launch.JobRequest, *, engine: EngineChoice = "auto", threshold: int | None = None,
        spark: SparkSession | None = None) -> launch.RunResult:
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
    if chosen == "local":
        result = run_local(request)
    else:
        from tablekeeper.spark import job

        session = spark if spark is not None else job.local_session()
        result = job.run(session, request)
    if estimate is not None:
        result.details["estimatedFiles"] = estimate
        result.details["sparkThreshold"] = spark_threshold(threshold)
    return result


def describe(result: launch.RunResult) -> dict[str, Any]:
    """A compact summary for CLI output."""
    data = result.to_dict()
    return {k: data[k] for k in ("operation", "table", "branch", "engine", "dryRun", "status", "planned",
                                 "executed", "failures", "sample", "details", "notes", "timings", "errors")}
