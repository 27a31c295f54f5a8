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

import contextlib
import dataclasses
import importlib.metadata
import os
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from tablekeeper.core import durations, errors, execution, expire, lease, orphans, plans, safety
from tablekeeper.core.paimon import layout
from tablekeeper.core.paimon.table import Table, open_table
from tablekeeper.spark import launch

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_SPARK_THRESHOLD", "EngineChoice", "spark_threshold", "estimate_plan_size", "choose_engine",
           "run", "run_local", "plan_local", "orphan_threshold", "expire_config", "changelog_config",
           "changelog_range", "changelog_due", "merge_step", "now_ms", "versions", "BATCH_UNIT"]

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


def _has_changelog_overrides(request: launch.JobRequest) -> bool:
    return any(v is not None for v in (request.changelog_retain_min, request.changelog_retain_max,
                                       request.changelog_time_retained))


def expire_config(request: launch.JobRequest, table: Table) -> expire.ExpireConfig:
    """Snapshot expiration: the table's options with the request's overrides. With changelog
    retention in the request, the changelog is decoupled when it retains more than the snapshots
    (longer, or more at minimum or maximum), as the operator's planner decides."""
    time_retained = (durations.parse_duration(request.time_retained, field="--time-retained")
                     if request.time_retained is not None else None)
    config = expire.config_from_options(table.options(), retain_min=request.retain_min,
                                        retain_max=request.retain_max, time_retained=time_retained,
                                        expire_limit=request.expire_limit)
    if not _has_changelog_overrides(request):
        return config
    log = changelog_config(request, table)
    decoupled = (log.retain_max > config.retain_max or log.retain_min > config.retain_min
                 or log.time_retained > config.time_retained)
    return dataclasses.replace(config, changelog_decoupled=decoupled)


def changelog_config(request: launch.JobRequest, table: Table) -> expire.ChangelogConfig:
    """Changelog expiration: the table's ``changelog.*`` options (falling back to ``snapshot.*``)
    with the request's ``changelog_*`` overrides.

    Raises:
        UnsafePolicyError: minimum below 1 or above the maximum.
    """
    config = expire.changelog_config_from_options(table.options())
    time_retained = (durations.parse_duration(request.changelog_time_retained, field="--changelog-time-retained")
                     if request.changelog_time_retained is not None else config.time_retained)
    config = dataclasses.replace(
        config, retain_min=config.retain_min if request.changelog_retain_min is None else request.changelog_retain_min,
        retain_max=config.retain_max if request.changelog_retain_max is None else request.changelog_retain_max,
        time_retained=time_retained)
    if config.retain_min < safety.MIN_RETAIN_MIN or config.retain_max < config.retain_min:
        raise errors.UnsafePolicyError("changelog retention: minimum must be >= 1 and <= the maximum",
                                       fix="fix --changelog-retain-min / --changelog-retain-max")
    return config


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


def run_local(request: launch.JobRequest) -> launch.RunResult:
    """Plan with the core planner and execute in process (thread pool), as the CLI does. With
    ``with_changelog``, changelog expiration follows when it was due before the snapshot
    expiration (see :func:`changelog_due`), re-planned on the table as the first step left it.

    Raises:
        TablekeeperError: planning failed (nothing was deleted).
    """
    started = now_ms()
    now = request.now_ms if request.now_ms is not None else started
    due = False
    if request.with_changelog:
        table = open_request_table(request)
        due = changelog_due(table, changelog_config(request, table), now)
    result = _run_local_step(request, request.operation, now)
    last = result
    unit = BATCH_UNIT.get(request.operation)
    for n in range(2, request.batches + 1):  # as job.run: while the previous batch expired something
        if unit is None or request.dry_run or not last.planned_files.get(unit):
            break
        last = _run_local_step(request, request.operation, now)
        merge_step(result, last, f"batch {n}")
        result.details["batches"] = n
    if due:
        step = _run_local_step(request, "expire-changelog", now)
        merge_step(result, step, "changelog")
        result.timings["totalSeconds"] = round(result.timings["totalSeconds"] + step.timings["totalSeconds"], 3)
    result.started_at = _iso(started)
    result.finished_at = _iso(now_ms())
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
    with maintenance_lease(request):
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


def maintenance_lease(request: launch.JobRequest) -> contextlib.AbstractContextManager[object]:
    """The table's maintenance lease (core/lease.py) for a run that changes the table; none for
    a dry run. Re-entrant per thread, so the driver may take it again inside."""
    if request.dry_run:
        return contextlib.nullcontext()
    table = open_request_table(request)
    return lease.held(table.file_io, table.root, f"spark {request.operation}")


def describe(result: launch.RunResult) -> dict[str, Any]:
    """A compact summary for CLI output."""
    data = result.to_dict()
    return {k: data[k] for k in ("operation", "table", "branch", "engine", "dryRun", "status", "planned",
                                 "executed", "failures", "sample", "details", "notes", "timings", "errors")}
