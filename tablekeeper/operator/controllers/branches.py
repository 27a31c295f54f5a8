"""Controller of ``PaimonBranch`` (operator-design.md §4.4, §7.3-§7.5): a Paimon branch created
from a tag or snapshot (its fork point protected by a fork tag) or adopted, kept as declared,
reported from storage.

One pass (the two steps and the write-ahead record: :mod:`.children`) plans the table under its
lock and carries out this CR's own action. The periodic ``check`` detects drift: a branch deleted
out of band is ``Lost``; a branch past its ``ttl`` is dropped and its CR deleted (only with
``deletionPolicy: Delete``, never a protected one: the planner only proposes such drops).
Deletion: :mod:`.deletion`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any

from tablekeeper.core import paimon, values
from tablekeeper.core.policy.specs import PaimonBranchSpec
from tablekeeper.core.refs import fork_tag_name
from tablekeeper.operator.cluster.scopes import Member, ScopePlan, StatusRecordStore
from tablekeeper.operator.cluster.view import Obj, View
from tablekeeper.operator.controllers.children import (
    ChildContext,
    Phase,
    apply_change,
    come_back,
    failed_outcome,
    gate,
    kept_in_trash,
    needs_record,
    persist_records,
    previous_origin,
    reconcile_child,
    state_outcome,
    table_fields,
    wait_for_run,
)
from tablekeeper.operator.runs.claims import spark_run_in_flight
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import Failure, failure_of
from tablekeeper.operator.status.outcome import Outcome, url_of
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.state.records import TableRecords

__all__ = ["reconcile_branch", "KEPT_REASONS"]

#: Retries of a failing branch reconcile (PaimonBranch has no backoffLimit field).
_BRANCH_BACKOFF_LIMIT = 6
#: Why the planner keeps a branch it was asked to drop -> the reason reported.
KEPT_REASONS = {"Protected": Reason.BRANCH_PROTECTED, "BranchInUse": Reason.BRANCH_IN_USE,
                "HasDependentBranches": Reason.HAS_DEPENDENT_BRANCHES, "TagsStillNeeded": Reason.TAGS_STILL_NEEDED}
_CONFLICT_REASONS = {"AlreadyExistsDifferentHistory": Reason.ALREADY_EXISTS_DIFFERENT_HISTORY,
                     "AlreadyExists": Reason.ALREADY_EXISTS, "FromTagUnavailable": Reason.TAG_NOT_FOUND,
                     "InvalidSpec": Reason.INVALID_SPEC}


async def reconcile_branch(rt: Runtime, view: View, obj: Obj, *, phase: Phase, retry: int | None = None) -> Outcome:
    """One reconcile of a PaimonBranch (see the module docstring)."""
    return await reconcile_child(rt, view, obj, phase, retry, PaimonBranchSpec, _reconcile_branch,
                                 lambda _spec: _BRANCH_BACKOFF_LIMIT)


async def _reconcile_branch(rt: Runtime, view: View, ctx: ChildContext[PaimonBranchSpec]) -> Outcome:
    obj, spec, member, now, retry, name = ctx.obj, ctx.spec, ctx.member, ctx.now, ctx.retry, ctx.name
    async with rt.table_lock(ctx.table.identity):
        plan = await asyncio.to_thread(ctx.table.plan, now)
        if obj.uid in plan.excluded:
            return failed_outcome(rt, obj, plan.excluded[obj.uid], now, retry=retry, backoff_limit=None)
        acts = plan.actions_for(obj.ref)
        rec = plan.records.branches.get(name)
        conflicts = [a for a in acts if isinstance(a, A.BranchConflict)]
        creates = [a for a in acts if isinstance(a, (A.CreateBranch, A.AdoptBranch))]
        drops = [a for a in acts if isinstance(a, A.DropBranch) and a.ttl_expired and a.name == name]
        skipped = [a for a in acts if isinstance(a, A.Skipped)]
        if drops and ctx.phase == "check":
            busy = spark_run_in_flight(rt, view, obj.namespace, spec.table_ref.name)
            if busy is not None:
                return wait_for_run(rt, obj, busy, now)
            return await _expire_branch(rt, ctx, plan, drops[0])
        if conflicts:
            c = conflicts[0]
            if c.conflict == "Lost":
                return failed_outcome(rt, obj, Failure(Reason.BRANCH_LOST, c.reason, False), now, retry=retry,
                                      backoff_limit=None, keep_state="Lost")
            reason = _CONFLICT_REASONS.get(c.conflict, KEPT_REASONS.get(c.conflict, Reason.RESOURCE_CONFLICT))
            if c.conflict in KEPT_REASONS and rec is not None:  # a TTL drop refused: stays Ready
                out = _branch_ready(plan, member, plan.records, previous_origin(obj), now)
                if rt.first_time(obj.uid, reason):
                    out.event("Warning", reason, c.reason)
                return out
            out = failed_outcome(rt, obj, Failure(reason, c.reason, c.conflict == "FromTagUnavailable"), now,
                                 retry=retry, backoff_limit=6)
            out.fields["owned"] = True if rec is not None else None
            return out
        if skipped and rec is not None and rec.expired:
            return state_outcome(obj, "Lost", ("False", Reason.BRANCH_EXPIRED, skipped[0].reason), now)
        if not creates:
            if rec is None or name not in plan.state.branches:
                return failed_outcome(rt, obj, Failure(Reason.PENDING, "the branch cannot be created yet", True), now,
                                      retry=retry, backoff_limit=6)
            return _branch_ready(plan, member, plan.records, previous_origin(obj), now)
        change = creates[0]
        if (isinstance(change, A.CreateBranch) and change.from_tag is not None
                and change.from_tag not in plan.state.branch_tags(paimon.MAIN)):
            return failed_outcome(rt, obj, Failure(Reason.TAG_NOT_FOUND, f"waiting for tag {change.from_tag!r} to be "
                                                                         "created (declared by a PaimonTag)", True),
                                  now, retry=retry, backoff_limit=None)
        held = gate(rt, obj, ctx.phase)
        if held is not None:
            return held
        if needs_record(rt, obj, ctx.phase):
            adopt = isinstance(change, A.AdoptBranch)
            out = state_outcome(obj, "Creating", ("Unknown", Reason.CREATING, f"branch {name!r} will be "
                                                  f"{'adopted' if adopt else 'created'}"), now)
            fork = (fork_tag_name(name, change.from_snapshot_id)
                    if isinstance(change, A.CreateBranch) and change.from_snapshot_id is not None else None)
            out.fields.update(owned=True, branchName=name, createPending=True if isinstance(change, A.CreateBranch)
                              else None, createTime=values.rfc3339_ms(values.epoch_ms(now)),
                              forkTag=fork, table=table_fields(ctx.table.scope.table),
                              origin=Reason.ADOPTED if adopt else Reason.CREATED)
            come_back(rt, out, ctx.phase)
            return out
        store, instead = await apply_change(rt, view, ctx, plan, change, _branch_record_fields(member),
                                            backoff_limit=_BRANCH_BACKOFF_LIMIT)
        if instead is not None:
            return instead
    reason = Reason.ADOPTED if isinstance(change, A.AdoptBranch) else Reason.CREATED
    out = _branch_ready(plan, member, store.records, reason, now)
    out.event("Normal", reason, f"branch {name!r} {reason.lower()} in {ctx.table.location.identifier}")
    return out


async def _expire_branch(rt: Runtime, ctx: ChildContext[PaimonBranchSpec], plan: ScopePlan,
                         drop: A.DropBranch) -> Outcome:
    """Branch TTL: drop the branch, then delete the CR (only ``deletionPolicy: Delete``, never
    protected: the planner only proposes such drops)."""
    obj = ctx.obj
    await rt.step("branch/expire", obj.ref)
    store = StatusRecordStore(plan.records, persist_records(rt, obj, _branch_record_fields(ctx.member)))
    result = await asyncio.to_thread(ctx.table.apply, plan, [drop], store)
    failed = [r for r in result.results if r.status == "failed"]
    if failed:
        return failed_outcome(rt, obj, failure_of(failed[0], reason=Reason.DELETE_FAILED), ctx.now, retry=None,
                              backoff_limit=None)
    out = state_outcome(obj, "Deleting", ("False", Reason.BRANCH_EXPIRED, f"dropped: {drop.reason}"), ctx.now)
    out.fields.update(owned=None, expired=True)
    out.event("Normal", "Deleted", f"branch {drop.name!r} dropped ({drop.reason}); deleting the PaimonBranch")
    kept_in_trash(out, result, "branch")
    await rt.api.delete(url_of("paimonbranches", obj.namespace, obj.name))
    return out


def _branch_record_fields(member: Member) -> Callable[[TableRecords], dict[str, Any]]:
    """The status fields of the CR's ownership record of its branch (the write-ahead hook's view)."""
    def fields_of(records: TableRecords) -> dict[str, Any]:
        rec = records.branches.get(member.name or "")
        if rec is None or rec.resource != member.obj.ref:
            return {"owned": False}
        return {"owned": True, "branchName": member.name, "createPending": rec.pending or None,
                "createTime": values.rfc3339_ms(rec.created_ms) if rec.created_ms else None,
                "forkTag": rec.fork_tag, "expired": rec.expired or None}
    return fields_of


def _branch_ready(plan: ScopePlan, member: Member, records: TableRecords, reason: str, now: datetime) -> Outcome:
    """``Ready``: the branch as storage has it (fork point, times)."""
    obj, name = member.obj, member.name or ""
    spec = member.spec
    assert isinstance(spec, PaimonBranchSpec)
    current = plan.state.branches.get(name)
    rec = records.branches.get(name)
    outcome = state_outcome(obj, "Ready", ("True", reason, f"branch {name!r} of {plan.scope.location.identifier}"),
                            now)
    created = rec.created_ms if rec is not None and rec.created_ms else (current.created_ms if current else None)
    outcome.fields.update(
        owned=True, branchName=name, createPending=None, createTime=values.rfc3339_ms(created), origin=reason,
        forkTag=rec.fork_tag if rec else None, basedOnTag=spec.from_tag,
        forkSnapshotId=current.fork_snapshot_id if current else None,
        lastWriteTime=values.rfc3339_ms(current.latest_commit_ms) if current else None,
        expired=None, failures=None, lastError=None, table=table_fields(plan.scope.table))
    return outcome
