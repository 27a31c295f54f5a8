"""Applying a plan's passes: :func:`apply` carries out one plan's change actions in order, table by
table under the table's lease and its undo window; :func:`converge` plans and applies until
nothing more is due."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from tablekeeper.core import errors, values
from tablekeeper.core.safety import concurrency, trash
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.applier.results import ActionResult, ApplyResult, ConvergeResult, KeptRun
from tablekeeper.reconcile.applier.steps import HANDLERS, ActionRun
from tablekeeper.reconcile.opener import Opener
from tablekeeper.reconcile.planner import ReconcilePlan, plan
from tablekeeper.reconcile.planners.context import ReconcileConfig
from tablekeeper.reconcile.state.desired import DesiredState
from tablekeeper.reconcile.state.records import RecordStore

__all__ = ["apply", "converge"]


def apply(plan_: ReconcilePlan, *, store: RecordStore, opener: Opener | None = None,
          config: ReconcileConfig | None = None,
          on_result: Callable[[ActionResult], None] | None = None) -> ApplyResult:
    """Carry out the changes of ``plan_`` in order (reported actions are skipped).

    Args:
        plan_: from :func:`tablekeeper.reconcile.plan`.
        store: ownership/run records (updated as actions complete).
        opener: opens tables (one FileIO per warehouse).
        config: batches, engine threshold.
        on_result: called after each action (progress output).
    """
    opener = opener or Opener()
    config = config or ReconcileConfig()
    results: list[ActionResult] = []
    kept: list[KeptRun] = []
    for table_plan in plan_.tables:
        if not table_plan.changes:
            continue
        loc = table_plan.target.location
        table = opener.open(loc)
        run = ActionRun(table_plan, table, store.load(loc.warehouse, loc.identifier), store, plan_.now, config)
        # One maintainer per table (core/safety/concurrency/lease.py): a locked table fails its actions with TableLocked.
        maintainer = concurrency.held(table.file_io, table.root, f"apply {loc.identifier}")
        try:
            maintainer.__enter__()
        except errors.TableLockedError as locked:
            for action in table_plan.changes:
                result = ActionResult(action, "failed", locked.message + f" ({locked.fix})",
                                      engine=getattr(action, "engine", None), error=locked)
                results.append(result)
                if on_result is not None:
                    on_result(result)
            continue
        # the table's undo window: what its actions remove goes into one trash run (unless the
        # caller opened one already: an operator run reports its own)
        window = table_plan.trash_window if trash.active() is None else None
        try:
            with trash.keeping(table.file_io, table.root, "apply", window, table=loc.identifier) as kept_run:
                for action in table_plan.changes:
                    start_files, start_bytes = run.deleted_files, run.deleted_bytes
                    engine = getattr(action, "engine", None)
                    error: BaseException | None = None
                    run.expired = None
                    try:
                        status, message = HANDLERS[action.kind](run, action)
                        if action.kind in A.MAINTENANCE_KINDS:
                            run.save(run.records.with_run(action.kind, values.epoch_ms(plan_.now)))
                        if engine == "spark":
                            message += " (engine spark: no Spark runner in this process, ran in-process)"
                            engine = "in-process"
                    except Exception as e:  # one failing action must not stop the others
                        status, error = "failed", e
                        message = (e.message + (f" ({e.fix})" if e.fix else "")
                                   if isinstance(e, errors.TablekeeperError) else f"{type(e).__name__}: {e}")
                    result = ActionResult(action, status, message, run.deleted_files - start_files,
                                          run.deleted_bytes - start_bytes, engine, run.expired, error)
                    results.append(result)
                    if on_result is not None:
                        on_result(result)
        finally:
            maintainer.__exit__(None, None, None)
        if kept_run is not None and kept_run.started:
            kept.append(KeptRun(loc.identifier, kept_run.run_id, kept_run.keep_until_ms, kept_run.moved,
                                kept_run.moved_bytes))
    return ApplyResult(tuple(results), tuple(kept))


def converge(desired: DesiredState, *, now: datetime, store: RecordStore, opener: Opener | None = None,
             config: ReconcileConfig | None = None, max_passes: int = 3,
             on_result: Callable[[ActionResult], None] | None = None,
             first_plan: ReconcilePlan | None = None) -> ConvergeResult:
    """Plan and apply until nothing changes (at most ``max_passes`` applies).

    Raises:
        ManifestError: from planning (before anything is applied in the first pass).
    """
    opener = opener or Opener()
    config = config or ReconcileConfig()
    plans_: list[ReconcilePlan] = []
    applied: list[ApplyResult] = []
    current = first_plan or plan(desired, now=now, store=store, opener=opener, config=config)
    for _ in range(max_passes):
        if current.is_empty:
            break
        plans_.append(current)
        result = apply(current, store=store, opener=opener, config=config, on_result=on_result)
        applied.append(result)
        current = plan(desired, now=now, store=store, opener=opener, config=config)
        if not result.ok:
            break
    if not plans_:
        plans_.append(current)
    return ConvergeResult(tuple(plans_), tuple(applied), current)
