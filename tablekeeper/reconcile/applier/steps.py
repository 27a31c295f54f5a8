"""One step per change action: each kind's handler carries the action out through core's
planners and executors on the table as it is now, and returns ``(status, message)``.

Maintenance steps are **re-planned** here with the parameters recorded in the action (core's
planners are fail-closed); ownership records are written *before* a tag or branch is created (a
crash in between leaves a record the next plan repairs by recreating, never an untracked
object) and removed after a deletion. :class:`ActionRun` is what the steps of one table share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from tablekeeper.core import errors, paimon, plans, refs, values
from tablekeeper.core.paimon import Table
from tablekeeper.core.policy import Duration
from tablekeeper.core.reclaim import expire, orphans, partitions
from tablekeeper.core.refs import consumers
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.applier.results import Status
from tablekeeper.reconcile.planner import TablePlan
from tablekeeper.reconcile.planners.context import ReconcileConfig, with_sizes
from tablekeeper.reconcile.state.records import BranchRecord, RecordStore, TableRecords, TagRecord

__all__ = ["HANDLERS", "ActionRun"]


@dataclass
class ActionRun:
    table_plan: TablePlan
    table: Table
    records: TableRecords
    store: RecordStore
    now: datetime
    config: ReconcileConfig
    deleted_files: int = 0
    deleted_bytes: int = 0
    notes: list[str] = field(default_factory=list)
    #: set by a maintenance handler: what the current action expired (ActionResult.expired)
    expired: int | None = None

    @property
    def zone(self) -> ZoneInfo | None:
        return ZoneInfo(self.table_plan.zone) if self.table_plan.zone else None

    def save(self, records: TableRecords) -> None:
        self.records = records
        loc = self.table_plan.target.location
        self.store.save(loc.warehouse, loc.identifier, records)

    def execute(self, plan: plans.Plan, table: Table) -> plans.ExecutionResult:
        result = plans.execute(with_sizes(plan, table.file_io), table.file_io)
        self.deleted_files += sum(result.deleted.values())
        self.deleted_bytes += sum(result.deleted_bytes.values())
        if result.failed:
            raise errors.StorageError(f"{len(result.failed)} file(s) could not be deleted, e.g. "
                                      f"{result.failed[0].path}: {result.failed[0].error}",
                                      fix="check permissions and apply again; it resumes")
        return result

    def wall_now(self) -> datetime:
        return refs.local_wall_clock(self.now, self.zone or timezone.utc)


def _td(text: str | None) -> timedelta | None:
    return None if text is None else Duration(text).to_timedelta()


# ----------------------------------------------------------------------------------------
# One handler per action kind; each returns (status, message).


def _create_tag(run: ActionRun, a: A.CreateTag) -> tuple[Status, str]:
    t = run.table.on_branch(a.branch)
    ttl = _td(a.time_retained)
    previous = run.records
    if not a.auto and a.resource:
        expires = values.epoch_ms(run.now + ttl) if ttl is not None else None
        run.save(run.records.with_tag(a.branch, a.tag, TagRecord(a.resource, a.snapshot_id,
                                                                 a.deletion_policy or "Delete", False, expires)))
    try:
        result = refs.create_tag(t, a.tag, snapshot_id=a.snapshot_id, time_retained=ttl, now=run.wall_now())
    except Exception:
        run.save(previous)  # never claim a tag this run did not create (e.g. someone else's, raced in)
        raise
    if result.action == "unchanged":
        return "unchanged", f"tag {a.tag!r} already at snapshot {a.snapshot_id}"
    zone = "" if run.zone is not None or ttl is None else " (tagCreateTime written as UTC: writer zone unknown)"
    return "applied", f"created tag {a.tag!r} at snapshot {a.snapshot_id}{zone}"


def _adopt_tag(run: ActionRun, a: A.AdoptTag) -> tuple[Status, str]:
    existing = run.table.on_branch(a.branch).tag(a.tag)
    expires = None
    if existing.create_time is not None and existing.time_retained is not None and run.zone is not None:
        local = (existing.create_time + existing.time_retained).replace(tzinfo=run.zone)
        expires = values.epoch_ms(local.astimezone(timezone.utc))
    run.save(run.records.with_tag(a.branch, a.tag, TagRecord(a.resource or "", existing.snapshot_id,
                                                             a.deletion_policy or "Delete", False, expires)))
    return "applied", f"adopted tag {a.tag!r} at snapshot {existing.snapshot_id}"


def _delete_tag(run: ActionRun, a: A.DeleteTag) -> tuple[Status, str]:
    t = run.table.on_branch(a.branch)
    if not t.tag_exists(a.tag):
        run.save(run.records.with_tag(a.branch, a.tag, None))
        return "unchanged", f"tag {a.tag!r} was already gone"
    before = run.deleted_files
    refs.delete_tag(t, a.tag, run=lambda p: run.execute(p, t))
    run.save(run.records.with_tag(a.branch, a.tag, None))
    return "applied", f"deleted tag {a.tag!r} and {run.deleted_files - before - 1} file(s) only it referenced"


def _expire_tags(run: ActionRun, a: A.ExpireTags) -> tuple[Status, str]:
    t = run.table.on_branch(a.branch)
    done, kept = [], []
    for entry in a.tags:
        if not t.tag_exists(entry.tag):
            continue
        if t.tag(entry.tag).snapshot_id != entry.snapshot_id:
            kept.append(f"{entry.tag} (moved)")
            continue
        try:
            refs.delete_tag(t, entry.tag, run=lambda p: run.execute(p, t))
        except errors.ProtectedObjectError:
            kept.append(f"{entry.tag} (now a fork point)")
            continue
        done.append(entry.tag)
        rec = run.records.tag(a.branch, entry.tag)
        if rec is not None:
            run.save(run.records.with_tag(a.branch, entry.tag, replace(rec, expired=True)))
    message = f"expired {len(done)} tag(s)" + (f": {', '.join(done)}" if done else "")
    if kept:
        message += f"; kept {', '.join(kept)}"
    return ("applied" if done else "unchanged"), message


def _create_branch(run: ActionRun, a: A.CreateBranch) -> tuple[Status, str]:
    fork_tag = refs.fork_tag_name(a.name, a.from_snapshot_id) if a.from_snapshot_id is not None else None
    previous = run.records
    record = BranchRecord(a.resource or "", a.deletion_policy or "Delete", values.epoch_ms(run.now), fork_tag, pending=True)
    run.save(run.records.with_branch(a.name, record))
    try:
        change = refs.create_branch(run.table, a.name, from_tag=a.from_tag, from_snapshot=a.from_snapshot_id)
    except Exception:
        run.save(previous)  # a refused create leaves no claim on a branch someone else may own
        raise
    run.save(run.records.with_branch(a.name, replace(record, pending=False)))
    origin = f"tag {a.from_tag!r}" if a.from_tag else (f"snapshot {a.from_snapshot_id}" if a.from_snapshot_id
                                                        else "nothing (empty)")
    return "applied", f"created branch {a.name!r} from {origin} ({len(change.written)} metadata file(s))"


def _adopt_branch(run: ActionRun, a: A.AdoptBranch) -> tuple[Status, str]:
    run.table.on_branch(a.name)  # must still exist
    old = run.records.branches.get(a.name)
    run.save(run.records.with_branch(a.name, BranchRecord(a.resource or "", a.deletion_policy or "Delete",
                                                          old.created_ms if old else 0, old.fork_tag if old else None)))
    # (a pending record whose create had finished becomes a confirmed one here)
    return "applied", f"adopted branch {a.name!r}"


def _drop_branch(run: ActionRun, a: A.DropBranch) -> tuple[Status, str]:
    main = run.table.on_branch(paimon.MAIN)
    if a.name not in main.branch_names():
        status: Status = "unchanged"
        message = f"branch {a.name!r} was already gone"
    else:
        change = refs.drop_branch(main, a.name)
        status, message = "applied", f"dropped branch {a.name!r} ({len(change.deleted)} metadata file(s))"
    rec = run.records.branches.get(a.name)
    if a.ttl_expired and rec is not None:
        run.save(run.records.with_branch(a.name, replace(rec, expired=True)))
    else:
        run.save(run.records.with_branch(a.name, None))
    if a.fork_tag and main.tag_exists(a.fork_tag):
        try:
            refs.delete_tag(main, a.fork_tag, run=lambda p: run.execute(p, main))
            message += f"; deleted its fork tag {a.fork_tag!r}"
        except errors.ProtectedObjectError:
            message += f"; kept its fork tag {a.fork_tag!r} (another branch uses it)"
    return status, message


def _release(run: ActionRun, a: A.ReleaseObject) -> tuple[Status, str]:
    if a.object_kind == "tag":
        run.save(run.records.with_tag(a.branch, a.name, None))
    else:
        run.save(run.records.with_branch(a.name, None))
    return "applied", f"forgot {a.object_kind} {a.name!r} (storage untouched)"


def _set_table_options(run: ActionRun, a: A.SetTableOptions) -> tuple[Status, str]:
    t = run.table.on_branch(a.branch)
    result = paimon.alter_options(t, a.changed, now_ms=values.epoch_ms(run.now))
    if result.schema_id is None:
        return "unchanged", "table options already as the policy asks"
    return "applied", (f"set {', '.join(f'{k}={v}' for k, v in result.options.items())} "
                       f"(schema {result.schema_id})")


def _expire_partitions(run: ActionRun, a: A.ExpirePartitions) -> tuple[Status, str]:
    config = partitions.PartitionConfig(
        expiration_time=Duration(a.expiration).to_timedelta(), strategy=a.strategy,
        timestamp_formatter=a.timestamp_formatter, timestamp_pattern=a.timestamp_pattern,
        max_expires=a.max_per_run, zone_known=a.zone_known)
    t = run.table.on_branch(a.branch)
    dropped: list[str] = []
    files = 0
    options = dict(run.table_plan.target.location.options)
    for _ in range(run.config.max_batches):
        pplan = partitions.plan_partition_expiry(t, config, run.wall_now())
        if not pplan.expired:
            break
        partitions.apply_partition_expiry(t, pplan, options=options)
        dropped.extend(p.name for p in pplan.expired)
        files += sum(p.file_count for p in pplan.expired)
    if not dropped:
        return "unchanged", "no partition is expired any more"
    return "applied", f"dropped {len(dropped)} partition(s) ({files} files leave the latest snapshot)"


def _expire_consumers(run: ActionRun, a: A.ExpireConsumers) -> tuple[Status, str]:
    """Re-listed now: a consumer whose job wrote its position since the plan is kept."""
    t = run.table.on_branch(a.branch)
    after = Duration(a.expiration).to_timedelta()
    cplan = consumers.plan_expire(t, consumers.list_consumers(t, values.epoch_ms(run.now), after), after)
    gone = list(dict(cplan.details).get("consumers", ()))
    run.expired = len(gone)
    if not gone:
        return "unchanged", "no consumer is expired any more"
    run.execute(cplan, t)
    return "applied", f"expired {len(gone)} consumer(s) not updated for more than {a.expiration}: {', '.join(gone)}"


def _expire_snapshots(run: ActionRun, a: A.ExpireSnapshots) -> tuple[Status, str]:
    t = run.table.on_branch(a.branch)
    config = expire.expire_config(a.retention, t.options())

    def batch(_n: int) -> int | None:
        # unpublish, verify, then delete (core/reclaim/expire/commit.py)
        eplan, _done = expire.run_expire(t, config, values.epoch_ms(run.now), lambda p: run.execute(p, t))
        if eplan.is_empty:
            return None
        return int(dict(eplan.details).get("expired_snapshots") or 0)
    done = expire.run_batches(batch, run.config.max_batches)
    run.expired = done.expired
    if not done.batches:
        return "unchanged", "nothing expires any more"
    return "applied", f"expired {done.expired} snapshot(s) in {done.batches} batch(es)"


def _expire_changelog(run: ActionRun, a: A.ExpireChangelog) -> tuple[Status, str]:
    t = run.table.on_branch(a.branch)
    config = expire.changelog_config(a.retention, t.options())  # the planned limit, not the table option's

    def batch(_n: int) -> int | None:
        # unpublish, verify, then delete (core/reclaim/expire/commit.py)
        cplan, _done = expire.run_expire_changelog(t, config, values.epoch_ms(run.now),
                                                          lambda p: run.execute(p, t))
        if cplan.is_empty:
            return None
        return int(dict(cplan.details).get("expired_changelogs") or 0)
    done = expire.run_batches(batch, run.config.max_batches)
    run.expired = done.expired
    if not done.expired:
        return "unchanged", "nothing expires any more"
    return "applied", f"expired {done.expired} changelog(s)"


def _clean_orphans(run: ActionRun, a: A.CleanOrphans) -> tuple[Status, str]:
    listing = None if a.listing is None else orphans.load_for_table(
        a.listing, run.table.file_io, run.table.root, orphans.listing_roots(run.table))
    oplan = orphans.plan_orphan_clean(run.table, orphans.OrphanConfig(a.older_than_ms, listing=listing))
    if oplan.is_empty:
        return "unchanged", "no orphan files"
    before = run.deleted_files
    run.execute(oplan, run.table)
    return "applied", f"deleted {run.deleted_files - before} orphan file(s) older than {a.older_than}"


HANDLERS: dict[str, Callable[[ActionRun, Any], tuple[Status, str]]] = {
    "CreateTag": _create_tag,
    "AdoptTag": _adopt_tag,
    "DeleteTag": _delete_tag,
    "ExpireTags": _expire_tags,
    "CreateBranch": _create_branch,
    "AdoptBranch": _adopt_branch,
    "DropBranch": _drop_branch,
    "ReleaseObject": _release,
    "SetTableOptions": _set_table_options,
    "ExpirePartitions": _expire_partitions,
    "ExpireConsumers": _expire_consumers,
    "ExpireSnapshots": _expire_snapshots,
    "ExpireChangelog": _expire_changelog,
    "CleanOrphans": _clean_orphans,
}
