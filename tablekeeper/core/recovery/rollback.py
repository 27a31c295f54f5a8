"""Rollback as Paimon's ``rollback_to_as_latest``: a new latest snapshot whose content equals the
target's, deleting nothing.

Split as everywhere in core: :func:`read_facts` reads what the decision needs, :func:`decide`
(pure) turns the request and those facts into a frozen :class:`RollbackPlan` or refuses it, and
:func:`execute` writes it through ``catalog_writes``. Order of the writes, each safe to crash
after: the tags that keep the target readable, the new manifest lists (named by the plan), the
snapshot (create-if-absent), then LATEST. A rerun after a crash finds the snapshot it committed
(its properties name the target) or commits it then: the same end state.

Why a protection tag also for a tag target (Paimon creates one for a snapshot id only): the
restored snapshot shares the target's manifests, and Paimon's writers expire snapshots by what
the next snapshot and the tags use. ``rollback-to-as-latest-<target>-<previous latest>`` keeps
the target's files until a user deletes it; the later history keeps expiring by the usual rules.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tablekeeper.core import errors, values
from tablekeeper.core.paimon import Snapshot, Table
from tablekeeper.core.recovery import catalog_writes, manifest_lists
from tablekeeper.core.safety import concurrency

__all__ = ["RollbackRequest", "RollbackFacts", "RollbackPlan", "RollbackResult", "TARGET_PROPERTY",
           "PREVIOUS_PROPERTY", "PROTECTION_TAG_PREFIX", "COMMIT_USER_PREFIX", "read_facts", "resolve_target", "decide",
           "execute", "restore_as_latest"]

#: Properties of the restored snapshot: which snapshot it restores, and the latest it replaced.
TARGET_PROPERTY = "tablekeeper.rollback.target-snapshot"
PREVIOUS_PROPERTY = "tablekeeper.rollback.previous-latest"
#: Paimon's names (RollbackToAsLatestProcedure): the protection tag's prefix, the commit user's.
PROTECTION_TAG_PREFIX = "rollback-to-as-latest-"
COMMIT_USER_PREFIX = "rollback-to-as-latest-"
#: Paimon's commitIdentifier for commits made outside a streaming job (Long.MAX_VALUE).
_BATCH_COMMIT_IDENTIFIER = 2**63 - 1


@dataclass(frozen=True)
class RollbackRequest:
    """Exactly one of ``snapshot_id``, ``tag``, ``timestamp_ms``."""

    snapshot_id: int | None = None
    tag: str | None = None
    timestamp_ms: int | None = None
    keep_as_tag: str | None = None


@dataclass(frozen=True)
class RollbackFacts:
    """What the decision reads of one branch."""

    table_root: str
    branch: str
    identifier: str
    latest: Snapshot | None
    #: Every snapshot file of the branch, by id.
    snapshots: Mapping[int, Snapshot]
    #: The snapshot of every tag of the branch, by tag name.
    tags: Mapping[str, Snapshot]


@dataclass(frozen=True)
class RollbackPlan:
    identifier: str
    branch: str
    #: ``roll-back`` (a new snapshot is committed) or ``unchanged`` (LATEST already reads the target).
    action: str
    target: Snapshot = field(repr=False)
    #: How the target was named: ``snapshot 3``, ``tag t1``, ``timestamp 1700000000000``.
    target_source: str
    previous_latest_id: int
    new_snapshot_id: int
    #: Tags created before the commit: name -> snapshot id (existing ones are left as they are).
    tags_to_create: Mapping[str, int]
    base_manifest_list: str
    delta_manifest_list: str

    @property
    def target_id(self) -> int:
        return self.target.id


@dataclass(frozen=True)
class RollbackResult:
    plan: RollbackPlan
    #: Tags created by this run (not those a crashed run created before).
    tags_created: tuple[str, ...]
    written: tuple[str, ...]


def read_facts(table: Table) -> RollbackFacts:
    snapshots = {s.id: s for s in table.snapshots()}
    return RollbackFacts(table.root, table.branch, table.identifier, table.latest_snapshot(), snapshots,
                         {t.name: t.snapshot for t in table.tags()})


def resolve_target(request: RollbackRequest, facts: RollbackFacts, latest: Snapshot) -> tuple[Snapshot, str]:
    """The snapshot ``request`` names and how it was named (the rules of Paimon's procedures)."""
    given = [x for x in (request.snapshot_id, request.tag, request.timestamp_ms) if x is not None]
    if len(given) != 1:
        raise errors.InvalidInputError("name exactly one rollback target",
                                       fix="pass one of --to-snapshot N, --to-tag NAME, --to-timestamp TIME")
    where = f"branch {facts.branch!r} of {facts.identifier}"
    if request.tag is not None:
        snap = facts.tags.get(request.tag)
        if snap is None:
            raise errors.TagNotFoundError(f"tag {request.tag!r} does not exist on {where}",
                                          fix=f"list tags with 'tablekeeper tag list {facts.identifier}'")
        return snap, f"tag {request.tag}"
    if request.snapshot_id is not None:
        sid = request.snapshot_id
        if sid > latest.id:
            raise errors.InvalidInputError(
                f"snapshot {sid} is newer than the latest snapshot {latest.id} of {where}",
                fix=f"roll back to a snapshot at or before {latest.id}")
        snap = facts.snapshots.get(sid) or next((s for s in facts.tags.values() if s.id == sid), None)
        if snap is None:  # (as Paimon: an expired snapshot is still a target while a tag keeps it)
            raise errors.SnapshotNotFoundError(
                f"snapshot {sid} does not exist on {where} (expired, and no tag keeps it)",
                fix=f"pick a snapshot shown by 'tablekeeper show {facts.identifier}', or roll back to a tag")
        return snap, f"snapshot {sid}"
    ts = int(request.timestamp_ms)  # type: ignore[arg-type]
    # Paimon's rollback_to_timestamp: the latest snapshot committed at or before the time
    candidates = [s for s in facts.snapshots.values() if s.time_millis <= ts and s.id <= latest.id]
    if not candidates:
        earliest = min(facts.snapshots.values(), key=lambda s: s.id, default=latest)
        raise errors.SnapshotNotFoundError(
            f"no snapshot of {where} was committed at or before {ts} ms (the earliest, {earliest.id}, "
            f"was committed at {earliest.time_millis} ms)",
            fix="pick a later time, or roll back to a tag")
    snap = max(candidates, key=lambda s: s.id)
    return snap, f"timestamp {ts}"


def protection_tag(target_id: int, latest_id: int) -> str:
    return f"{PROTECTION_TAG_PREFIX}{target_id}-{latest_id}"


def _check_tag(facts: RollbackFacts, name: str, snapshot_id: int, flag: str) -> None:
    existing = facts.tags.get(name)
    if existing is not None and existing.id != snapshot_id:
        raise errors.TagConflictError(
            f"tag {name!r} already exists at snapshot {existing.id}, not {snapshot_id}",
            fix=f"choose another name for {flag}")


def decide(request: RollbackRequest, facts: RollbackFacts) -> RollbackPlan:
    """The rollback to make, or why not.

    Raises:
        InvalidInputError: no or several targets, a target newer than LATEST, a bad tag name.
        SnapshotNotFoundError / TagNotFoundError: the target does not exist.
        TagConflictError: ``keep_as_tag`` exists at another snapshot.
    """
    latest = facts.latest
    if latest is None:
        raise errors.SnapshotNotFoundError(f"branch {facts.branch!r} of {facts.identifier} has no snapshot",
                                           fix="there is nothing to roll back")
    target, source = resolve_target(request, facts, latest)
    restored = latest.fields.get("properties") or {}
    done = str(restored.get(TARGET_PROPERTY)) == str(target.id) if isinstance(restored, Mapping) else False
    unchanged = target.identity() == latest.identity() or done
    previous = int(restored[PREVIOUS_PROPERTY]) if done and PREVIOUS_PROPERTY in restored else latest.id
    wanted: dict[str, int] = {}
    if request.keep_as_tag is not None:
        values.validate_tag_name(request.keep_as_tag)
        _check_tag(facts, request.keep_as_tag, previous, "--keep-as-tag")
        wanted[request.keep_as_tag] = previous
    if not unchanged:
        wanted[protection_tag(target.id, latest.id)] = target.id
    base, delta = manifest_lists.list_names(facts.identifier, facts.branch, latest.id, target.id)
    return RollbackPlan(
        identifier=facts.identifier, branch=facts.branch, action="unchanged" if unchanged else "roll-back",
        target=target, target_source=source, previous_latest_id=previous,
        new_snapshot_id=latest.id if unchanged else latest.id + 1,
        tags_to_create={k: v for k, v in wanted.items() if k not in facts.tags},
        base_manifest_list=base, delta_manifest_list=delta)


def _restored_snapshot(plan: RollbackPlan, latest: Snapshot, lists: manifest_lists.WrittenLists,
                       now_ms: int) -> Snapshot:
    """The new snapshot's fields, as Java's ``FileStoreCommitImpl.rollbackToAsLatest`` fills them."""
    target = plan.target
    properties: dict[str, Any] = dict(target.fields.get("properties") or {})
    properties.update({TARGET_PROPERTY: str(target.id), PREVIOUS_PROPERTY: str(latest.id)})
    rows = [v for v in (latest.fields.get("nextRowId"), target.fields.get("nextRowId")) if v is not None]
    fields: dict[str, Any] = {
        "version": 3, "id": plan.new_snapshot_id, "schemaId": target.schema_id,
        "baseManifestList": lists.base, "baseManifestListSize": lists.base_size,
        "deltaManifestList": lists.delta, "deltaManifestListSize": lists.delta_size,
        "changelogManifestList": None, "indexManifest": target.index_manifest,
        "commitUser": f"{COMMIT_USER_PREFIX}{uuid.uuid4()}", "commitIdentifier": _BATCH_COMMIT_IDENTIFIER,
        "commitKind": "OVERWRITE", "timeMillis": now_ms, "totalRecordCount": target.total_record_count,
        "deltaRecordCount": 0, "watermark": target.watermark, "statistics": target.statistics,
        "properties": properties, "nextRowId": max(rows) if rows else None,
    }
    return Snapshot({k: v for k, v in fields.items() if v is not None or k in ("deltaRecordCount",)})


def execute(table: Table, plan: RollbackPlan, *, now_ms: int | None = None) -> RollbackResult:
    """Carry ``plan`` out on ``table`` (the branch it was planned on, its lease held).

    Raises:
        ConcurrentModificationError: a writer committed after the plan was made (rerun).
    """
    created: list[str] = []
    written: list[str] = []
    concurrency.point("rollback:before:tags")
    for name, sid in plan.tags_to_create.items():
        if catalog_writes.create_tag(table, name, sid) == "created":
            created.append(name)
            written.append(table.tag_path(name))
    if plan.action == "unchanged":
        catalog_writes.advance_latest(table, plan.new_snapshot_id)
        return RollbackResult(plan, tuple(created), tuple(written))
    latest = catalog_writes.latest_as_planned(table, plan.previous_latest_id, "rollback",
                                              "rerun the same command: it plans again from the new latest snapshot")
    concurrency.point("rollback:before:manifest-lists")
    lists = manifest_lists.write_restored_lists(table.file_io, table.root, table.identifier, table.branch, latest.id, plan.target)
    written += [f"{table.root}/manifest/{lists.base}", f"{table.root}/manifest/{lists.delta}"]
    concurrency.point("rollback:before:commit")
    snapshot = _restored_snapshot(plan, latest, lists, int(time.time() * 1000) if now_ms is None else now_ms)
    catalog_writes.commit_snapshot(table, snapshot)
    written.append(table.snapshot_path(snapshot.id))
    concurrency.point("rollback:before:latest")
    catalog_writes.advance_latest(table, snapshot.id)
    return RollbackResult(plan, tuple(created), tuple(written))


def restore_as_latest(table: Table, request: RollbackRequest, *, dry_run: bool = False) -> RollbackResult:
    """Plan (and unless ``dry_run``, carry out) ``request`` on ``table``."""
    plan = decide(request, read_facts(table))
    if dry_run:
        return RollbackResult(plan, (), ())
    return execute(table, plan)
