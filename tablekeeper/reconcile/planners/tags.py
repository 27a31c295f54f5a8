"""Planning declared tags (create / adopt / conflict / wait) and tag expiry (TTL on every branch,
``tag.num-retained-max`` over auto tags on main), plus the size of tag deletions. Pure except
the sizing, which reads manifests.
"""

from __future__ import annotations

from collections.abc import Sequence

from tablekeeper.core import errors, paimon, refs, values
from tablekeeper.core.paimon import Table
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.planners import (
    auto_tags as auto_tags_planner,
)
from tablekeeper.reconcile.planners import (
    context as plan_context,
)
from tablekeeper.reconcile.planners import (
    enabled_jobs,
)
from tablekeeper.reconcile.state.desired import TagTarget
from tablekeeper.reconcile.state.observe import TableState

__all__ = ["resolve_tag_snapshot", "plan_tag", "isolated_tag", "plan_tag_expiry", "size_tag_deletions"]


def resolve_tag_snapshot(t: TagTarget, state: TableState) -> tuple[int | None, str | None]:
    """(snapshot id, why not) for a declared tag."""
    snaps = state.branch_snapshots(t.branch)
    tagged = {tag.snapshot_id: tag.snapshot_time_ms for tag in state.branch_tags(t.branch).values()}
    if t.spec.snapshot_id is not None:
        sid = t.spec.snapshot_id
        if any(s.id == sid for s in snaps) or sid in tagged:
            return sid, None
        there = f"snapshots {snaps[0].id}..{snaps[-1].id}" if snaps else "no snapshot"
        return None, f"snapshot {sid} does not exist on branch {t.branch!r} (it has {there})"
    if t.spec.from_timestamp is not None:
        ts = values.epoch_ms(t.spec.from_timestamp)
        candidates = {s.id: s.time_millis for s in snaps}
        for sid, when in tagged.items():
            candidates.setdefault(sid, when)
        later = [sid for sid, when in candidates.items() if when >= ts]
        if not later:
            return None, f"no snapshot committed at or after {t.spec.from_timestamp.isoformat()} yet"
        return min(later), None
    latest = state.latest(t.branch)
    if latest is None:
        return None, f"branch {t.branch!r} has no snapshot yet"
    return latest.id, None


