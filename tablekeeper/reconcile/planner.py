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

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tablekeeper.core import errors, paimon
from tablekeeper.core.paimon import Table
from tablekeeper.core.policy import InvalidSpecError
from tablekeeper.core.policy.effective import EffectivePolicy
from tablekeeper.core.safety import trash
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.opener import Opener
from tablekeeper.reconcile.planners import (
    context as plan_context,
)
from tablekeeper.reconcile.planners import (
    maintenance as maintenance_planner,
)
from tablekeeper.reconcile.planners import (
    objects as objects_planner,
)
from tablekeeper.reconcile.planners import (
    table_options as table_options_planner,
)
from tablekeeper.reconcile.planners import (
    tags as tags_planner,
)
from tablekeeper.reconcile.state.desired import DesiredState, TableTarget
from tablekeeper.reconcile.state.documents import ManifestError, Problem
from tablekeeper.reconcile.state.observe import TableState, observe
from tablekeeper.reconcile.state.records import RecordStore, TableRecords

__all__ = ["TablePlan", "ReconcilePlan", "plan", "plan_table", "validate_against_storage"]


@dataclass(frozen=True)
class TablePlan:
    """The actions for one table, with the effective policy they were derived from."""

    target: TableTarget
    actions: tuple[A.Action, ...]
    effective: dict[str, dict[str, Any]] = field(default_factory=dict)
    zone: str | None = None
    #: the undo window of what applying removes (the policy's ``trash.keep``); None: deleted at once
    trash_window: timedelta | None = None

    @classmethod
    def of(cls, target: TableTarget, actions: Iterable[A.Action], policy: EffectivePolicy) -> TablePlan:
        """``actions`` with what applying them needs from ``policy`` (its status, the undo window)."""
        return cls(target, tuple(actions), policy.to_status(), target.writer_zone, trash.policy_window(policy.values))

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


def validate_against_storage(target: TableTarget, state: TableState,
                             records: TableRecords | None = None) -> list[Problem]:
    """Manifest problems only storage reveals: a tag on a branch that neither exists nor is
    declared; a branch to create from a tag that neither exists nor is declared on main; a branch
    to create from a snapshot that does not exist. Branches the records know (lost, or dropped by
    their TTL) are not created again, so their sources are not checked."""
    problems: list[Problem] = []
    known = records.branches if records is not None else {}
    declared_branches = {b.name for b in target.branches}
    declared_main_tags = {t.tag for t in target.tags if t.branch == paimon.MAIN}
    main_tags = state.branch_tags(paimon.MAIN)
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


def plan_table(target: TableTarget, table: Table, state: TableState, records: TableRecords,
               policy: EffectivePolicy, now: datetime, config: plan_context.ReconcileConfig | None = None, *,
               kinds: Collection[str] | None = None) -> TablePlan:
    """Every action for one table, in order; with ``kinds`` (action kinds, e.g.
    ``("ExpireSnapshots", "ExpireChangelog")``) only those, and only their work is planned (a
    maintenance run of one type never plans or sizes the others). ``Skipped`` notes about a
    wanted kind are kept."""
    config = config or plan_context.ReconcileConfig()
    ctx = plan_context.PlanContext(target, state, records, policy, now, plan_context.writer_zone(target))
    acts: list[A.Action] = []
    if config.table_options and kinds is None:
        acts = table_options_planner.plan_table_options(target, state, policy)  # first: writers see the options at once
    if kinds is None or not set(kinds) <= set(A.MAINTENANCE_KINDS):
        acts.extend(objects_planner.plan_objects(target, state, records, policy, now))
    acts.extend(maintenance_planner.plan_maintenance(ctx, table, config, kinds))
    if kinds is not None:
        acts = [a for a in acts if a.kind in kinds or (isinstance(a, A.Skipped) and a.what in kinds)]
    acts = tags_planner.size_tag_deletions(acts, table, config)
    return TablePlan.of(target, acts, policy)


def plan(desired: DesiredState, *, now: datetime, store: RecordStore, opener: Opener | None = None,
         config: plan_context.ReconcileConfig | None = None, tables: Iterable[str] | None = None) -> ReconcilePlan:
    """Plan every table of ``desired`` (or only ``tables``, by ``db.table``).

    Raises:
        ManifestError: problems only storage reveals (a table that does not exist, a branch from a
            tag that does not exist, policies that break a rail with the table's own options),
            collected over all tables; nothing has been changed.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    opener = opener or Opener()
    config = config or plan_context.ReconcileConfig()
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
