"""Expiration on Spark: ``expire.decide_expire`` and ``decide_expire_changelog``, in core's phases
(``expire_commit``: intent, unpublish, verify, delete; with a decoupled changelog lifecycle,
Paimon's order under core's commit-point re-check, ``commit_point``), with this job evaluating
each decision distributed (:mod:`tablekeeper.spark.expire.plan`). Core decides, orders and
re-checks; the job reads manifests, intersects the two evaluations and deletes: by stage in
executors (:mod:`tablekeeper.spark.deletes.driver`), then the decision's tail through core's
executor on the driver (:mod:`tablekeeper.spark.tail`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from tablekeeper.core import plans, values
from tablekeeper.core.paimon import Table
from tablekeeper.core.reclaim import expire
from tablekeeper.core.storage import DeleteOutcome, DeleteResult
from tablekeeper.spark import run_steps
from tablekeeper.spark.deletes import driver as deletes
from tablekeeper.spark.expire.plan import ManifestReads, plan_expiration
from tablekeeper.spark.stages import RunContext, planning
from tablekeeper.spark.tail import count_tail, finish, run_tail

__all__ = ["expire_snapshots", "expire_changelogs"]

def expire_snapshots(ctx: RunContext) -> None:
    """``expire.decide_expire``, evaluated distributed, in core's phases: unpublish, verify,
    then delete (``expire_commit``); with a decoupled changelog lifecycle, Paimon's order under
    core's commit-point re-check (``commit_point``), as in process."""
    table = run_steps.open_request_table(ctx.request)
    now = ctx.request.now_ms if ctx.request.now_ms is not None else values.now_ms()
    t0 = time.perf_counter()
    config = run_steps.expire_config(ctx.request, table)
    reads = ManifestReads(ctx)
    if ctx.request.dry_run:
        _evaluate(ctx, reads, table, expire.decide_expire(table, config, now), t0)
        return
    if config.changelog_decoupled:
        _checked(ctx, reads, table, lambda: expire.decide_expire(table, config, now), t0)
        return
    _report(ctx, expire.expire_snapshots(table, config, now, _evaluator(ctx, reads, table, t0)))


def expire_changelogs(ctx: RunContext) -> None:
    """``expire.decide_expire_changelog``, evaluated distributed, in core's phases (unpublish
    the changelog files, verify, delete: ``expire_commit.expire_changelogs``)."""
    table = run_steps.open_request_table(ctx.request)
    now = ctx.request.now_ms if ctx.request.now_ms is not None else values.now_ms()
    t0 = time.perf_counter()
    config = run_steps.changelog_config(ctx.request, table)
    reads = ManifestReads(ctx)
    if ctx.request.dry_run:
        _evaluate(ctx, reads, table, expire.decide_expire_changelog(table, config, now), t0)
        return
    _report(ctx, expire.expire_changelogs(table, config, now, _evaluator(ctx, reads, table, t0)))


def _report(ctx: RunContext, done: expire.Expiration[_Evaluated]) -> None:
    """What core's phases decided and noted (the evaluator counted what was planned)."""
    ctx.result.details.update(dict(done.decision.details))
    ctx.result.notes.extend((*done.decision.notes, *done.notes))


def _checked(ctx: RunContext, reads: ManifestReads, table: Table,
             decide: Callable[[], expire.ExpirationDecision], t0: float) -> None:
    """Run a decision under core's commit-point re-check (``commit_point.run_checked_with``):
    tags, branches and consumers are compared before every delete stage; when they grew, the
    decision is made again (a re-plan counts only what it finally planned)."""
    result = ctx.result
    counted = (dict(result.planned_files), dict(result.planned_bytes), list(result.sample), list(result.notes))

    def run(decision: expire.ExpirationDecision) -> None:
        result.planned_files, result.planned_bytes = dict(counted[0]), dict(counted[1])
        result.sample, result.notes = list(counted[2]), list(counted[3])
        _evaluate(ctx, reads, table, decision, t0)

    _made, _none, reasons = expire.run_checked_with(table, decide, run)
    if reasons:
        result.notes.append(f"re-planned {len(reasons)} time(s): {'; '.join(reasons)}")