def plan_tag(ctx: plan_context.PlanContext, t: TagTarget, planned_tags: dict[tuple[str, str], int]) -> list[A.Action]:
    """Actions for one declared tag. ``planned_tags`` collects (branch, tag) -> snapshot id of
    tags that will exist after this plan (for branches created from them)."""
    state, rec = ctx.state, ctx.records.tag(t.branch, t.tag)
    base = ctx.base(t.branch, t.resource)
    existing = state.branch_tags(t.branch).get(t.tag)
    ttl = t.spec.time_retained or ctx.policy.values["tags.defaultTimeRetained"]
    ttl_policy = {"timeRetained": f"{t.spec.time_retained} (spec)"} if t.spec.time_retained else \
        ctx.policy_of("tags.defaultTimeRetained") if ttl is not None else {}
    if not state.has_branch(t.branch):
        return [A.Skipped(**base, what=f"tag {t.tag}", cause="BranchNotFound",
                          reason=f"branch {t.branch!r} is created by this plan; the tag follows on the next pass")]
    sid, why = resolve_tag_snapshot(t, state)
    if existing is not None:
        planned_tags[(t.branch, t.tag)] = existing.snapshot_id
        same = t.spec.from_latest or existing.snapshot_id == sid or (sid is None and t.spec.snapshot_id is not None
                                                                       and existing.snapshot_id == t.spec.snapshot_id)
        if not same:
            return [A.TagConflict(**base, tag=t.tag, conflict="AlreadyExistsDifferentSnapshot",
                                  reason=f"tag {t.tag!r} exists at snapshot {existing.snapshot_id}, the manifest asks "
                                         f"for {sid if sid is not None else why}; tags are never moved "
                                         "(delete or rename it by hand, or change the manifest)")]
        if rec is not None and rec.resource == t.resource.ref and not rec.expired:
            return []
        if rec is None and t.spec.adoption_policy == "MustCreate":
            return [A.TagConflict(**base, tag=t.tag, conflict="AlreadyExists",
                                  reason=f"tag {t.tag!r} already exists and adoptionPolicy is MustCreate")]
        why_adopt = f"exists at snapshot {existing.snapshot_id}; taken over" if rec is None else \
            f"ownership moves from {rec.resource}"
        return [A.AdoptTag(**base, tag=t.tag, snapshot_id=existing.snapshot_id, deletion_policy=t.deletion_policy,
                           reason=why_adopt)]
    # the tag does not exist
    policy_tag = t.resource.labels.get(plan_context.POLICY_TRIGGER_LABEL) == "Policy"
    if rec is not None and policy_tag:
        return [A.Skipped(**base, what=f"tag {t.tag}", cause="TagExpired",
                          reason="policy tag expired by the policy; not recreated")]
    if rec is not None and rec.ttl_expired(values.epoch_ms(ctx.now)):
        return [A.Skipped(**base, what=f"tag {t.tag}", cause="TagExpired",
                          reason="expired by its TTL; not recreated (remove the manifest to forget it)")]
    if sid is None:
        if rec is not None:
            return [A.TagConflict(**base, tag=t.tag, conflict="SnapshotExpired",
                                  reason=f"managed tag {t.tag!r} was deleted out of band and {why}: it is never "
                                         "recreated at another snapshot")]
        if t.spec.snapshot_id is not None:
            latest = state.latest(t.branch)
            if latest is None or t.spec.snapshot_id > latest.id:  # not committed yet: the tag waits for it
                return [A.Skipped(**base, what=f"tag {t.tag}", cause="SnapshotNotFound",
                                  reason=f"waiting: {why}; the tag is created once it is committed")]
            return [A.TagConflict(**base, tag=t.tag, conflict="SnapshotExpired",
                                  reason=f"{why}: it expired or was never committed; edit spec.snapshotId")]
        # a fixed snapshot id returned above; a timestamp waits for a snapshot, else for the branch's first
        cause: A.SkipCause = "SnapshotNotFound" if t.spec.from_timestamp is not None else "BranchNotFound"
        return [A.Skipped(**base, what=f"tag {t.tag}", cause=cause, reason=f"waiting: {why}")]
    handler = auto_tags_planner.auto_handler(ctx)
    notes = []
    if handler is not None and handler.is_auto_tag(t.tag):
        auto_on_snapshot = [n for n, tag in state.branch_tags(t.branch).items()
                            if tag.snapshot_id == sid and handler.is_auto_tag(n)]
        if auto_on_snapshot:
            return [A.TagConflict(**base, tag=t.tag, conflict="SnapshotAlreadyAutoTagged",
                                  reason=f"snapshot {sid} already carries auto tag(s) {auto_on_snapshot}; Paimon "
                                         "refuses a second auto-tag-shaped name on it")]
        notes.append(f"warning: {t.tag!r} parses as an auto-tag name ({handler.describe()}): Paimon treats it as "
                     "an auto tag")
    planned_tags[(t.branch, t.tag)] = sid
    verb = "recreate (deleted out of band)" if rec is not None else f"declared ({t.spec.source})"
    return [A.CreateTag(**base, tag=t.tag, snapshot_id=sid, time_retained=str(ttl) if ttl else None,
                        deletion_policy=t.deletion_policy, policy=ttl_policy,
                        reason="; ".join([verb, *notes]))]


