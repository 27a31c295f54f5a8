"""Ownership and run records: what reconciliation must remember between runs.

Paimon stores no owner for a tag or branch, so a GitOps run without a cluster (no CR status)
needs its own memory to be unidirectional (operator-design.md §1.1): which tags and branches a
manifest created or adopted (only those are ever deleted when their manifest goes away), their
deletion policy, tags expired by TTL (so they are not recreated), and when each scheduled
maintenance last ran (so a schedule is honoured and a plan right after an apply is empty).

``WarehouseRecordStore`` keeps one small JSON document per table at
``<warehouse>/.tablekeeper/state/<db>.<table>.json``: outside every table directory (catalogs
list only ``*.db`` directories, orphan cleanup only looks inside tables) and next to the data,
so CI runners without a persistent disk share it. The operator keeps the same facts in CR
status instead and can pass its own :class:`RecordStore`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from tablekeeper.core import errors
from tablekeeper.core.storage import FileIO, join

__all__ = [
    "TagRecord",
    "BranchRecord",
    "TableRecords",
    "RecordStore",
    "MemoryRecordStore",
    "WarehouseRecordStore",
    "STATE_DIR",
]

STATE_DIR = ".tablekeeper/state"
_VERSION = 1


@dataclass(frozen=True)
class TagRecord:
    """A tag a manifest owns (created or adopted)."""

    resource: str
    snapshot_id: int
    deletion_policy: str = "Delete"
    expired: bool = False
    #: When its TTL ends (epoch ms), if known: a tag gone after that expired, it is not recreated.
    expires_ms: int | None = None

    def ttl_expired(self, now_ms: int) -> bool:
        """Whether the tag has expired: marked so when tablekeeper expired it, or its TTL has
        ended. A gone tag that expired is never recreated (the planner's rule; the operator reads
        the planner's ``Skipped(cause="TagExpired")``, it does not decide this itself)."""
        return self.expired or (self.expires_ms is not None and now_ms >= self.expires_ms)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"resource": self.resource, "snapshotId": self.snapshot_id,
                               "deletionPolicy": self.deletion_policy, "expired": self.expired}
        if self.expires_ms is not None:
            out["expiresMs"] = self.expires_ms
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TagRecord:
        expires = data.get("expiresMs")
        return cls(str(data["resource"]), int(data["snapshotId"]), str(data.get("deletionPolicy", "Delete")),
                   bool(data.get("expired", False)), None if expires is None else int(expires))


@dataclass(frozen=True)
class BranchRecord:
    """A branch a manifest owns; ``fork_tag`` is the fork tag tablekeeper created for it."""

    resource: str
    deletion_policy: str = "Delete"
    created_ms: int = 0
    fork_tag: str | None = None
    #: Dropped by its TTL: not recreated while its manifest stays.
    expired: bool = False
    #: Recorded, creation not confirmed yet (a crash in between): the next plan creates it again.
    pending: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"resource": self.resource, "deletionPolicy": self.deletion_policy,
                               "createdMs": self.created_ms, "expired": self.expired}
        if self.fork_tag:
            out["forkTag"] = self.fork_tag
        if self.pending:
            out["pending"] = True
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BranchRecord:
        return cls(str(data["resource"]), str(data.get("deletionPolicy", "Delete")), int(data.get("createdMs", 0)),
                   data.get("forkTag"), bool(data.get("expired", False)), bool(data.get("pending", False)))


@dataclass(frozen=True)
class TableRecords:
    """The records of one table. Immutable: ``with_*`` return updated copies."""

    tags: Mapping[tuple[str, str], TagRecord] = field(default_factory=dict)  # (branch, tag)
    branches: Mapping[str, BranchRecord] = field(default_factory=dict)
    last_runs: Mapping[str, int] = field(default_factory=dict)  # maintenance kind -> epoch ms

    def tag(self, branch: str, name: str) -> TagRecord | None:
        return self.tags.get((branch, name))

    def with_tag(self, branch: str, name: str, record: TagRecord | None) -> TableRecords:
        tags = dict(self.tags)
        if record is None:
            tags.pop((branch, name), None)
        else:
            tags[(branch, name)] = record
        return replace(self, tags=tags)

    def with_branch(self, name: str, record: BranchRecord | None) -> TableRecords:
        branches = dict(self.branches)
        if record is None:
            branches.pop(name, None)
        else:
            branches[name] = record
        tags = {k: v for k, v in self.tags.items() if record is not None or k[0] != name}
        return replace(self, branches=branches, tags=tags)

    def with_run(self, kind: str, at_ms: int) -> TableRecords:
        return replace(self, last_runs={**self.last_runs, kind: at_ms})

    def to_json(self, identifier: str) -> dict[str, Any]:
        tags: dict[str, dict[str, Any]] = {}
        for (branch, name), record in sorted(self.tags.items()):
            tags.setdefault(branch, {})[name] = record.to_json()
        return {"version": _VERSION, "table": identifier, "tags": tags,
                "branches": {n: r.to_json() for n, r in sorted(self.branches.items())},
                "lastRuns": dict(sorted(self.last_runs.items()))}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TableRecords:
        if data.get("version") != _VERSION:
            raise errors.FormatError(f"unsupported tablekeeper state version {data.get('version')!r}",
                                     fix="upgrade tablekeeper")
        tags = {(branch, name): TagRecord.from_json(rec)
                for branch, by_name in (data.get("tags") or {}).items() for name, rec in by_name.items()}
        branches = {name: BranchRecord.from_json(rec) for name, rec in (data.get("branches") or {}).items()}
        runs = {str(k): int(v) for k, v in (data.get("lastRuns") or {}).items()}
        return cls(tags, branches, runs)


class RecordStore(Protocol):
    """Where records live (a warehouse file for the CLI; CR status for the operator)."""

    def load(self, warehouse: str, identifier: str) -> TableRecords: ...

    def save(self, warehouse: str, identifier: str, records: TableRecords) -> None: ...


class MemoryRecordStore:
    """Records in memory (tests, dry runs)."""

    def __init__(self) -> None:
        self.data: dict[tuple[str, str], TableRecords] = {}

    def load(self, warehouse: str, identifier: str) -> TableRecords:
        return self.data.get((warehouse, identifier), TableRecords())

    def save(self, warehouse: str, identifier: str, records: TableRecords) -> None:
        self.data[(warehouse, identifier)] = records


class WarehouseRecordStore:
    """Records as ``<warehouse>/.tablekeeper/state/<db>.<table>.json``."""

    def __init__(self, file_io_for: Any) -> None:
        """``file_io_for(warehouse) -> FileIO``."""
        self._file_io_for = file_io_for

    def path(self, warehouse: str, identifier: str) -> str:
        return join(warehouse, STATE_DIR, f"{identifier}.json")

    def load(self, warehouse: str, identifier: str) -> TableRecords:
        io: FileIO = self._file_io_for(warehouse)
        path = self.path(warehouse, identifier)
        try:
            raw = io.read_bytes(path)
        except FileNotFoundError:
            return TableRecords()
        try:
            data = json.loads(raw)
        except ValueError as e:
            raise errors.FormatError(f"{path} is not valid JSON: {e}",
                                     fix="restore it, or delete it to forget which tags/branches tablekeeper owns "
                                         "(nothing is deleted then; objects are adopted again)") from e
        return TableRecords.from_json(data)

    def save(self, warehouse: str, identifier: str, records: TableRecords) -> None:
        io: FileIO = self._file_io_for(warehouse)
        io.overwrite(self.path(warehouse, identifier),
                     json.dumps(records.to_json(identifier), indent=2, sort_keys=False) + "\n")
