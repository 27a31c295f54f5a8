"""The actual state of a table, read once per plan: snapshots (ids, commit times, watermarks),
tags of every branch, branches with their fork points, fork-point protection, table options.

A :class:`TableState` is plain data, so deciding what to do about tags and branches is a pure
function of (desired state, table state, records, now).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tablekeeper.core import paimon, refs
from tablekeeper.core.paimon import Snapshot, Table, Tag
from tablekeeper.core.refs import SnapshotPoint, TagPoint

__all__ = ["TagState", "BranchState", "TableState", "observe"]

Identity = tuple[int, str | None, str | None]


@dataclass(frozen=True)
class TagState:
    name: str
    snapshot_id: int
    identity: Identity
    snapshot_time_ms: int
    create_time: datetime | None = None
    time_retained: timedelta | None = None

    @property
    def point(self) -> TagPoint:
        return TagPoint(self.name, self.snapshot_id, self.create_time, self.time_retained)


@dataclass(frozen=True)
class BranchState:
    name: str
    fork_snapshot_id: int | None
    fork_identity: Identity | None
    from_tag: str | None
    created_ms: int | None
    latest_commit_ms: int | None
    snapshot_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class TableState:
    """One table as read from storage (main plus every branch)."""

    identifier: str
    options: Mapping[str, str]
    snapshots: Mapping[str, tuple[SnapshotPoint, ...]]  # branch -> snapshots ascending
    tags: Mapping[str, Mapping[str, TagState]]  # branch -> name -> tag
    branches: Mapping[str, BranchState]
    fork_tags: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)  # branch -> tag -> users
    #: main's partition keys (None: not read)
    partition_keys: tuple[str, ...] | None = None

    def branch_snapshots(self, branch: str = paimon.MAIN) -> tuple[SnapshotPoint, ...]:
        return self.snapshots.get(branch, ())

    def snapshot(self, snapshot_id: int, branch: str = paimon.MAIN) -> SnapshotPoint | None:
        for s in self.branch_snapshots(branch):
            if s.id == snapshot_id:
                return s
        return None

    def latest(self, branch: str = paimon.MAIN) -> SnapshotPoint | None:
        snaps = self.branch_snapshots(branch)
        return snaps[-1] if snaps else None

    def branch_tags(self, branch: str = paimon.MAIN) -> Mapping[str, TagState]:
        return self.tags.get(branch, {})

    def has_branch(self, branch: str) -> bool:
        return branch == paimon.MAIN or branch in self.branches

    def protected_tags(self, branch: str = paimon.MAIN) -> Mapping[str, tuple[str, ...]]:
        """Fork-point tags of ``branch``: {tag: branches created from it}."""
        return self.fork_tags.get(branch, {})


def _snapshots(t: Table, read: list[Snapshot] | None = None) -> tuple[SnapshotPoint, ...]:
    return tuple(SnapshotPoint(s.id, s.time_millis, s.watermark) for s in (t.snapshots() if read is None else read))


def _tags(t: Table, read: list[Tag] | None = None) -> dict[str, TagState]:
    return {tag.name: TagState(tag.name, tag.snapshot_id, tag.snapshot.identity(), tag.snapshot.time_millis,
                               tag.create_time, tag.time_retained) for tag in (t.tags() if read is None else read)}


def _created_ms(t: Table) -> int | None:
    """A branch's creation time: the oldest of its schema files (copied when it was created)."""
    times = [s.mtime_ms for s in t.file_io.list_dir(t.dir(paimon.SCHEMA_DIR)) if not s.is_dir]
    return min(times) if times else None


def observe(table: Table) -> TableState:
    """Read the state of ``table`` (all branches)."""
    main = table.on_branch(paimon.MAIN)
    main_snapshots, main_tags = main.snapshots(), main.tags()  # each file read once per observation
    snapshots: dict[str, tuple[SnapshotPoint, ...]] = {paimon.MAIN: _snapshots(main, main_snapshots)}
    tags: dict[str, dict[str, TagState]] = {paimon.MAIN: _tags(main, main_tags)}
    branches: dict[str, BranchState] = {}
    main_ids = refs.identities_of(main_tags, main_snapshots)
    branch_names = main.branch_names()
    points = {name: refs.fork_point(main.on_branch(name), main_ids) for name in branch_names}
    for name in branch_names:
        b = main.on_branch(name)
        snapshots[name] = _snapshots(b)
        tags[name] = _tags(b)
        fp = points.get(name)
        latest = snapshots[name][-1].time_millis if snapshots[name] else None
        branches[name] = BranchState(name, fp.snapshot_id if fp else None, fp.identity if fp else None,
                                     fp.from_tag if fp else None, _created_ms(b), latest,
                                     tuple(s.id for s in snapshots[name]))
    fork_tags: dict[str, dict[str, tuple[str, ...]]] = {}
    known = [fp for fp in points.values() if fp.identity is not None]
    for branch_name, by_name in tags.items():
        users: dict[str, tuple[str, ...]] = {}
        for tag in by_name.values():
            forked = refs.fork_users(branch_name, tag.identity, known, main_ids)
            if forked:
                users[tag.name] = tuple(forked)
        if users:
            fork_tags[branch_name] = users
    return TableState(table.identifier, dict(main.options()), snapshots, tags, branches, fork_tags,
                      tuple(main.schema().partition_keys))
