"""The run types that are not planned maintenance (operator-design.md §4.4, §4.6), each carried
out by the core function the CLI's command calls:

- ``FastForward`` merges a branch into main (:func:`tablekeeper.core.refs.branches.fast_forward`).
  Refused for a branch whose PaimonBranch is ``protected`` (``BranchProtected``), for a branch
  that does not exist (``BranchNotFound``), and by core when the branch no longer starts at its
  fork snapshot (``DivergedBranchError``: main's history would be lost).
- ``Rollback`` restores ``parameters.rollbackTo`` as the latest snapshot of the run's branch
  (``tablekeeper rollback``: Paimon's rollback_to_as_latest), deleting nothing; refused on a
  protected branch. Destructive rollback (``--discard-later``) stays a CLI command.
- ``Check`` reads every retained view of every branch (``tablekeeper check``); a broken table
  ends the run ``Failed`` with reason ``TableBroken`` and the files in the message, as the CLI
  exits 1.
- ``RemoveMissingFiles`` drops the missing data files from the latest snapshot of the run's
  branch (``tablekeeper repair --remove-missing``); a dry run unless ``dryRun: false``; refused
  (``TableBroken``) while a tag reads a missing file.
- ``Undo`` puts back every file of trash run ``parameters.undoRun`` (``tablekeeper undo``), so
  the table reads as before that run; refused (nothing changed) for an unknown, purged or undone
  run, a later run still in the trash, or a place that holds other bytes now.
- ``Compact`` is reserved: no Python compaction exists (Spark engines only, not launched yet).

``parameters.dryRun`` makes each of them report what it would write and delete.
"""

from __future__ import annotations

from tablekeeper.core import errors as core_errors
from tablekeeper.core import paimon, recovery, refs
from tablekeeper.core.paimon import Table
from tablekeeper.core.policy.specs import PaimonBranchSpec
from tablekeeper.operator.cluster import scopes
from tablekeeper.operator.runs.report import RunReport
from tablekeeper.operator.runs.request import RunRequest, RunResult
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import classify

__all__ = ["VERB_TYPES", "run_verb"]

#: Run types this module answers (the engine hands them over before planning maintenance).
VERB_TYPES = frozenset({"FastForward", "Rollback", "Check", "RemoveMissingFiles", "Undo", "Compact"})

COMPACT_NOT_SUPPORTED = (
    "Compact is reserved: there is no Python compaction, and launching Spark compaction is not implemented; run "
    "Paimon's compact procedure (Flink/Spark) meanwhile")


def run_verb(request: RunRequest) -> RunResult:
    """Execute a FastForward, Rollback, Check or RemoveMissingFiles run, or explain why a Compact
    run is not supported. Blocking."""
    spec = request.spec
    if spec.type == "Compact":
        return RunResult(False, Reason.NOT_SUPPORTED, COMPACT_NOT_SUPPORTED)
    dry_run = request.dry_run if request.dry_run is not None else spec.effective_dry_run
    if spec.type in ("FastForward", "Rollback"):
        refused = _protected(request, spec.branch, "fast-forwards" if spec.type == "FastForward" else "rolls back")
        if refused is not None:
            return refused
    try:
        if spec.type == "Check":
            return _check(request)
        if spec.type == "Undo":
            return _undo(request, dry_run)
        table = _open(request, spec.branch if spec.type != "FastForward" else paimon.MAIN)
        if table is None:
            return RunResult(False, Reason.BRANCH_NOT_FOUND,
                             f"branch {spec.branch!r} does not exist in {request.scope.location.identifier}")
        if spec.type == "Rollback":
            return _rollback(request, table, dry_run)
        if spec.type == "RemoveMissingFiles":
            return _remove_missing(table, dry_run)
        assert spec.type == "FastForward"
        return _fast_forward(table, spec.branch, dry_run)
    except core_errors.TablekeeperError as e:
        failure = classify(e)
        reason = Reason.NOT_SUPPORTED if isinstance(e, core_errors.DivergedBranchError) else failure.reason
        return RunResult(False, reason, failure.message)


def _protected(request: RunRequest, branch: str, verb: str) -> RunResult | None:
    member = next((m for m in request.scope.branches if m.name == branch and m.owner), None)
    if member is not None and isinstance(member.spec, PaimonBranchSpec) and member.spec.protected:
        return RunResult(False, Reason.BRANCH_PROTECTED,
                         f"branch {branch!r} is protected (PaimonBranch {member.obj.short}): the operator never "
                         f"{verb} it; set spec.protected: false first")
    return None


def _open(request: RunRequest, branch: str) -> Table | None:
    """The run's table on ``branch`` (main also names a FastForward's source branch: it must
    exist), None when the branch does not exist."""
    plan = scopes.plan_scope(request.scope, request.opener, request.now, objects=False)
    wanted = request.spec.branch
    if wanted != paimon.MAIN and wanted not in plan.state.branches:
        return None
    return plan.table if branch == paimon.MAIN else plan.table.on_branch(branch)


