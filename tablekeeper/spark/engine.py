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

import dataclasses
import importlib.metadata
import os
import time
from typing import TYPE_CHECKING, Any, Literal

from tablekeeper.core import (
    errors,
    execution,
    expire,
    expire_batches,
    orphans,
    plans,
    retention_settings,
    safety,
    timestamps,
)
from tablekeeper.core.paimon import layout
from tablekeeper.core.paimon.table import Table, open_table
from tablekeeper.core.retention_settings import Retention
from tablekeeper.spark import launch

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_SPARK_THRESHOLD", "EngineChoice", "spark_threshold", "estimate_plan_size", "choose_engine",
           "run", "run_local", "plan_local", "orphan_threshold", "retention_of", "expire_config", "changelog_config",
           "changelog_range", "changelog_due", "merge_step", "now_ms", "versions", "BATCH_UNIT"]

#: Estimated live data files above which ``auto`` picks Spark. On one machine the in-process
#: engine is faster at every size bench/spark.py measured (1M files on disk, ~200k live: 60 s vs
#: ~145-225 s for local[2] Spark), so the threshold is about memory: the in-process planner needed
#: ~850 MB there and grows with the table (~0.85 KB per file on disk), Spark's driver stays flat
#: (~140 MB). 500k live files is about 2 GB in process for histories like the benchmark's.
DEFAULT_SPARK_THRESHOLD = launch.DEFAULT_SPARK_THRESHOLD
THRESHOLD_ENV = launch.THRESHOLD_ENV

EngineChoice = Literal["auto", "local", "spark"]


now_ms = timestamps.now_ms


