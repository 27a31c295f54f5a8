"""Deleting a ``PaimonTag`` or ``PaimonBranch`` CR that owns its object (operator-design.md §7.5).

The finalizer is present only while the CR is ``owned`` with ``deletionPolicy: Delete``. Deletion
goes through the same planner as every other change: the CR leaves the desired state while its
record stays, which plans the deletion (tags: delete with Paimon's cleanup; branches: drop).
Protected objects (fork-point tags, protected branches, branches in use) are kept and the
finalizer released with a Warning; an object already gone, or a table already gone, is success.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from tablekeeper.core import errors as core_errors
from tablekeeper.operator import metrics
from tablekeeper.operator.cluster.scopes import StatusRecordStore
from tablekeeper.operator.cluster.view import Obj, View
from tablekeeper.operator.context import child_context
from tablekeeper.operator.controllers.branches import KEPT_REASONS
from tablekeeper.operator.controllers.children import kept_in_trash, state_outcome, wait_for_run
from tablekeeper.operator.runs.claims import spark_run_in_flight
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import Failure, OperatorError, classify, failure_of
from tablekeeper.operator.status.outcome import Outcome
from tablekeeper.reconcile import actions as A

__all__ = ["delete_tag", "delete_branch"]


async def delete_tag(rt: Runtime, view: View, obj: Obj, *, retry: int) -> Outcome:
    """A PaimonTag with the finalizer is being deleted: delete the tag (with Paimon's cleanup)."""
    return await _delete(rt, view, obj, retry, lambda a: isinstance(a, (A.DeleteTag, A.TagConflict, A.ReleaseObject)),
                         "tag")


async def delete_branch(rt: Runtime, view: View, obj: Obj, *, retry: int) -> Outcome:
    """A PaimonBranch with the finalizer is being deleted: drop the branch."""
    return await _delete(rt, view, obj, retry,
                         lambda a: isinstance(a, (A.DropBranch, A.BranchConflict, A.ReleaseObject)), "branch")


async def _delete(rt: Runtime, view: View, obj: Obj, retry: int, pick: Callable[[A.Action], bool],
                  what: str) -> Outcome:
    now = rt.config.now()
    outcome = Outcome()
    if not obj.status.get("owned"):
        return outcome
    table_name = str((obj.spec.get("tableRef") or {}).get("name"))
    try:
        table = await child_context(rt, view, obj, table_name)
    except OperatorError as e:
        outcome.event("Warning", "DeleteFailed", f"{e.message}: the {what} is left in storage, unmanaged")
        return outcome
    member = table.scope.member(obj.uid)
    if member is None or not member.owner:
        return outcome  # a conflict loser never touches storage
    try:
        async with rt.table_lock(table.identity):
            plan = await asyncio.to_thread(table.plan, now)
            acts = [a for a in plan.actions_for(obj.ref) if pick(a)]
            kept = [a for a in acts if isinstance(a, (A.TagConflict, A.BranchConflict))]
            if kept:
                reason = (Reason.PROTECTED_BY_BRANCH if isinstance(kept[0], A.TagConflict)
                          else KEPT_REASONS.get(kept[0].conflict, Reason.DELETE_FAILED))
                if isinstance(kept[0], A.BranchConflict) and kept[0].conflict == "TagsStillNeeded":
                    raise OperatorError(Reason.TAGS_STILL_NEEDED, kept[0].reason, temporary=True)
                outcome.event("Warning", reason, f"{kept[0].reason}; the {what} is kept in storage and the "
                                                 "finalizer released")
                return outcome
            changes = [a for a in acts if isinstance(a, (A.DeleteTag, A.DropBranch))]
            if not changes:
                return outcome
            busy = spark_run_in_flight(rt, view, obj.namespace, table_name)
            if busy is not None:
                return wait_for_run(rt, obj, busy, now, generation=False)
            await rt.step(f"{what}/delete", obj.ref)
            result = await asyncio.to_thread(table.apply, plan, changes, StatusRecordStore(plan.records))
    except core_errors.TableNotFoundError:
        return outcome  # the table is gone: nothing left to delete
    except (OperatorError, core_errors.TablekeeperError, OSError) as e:
        failure = classify(e)
        return _delete_failed(rt, obj, Failure(Reason.DELETE_FAILED, f"{failure.reason}: {failure.message}", True),
                              retry, now)
    failed = [r for r in result.results if r.status == "failed"]
    if failed:
        return _delete_failed(rt, obj, replace(failure_of(failed[0], reason=Reason.DELETE_FAILED), temporary=True),
                              retry, now)
    for r in result.results:
        outcome.event("Normal", "Deleted", r.message)
    kept_in_trash(outcome, result, what)
    metrics.observe_reconcile(obj.kind, "deleted", 0.0)
    return outcome


def _delete_failed(rt: Runtime, obj: Obj, failure: Failure, retry: int, now: datetime) -> Outcome:
    outcome = state_outcome(obj, "Deleting", ("False", Reason.DELETE_FAILED, failure.message), now,
                            (False, Reason.RECONCILE_ERROR, failure.message))
    outcome.generation = None
    outcome.fields.update(failures=retry + 1, lastError=failure.message)
    outcome.event("Warning", "DeleteFailed", failure.message)
    outcome.failure = failure
    outcome.delay = rt.config.retry_delay(retry + 1)
    return outcome
