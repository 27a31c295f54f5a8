"""Planning the tags and branches of one table, in order: declared tags on main, auto tags,
branches, tags on branches, what manifests no longer declare, tag expiry. Pure.
"""

from __future__ import annotations

from datetime import datetime

from tablekeeper.core import paimon
from tablekeeper.core.policy.effective import EffectivePolicy
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.planners import (
    auto_tags as auto_tags_planner,
)
from tablekeeper.reconcile.planners import (
    branches as branches_planner,
)
from tablekeeper.reconcile.planners import (
    context as plan_context,
)
from tablekeeper.reconcile.planners import (
    tags as tags_planner,
)
from tablekeeper.reconcile.state.desired import TableTarget
from tablekeeper.reconcile.state.observe import TableState
from tablekeeper.reconcile.state.records import TableRecords

__all__ = ["plan_objects", "plan_removed"]


def plan_objects(target: TableTarget, state: TableState, records: TableRecords, policy: EffectivePolicy,
                 now: datetime) -> list[A.Action]:
    """Tag and branch actions for one table (steps 1-4 of the module docstring). Pure."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    ctx = plan_context.PlanContext(target, state, records, policy, now, plan_context.writer_zone(target))
    planned_tags: dict[tuple[str, str], int] = {(paimon.MAIN, n): t.snapshot_id
                                                for n, t in state.branch_tags(paimon.MAIN).items()}
    main_tags = [t for t in target.tags if t.branch == paimon.MAIN]
    branch_tags = [t for t in target.tags if t.branch != paimon.MAIN]
    out: list[A.Action] = []
    for t in main_tags:
        out.extend(tags_planner.isolated_tag(ctx, t, planned_tags))
    auto_actions, auto_expired, auto_notes = auto_tags_planner.plan_auto_tags(ctx)
    out.extend(auto_actions)
    drops: list[A.Action] = []
    for b in target.branches:
        out.extend(branches_planner.isolated_branch(ctx, b, planned_tags, drops))
    for t in branch_tags:
        out.extend(tags_planner.isolated_tag(ctx, t, planned_tags))
    out.extend(plan_removed(ctx, drops))
    out.extend(tags_planner.plan_tag_expiry(ctx, auto_expired, out))
    out.extend(auto_notes)
    return out


def plan_removed(ctx: plan_context.PlanContext, drops: list[A.Action]) -> list[A.Action]:
    """Owned objects no manifest declares any more, plus TTL drops collected in ``drops``."""
    state, target, records = ctx.state, ctx.target, ctx.records
    declared_tags = {(t.branch, t.tag) for t in target.tags}
    declared_branches = {b.name for b in target.branches}
    out: list[A.Action] = []
    for name, brec in sorted(records.branches.items()):
        if name in declared_branches:
            continue
        base = ctx.base(paimon.MAIN, owner=brec.resource)
        if name not in state.branches:
            out.append(A.ReleaseObject(**base, object_kind="branch", name=name,
                                       reason="no longer declared and the branch is gone: forget it"))
        elif brec.deletion_policy == "Retain":
            out.append(A.ReleaseObject(**base, object_kind="branch", name=name,
                                       reason="no longer declared; deletionPolicy Retain keeps the branch"))
        else:
            drops.extend(branches_planner.drop_guarded(ctx, name, base, "no longer declared (deletionPolicy Delete)",
                                       fork_tag=brec.fork_tag))
    out.extend(drops)
    dropped = {a.name for a in drops if isinstance(a, A.DropBranch)}
    for (branch, name), rec in sorted(records.tags.items()):
        if (branch, name) in declared_tags or branch in dropped:
            continue
        base = ctx.base(branch, owner=rec.resource)
        existing = state.branch_tags(branch).get(name)
        if existing is None or rec.expired:
            out.append(A.ReleaseObject(**base, object_kind="tag", name=name,
                                       reason="no longer declared and the tag is gone: forget it"))
            continue
        if rec.deletion_policy == "Retain":
            out.append(A.ReleaseObject(**base, object_kind="tag", name=name,
                                       reason="no longer declared; deletionPolicy Retain keeps the tag"))
            continue
        users = [u for u in state.protected_tags(branch).get(name, ()) if u not in dropped]
        if users:
            out.append(A.TagConflict(**base, tag=name, conflict="ProtectedByBranch",
                                     reason=f"no longer declared, but branch(es) {users} were created from it: it is "
                                            "kept until they are dropped"))
            continue
        out.append(A.DeleteTag(**base, tag=name, snapshot_id=existing.snapshot_id,
                               reason="no longer declared (deletionPolicy Delete): delete with cleanup"))
    return out