def versions() -> dict[str, str]:
    out = {}
    for package in ("tablekeeper", "pypaimon", "pyspark"):
        try:
            out[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


# -- request -> planner inputs --------------------------------------------------------------------
def orphan_threshold(request: launch.JobRequest, now: int) -> int:
    """The orphan age threshold, parsed like the CLI's ``--older-than`` (an age such as
    ``2 d``, or a time as ISO-8601 / epoch ms) and checked by ``orphans.resolve_older_than``."""
    value = request.older_than
    at, age = timestamps.parse_time_or_age(value, flag="--older-than") if value is not None else (None, None)
    return orphans.resolve_older_than(now, older_than_ms=at, older_than_age=age, force=request.force)


def retention_of(request: launch.JobRequest, table: Table) -> Retention:
    """The retention ``request`` expires with: the one it carries (resolved and validated where
    the request was made), else the table's own options."""
    return request.retention if request.retention is not None else retention_settings.from_options(table.options())


def expire_config(request: launch.JobRequest, table: Table) -> expire.ExpireConfig:
    """Snapshot expiration of ``request``: its retention plus the table's facts."""
    return expire.expire_config(retention_of(request, table), table.options())


def changelog_config(request: launch.JobRequest, table: Table) -> expire.ChangelogConfig:
    """Changelog expiration of ``request``: its retention's ``changelog_*`` values and expire limit."""
    return expire.changelog_config(retention_of(request, table), table.options())


#: The range rule of ``expire.plan_expire_changelog``, for the job's planning.
changelog_range = expire.changelog_range


def changelog_due(table: Table, config: expire.ChangelogConfig, now: int) -> bool:
    """Whether changelog expiration has anything to do now (the operator's planner proposes
    ``ExpireChangelog`` only then): changelogs past retention, or a missing hint to write."""
    if not table.changelog_ids():
        return False
    expiring, _ = changelog_range(table, config, now)
    return bool(expiring) or not expire.plan_expire_changelog(table, config, now).is_empty


def merge_step(result: launch.RunResult, step: launch.RunResult, name: str) -> None:
    """Add the counts of a second step of the same job (``with_changelog``) to ``result``; the
    step's details go under ``details[name]``, its notes are prefixed with ``name``."""
    for mine, theirs in ((result.planned_files, step.planned_files), (result.planned_bytes, step.planned_bytes),
                         (result.deleted, step.deleted), (result.deleted_bytes, step.deleted_bytes),
                         (result.missing, step.missing)):
        for kind, n in theirs.items():
            mine[kind] = mine.get(kind, 0) + n
    result.failed_count += step.failed_count
    room = safety.STATUS_SAMPLE_MAX - len(result.failure_sample)
    result.failure_sample.extend(step.failure_sample[:max(0, room)])
    result.written.extend(step.written)
    result.removed_dirs += step.removed_dirs
    room = safety.STATUS_SAMPLE_MAX - len(result.sample)
    result.sample.extend(step.sample[:max(0, room)])
    result.details[name] = dict(step.details)
    result.notes.extend(f"{name}: {note}" for note in step.notes)
    for key, seconds in step.timings.items():
        if key in ("planSeconds", "deleteSeconds"):
            result.timings[key] = round(result.timings.get(key, 0.0) + seconds, 3)


def open_request_table(request: launch.JobRequest) -> Table:
    return open_table(request.warehouse, request.table, branch=request.branch, options=dict(request.options))


def plan_local(request: launch.JobRequest, table: Table, now: int) -> plans.Plan:
    """The in-process plan of ``request`` (core planners)."""
    if request.operation == "clean-orphans":
        return orphans.plan_orphan_clean(table.on_branch(layout.MAIN),
                                         orphans.OrphanConfig(orphan_threshold(request, now)))
    if request.operation == "expire":
        return expire.plan_expire(table, expire_config(request, table), now)
    return expire.plan_expire_changelog(table, changelog_config(request, table), now)


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


#: What one batch of an operation expires, by planned file kind (``JobRequest.batches``).
BATCH_UNIT: dict[str, str] = {"expire": plans.FileKind.SNAPSHOT.value,
                              "expire-changelog": plans.FileKind.CHANGELOG_META.value}


def step_name(name: str, n: int) -> str:
    """Where a step's details go in the first step's result: ``batch N`` for snapshot batches
    2.., ``changelog`` / ``changelog batch N`` for the changelog's."""
    if name == "batch":
        return f"batch {n}"
    return name if n == 1 else f"{name} batch {n}"


def run_local(request: launch.JobRequest) -> launch.RunResult:
    """Plan with the core planner and execute in process (thread pool), as the CLI does, in up to
    ``request.batches`` batches (``core.expire_batches``). With ``with_changelog``, changelog
    expiration follows when it was due before the snapshot expiration (see
    :func:`changelog_due`), re-planned on the table as the snapshot batches left it.

    Raises:
        TablekeeperError: planning failed (nothing was deleted).
    """
    started = now_ms()
    now = request.now_ms if request.now_ms is not None else started
    due = False
    if request.with_changelog:
        table = open_request_table(request)
        due = changelog_due(table, changelog_config(request, table), now)
    steps: list[launch.RunResult] = []

    def batch_of(operation: launch.Operation, name: str) -> expire_batches.Batch:
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
        expire_batches.run_with_changelog(batch_of(request.operation, "batch"), batch_of("expire-changelog", "changelog"),
                                          changelog_due=due, max_batches=request.batches, dry_run=request.dry_run)
    else:
        steps.append(_run_local_step(request, request.operation, now))
    result = steps[0]
    result.timings["totalSeconds"] = round(sum(s.timings["totalSeconds"] for s in steps), 3)
    result.started_at = timestamps.iso_ms(started)
    result.finished_at = timestamps.iso_ms(now_ms())
    return result


def _run_local_step(request: launch.JobRequest, operation: launch.Operation, now: int) -> launch.RunResult:
    step = dataclasses.replace(request, operation=operation, with_changelog=False)
    result = _new_result(request, "local")
    t0 = time.perf_counter()
    table = open_request_table(step)
    plan = plan_local(step, table, now)
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