def isolated_tag(ctx: plan_context.PlanContext, t: TagTarget, planned_tags: dict[tuple[str, str], int]) -> list[A.Action]:
    """``plan_tag``, with an error planning this one tag reported as its own ``InvalidSpec``
    conflict: one bad PaimonTag never stops the plan of its siblings."""
    try:
        return plan_tag(ctx, t, planned_tags)
    except (errors.TablekeeperError, ValueError) as e:
        return [A.TagConflict(**ctx.base(t.branch, t.resource), tag=t.tag, conflict="InvalidSpec",
                              reason=f"cannot plan tag {t.tag!r}: {plan_context.invalid_reason(e)}")]


def plan_tag_expiry(ctx: plan_context.PlanContext, auto_expired: Sequence[refs.ExpiredTag], planned: Sequence[A.Action]
                 ) -> list[A.Action]:
    """One ExpireTags per branch: TTL everywhere, ``num-retained-max`` on main."""
    if not enabled_jobs.enabled("ExpireTags", ctx.target.spec.enforcement, ctx.policy):
        return []
    deleting = {(a.branch, a.tag) for a in planned if isinstance(a, A.DeleteTag)}
    dropped = {a.name for a in planned if isinstance(a, A.DropBranch)}
    ttl_enabled = ctx.state.options.get("tag.time-expire-enabled", "true").lower() != "false"
    out: list[A.Action] = []
    for branch in [paimon.MAIN, *sorted(ctx.state.branches)]:
        if branch in dropped:
            continue
        tags_here = ctx.state.branch_tags(branch)
        protected = set(ctx.state.protected_tags(branch))
        entries: list[A.ExpiringTag] = []
        if ttl_enabled:
            expired, _kept = refs.plan_ttl_expiry([t.point for t in tags_here.values()], ctx.now, ctx.zone,
                                                      protected=protected)
            entries.extend(A.ExpiringTag(tag=e.name, snapshot_id=e.snapshot_id, rule="ttl", detail=e.reason)
                           for e in expired)
        if branch == paimon.MAIN:
            entries.extend(A.ExpiringTag(tag=e.name, snapshot_id=e.snapshot_id, rule="num-retained-max",
                                         detail=e.reason) for e in auto_expired
                           if e.name in tags_here and e.name not in {x.tag for x in entries})
        entries = [e for e in entries if (branch, e.tag) not in deleting]
        if not entries:
            continue
        owned = []
        for e in entries:
            rec = ctx.records.tag(branch, e.tag)
            owned.append(e.model_copy(update={"owned_by": rec.resource}) if rec is not None else e)
        policy = ctx.policy_of("tags.defaultTimeRetained", "tags.autoCreate.maxRetained")
        zone_note = "" if ctx.zone is not None else " (writer zone unknown: 12 h margin)"
        out.append(A.ExpireTags(**ctx.base(branch), tags=tuple(owned), policy=policy,
                                reason=f"Paimon tag expiry: {len(owned)} tag(s){zone_note}"))
    return out


def size_tag_deletions(actions: list[A.Action], table: Table, config: plan_context.ReconcileConfig) -> list[A.Action]:
    if not config.estimate:
        return actions
    out: list[A.Action] = []
    for a in actions:
        if isinstance(a, A.DeleteTag):
            out.append(a.model_copy(update={"estimate": _tag_estimate(table, a.branch, a.tag)}))
        elif isinstance(a, A.ExpireTags):
            entries = tuple(e.model_copy(update={"estimate": _tag_estimate(table, a.branch, e.tag)}) for e in a.tags)
            total = A.Estimate()
            for e in entries:
                total = total + e.estimate
            out.append(a.model_copy(update={"tags": entries, "estimate": total}))
        else:
            out.append(a)
    return out


def _tag_estimate(table: Table, branch: str, tag: str) -> A.Estimate:
    try:
        t = table.on_branch(branch)
        return plan_context.estimate_plan(refs.plan_delete_tag(t, tag, force=True), t.file_io)
    except errors.TablekeeperError as e:
        return A.Estimate(note=f"not sized: {e.message}")
