"""The in-process engine of ``PaimonMaintenanceRun`` and the choice of engine (operator-design.md §7.7).

:class:`InProcessEngine` runs the same planner and applier the CLI uses (``plan_table`` with
schedules ignored, then ``apply`` of the run type's actions), under the table's lock, in a worker
thread; the other run types (FastForward, Rollback, Check, RemoveMissingFiles, Compact) go to :mod:`tablekeeper.operator.runs.verbs`.
It serves engine ``Python``, ``Auto`` below the size threshold, run types the Spark job does not
do (``ExpireTags``, ``ExpirePartitions``), and every run while Spark runs are off (no
``TABLEKEEPER_SPARK_IMAGE``; :func:`select` then notes why in the run's status). Spark runs are
built, launched and read back by :mod:`tablekeeper.operator.runs.spark`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import Any

from tablekeeper import reconcile
from tablekeeper.core import paimon, storage
from tablekeeper.core.safety import trash
from tablekeeper.operator.cluster import scopes
from tablekeeper.operator.runs import verbs
from tablekeeper.operator.runs.report import RunReport
from tablekeeper.operator.runs.request import RUN_KINDS, Engine, RunRequest, RunResult, dry_run_of
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile import planner
from tablekeeper.spark import run_steps

__all__ = ["InProcessEngine", "select", "SPARK_RUN_TYPES", "TRASH_OPERATIONS"]

#: Run types the Spark job carries out (:mod:`tablekeeper.operator.runs.spark` launches them).
SPARK_RUN_TYPES = frozenset({"ExpireSnapshots", "RemoveOrphanFiles"})
#: Run types that delete files, and the operation their trash runs are named by (the CLI's command
#: names): with a window (the policy's ``trash.keep``, or the table option) they move the files into the
#: table's trash.
TRASH_OPERATIONS = {"ExpireSnapshots": "expire", "RemoveOrphanFiles": "clean-orphans", "ExpireTags": "expire-tags",
                    "ExpireConsumers": "consumer-expire"}


def _counts(actions: Sequence[A.Action], dry_run: bool, spoken: Collection[str]) -> RunReport:
    """A report with the planned counts of the run's actions; a kind the planner spoke about
    (``spoken``: it planned it, or said why it does nothing) counts 0 when nothing is planned,
    so a dry run shows the counts the real run would report."""
    def total(kind: str, count: Callable[[Any], int]) -> int | None:
        picked = [a for a in actions if a.kind == kind]
        if not picked:
            return 0 if kind in spoken else None
        return sum(count(a) for a in picked)
    return RunReport(dry_run=dry_run, expired_snapshots=total("ExpireSnapshots", lambda a: a.snapshots),
                     expired_changelogs=total("ExpireChangelog", lambda a: a.changelogs),
                     expired_partitions=total("ExpirePartitions", lambda a: len(a.partitions)),
                     expired_tags=total("ExpireTags", lambda a: len(a.tags)),
                     expired_consumers=total("ExpireConsumers", lambda a: len(a.consumers)),
                     orphan_files=total("CleanOrphans", lambda a: a.estimate.files))


#: The step of a run's second kind (an ExpireSnapshots run also expires the decoupled changelog),
#: whose notes carry the step's name as the Spark job's do (``run_steps.merge_step``).
_STEP_OF_KIND = {"ExpireChangelog": run_steps.CHANGELOG_STEP}


def _notes(actions: Sequence[A.Action], kinds: Collection[str]) -> tuple[str, ...]:
    """The core plans' notes of the run's kinds, in plan order: those of the planned actions and
    the planner's reasons why a kind does nothing (its ``Skipped`` of that kind), word for word
    as the CLI prints them (a second step's prefixed as the Spark job prefixes them)."""
    out: list[str] = []
    for a in actions:
        kind = a.what if isinstance(a, A.Skipped) else a.kind
        if kind not in kinds:
            continue
        said = [a.reason] if isinstance(a, A.Skipped) else list(getattr(a, "notes", ()))
        step = _STEP_OF_KIND.get(kind)
        out.extend(note if step is None else run_steps.step_note(step, note) for note in said)
    return tuple(dict.fromkeys(out))


def _with_notes(message: str, notes: Sequence[str]) -> str:
    """A run's condition message followed by the plan's notes."""
    return "; ".join([message, *notes])[:1000]


class InProcessEngine:
    """Runs maintenance in this process with the shared planner and applier."""

    name = "Python"

    def run(self, request: RunRequest) -> RunResult:
        """The run, with the storage requests it made by kind in its report (the warehouse's
        FileIO is shared: requests of a concurrent run on the same warehouse are counted too)."""
        io = request.opener.file_io(request.scope.location.warehouse)
        before = io.requests.counts.snapshot()
        result = self._run(request)
        if result.report is None:
            return result
        made = storage.since(before, io.requests.counts.snapshot())
        return replace(result, report=replace(result.report, storage_requests=made))

    def _run(self, request: RunRequest) -> RunResult:
        spec = request.spec
        if spec.type in verbs.VERB_TYPES:  # not planned maintenance
            return verbs.run_verb(request)
        kinds = RUN_KINDS.get(spec.type)
        if kinds is None:
            return RunResult(False, Reason.NOT_SUPPORTED, f"run type {spec.type} is not implemented by the operator yet")
        if spec.branch != paimon.MAIN:
            return RunResult(False, Reason.NOT_SUPPORTED, "maintenance of branches other than main is not "
                                                          "implemented yet")
        plan = scopes.plan_scope(request.scope, request.opener, request.now)
        dry_run = request.dry_run if request.dry_run is not None else dry_run_of(spec, plan.policy.values)
        config = reconcile.ReconcileConfig(ignore_schedules=True, estimate=dry_run)
        table_plan = planner.plan_table(plan.target, plan.table, plan.state, plan.records, plan.policy, request.now,
                                        config, kinds=kinds)
        picked: list[A.Action] = []
        notes = _notes(table_plan.actions, kinds)
        spoken = {a.what if isinstance(a, A.Skipped) else a.kind for a in table_plan.actions}
        for a in table_plan.actions:
            if a.kind not in kinds:
                continue
            if isinstance(a, A.CleanOrphans):
                a = a.model_copy(update={"dry_run": dry_run})
            picked.append(a)
        policy: dict[str, str] = {}
        for a in picked:
            policy.update(a.policy)
        counts = replace(_counts(picked, dry_run, spoken & set(kinds)), notes=notes)
        if dry_run or not any(a.is_change for a in picked):
            estimates = [e for e in (getattr(a, "estimate", None) for a in picked) if isinstance(e, A.Estimate)]
            report = replace(counts, planned_files=sum(e.files for e in estimates),
                             planned_bytes=sum(e.bytes for e in estimates))
            what = "dry run: nothing deleted" if dry_run else "nothing to do"
            return RunResult(True, Reason.SUCCEEDED, _with_notes(what, notes), report, policy=policy)
        store = scopes.StatusRecordStore(plan.records)
        window = trash.policy_window(plan.policy.values) if spec.type in TRASH_OPERATIONS else None
        with trash.keeping(plan.table.file_io, plan.table.root, TRASH_OPERATIONS.get(spec.type, ""), window,
                           table=plan.table.identifier) as kept:
            applied = scopes.apply_actions(plan, [a for a in picked if a.is_change], store, request.opener,
                                           reconcile.ReconcileConfig(ignore_schedules=True, estimate=False))
        failed = applied.failed
        totals = applied.totals()
        def executed(kind: str, planned: int | None) -> int | None:
            """What was done, not the plan's estimate made before the run changed the table."""
            done = [r.expired for r in applied.results if r.action.kind == kind and r.expired is not None]
            return sum(done) if done else planned
        counts = replace(counts, expired_snapshots=executed("ExpireSnapshots", counts.expired_snapshots),
                         expired_changelogs=executed("ExpireChangelog", counts.expired_changelogs),
                         expired_consumers=executed("ExpireConsumers", counts.expired_consumers))
        by_kind: dict[str, int] = {}  # estimated per kind (in process, the plan's sizes)
        for a in picked:
            for kind, count in getattr(a, "estimate", A.Estimate()).by_kind.items():
                by_kind[kind] = by_kind.get(kind, 0) + count
        report = replace(counts, deleted_files=totals["deletedFiles"], reclaimed_bytes=totals["deletedBytes"],
                         failures=len(failed), sample=tuple(r.message for r in applied.results),
                         deleted_by_kind=by_kind)
        if kept is not None and kept.started:  # (a run that removed nothing makes no trash run)
            report = replace(report, trash_run=kept.run_id, trash_keep_until_ms=kept.keep_until_ms,
                             trash_moved_files=kept.moved, trash_moved_bytes=kept.moved_bytes)
        if failed:
            return RunResult(False, Reason.MAINTENANCE_FAILED, failed[0].message, report, policy)
        message = "; ".join(r.message for r in applied.results) or "nothing to do"
        return RunResult(True, Reason.SUCCEEDED, _with_notes(message, notes), report, policy)


_IN_PROCESS = InProcessEngine()


def select(requested: str | None, *, spark_enabled: bool = False, run_type: str = "") -> tuple[Engine, str]:
    """The in-process engine for a run that asks for ``requested`` (Python, Auto, SparkOperator,
    SparkJob or None) and does not go to Spark, with a note for its status when it asked for Spark."""
    if requested in (None, "Auto", "Python"):
        return _IN_PROCESS, ""
    if not spark_enabled:
        return _IN_PROCESS, f"engine {requested} requested: Spark runs are off (no TABLEKEEPER_SPARK_IMAGE), ran in process"
    if run_type and run_type not in SPARK_RUN_TYPES:
        return _IN_PROCESS, f"engine {requested} requested: the Spark job does not do {run_type}, ran in process"
    return _IN_PROCESS, f"engine {requested} requested: ran in process"
