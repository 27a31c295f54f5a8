"""Controller of ``PaimonTag`` (operator-design.md §4.3, §7.3-§7.5): a Paimon tag created or
adopted at a frozen snapshot, kept as declared, reported from storage.

One pass (the two steps and the write-ahead record: :mod:`.children`) plans the table under its
lock and carries out this CR's own action. The periodic ``check`` detects drift: a managed tag
deleted out of band is recreated at its snapshot (``TagRecreated``) or reported ``Lost``
(``SnapshotExpired``: never recreated elsewhere); a tag whose TTL passed is ``Lost``
(``TagExpired``). Deletion: :mod:`.deletion`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any
from zoneinfo import ZoneInfo

from tablekeeper.core import values
from tablekeeper.core.policy.specs import PaimonTagSpec
from tablekeeper.operator.cluster.scopes import Member, ScopePlan
from tablekeeper.operator.cluster.view import Obj, View
from tablekeeper.operator.controllers.children import (
    ChildContext,
    Phase,
    apply_change,
    come_back,
    failed_outcome,
    gate,
    needs_record,
    previous_origin,
    reconcile_child,
    state_outcome,
    table_fields,
)
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import Failure
from tablekeeper.operator.status.outcome import Outcome
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.state.records import TableRecords

__all__ = ["reconcile_tag"]


async def reconcile_tag(rt: Runtime, view: View, obj: Obj, *, phase: Phase, retry: int | None = None) -> Outcome:
    """One reconcile of a PaimonTag (see the module docstring)."""
    return await reconcile_child(rt, view, obj, phase, retry, PaimonTagSpec, _reconcile_tag,
                                 lambda spec: spec.backoff_limit)


async def _reconcile_tag(rt: Runtime, view: View, ctx: ChildContext[PaimonTagSpec]) -> Outcome:
    obj, spec, member, now, retry, name = ctx.obj, ctx.spec, ctx.member, ctx.now, ctx.retry, ctx.name
    async with rt.table_lock(ctx.table.identity):
        plan = await asyncio.to_thread(ctx.table.plan, now)
        if obj.uid in plan.excluded:
            return failed_outcome(rt, obj, plan.excluded[obj.uid], now, retry=retry, backoff_limit=None)
        acts = plan.actions_for(obj.ref)
        changes = [a for a in acts if isinstance(a, (A.CreateTag, A.AdoptTag))]
        conflicts = [a for a in acts if isinstance(a, A.TagConflict)]
        waiting = [a for a in acts if isinstance(a, A.Skipped)]
        rec = plan.records.tag(member.branch, name)
        if conflicts:
            c = conflicts[0]
            lost = c.conflict == Reason.SNAPSHOT_EXPIRED and rec is not None  # a managed tag that cannot come back
            out = failed_outcome(rt, obj, Failure(c.conflict, c.reason, False), now, retry=retry, backoff_limit=None,
                                 keep_state="Lost" if lost else "Failed")
            if not lost:
                out.fields["owned"] = None if rec is None else True
            return out
        if not changes:
            tag_exists = name in plan.state.branch_tags(member.branch)
            if rec is not None and not tag_exists:
                if any(w.cause == "TagExpired" for w in waiting):  # the planner decided (TTL or policy tag)
                    out = state_outcome(obj, "Lost", ("False", Reason.TAG_EXPIRED, f"tag {name!r} expired by its "
                                                                                   "TTL (timeRetained); it is not "
                                                                                   "recreated"), now)
                    out.fields.update(expired=True, failures=None, lastError=None)
                    if rt.first_time(obj.uid, Reason.TAG_EXPIRED):
                        out.event("Normal", "TagExpired", f"tag {name!r} expired by its TTL")
                    return out
            if waiting or rec is None or not tag_exists:
                why = waiting[0].reason if waiting else "the tag cannot be created yet"
                reason = (Reason.BRANCH_NOT_FOUND if waiting and waiting[0].cause == "BranchNotFound"
                          else Reason.SNAPSHOT_NOT_FOUND)
                why = why if why.startswith("waiting") else f"waiting: {why}"
                return failed_outcome(rt, obj, Failure(reason, why, True), now, retry=retry,
                                      backoff_limit=spec.backoff_limit)
            return _tag_ready(plan, member, plan.records, previous_origin(obj), now)
        change = changes[0]
        held = gate(rt, obj, ctx.phase)
        if held is not None:
            return held
        if needs_record(rt, obj, ctx.phase):
            verb = "adopted" if isinstance(change, A.AdoptTag) else "created"
            out = state_outcome(obj, "Creating", ("Unknown", Reason.CREATING,
                                                  f"tag {name!r} will be {verb} at snapshot {change.snapshot_id}"),
                                now)
            out.fields.update(owned=True, tagName=name, branch=member.branch, snapshotId=change.snapshot_id,
                              origin=Reason.ADOPTED if isinstance(change, A.AdoptTag) else Reason.CREATED,
                              table=table_fields(ctx.table.scope.table))
            come_back(rt, out, ctx.phase)
            return out
        store, instead = await apply_change(rt, view, ctx, plan, change, _tag_record_fields(member),
                                            backoff_limit=spec.backoff_limit)
        if instead is not None:
            return instead
    recreated = isinstance(change, A.CreateTag) and rec is not None and obj.status.get("state") in ("Ready", "Lost", "Paused", "Unmanaged")
    reason = Reason.ADOPTED if isinstance(change, A.AdoptTag) else Reason.CREATED
    out = _tag_ready(plan, member, store.records, previous_origin(obj) if recreated else reason, now)
    if recreated:
        out.event("Normal", "TagRecreated", f"tag {name!r} was deleted out of band; recreated at snapshot "
                                             f"{change.snapshot_id}")
    else:
        out.event("Normal", reason, f"tag {name!r} {reason.lower()} at snapshot {change.snapshot_id} of "
                                    f"{ctx.table.location.identifier}")
    return out


def _tag_record_fields(member: Member) -> Callable[[TableRecords], dict[str, Any]]:
    """The status fields of the CR's ownership record of its tag (the write-ahead hook's view)."""
    def fields_of(records: TableRecords) -> dict[str, Any]:
        rec = records.tag(member.branch, member.name or "")
        if rec is None or rec.resource != member.obj.ref:
            return {"owned": False}
        return {"owned": True, "snapshotId": rec.snapshot_id, "tagName": member.name, "branch": member.branch,
                "expired": rec.expired or None}
    return fields_of


def _create_time(local: datetime | None, zone: str | None) -> str | None:
    """A tag's ``createTime`` (Paimon stores the writer's local time, without a zone): RFC 3339 in
    UTC when the writer's zone is known (``writerTimeZone`` / ``timeZone``), else the local time
    as Paimon has it, with no zone claimed."""
    if local is None:
        return None
    if zone is None:
        return local.strftime("%Y-%m-%dT%H:%M:%S")
    return values.rfc3339_ms(int(local.replace(tzinfo=ZoneInfo(zone)).astimezone(timezone.utc).timestamp() * 1000))


def _tag_ready(plan: ScopePlan, member: Member, records: TableRecords, reason: str, now: datetime) -> Outcome:
    """``Ready``: the tag as storage has it (snapshot, times, expiry, fork points)."""
    obj = member.obj
    name = member.name or ""
    tag = plan.state.branch_tags(member.branch).get(name)
    rec = records.tag(member.branch, name)
    outcome = state_outcome(obj, "Ready", ("True", reason, f"tag {name!r} of {plan.scope.location.identifier} at "
                                                           f"snapshot {tag.snapshot_id if tag else '?'}"), now)
    expire_ms = rec.expires_ms if rec is not None else None
    if (expire_ms is None and tag is not None and tag.create_time is not None and tag.time_retained is not None
            and plan.target.writer_zone):
        local = (tag.create_time + tag.time_retained).replace(tzinfo=ZoneInfo(plan.target.writer_zone))
        expire_ms = int(local.astimezone(timezone.utc).timestamp() * 1000)
    forks = plan.state.protected_tags(member.branch).get(name, ())
    outcome.fields.update(
        owned=True, tagName=name, branch=member.branch,
        snapshotId=tag.snapshot_id if tag else (rec.snapshot_id if rec else None),
        snapshotCommitTime=values.rfc3339_ms(tag.snapshot_time_ms) if tag else None,
        createTime=_create_time(tag.create_time if tag else None, plan.target.writer_zone),
        expireTime=values.rfc3339_ms(expire_ms), forkPointOf=list(forks) or None, expired=None, origin=reason,
        failures=None, lastError=None, table=table_fields(plan.scope.table))
    return outcome