def _evaluate(ctx: RunContext, reads: ManifestReads, table: Table, decision: expire.ExpirationDecision,
              t0: float) -> None:
    """Evaluate ``decision`` and carry it out in Paimon's order (a dry run, or a decision run
    under core's commit-point re-check): nothing to read (hints only) -> core's executor runs
    its tail; otherwise distributed planning, then the deletes and the tail."""
    result = ctx.result
    result.details.update(dict(decision.details))
    result.notes.extend(decision.notes)
    if not decision.reads_manifests:
        run_tail(ctx, table, decision.tail_plan(), t0)
        return
    planned, spec = plan_expiration(ctx, reads, table, decision)
    stages = deletes.record_planned(ctx, planned)
    finish(ctx, table, planned, stages, spec, decision.tail_plan(), t0, empty_dirs_depth=decision.empty_dirs_depth)


@dataclass(frozen=True)
class _Evaluated:
    """A decision evaluated distributed: its delete rows (materialised), or None when it reads
    nothing (hints only)."""

    planned: DataFrame | None
    spec: Mapping[str, Any]
    empty_dirs_depth: int | None
    #: the decision's unpublishing steps (snapshot or changelog files): counted as planned
    unpublishing: tuple[plans.Step, ...] = ()


def _evaluator(ctx: RunContext, reads: ManifestReads, table: Table, t0: float) -> expire.Evaluator[_Evaluated]:
    """Core's expiration phases (``expire_commit.expire_snapshots``: intent, unpublish, verify,
    delete) with this job evaluating the decisions: core decides, orders and re-checks; the
    job reads manifests, intersects the two evaluations and deletes, distributed."""

    def evaluate(view: Table, decision: expire.ExpirationDecision) -> _Evaluated:
        unpublish = expire.unpublishing(decision)
        if not decision.reads_manifests:
            return _Evaluated(None, {}, None, unpublish)
        planned, spec = plan_expiration(ctx, reads, view, decision)
        return _Evaluated(planned, spec, decision.empty_dirs_depth, unpublish)

    def agree(first: _Evaluated, again: _Evaluated) -> tuple[_Evaluated, int]:
        if first.planned is None:
            return (again if again.planned is None else
                    _Evaluated(ctx.keep(again.planned.limit(0)), again.spec, again.empty_dirs_depth,
                               again.unpublishing)), 0
        if again.planned is None:
            return again, int(first.planned.count())
        before, after = first.planned, again.planned
        agreed = planning(lambda: ctx.keep(after.join(before.select("path"), "path", "left_semi")),
                          "verifying the plan")
        kept = planning(lambda: before.join(agreed.select("path"), "path", "left_anti").count(),
                        "verifying the plan")
        return _Evaluated(agreed, again.spec, again.empty_dirs_depth, again.unpublishing), int(kept)

    def delete(evaluated: _Evaluated, tail: plans.Plan) -> plans.ExecutionResult:
        failed_before = ctx.result.failed_count
        count_tail(ctx, plans.Plan(tail.operation, tail.table, evaluated.unpublishing))
        if evaluated.planned is None:
            run_tail(ctx, table, tail, t0)
        else:
            stages = deletes.record_planned(ctx, evaluated.planned)
            finish(ctx, table, evaluated.planned, stages, evaluated.spec, tail, t0,
                   empty_dirs_depth=evaluated.empty_dirs_depth)
        # failures keep core's intent, so the next run resumes; the counts are in ctx.result
        return plans.ExecutionResult(failed=[DeleteResult("(spark delete stage)", DeleteOutcome.FAILED)]
                                         if ctx.result.failed_count > failed_before else [])

    def run_meta(plan: plans.Plan) -> plans.ExecutionResult:
        executed = plans.execute(plan, table.file_io, batch_size=ctx.request.batch_size)
        run_steps.merge_execution(ctx.result, executed)
        return executed

    return expire.Evaluator(evaluate, agree, delete, run_meta)
