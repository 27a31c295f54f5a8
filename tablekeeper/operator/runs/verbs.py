"""Imperative branch verbs as ``PaimonMaintenanceRun`` types (operator-design.md §4.4, §4.6):
``FastForward`` merges a branch into main with :func:`tablekeeper.core.refs.branches.fast_forward`;
``Rollback`` and ``Compact`` end ``NotSupported`` with the reason in the message.

- FastForward is refused for a branch whose PaimonBranch is ``protected`` (``BranchProtected``;
  the operator never fast-forwards, rolls back or drops a protected branch), for a branch that
  does not exist (``BranchNotFound``), and by core when the branch no longer starts at its fork
  snapshot (``DivergedBranchError``: main's history would be lost). ``parameters.dryRun`` reports
  the files it would write and delete.
- Rollback is not implemented: tablekeeper has no rollback in core yet (Paimon's RollbackHelper
  deletes snapshots, changelogs and tags after the target and rewrites the hints; doing that
  safely needs fork-point protection of the deleted tags and crash-safe ordering). Use Paimon's
  ``rollback_to`` procedure meanwhile.
- Compact is reserved: no Python compaction exists (Spark engines only, not launched yet).
"""

from __future__ import annotations

from tablekeeper.core import errors as core_errors
from tablekeeper.core import refs
from tablekeeper.core.policy.specs import PaimonBranchSpec
from tablekeeper.operator.cluster import scopes
from tablekeeper.operator.runs.report import RunReport
from tablekeeper.operator.runs.request import RunRequest, RunResult
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import classify

__all__ = ["VERB_TYPES", "run_verb"]

#: Run types this module answers (the engine hands them over before planning maintenance).
VERB_TYPES = frozenset({"FastForward", "Rollback", "Compact"})

ROLLBACK_NOT_SUPPORTED = (
    "Rollback is not implemented by tablekeeper yet: core has no rollback (Paimon's RollbackHelper deletes the "
    "snapshots, changelogs and tags after the target and rewrites LATEST/EARLIEST; tablekeeper will only do that "
    "with fork-point protection of the deleted tags). Use Paimon's rollback_to procedure (Flink/Spark) meanwhile")
COMPACT_NOT_SUPPORTED = (
    "Compact is reserved: there is no Python compaction, and launching Spark compaction is not implemented; run "
    "Paimon's compact procedure (Flink/Spark) meanwhile")


def run_verb(request: RunRequest) -> RunResult:
    """Execute a FastForward run, or explain why a Rollback/Compact run is not supported. Blocking."""
    spec = request.spec
    if spec.type == "Rollback":
        return RunResult(False, Reason.NOT_SUPPORTED, ROLLBACK_NOT_SUPPORTED)
    if spec.type == "Compact":
        return RunResult(False, Reason.NOT_SUPPORTED, COMPACT_NOT_SUPPORTED)
    assert spec.type == "FastForward"
    name = spec.branch
    member = next((m for m in request.scope.branches if m.name == name and m.owner), None)
    if member is not None and isinstance(member.spec, PaimonBranchSpec) and member.spec.protected:
        return RunResult(False, Reason.BRANCH_PROTECTED,
                         f"branch {name!r} is protected (PaimonBranch {member.obj.short}): the operator never "
                         "fast-forwards it; set spec.protected: false first")
    plan = scopes.plan_scope(request.scope, request.opener, request.now, objects=False)
    if name not in plan.state.branches:
        return RunResult(False, Reason.BRANCH_NOT_FOUND,
                         f"branch {name!r} does not exist in {request.scope.location.identifier}")
    dry_run = bool(spec.parameters.dry_run)
    try:
        change = refs.fast_forward(plan.table, name, dry_run=dry_run)
    except core_errors.TablekeeperError as e:
        failure = classify(e)
        reason = Reason.NOT_SUPPORTED if isinstance(e, core_errors.DivergedBranchError) else failure.reason
        return RunResult(False, reason, failure.message)
    result = RunReport(dry_run=dry_run, written_files=len(change.written), deleted_files=len(change.deleted),
                       sample=(*change.deleted, *change.written))
    verb = "would fast-forward" if dry_run else "fast-forwarded"
    message = (f"{verb} main to branch {name!r}: {len(change.written)} metadata file(s) written, "
               f"{len(change.deleted)} deleted" + (f"; {change.notes[0]}" if change.notes else ""))
    return RunResult(True, Reason.SUCCEEDED, message, result)
