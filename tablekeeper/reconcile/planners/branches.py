"""Planning declared branches: create, adopt, conflict, TTL drop, and the guards on every drop
(never a protected branch, one whose tags are still declared or forked from, or main's
fallback branch). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from tablekeeper.core import errors, paimon, values
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.planners import context as plan_context
from tablekeeper.reconcile.state.desired import BranchTarget
from tablekeeper.reconcile.state.observe import TableState

__all__ = ["branch_matches", "plan_branch", "drop_guarded", "isolated_branch"]


def branch_matches(b: BranchTarget, state: TableState) -> bool:
    current = state.branches[b.name]
    if b.spec.from_tag is not None:
        main_tag = state.branch_tags(paimon.MAIN).get(b.spec.from_tag)
        if main_tag is not None:
            return current.fork_identity == main_tag.identity
        return current.from_tag == b.spec.from_tag
    if b.spec.from_snapshot_id is not None:
        return current.fork_snapshot_id == b.spec.from_snapshot_id
    return current.fork_snapshot_id is None


def plan_branch(ctx: plan_context.PlanContext, b: BranchTarget, planned_tags: Mapping[tuple[str, str], int],
                 drops: list[A.Action]) -> list[A.Action]:
    state, rec = ctx.state, ctx.records.branches.get(b.name)
    base = ctx.base(paimon.MAIN, b.resource)
    if b.name in state.branches:
        if not branch_matches(b, state):
            current = state.branches[b.name]
            return [A.BranchConflict(**base, name=b.name, conflict="AlreadyExistsDifferentHistory",
                                     reason=f"branch {b.name!r} exists but forked at snapshot "
                                            f"{current.fork_snapshot_id} (tag {current.from_tag}), not as declared")]
        out: list[A.Action] = []
        if rec is None or rec.resource != b.resource.ref or rec.pending:
            if rec is None and b.spec.adoption_policy == "MustCreate":
                return [A.BranchConflict(**base, name=b.name, conflict="AlreadyExists",
                                         reason=f"branch {b.name!r} already exists and adoptionPolicy is MustCreate")]
            out.append(A.AdoptBranch(**base, name=b.name, deletion_policy=b.deletion_policy,
                                     reason="exists as declared; taken over" if rec is None
                                     else "its interrupted create had finished" if rec.pending
                                     else f"ownership moves from {rec.resource}"))
        ttl = b.spec.ttl
        if ttl is not None and b.deletion_policy == "Delete" and not b.spec.protected:
            current = state.branches[b.name]
            created = (rec.created_ms if rec is not None and rec.created_ms else current.created_ms)
            now_ms = values.epoch_ms(ctx.now)
            why = None
            if ttl.max_age is not None and created is not None \
                    and now_ms - created >= ttl.max_age.to_timedelta() // timedelta(milliseconds=1):
                why = f"older than ttl.maxAge {ttl.max_age}"
            last = current.latest_commit_ms or created
            if why is None and ttl.max_idle is not None and last is not None \
                    and now_ms - last >= ttl.max_idle.to_timedelta() // timedelta(milliseconds=1):
                why = f"no commit for ttl.maxIdle {ttl.max_idle}"
            if why is not None:
                drops.extend(drop_guarded(ctx, b.name, base, why, ttl_expired=True,
                                           fork_tag=rec.fork_tag if rec else None))
        return out
    if rec is not None and not rec.pending:
        if rec.expired:
            return [A.Skipped(**base, what=f"branch {b.name}",
                              reason="dropped by its TTL; not recreated (remove the manifest to forget it)")]
        return [A.BranchConflict(**base, name=b.name, conflict="Lost",
                                 reason=f"managed branch {b.name!r} was deleted out of band; it is not recreated "
                                        "(its history would differ); remove the manifest to forget it")]
    if b.spec.from_tag is not None and (paimon.MAIN, b.spec.from_tag) not in planned_tags:
        return [A.BranchConflict(**base, name=b.name, conflict="FromTagUnavailable",
                                 reason=f"tag {b.spec.from_tag!r} will not exist (see its conflict)")]
    return [A.CreateBranch(**base, name=b.name, from_tag=b.spec.from_tag, from_snapshot_id=b.spec.from_snapshot_id,
                           empty=bool(b.spec.empty), protected=b.spec.protected, deletion_policy=b.deletion_policy,
                           reason=f"declared ({b.spec.source})" + ("; resumes an interrupted create" if rec else ""))]


def drop_guarded(ctx: plan_context.PlanContext, name: str, base: dict[str, Any], why: str, *, ttl_expired: bool = False,
                  fork_tag: str | None = None, protected: bool = False) -> list[A.Action]:
    """DropBranch, or a BranchConflict saying why it must not be dropped."""
    state, target = ctx.state, ctx.target
    if protected:
        return [A.BranchConflict(**base, name=name, conflict="Protected", reason=f"{why}, but the branch is protected")]
    needed = [t.tag for t in target.tags if t.branch == name]
    if needed:
        return [A.BranchConflict(**base, name=name, conflict="TagsStillNeeded",
                                 reason=f"{why}, but PaimonTag(s) still declare tags on it: {sorted(needed)}")]
    dependants = sorted({u for users in state.protected_tags(name).values() for u in users})
    if dependants:
        return [A.BranchConflict(**base, name=name, conflict="HasDependentBranches",
                                 reason=f"{why}, but branch(es) {dependants} were created from its tags")]
    in_use = {v for k, v in state.options.items() if k in ("scan.fallback-branch", "scan.primary-branch")}
    if name in in_use:
        return [A.BranchConflict(**base, name=name, conflict="BranchInUse",
                                 reason=f"{why}, but it is main's scan.fallback-branch/scan.primary-branch")]
    files = len(state.branch_snapshots(name)) + sum(1 for _ in state.branch_tags(name))
    return [A.DropBranch(**base, name=name, fork_tag=fork_tag, metadata_files=files, ttl_expired=ttl_expired,
                         reason=why)]


def isolated_branch(ctx: plan_context.PlanContext, b: BranchTarget, planned_tags: Mapping[tuple[str, str], int],
                     drops: list[A.Action]) -> list[A.Action]:
    """``plan_branch`` with the same isolation as :func:`isolated_tag`."""
    try:
        return plan_branch(ctx, b, planned_tags, drops)
    except (errors.TablekeeperError, ValueError) as e:
        return [A.BranchConflict(**ctx.base(paimon.MAIN, b.resource), name=b.name, conflict="InvalidSpec",
                                 reason=f"cannot plan branch {b.name!r}: {plan_context.invalid_reason(e)}")]
