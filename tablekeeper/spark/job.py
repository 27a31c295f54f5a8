"""The driver of the tablekeeper Spark jobs: core's decisions, evaluated distributed.

Nothing here decides what is safe to delete. Each run asks core for a decision
(:mod:`tablekeeper.core.reclaim.orphans.decision`) and evaluates it at scale; what is distributed is what grows
with the table: listing, manifest reads, set differences and deletes. The driver holds root
descriptors, bucket directories, error rows, per-kind counts and a sample of at most
``safety.STATUS_SAMPLE_MAX`` paths — never a list of files, except an object store's flat
listing for orphan cleanup.

This module runs one request: the table's maintenance lease, the storage request tally, the
batches of an expiration (``expire_batches.run_with_changelog``) and the result. The operations
are beside it, each with its executor functions:

- ``spark/orphans/``: orphan cleanup (``orphans.decide_orphan_clean``);
- ``spark/expire/``: snapshot and changelog expiration (``expire.decide_expire``,
  ``decide_expire_changelog``, in ``expire_commit``'s phases);
- ``spark/deletes/``: the deletes by stage both end with; ``spark/tail.py``: an expiration's tail;
- ``spark/stages.py``: the run's context and stage helpers; ``spark/session.py``: the session;
  ``spark/executor.py``: what every executor function stands on.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import SparkSession

from tablekeeper.core import values
from tablekeeper.core.reclaim import expire
from tablekeeper.core.safety import trash
from tablekeeper.spark import executor as ex
from tablekeeper.spark import job_count, job_request, request_tally, result_artifact, run_steps
from tablekeeper.spark.expire import driver as expiration
from tablekeeper.spark.orphans import driver as orphan_cleanup
from tablekeeper.spark.stages import PHASES, RunContext

__all__ = ["run", "run_to_result", "run_started", "worker_pids"]

log = logging.getLogger(__name__)

_OPERATIONS: Mapping[str, Callable[[RunContext], None]] = {
    "clean-orphans": orphan_cleanup.clean_orphans, "expire": expiration.expire_snapshots,
    "expire-changelog": expiration.expire_changelogs}


def run(spark: SparkSession, request: job_request.JobRequest, *, fault: Mapping[str, Any] | None = None,
        result: result_artifact.RunResult | None = None) -> result_artifact.RunResult:
    """Plan and (unless ``request.dry_run``) execute ``request`` on ``spark``.

    ``fault`` is a test hook for the delete stages (see ``deletes.executor._Fault``). ``result``, when
    given, is filled in place, so a caller still has the partial result after an error.

    Raises:
        IncompleteProtectionSetError: a protection set could not be built (nothing deleted).
        StorageError: a delete stage failed after Spark's retries (rerun to finish).
        TablekeeperError: bad input or table state.
    """
    result = result if result is not None else result_artifact.RunResult(
        operation=request.operation, table=request.table, branch=request.branch, dry_run=request.dry_run,
        engine="spark", run_name=request.run_name, warehouse=request.warehouse, versions=run_steps.versions())
    result.versions.setdefault("spark", spark.version)
    started = values.now_ms()
    result.started_at = values.iso_ms(started)
    t0 = time.perf_counter()
    PHASES.clear()
    maintainer = contextlib.ExitStack()  # one maintainer per table (core/safety/concurrency/lease.py); released below
    tally = maintainer.enter_context(request_tally.Tally(spark))  # storage requests of the run
    jobs = maintainer.enter_context(job_count.JobCount(spark, request.operation))  # and its Spark jobs
    ctx = RunContext(spark, request, result, fault)
    result.details["parallelism"] = ctx.n
    try:
        maintainer.enter_context(run_steps.maintenance_lease(request))
        if request.trash_run is not None and not request.dry_run:  # every delete moves into it (core/safety/trash)
            maintainer.enter_context(trash.resumed(run_steps.open_request_table(request).file_io, request.trash_run))
            # the operator's status names the trash run from the artifact (its deletes are its moves)
            result.details["trash"] = {"run": request.trash_run["run_id"],
                                       "keepUntilMs": int(request.trash_run["keep_until_ms"])}
        due = request.with_changelog and _changelog_due(request)
        if request.operation not in run_steps.BATCH_UNIT:
            _OPERATIONS[request.operation](ctx)
        else:
            unit = run_steps.BATCH_UNIT[request.operation]

            def first(n: int) -> int:
                if n == 1:
                    _OPERATIONS[request.operation](ctx)
                    return result.planned_files.get(unit, 0)
                ctx.release()
                count = _next_step(spark, request, result, fault, request.operation, run_steps.step_name("batch", n))
                result.details["batches"] = n
                return count

            def changelog(n: int) -> int:  # on the table as the snapshot batches left it
                ctx.release()
                return _next_step(spark, request, result, fault, "expire-changelog", run_steps.step_name(run_steps.CHANGELOG_STEP, n))

            expire.run_with_changelog(first, changelog, changelog_due=due, max_batches=request.batches,
                                              dry_run=request.dry_run)
    finally:
        ctx.release()
        result.requests = tally.total()
        result.spark_jobs = jobs.total()
        result.details["executorRequests"] = tally.executors()
        result.details["requestsCounted"] = "driver" if tally.accumulators is None else "driver and executors"
        maintainer.close()
        result.timings.update({f"phase {k}": round(v, 3) for k, v in PHASES.items()})
        result.timings["totalSeconds"] = round(time.perf_counter() - t0, 3)
        result.finished_at = values.iso_ms(values.now_ms())
    return result


def _next_step(spark: SparkSession, request: job_request.JobRequest, result: result_artifact.RunResult,
               fault: Mapping[str, Any] | None, operation: job_request.Operation, name: str) -> int:
    """One more batch of ``operation`` (a later snapshot batch, or the changelog's) on the table as
    the previous step left it, summed into ``result`` (its details under ``details[name]``), even
    when it fails part way; returns what it expired (snapshots or changelogs)."""
    step = result_artifact.RunResult(operation=operation, table=request.table, branch=request.branch,
                            dry_run=request.dry_run, engine="spark", run_name=request.run_name,
                            warehouse=request.warehouse)
    step_ctx = RunContext(spark, request, step, fault)
    try:
        _OPERATIONS[operation](step_ctx)
    finally:
        step_ctx.release()
        run_steps.merge_step(result, step, name)
    return step.planned_files.get(run_steps.BATCH_UNIT[operation], 0)


def _changelog_due(request: job_request.JobRequest) -> bool:
    """``with_changelog``: whether changelog expiration is due before the snapshot expiration (the
    operator's in-process run plans both first, then applies them in order)."""
    table = run_steps.open_request_table(request)
    now = request.now_ms if request.now_ms is not None else values.now_ms()
    return run_steps.changelog_due(table, run_steps.changelog_config(request, table), now)


def _recorded(request: job_request.JobRequest,
              body: Callable[[result_artifact.RunResult], object]) -> result_artifact.RunResult:
    """A new result of ``request`` filled by ``body``, every error recorded in it (status
    ``Failed``) instead of raised."""
    result = result_artifact.RunResult(operation=request.operation, table=request.table, branch=request.branch,
                                       dry_run=request.dry_run, engine="spark", run_name=request.run_name,
                                       warehouse=request.warehouse, versions=run_steps.versions())
    try:
        body(result)
    except Exception as e:
        log.exception("tablekeeper spark job failed")
        result.fail(e)
    return result


def run_to_result(spark: SparkSession, request: job_request.JobRequest) -> result_artifact.RunResult:
    """``run``, with every error recorded in the result (status ``Failed``) instead of raised."""
    return _recorded(request, lambda result: run(spark, request, result=result))


def run_started(request: job_request.JobRequest, start: Callable[[], SparkSession]) -> result_artifact.RunResult:
    """:func:`run_to_result` on the session ``start`` makes, inside the run: a session that cannot be
    made (a refused master, an unreachable Connect server) is the run's failure, in its artifact.
    The session is stopped afterwards unless one was active before (a caller's)."""
    existing = SparkSession.getActiveSession()
    started: list[SparkSession] = []

    def body(result: result_artifact.RunResult) -> None:
        started.append(start())
        run(started[0], request, result=result)

    try:
        return _recorded(request, body)
    finally:
        if started and existing is None:
            started[0].stop()


def worker_pids(spark: SparkSession, partitions: int = 4) -> set[int]:
    """Pids of the Python workers that ran a trivial stage (tests: work left the driver)."""
    df = spark.range(partitions * 4).repartition(partitions)
    rows = df.mapInArrow(functools.partial(ex.worker_pid, {}), ex.ddl(ex.PID_FIELDS)).collect()
    return {int(r["pid"]) for r in rows}
