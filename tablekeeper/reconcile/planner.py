"""Planning: (desired state, actual table state, records, now) -> ordered actions.

Per table, in this order (each later step may depend on an earlier one):

1. tags declared on main (create / adopt / conflict), then automatic tags (Paimon's rules,
   tablekeeper creating them where writers do not);
2. branches (create / adopt / conflict / TTL drop), then tags declared on branches;
3. what manifests no longer declare: release ownership, drop owned branches, delete owned tags
   (never a protected branch, never a branch whose tags are still declared or forked from,
   never a fork-point tag while its branch lives);
4. tag expiry: TTL and ``tag.num-retained-max`` (never fork points, savepoints, rollback tags);
5. maintenance due by schedule: partition expiration, snapshot expiration, changelog expiration,
   orphan cleanup, each with a plan-size estimate (files, bytes) and an engine choice.

Decisions about tags and branches (:func:`plan_objects`) are pure; maintenance asks the core
planners (which read metadata, never write) for the size of the work. Manifest problems that
need storage to detect (the table exists, a branch's tag exists) are collected over every table
and raised before anything could be applied.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from tablekeeper.core import (
    errors,
    expire,
    orphans,
    partitions,
    plans,
    retention_settings,
    table_options,
    tag_auto,
    tags,
)
from tablekeeper.core.paimon import layout
from tablekeeper.core.paimon.table import Table
from tablekeeper.core.policy.durations import Duration
from tablekeeper.core.policy.effective import EffectivePolicy
from tablekeeper.core.policy.retention import PAIMON_OPTIONS
from tablekeeper.core.policy.validation import InvalidSpecError
from tablekeeper.core.storage import FileIO
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile import enabled_jobs
from tablekeeper.reconcile.desired import BranchTarget, DesiredState, TableTarget, TagTarget, describe
from tablekeeper.reconcile.manifests import ManifestError, Problem
from tablekeeper.reconcile.observe import TableState, observe
from tablekeeper.reconcile.opener import Opener
from tablekeeper.reconcile.records import RecordStore, TableRecords
from tablekeeper.reconcile.schedules import is_due

__all__ = [
    "ReconcileConfig",
    "TablePlan",
    "ReconcilePlan",
    "plan",
    "plan_table",
    "plan_objects",
    "plan_table_options",
    "managed_table_options",
    "writers_enforce",
    "validate_against_storage",
    "estimate_plan",
    "with_sizes",
    "writer_zone",
]

INT_MAX = retention_settings.INT_MAX
#: The label of PaimonTags the operator materialised for policy auto tags (value ``Policy``):
#: the policy still expires those tags; other declared tags are never count-expired.
POLICY_TRIGGER_LABEL = "tablekeeper.io/trigger-type"


@dataclass(frozen=True)
class ReconcileConfig:
    """Knobs of planning and applying.

    Attributes:
        spark_threshold_files: ``engine: Auto`` picks Spark for a maintenance step that deletes at
            least this many files (operator-design.md §7.7); in-process below.
        ignore_schedules: treat every maintenance step as due (a manual run).
        estimate: size maintenance steps and tag deletions (reads manifests); off = faster plans.
        max_batches: most expiration batches (``expireLimit`` snapshots / ``maxPerRun``
            partitions each) one apply runs for one table.
        table_options: plan ``SetTableOptions`` for ``enforcement: TableOptions|Both`` (the GitOps
            CLI; the operator's table controller enforces options itself, with drift status).
    """

    spark_threshold_files: int = 100_000
    ignore_schedules: bool = False
    estimate: bool = True
    max_batches: int = 100
    table_options: bool = False


@dataclass(frozen=True)
class TablePlan:
    """The actions for one table, with the effective policy they were derived from."""

    target: TableTarget
    actions: tuple[A.Action, ...]
    effective: dict[str, dict[str, Any]] = field(default_factory=dict)
    zone: str | None = None

    @property
    def changes(self) -> tuple[A.Action, ...]:
        return tuple(a for a in self.actions if a.is_change)

    @property
    def reported(self) -> tuple[A.Action, ...]:
        return tuple(a for a in self.actions if not a.is_change)

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.target.location.identifier, "warehouse": self.target.location.warehouse,
                "resource": self.target.resource.ref, "writerTimeZone": self.zone,
                "changes": [a.to_dict() for a in self.changes],
                "reported": [a.to_dict() for a in self.reported]}


@dataclass(frozen=True)
class ReconcilePlan:
    """The whole plan: per table, in manifest order."""

    now: datetime
    tables: tuple[TablePlan, ...]

    @property
    def changes(self) -> tuple[A.Action, ...]:
        return tuple(a for t in self.tables for a in t.changes)

    @property
    def reported(self) -> tuple[A.Action, ...]:
        return tuple(a for t in self.tables for a in t.reported)

    @property
    def is_empty(self) -> bool:
        """Nothing would change (reported conflicts and notes do not count)."""
        return not self.changes

    def summary(self) -> dict[str, Any]:
        creates = sum(1 for a in self.changes if a.kind in ("CreateTag", "CreateBranch"))
        adopts = sum(1 for a in self.changes if a.kind in ("AdoptTag", "AdoptBranch", "ReleaseObject"))
        deletes = sum(1 for a in self.changes if a.kind in ("DeleteTag", "DropBranch"))
        deletes += sum(len(a.tags) for a in self.changes if isinstance(a, A.ExpireTags))
        maintenance = [a for a in self.changes if a.kind in A.MAINTENANCE_KINDS]
        estimate = A.Estimate()
        for a in self.changes:
            est = getattr(a, "estimate", None)
            if isinstance(est, A.Estimate):
                estimate = estimate + est
        conflicts = sum(1 for a in self.reported if a.kind in ("TagConflict", "BranchConflict"))
        return {"create": creates, "adopt_or_release": adopts, "delete": deletes, "maintenance": len(maintenance),
                "files": estimate.files, "bytes": estimate.bytes, "conflicts": conflicts,
                "changes": len(self.changes)}

    def to_dict(self) -> dict[str, Any]:
        return {"now": self.now.isoformat(), "empty": self.is_empty, "summary": self.summary(),
                "tables": [t.to_dict() for t in self.tables]}


# ----------------------------------------------------------------------------------------
# Helpers


def writer_zone(target: TableTarget) -> tzinfo | None:
    zone = target.writer_zone
    return ZoneInfo(zone) if zone else None


def _ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


def _wall(now: datetime, zone: tzinfo | None) -> datetime:
    """The writers' wall clock at ``now``; UTC's when their zone is unknown."""
    return tag_auto.local_wall_clock(now, zone or UTC)


def _td(value: Duration | None) -> timedelta | None:
    return None if value is None else value.to_timedelta()


def with_sizes(plan: plans.Plan, file_io: FileIO) -> plans.Plan:
    """``plan`` with the sizes the core planner did not know (data files) filled in, by listing
    each parent directory once; files that cannot be listed keep ``size=None``."""
    unknown: dict[str, set[str]] = {}
    for f in plan.files:
        if f.size is None:
            parent, _, name = f.path.rpartition("/")
            unknown.setdefault(parent, set()).add(name)
    if not unknown:
        return plan
    sizes: dict[str, int] = {}
    for parent, names in unknown.items():
        try:
            listing = file_io.list_dir(parent)
        except (FileNotFoundError, OSError):
            continue
        for status in listing:
            if not status.is_dir and status.name in names:
                sizes[status.path] = status.size
                sizes[f"{parent}/{status.name}"] = status.size
    steps: list[plans.Step] = []
    for step in plan.steps:
        if isinstance(step, plans.DeleteStep):
            steps.append(replace(step, files=tuple(
                replace(f, size=sizes.get(f.path)) if f.size is None and f.path in sizes else f
                for f in step.files)))
        else:
            steps.append(step)
    return replace(plan, steps=tuple(steps))


def estimate_plan(plan: plans.Plan, file_io: FileIO) -> A.Estimate:
    """Files and bytes a core plan deletes (sizes looked up where the planner had none)."""
    sized = with_sizes(plan, file_io)
    by_kind: dict[str, int] = {}
    for f in sized.files:
        by_kind[f.kind.value] = by_kind.get(f.kind.value, 0) + 1
    return A.Estimate(files=len(sized.files), bytes=sum(f.size or 0 for f in sized.files), by_kind=by_kind)


# ----------------------------------------------------------------------------------------
# Storage-dependent validation


def validate_against_storage(target: TableTarget, state: TableState,
                             records: TableRecords | None = None) -> list[Problem]:
    """Manifest problems only storage reveals: a tag on a branch that neither exists nor is
    declared; a branch to create from a tag that neither exists nor is declared on main; a branch
    to create from a snapshot that does not exist. Branches the records know (lost, or dropped by
    their TTL) are not created again, so their sources are not checked."""
    problems: list[Problem] = []
    known = records.branches if records is not None else {}
    declared_branches = {b.name for b in target.branches}
    declared_main_tags = {t.tag for t in target.tags if t.branch == layout.MAIN}
    main_tags = state.branch_tags(layout.MAIN)
    for t in target.tags:
        if not state.has_branch(t.branch) and t.branch not in declared_branches:
            problems.append(Problem(t.resource.where, "spec.branch",
                                    f"branch {t.branch!r} of {target.location.identifier} does not exist and no "
                                    "PaimonBranch declares it", "declare the branch or fix spec.branch"))
    for b in target.branches:
        if state.has_branch(b.name) or (b.name in known and not known[b.name].pending):
            continue
        if b.spec.from_tag is not None and b.spec.from_tag not in main_tags \
                and b.spec.from_tag not in declared_main_tags:
            problems.append(Problem(b.resource.where, "spec.fromTag",
                                    f"tag {b.spec.from_tag!r} does not exist in {target.location.identifier} and no "
                                    "PaimonTag declares it", "declare the tag (PaimonTag) or branch from an "
                                                             "existing tag"))
        if b.spec.from_snapshot_id is not None:
            sid = b.spec.from_snapshot_id
            if state.snapshot(sid) is None and not any(t.snapshot_id == sid for t in main_tags.values()):
                problems.append(Problem(b.resource.where, "spec.fromSnapshotId",
                                        f"snapshot {sid} does not exist in {target.location.identifier}",
                                        "branch from an existing snapshot or tag"))
    return problems


# ----------------------------------------------------------------------------------------
# Tags and branches (pure)


@dataclass
class _Ctx:
    target: TableTarget
    state: TableState
    records: TableRecords
    policy: EffectivePolicy
    now: datetime
    zone: tzinfo | None

    def base(self, branch: str = layout.MAIN, resource: Any = None, owner: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"warehouse": self.target.location.warehouse,
                               "table": self.target.location.identifier, "branch": branch}
        if resource is not None:
            out["resource"] = resource.ref
            out["source"] = resource.file
        elif owner is not None:
            out["resource"] = owner
        return out

    def policy_of(self, *paths: str) -> dict[str, str]:
        return describe(self.policy.values, self.policy.sources, paths)


def _resolve_tag_snapshot(t: TagTarget, state: TableState) -> tuple[int | None, str | None]:
    """(snapshot id, why not) for a declared tag."""
    snaps = state.branch_snapshots(t.branch)
    tagged = {tag.snapshot_id: tag.snapshot_time_ms for tag in state.branch_tags(t.branch).values()}
    if t.spec.snapshot_id is not None:
        sid = t.spec.snapshot_id
        if any(s.id == sid for s in snaps) or sid in tagged:
            return sid, None
        return None, f"snapshot {sid} does not exist on branch {t.branch!r}"
    if t.spec.from_timestamp is not None:
        ts = _ms(t.spec.from_timestamp)
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


def _auto_handler(ctx: _Ctx) -> tag_auto.TagPeriodHandler | None:
    v = ctx.policy.values
    try:
        return tag_auto.TagPeriodHandler.create(v["tags.autoCreate.period"], _td(v["tags.autoCreate.periodDuration"]),
                                                v["tags.autoCreate.nameFormat"])
    except errors.InvalidInputError:
        return None


def _plan_tag(ctx: _Ctx, t: TagTarget, planned_tags: dict[tuple[str, str], int]) -> list[A.Action]:
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
    sid, why = _resolve_tag_snapshot(t, state)
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
    policy_tag = t.resource.labels.get(POLICY_TRIGGER_LABEL) == "Policy"
    if rec is not None and policy_tag:
        return [A.Skipped(**base, what=f"tag {t.tag}", cause="TagExpired",
                          reason="policy tag expired by the policy; not recreated")]
    if rec is not None and rec.ttl_expired(_ms(ctx.now)):
        return [A.Skipped(**base, what=f"tag {t.tag}", cause="TagExpired",
                          reason="expired by its TTL; not recreated (remove the manifest to forget it)")]
    if sid is None:
        if rec is not None:
            return [A.TagConflict(**base, tag=t.tag, conflict="SnapshotExpired",
                                  reason=f"managed tag {t.tag!r} was deleted out of band and {why}: it is never "
                                         "recreated at another snapshot")]
        if t.spec.snapshot_id is not None:
            return [A.TagConflict(**base, tag=t.tag, conflict="SnapshotNotFound", reason=f"{why}")]
        # a fixed snapshot id returned above; a timestamp waits for a snapshot, else for the branch's first
        cause: A.SkipCause = "SnapshotNotFound" if t.spec.from_timestamp is not None else "BranchNotFound"
        return [A.Skipped(**base, what=f"tag {t.tag}", cause=cause, reason=f"waiting: {why}")]
    handler = _auto_handler(ctx)
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


def _branch_matches(b: BranchTarget, state: TableState) -> bool:
    current = state.branches[b.name]
    if b.spec.from_tag is not None:
        main_tag = state.branch_tags(layout.MAIN).get(b.spec.from_tag)
        if main_tag is not None:
            return current.fork_identity == main_tag.identity
        return current.from_tag == b.spec.from_tag
    if b.spec.from_snapshot_id is not None:
        return current.fork_snapshot_id == b.spec.from_snapshot_id
    return current.fork_snapshot_id is None


def _plan_branch(ctx: _Ctx, b: BranchTarget, planned_tags: Mapping[tuple[str, str], int],
                 drops: list[A.Action]) -> list[A.Action]:
    state, rec = ctx.state, ctx.records.branches.get(b.name)
    base = ctx.base(layout.MAIN, b.resource)
    if b.name in state.branches:
        if not _branch_matches(b, state):
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
            now_ms = _ms(ctx.now)
            why = None
            if ttl.max_age is not None and created is not None \
                    and now_ms - created >= ttl.max_age.to_timedelta() // timedelta(milliseconds=1):
                why = f"older than ttl.maxAge {ttl.max_age}"
            last = current.latest_commit_ms or created
            if why is None and ttl.max_idle is not None and last is not None \
                    and now_ms - last >= ttl.max_idle.to_timedelta() // timedelta(milliseconds=1):
                why = f"no commit for ttl.maxIdle {ttl.max_idle}"
            if why is not None:
                drops.extend(_drop_guarded(ctx, b.name, base, why, ttl_expired=True,
                                           fork_tag=rec.fork_tag if rec else None))
        return out
    if rec is not None and not rec.pending:
        if rec.expired:
            return [A.Skipped(**base, what=f"branch {b.name}",
                              reason="dropped by its TTL; not recreated (remove the manifest to forget it)")]
        return [A.BranchConflict(**base, name=b.name, conflict="Lost",
                                 reason=f"managed branch {b.name!r} was deleted out of band; it is not recreated "
                                        "(its history would differ); remove the manifest to forget it")]
    if b.spec.from_tag is not None and (layout.MAIN, b.spec.from_tag) not in planned_tags:
        return [A.BranchConflict(**base, name=b.name, conflict="FromTagUnavailable",
                                 reason=f"tag {b.spec.from_tag!r} will not exist (see its conflict)")]
    return [A.CreateBranch(**base, name=b.name, from_tag=b.spec.from_tag, from_snapshot_id=b.spec.from_snapshot_id,
                           empty=bool(b.spec.empty), protected=b.spec.protected, deletion_policy=b.deletion_policy,
                           reason=f"declared ({b.spec.source})" + ("; resumes an interrupted create" if rec else ""))]


def _drop_guarded(ctx: _Ctx, name: str, base: dict[str, Any], why: str, *, ttl_expired: bool = False,
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


def _invalid(e: Exception) -> str:
    if isinstance(e, errors.TablekeeperError):
        return e.message + (f" (fix: {e.fix})" if e.fix else "")
    return f"{type(e).__name__}: {e}"


def _isolated_tag(ctx: _Ctx, t: TagTarget, planned_tags: dict[tuple[str, str], int]) -> list[A.Action]:
    """``_plan_tag``, with an error planning this one tag reported as its own ``InvalidSpec``
    conflict: one bad PaimonTag never stops the plan of its siblings."""
    try:
        return _plan_tag(ctx, t, planned_tags)
    except (errors.TablekeeperError, ValueError) as e:
        return [A.TagConflict(**ctx.base(t.branch, t.resource), tag=t.tag, conflict="InvalidSpec",
                              reason=f"cannot plan tag {t.tag!r}: {_invalid(e)}")]


def _isolated_branch(ctx: _Ctx, b: BranchTarget, planned_tags: Mapping[tuple[str, str], int],
                     drops: list[A.Action]) -> list[A.Action]:
    """``_plan_branch`` with the same isolation as :func:`_isolated_tag`."""
    try:
        return _plan_branch(ctx, b, planned_tags, drops)
    except (errors.TablekeeperError, ValueError) as e:
        return [A.BranchConflict(**ctx.base(layout.MAIN, b.resource), name=b.name, conflict="InvalidSpec",
                                 reason=f"cannot plan branch {b.name!r}: {_invalid(e)}")]


def plan_objects(target: TableTarget, state: TableState, records: TableRecords, policy: EffectivePolicy,
                 now: datetime) -> list[A.Action]:
    """Tag and branch actions for one table (steps 1-4 of the module docstring). Pure."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    ctx = _Ctx(target, state, records, policy, now, writer_zone(target))
    planned_tags: dict[tuple[str, str], int] = {(layout.MAIN, n): t.snapshot_id
                                                for n, t in state.branch_tags(layout.MAIN).items()}
    main_tags = [t for t in target.tags if t.branch == layout.MAIN]
    branch_tags = [t for t in target.tags if t.branch != layout.MAIN]
    out: list[A.Action] = []
    for t in main_tags:
        out.extend(_isolated_tag(ctx, t, planned_tags))
    auto_actions, auto_expired, auto_notes = _plan_auto(ctx)
    out.extend(auto_actions)
    drops: list[A.Action] = []
    for b in target.branches:
        out.extend(_isolated_branch(ctx, b, planned_tags, drops))
    for t in branch_tags:
        out.extend(_isolated_tag(ctx, t, planned_tags))
    out.extend(_plan_removed(ctx, drops))
    out.extend(_plan_expiry(ctx, auto_expired, out))
    out.extend(auto_notes)
    return out


def _plan_removed(ctx: _Ctx, drops: list[A.Action]) -> list[A.Action]:
    """Owned objects no manifest declares any more, plus TTL drops collected in ``drops``."""
    state, target, records = ctx.state, ctx.target, ctx.records
    declared_tags = {(t.branch, t.tag) for t in target.tags}
    declared_branches = {b.name for b in target.branches}
    out: list[A.Action] = []
    for name, brec in sorted(records.branches.items()):
        if name in declared_branches:
            continue
        base = ctx.base(layout.MAIN, owner=brec.resource)
        if name not in state.branches:
            out.append(A.ReleaseObject(**base, object_kind="branch", name=name,
                                       reason="manifest removed and the branch is gone: forget it"))
        elif brec.deletion_policy == "Retain":
            out.append(A.ReleaseObject(**base, object_kind="branch", name=name,
                                       reason="manifest removed; deletionPolicy Retain keeps the branch"))
        else:
            drops.extend(_drop_guarded(ctx, name, base, "manifest removed (deletionPolicy Delete)",
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
                                       reason="manifest removed and the tag is gone: forget it"))
            continue
        if rec.deletion_policy == "Retain":
            out.append(A.ReleaseObject(**base, object_kind="tag", name=name,
                                       reason="manifest removed; deletionPolicy Retain keeps the tag"))
            continue
        users = [u for u in state.protected_tags(branch).get(name, ()) if u not in dropped]
        if users:
            out.append(A.TagConflict(**base, tag=name, conflict="ProtectedByBranch",
                                     reason=f"manifest removed, but branch(es) {users} were created from it: it is "
                                            "kept until they are dropped"))
            continue
        out.append(A.DeleteTag(**base, tag=name, snapshot_id=existing.snapshot_id,
                               reason="manifest removed (deletionPolicy Delete): delete with cleanup"))
    return out


def _auto_rules(ctx: _Ctx) -> tuple[tag_auto.AutoTagRules | None, str | None]:
    """(rules, None) or (None, why tablekeeper does not create auto tags for this table)."""
    v, s = ctx.policy.values, ctx.policy.sources
    mode = v["tags.autoCreate.mode"]
    if v["tags.state"] == "Disabled" or mode in (None, "none"):
        return None, None
    if s["tags.autoCreate.mode"].startswith("table-option/"):
        return None, "writers create auto tags (table option tag.automatic-creation is set)"
    if ctx.target.spec.enforcement == "TableOptions":
        return None, "enforcement TableOptions: auto tags are left to writers (tag.automatic-creation is written " \
                     "as a table option)"
    handler = _auto_handler(ctx)
    if handler is None:
        return None, "invalid auto-tag period"
    opts = ctx.state.options
    zone: tzinfo | None
    if mode == "watermark":
        zone = tag_auto.parse_zone_id(opts.get("sink.watermark-time-zone") or "UTC")
    elif opts.get("sink.process-time-zone"):
        zone = tag_auto.parse_zone_id(opts["sink.process-time-zone"])
    else:
        zone = ctx.zone
    return tag_auto.AutoTagRules(
        mode=mode, handler=handler, zone=zone, delay=_td(v["tags.autoCreate.delay"]) or timedelta(0),
        num_retained_max=v["tags.autoCreate.maxRetained"], default_time_retained=_td(v["tags.defaultTimeRetained"]),
        automatic_completion=bool(v["tags.autoCreate.catchUp"])), None


_AUTO_PATHS = ("tags.autoCreate.mode", "tags.autoCreate.period", "tags.autoCreate.periodDuration",
               "tags.autoCreate.delay", "tags.autoCreate.nameFormat", "tags.autoCreate.maxRetained",
               "tags.autoCreate.catchUp", "tags.defaultTimeRetained")


def _plan_auto(ctx: _Ctx) -> tuple[list[A.Action], list[tag_auto.ExpiredTag], list[A.Action]]:
    rules, why_not = _auto_rules(ctx)
    base = ctx.base()
    if rules is None:
        notes: list[A.Action] = [A.Skipped(**base, what="auto tags", reason=why_not)] if why_not else []
        return [], [], notes
    main = layout.MAIN
    protected = set(ctx.state.protected_tags(main)) | {t.tag for t in ctx.target.tags if t.branch == main
                                                        and t.resource.labels.get(POLICY_TRIGGER_LABEL) != "Policy"}
    points = [t.point for t in ctx.state.branch_tags(main).values()]
    policy = ctx.policy_of(*_AUTO_PATHS)
    if rules.mode == "batch":
        expired: list[tag_auto.ExpiredTag] = []
        if rules.num_retained_max is not None:
            expired, _kept = tag_auto.plan_batch_count_expiry(points, rules.num_retained_max, protected=protected)
        return [], expired, [A.Skipped(**base, what="auto tags", policy=policy,
                                       reason="batch mode: the batch writer creates batch-write-<date> tags")]
    result = tag_auto.plan_auto_tags(ctx.state.branch_snapshots(main), points, rules, protected=protected)
    if result.refused:
        return [], [], [A.Skipped(**base, what="auto tags", policy=policy, reason=result.refused)]
    ttl = rules.default_time_retained
    creates: list[A.Action] = [
        A.CreateTag(**base, tag=c.name, snapshot_id=c.snapshot_id, auto=True, policy=policy,
                    time_retained=str(ctx.policy.values["tags.defaultTimeRetained"]) if ttl else None,
                    reason=f"auto tag {rules.handler.describe()}, {rules.mode} "
                           f"{c.snapshot_time:%Y-%m-%d %H:%M} of snapshot {c.snapshot_id}")
        for c in result.create]
    notes = [A.Skipped(**base, what="auto tags", reason=n, policy=policy) for n in result.notes]
    return creates, list(result.expire), notes


def _plan_expiry(ctx: _Ctx, auto_expired: Sequence[tag_auto.ExpiredTag], planned: Sequence[A.Action]
                 ) -> list[A.Action]:
    """One ExpireTags per branch: TTL everywhere, ``num-retained-max`` on main."""
    if not enabled_jobs.enabled("ExpireTags", ctx.target.spec.enforcement, ctx.policy):
        return []
    deleting = {(a.branch, a.tag) for a in planned if isinstance(a, A.DeleteTag)}
    dropped = {a.name for a in planned if isinstance(a, A.DropBranch)}
    ttl_enabled = ctx.state.options.get("tag.time-expire-enabled", "true").lower() != "false"
    out: list[A.Action] = []
    for branch in [layout.MAIN, *sorted(ctx.state.branches)]:
        if branch in dropped:
            continue
        tags_here = ctx.state.branch_tags(branch)
        protected = set(ctx.state.protected_tags(branch))
        entries: list[A.ExpiringTag] = []
        if ttl_enabled:
            expired, _kept = tag_auto.plan_ttl_expiry([t.point for t in tags_here.values()], ctx.now, ctx.zone,
                                                      protected=protected)
            entries.extend(A.ExpiringTag(tag=e.name, snapshot_id=e.snapshot_id, rule="ttl", detail=e.reason)
                           for e in expired)
        if branch == layout.MAIN:
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


# ----------------------------------------------------------------------------------------
# Maintenance (asks the core planners for sizes)


def writers_enforce(target: TableTarget, state: TableState, policy: EffectivePolicy, now: datetime) -> str | None:
    """With ``enforcement: Both``, why the writers enforce the written options themselves (they
    expire on commit), or None where they cannot and tablekeeper runs expiration: the table is
    ``write-only``, has no snapshot, or is idle — its latest commit is older than
    ``snapshots.maxAge``, so no writer has had the chance to expire what became due
    (operator-design.md §4.2). Orphan cleanup and tag expiry are never the writers' job."""
    if target.spec.enforcement != "Both":
        return None
    if state.options.get("write-only", "false").lower() == "true":
        return None
    latest = state.latest()
    if latest is None:
        return None
    max_age = policy.values["snapshots.maxAge"]
    age_ms = _ms(now) - latest.time_millis
    if age_ms > max_age.to_timedelta().total_seconds() * 1000:
        return None
    return f"the latest commit is {age_ms // 60_000} min old, within snapshots.maxAge {max_age}"


def _engine(target: TableTarget, estimate: A.Estimate, config: ReconcileConfig) -> A.Engine:
    wanted = target.spec.maintenance.engine if target.spec.maintenance is not None else "Auto"
    if wanted == "Python":
        return "in-process"
    if wanted in ("SparkOperator", "SparkJob"):
        return "spark"
    return "spark" if estimate.files >= config.spark_threshold_files else "in-process"


def _maintenance(ctx: _Ctx, table: Table, config: ReconcileConfig,
                 kinds: Collection[str] | None = None) -> list[A.Action]:
    target, policy, v = ctx.target, ctx.policy, ctx.policy.values
    base = ctx.base()

    def wanted(kind: str) -> bool:
        return kinds is None or kind in kinds

    def on(kind: str) -> bool:
        return enabled_jobs.enabled(kind, target.spec.enforcement, policy)
    if target.spec.enforcement == "TableOptions":
        managed = [s for s in ("partitions", "snapshots", "changelog", "orphanFiles") if enabled_jobs.managed(policy, s)]
        if not managed:
            return []
        return [A.Skipped(**base, what="maintenance",
                          reason=f"enforcement TableOptions: {', '.join(managed)} left to the writers (the policy "
                                 "is written as table options)")]
    deferred = None if config.ignore_schedules else writers_enforce(target, ctx.state, policy, ctx.now)
    if deferred is not None:  # enforcement Both, on a table whose writers expire it
        kinds = [k for k in (kinds or A.MAINTENANCE_KINDS) if k == "CleanOrphans"]
        managed = [s for s in ("partitions", "snapshots", "changelog") if enabled_jobs.managed(policy, s)]
        if managed:
            out_skip: list[A.Action] = [A.Skipped(**base, what="maintenance", reason=(
                f"enforcement Both: {', '.join(managed)} left to the writers ({deferred}); "
                "tablekeeper runs them when the table is write-only or idle"))]
        else:
            out_skip = []
        if not kinds:
            return out_skip
    else:
        out_skip = []
    schedule = target.spec.maintenance.schedule if target.spec.maintenance is not None else None
    window = target.spec.maintenance.window if target.spec.maintenance is not None else None
    now_ms = _ms(ctx.now)
    out: list[A.Action] = []
    skipped: list[A.Action] = []

    def due(kind: str, sched: Any) -> bool:
        if config.ignore_schedules:
            return True
        verdict = is_due(sched, ctx.records.last_runs.get(kind), ctx.now, window=window)
        if not verdict.due:
            skipped.append(A.Skipped(**base, what=kind, reason=verdict.reason))
        return verdict.due

    def sized(p: plans.Plan) -> A.Estimate:
        return estimate_plan(p, table.file_io) if config.estimate else A.Estimate(files=len(p.files))

    # partitions
    if wanted("ExpirePartitions") and on("ExpirePartitions") and due("ExpirePartitions", schedule):
        pconf = partitions.PartitionConfig(
            expiration_time=v["partitions.expiration"].to_timedelta(), strategy=v["partitions.strategy"],
            timestamp_formatter=v["partitions.timestampFormatter"], timestamp_pattern=v["partitions.timestampPattern"],
            max_expires=v["partitions.maxPerRun"], zone_known=ctx.zone is not None)
        pplan = partitions.plan_partition_expiry(table, pconf, _wall(ctx.now, ctx.zone))
        if pplan.expired:
            files = sum(p.file_count for p in pplan.expired)
            est = A.Estimate(files=files, bytes=0, note="files leave the latest snapshot now and are deleted by "
                                                        "snapshot expiration once nothing retained reads them")
            out.append(A.ExpirePartitions(
                **base, expiration=str(v["partitions.expiration"]), strategy=pconf.strategy,
                timestamp_formatter=pconf.timestamp_formatter, timestamp_pattern=pconf.timestamp_pattern,
                max_per_run=pconf.max_expires, zone_known=pconf.zone_known,
                partitions=tuple(p.name for p in pplan.expired), more=pplan.left_for_next_run, estimate=est,
                engine=_engine(target, est, config),
                policy=ctx.policy_of("partitions.expiration", "partitions.strategy", "partitions.maxPerRun",
                                     "partitions.timestampFormatter", "partitions.timestampPattern"),
                reason=f"{len(pplan.expired)} partition(s) older than {v['partitions.expiration']}"
                       + ("" if ctx.zone is not None else " (writer zone unknown: 12 h margin)")))
    # snapshots
    snapshot_paths = ("snapshots.minRetained", "snapshots.maxRetained", "snapshots.maxAge", "snapshots.expireLimit",
                      "snapshots.cleanEmptyDirectories")
    if wanted("ExpireSnapshots") and on("ExpireSnapshots") and due("ExpireSnapshots", schedule):
        retention = retention_settings.from_policy(v)
        econf = expire.expire_config(retention, ctx.state.options)
        eplan = expire.plan_expire(table, econf, now_ms)
        if not eplan.is_empty:
            total = expire.compute_range(table, replace(econf, expire_limit=INT_MAX), now_ms)
            count = total.count
            batches = max(1, math.ceil(count / econf.expire_limit)) if count else 1
            est = sized(eplan)
            if batches > 1:
                est = est.model_copy(update={"partial": True,
                                             "note": f"first of {batches} batches of {econf.expire_limit}"})
            out.append(A.ExpireSnapshots(
                **base, retention=retention,
                first_snapshot=total.earliest if count else None,
                last_snapshot=(total.end_exclusive - 1) if count and total.end_exclusive else None,
                snapshots=count, batches=batches, estimate=est, engine=_engine(target, est, config),
                policy=ctx.policy_of(*snapshot_paths),
                reason=(f"{count} snapshot(s) past retention (stop: {total.reason})" if count
                        else "only the missing EARLIEST hint is written")))
    # changelog
    if wanted("ExpireChangelog") and on("ExpireChangelog") and table.changelog_ids() \
            and due("ExpireChangelog", schedule):
        retention = retention_settings.from_policy(v)
        cplan = expire.plan_expire_changelog(table, expire.changelog_config(retention, ctx.state.options), now_ms)
        if not cplan.is_empty:
            est = sized(cplan)
            out.append(A.ExpireChangelog(
                **base, retention=retention,
                changelogs=int(dict(cplan.details).get("expired_changelogs", 0)),
                estimate=est, engine=_engine(target, est, config),
                policy=ctx.policy_of("changelog.minRetained", "changelog.maxRetained", "changelog.maxAge",
                                     "snapshots.expireLimit"),
                reason="long-lived changelogs past retention"))
    # orphans
    if wanted("CleanOrphans") and on("CleanOrphans") and due("CleanOrphans", v["orphanFiles.schedule"] or schedule):
        older = v["orphanFiles.olderThan"]
        threshold = orphans.resolve_older_than(now_ms, older_than_age=older.to_timedelta())
        oplan = orphans.plan_orphan_clean(table, orphans.OrphanConfig(threshold))
        if oplan.files:
            est = A.Estimate(files=len(oplan.files), bytes=sum(f.size or 0 for f in oplan.files),
                             by_kind={k: sum(1 for f in oplan.files if f.kind.value == k)
                                      for k in {f.kind.value for f in oplan.files}})
            dry = bool(v["orphanFiles.dryRun"])
            out.append(A.CleanOrphans(
                **base, older_than=str(older), older_than_ms=threshold, dry_run=dry, estimate=est,
                engine=_engine(target, est, config),
                policy=ctx.policy_of("orphanFiles.state", "orphanFiles.olderThan", "orphanFiles.dryRun",
                                     "orphanFiles.schedule"),
                reason=(f"{len(oplan.files)} file(s) older than {older} referenced by nothing"
                        + (" (dryRun: reported only; set orphanFiles.dryRun: false to delete)" if dry else ""))))
    return out_skip + out + skipped


def _size_tag_deletions(actions: list[A.Action], table: Table, config: ReconcileConfig) -> list[A.Action]:
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
        return estimate_plan(tags.plan_delete_tag(t, tag, force=True), t.file_io)
    except errors.TablekeeperError as e:
        return A.Estimate(note=f"not sized: {e.message}")


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def managed_table_options(target: TableTarget, policy: EffectivePolicy) -> dict[str, str]:
    """The Paimon table options the policy manages (operator-design.md §4.2 mapping): only fields
    some level explicitly sets (absent = not managed, never reset), not in a ``Disabled`` section,
    and only with ``enforcement: TableOptions`` or ``Both``. With ``Both`` the operator creates
    auto tags itself, so ``tag.automatic-creation`` and its companions are not written (writers
    and the operator must never both create auto tags)."""
    enforcement = target.spec.enforcement
    if enforcement not in ("TableOptions", "Both"):
        return {}
    out: dict[str, str] = {}
    for path in policy.explicit_paths():
        keys = PAIMON_OPTIONS.get(path)
        value = policy.values.get(path)
        if not keys or value is None:
            continue
        if policy.values.get(f"{path.split('.', 1)[0]}.state") == "Disabled":
            continue
        if enforcement == "Both" and path.startswith("tags.autoCreate."):
            continue
        out[keys[0]] = _option_text(value)
    return out


def plan_table_options(target: TableTarget, state: TableState, policy: EffectivePolicy,
                       unalterable: Collection[str] = ()) -> list[A.Action]:
    """``SetTableOptions`` when a managed option differs from the table's (pure). Keys in the
    table's ``protectedOptions`` or the operator's ``unalterable`` list are never written: a
    difference there is reported as a ``Skipped`` (``ConflictingTableOption``)."""
    desired = managed_table_options(target, policy)
    if not desired:
        return []
    protected = set(target.spec.protected_options) | set(unalterable)
    diff = table_options.diff_options(state.options, desired, protected)
    base: dict[str, Any] = {"warehouse": target.location.warehouse, "table": target.location.identifier,
                            "resource": target.resource.ref, "source": target.resource.file}
    paths = [p for p in policy.explicit_paths() if PAIMON_OPTIONS.get(p, ("",))[0] in desired]
    out: list[A.Action] = []
    if not diff.is_empty:
        out.append(A.SetTableOptions(**base, options={k: v for k, v in desired.items() if k not in protected},
                                     changed=dict(diff.set), previous=dict(diff.previous),
                                     policy=describe(policy.values, policy.sources, paths),
                                     reason=f"enforcement {target.spec.enforcement}: set "
                                            + ", ".join(f"{k}={v}" for k, v in diff.set.items())))
    for key, (current, wanted) in diff.protected.items():
        out.append(A.Skipped(**base, what=f"table option {key}",
                             reason=f"ConflictingTableOption: the policy asks for {key}={wanted} but the table has "
                                    f"{current if current is not None else 'it unset'}; the key is protected "
                                    "(protectedOptions or the operator's unalterable list), so it is not written"))
    return out


def plan_table(target: TableTarget, table: Table, state: TableState, records: TableRecords,
               policy: EffectivePolicy, now: datetime, config: ReconcileConfig | None = None, *,
               kinds: Collection[str] | None = None) -> TablePlan:
    """Every action for one table, in order; with ``kinds`` (action kinds, e.g.
    ``("ExpireSnapshots", "ExpireChangelog")``) only those, and only their work is planned (a
    maintenance run of one type never plans or sizes the others). ``Skipped`` notes about a
    wanted kind are kept."""
    config = config or ReconcileConfig()
    ctx = _Ctx(target, state, records, policy, now, writer_zone(target))
    acts: list[A.Action] = []
    if config.table_options and kinds is None:
        acts = plan_table_options(target, state, policy)  # first: writers see the options at once
    if kinds is None or not set(kinds) <= set(A.MAINTENANCE_KINDS):
        acts.extend(plan_objects(target, state, records, policy, now))
    acts.extend(_maintenance(ctx, table, config, kinds))
    if kinds is not None:
        acts = [a for a in acts if a.kind in kinds or (isinstance(a, A.Skipped) and a.what in kinds)]
    acts = _size_tag_deletions(acts, table, config)
    return TablePlan(target, tuple(acts), policy.to_status(), target.writer_zone)


def plan(desired: DesiredState, *, now: datetime, store: RecordStore, opener: Opener | None = None,
         config: ReconcileConfig | None = None, tables: Iterable[str] | None = None) -> ReconcilePlan:
    """Plan every table of ``desired`` (or only ``tables``, by ``db.table``).

    Raises:
        ManifestError: problems only storage reveals (a table that does not exist, a branch from a
            tag that does not exist, policies that break a rail with the table's own options),
            collected over all tables; nothing has been changed.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    opener = opener or Opener()
    config = config or ReconcileConfig()
    wanted = set(tables) if tables is not None else None
    problems: list[Problem] = []
    prepared: list[tuple[TableTarget, Table, TableState, TableRecords, EffectivePolicy]] = []
    for target in desired.tables:
        if wanted is not None and target.location.identifier not in wanted:
            continue
        try:
            table = opener.open(target.location)
        except errors.TableNotFoundError as e:
            problems.append(Problem(target.resource.where, "spec.table", e.message,
                                    "create the table first (tablekeeper does not create tables), or fix "
                                    "spec.database / spec.table / the catalog's warehouse"))
            continue
        state = observe(table)
        try:
            policy = target.resolve_policy(state.options)
        except InvalidSpecError as e:
            problems.append(Problem(target.resource.where, "spec.retention", e.message, e.fix))
            continue
        except errors.InvalidInputError as e:
            problems.append(Problem(target.resource.where, "spec.retention", e.message, e.fix))
            continue
        records = store.load(target.location.warehouse, target.location.identifier)
        problems.extend(validate_against_storage(target, state, records))
        prepared.append((target, table, state, records, policy))
    if problems:
        raise ManifestError(problems)
    table_plans = [plan_table(target, table, state, records, policy, now, config)
                   for target, table, state, records, policy in prepared]
    return ReconcilePlan(now, tuple(table_plans))