def _fast_forward(table: Table, name: str, dry_run: bool) -> RunResult:
    change = refs.fast_forward(table, name, dry_run=dry_run)
    result = RunReport(dry_run=dry_run, written_files=len(change.written), deleted_files=len(change.deleted),
                       sample=(*change.deleted, *change.written))
    verb = "would fast-forward" if dry_run else "fast-forwarded"
    message = (f"{verb} main to branch {name!r}: {len(change.written)} metadata file(s) written, "
               f"{len(change.deleted)} deleted" + (f"; {change.notes[0]}" if change.notes else ""))
    return RunResult(True, Reason.SUCCEEDED, message, result)


def _rollback(request: RunRequest, table: Table, dry_run: bool) -> RunResult:
    target = request.spec.parameters.rollback_to
    assert target is not None  # the spec requires it for Rollback
    done = recovery.restore_as_latest(
        table, recovery.RollbackRequest(snapshot_id=target.snapshot_id, tag=target.tag,
                                        keep_as_tag=target.keep_as_tag), dry_run=dry_run)
    plan = done.plan
    where = f"{table.identifier} (branch {table.branch})"
    if plan.action == "unchanged":
        message = (f"unchanged: the latest snapshot {plan.new_snapshot_id} of {where} already reads "
                   f"{plan.target_source}")
    else:
        verb = "would restore" if dry_run else "restored"
        message = (f"{verb} {plan.target_source} (snapshot {plan.target_id}) of {where} as snapshot "
                   f"{plan.new_snapshot_id}; snapshot {plan.previous_latest_id} and everything before stay, "
                   "nothing is deleted")
    tags = [f"tag {name!r} at snapshot {sid}" for name, sid in plan.tags_to_create.items()]
    report = RunReport(dry_run=dry_run, written_files=len(done.written), deleted_files=0, sample=done.written,
                       restored_snapshot_id=plan.new_snapshot_id, target_snapshot_id=plan.target_id,
                       notes=tuple(tags))
    return RunResult(True, Reason.SUCCEEDED, "; ".join([message, *tags])[:1000], report)


def _undo(request: RunRequest, dry_run: bool) -> RunResult:
    from tablekeeper.core.safety import trash

    run_id = request.spec.parameters.undo_run
    assert run_id is not None  # the spec requires it for Undo
    table = scopes.plan_scope(request.scope, request.opener, request.now, objects=False).table
    done = trash.undo(table.file_io, table.root, run_id, dry_run=dry_run)
    verb = "dry run: would put back" if dry_run else "put back"
    message = (f"{verb} {done.restored} file(s) of trash run {run_id} ({done.run.operation}) in {table.identifier}"
               + (f"; {done.already_back} already in place" if done.already_back else "")
               + ("" if dry_run else "; the table reads as before that run"))
    report = RunReport(dry_run=dry_run, restored_files=done.restored, deleted_files=0, written_files=done.restored,
                       sample=tuple(done.hints))
    return RunResult(True, Reason.SUCCEEDED, message, report)


def _check(request: RunRequest) -> RunResult:
    table = scopes.plan_scope(request.scope, request.opener, request.now, objects=False).table
    report = recovery.check_table(table)
    counts = RunReport(dry_run=True, checked_views=report.views_checked, checked_files=report.files_checked,
                       broken_views=len(report.broken_views),
                       missing_files=sum(1 for p in report.problems if p.actual_size is None),
                       sample=tuple(f"{p.kind} {p.path}: " + ("missing" if p.actual_size is None else
                                                               f"size {p.actual_size}, expected {p.expected_size}")
                                    + f" (needed by {', '.join(p.views[:3])})" for p in report.problems))
    summary = f"{report.views_checked} view(s), {report.files_checked} file(s) checked"
    if report.ok:
        return RunResult(True, Reason.SUCCEEDED, f"{table.identifier} is intact: {summary}", counts)
    broken = report.broken_views
    return RunResult(False, Reason.TABLE_BROKEN,
                     (f"{len(broken)} view(s) of {table.identifier} lost files ({', '.join(broken[:5])}"
                      f"{' ...' if len(broken) > 5 else ''}): {'; '.join(counts.sample[:3])}; {summary}")[:1000],
                     counts)


def _remove_missing(table: Table, dry_run: bool) -> RunResult:
    plan = recovery.plan_remove_missing(table)
    notes = tuple(plan.notes())
    if plan.refused:
        try:
            recovery.remove_missing(table, plan)
        except core_errors.InvalidInputError as e:
            return RunResult(False, Reason.TABLE_BROKEN, classify(e).message,
                             RunReport(dry_run=dry_run, removed_entries=0, notes=notes))
    removed = len(plan.files) if dry_run else recovery.remove_missing(table, plan)
    report = RunReport(dry_run=dry_run, removed_entries=removed, missing_files=len(plan.files), deleted_files=0,
                       sample=plan.files, notes=notes)
    where = f"{table.identifier} (branch {table.branch})"
    if not plan.files:
        message = f"nothing to do: the latest snapshot of {where} names no missing data file"
    else:
        verb = "dry run: would remove" if dry_run else "removed"
        message = (f"{verb} {len(plan.files)} missing data file(s) from snapshot {plan.snapshot_id} of {where}; "
                   "no file is deleted" + ("; create the run with dryRun: false to commit it" if dry_run else ""))
    return RunResult(True, Reason.SUCCEEDED, "; ".join([message, *notes[1 if not plan.files else 0:]])[:1000],
                     report)
