"""What a maintenance run did, whichever engine ran it, and its one rendering as ``status.result``.

An in-process run (:mod:`tablekeeper.operator.runs.engines`), a branch verb
(:mod:`tablekeeper.operator.runs.verbs`) and a Spark run (its result artifact, read by
:mod:`tablekeeper.operator.runs.spark`) each fill a :class:`RunReport`; :meth:`RunReport.to_status`
is the only code that writes the ``status.result`` keys (and the table's ``lastResult``), and the
metrics read the typed fields, never the rendered dict. Fields an engine does not know stay None
and are left out of the status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tablekeeper.spark import result_artifact

__all__ = ["SAMPLE_MAX", "RunReport", "from_artifact"]

#: Most sample entries (paths or messages) a run status carries.
SAMPLE_MAX = 20


@dataclass(frozen=True)
class RunReport:
    """Counts of one run. ``expired_*``: what was executed (or, in a dry run, planned);
    ``*_by_kind``: per planned file kind (``data``, ``manifest``...), known for Spark runs."""

    dry_run: bool
    planned_files: int | None = None
    planned_bytes: int | None = None
    deleted_files: int | None = None
    reclaimed_bytes: int | None = None
    missing_files: int | None = None
    written_files: int | None = None
    failures: int | None = None
    expired_snapshots: int | None = None
    expired_changelogs: int | None = None
    expired_partitions: int | None = None
    expired_tags: int | None = None
    expired_consumers: int | None = None
    orphan_files: int | None = None
    #: Check: views and files read, and the views that lost a file
    checked_views: int | None = None
    checked_files: int | None = None
    broken_views: int | None = None
    #: RemoveMissingFiles: data file entries the repair commit removed (planned, in a dry run)
    removed_entries: int | None = None
    #: Rollback: the snapshot the run committed (or would commit), and what it restores
    restored_snapshot_id: int | None = None
    target_snapshot_id: int | None = None
    #: the trash run that keeps what the run removed (the table's trash.keep window), its end
    #: (epoch ms) and what it moved; Undo: the files put back
    trash_run: str | None = None
    trash_keep_until_ms: int | None = None
    trash_moved_files: int | None = None
    trash_moved_bytes: int | None = None
    restored_files: int | None = None
    planned_by_kind: Mapping[str, int] | None = None
    planned_bytes_by_kind: Mapping[str, int] = field(default_factory=dict)
    deleted_by_kind: Mapping[str, int] = field(default_factory=dict)
    deleted_bytes_by_kind: Mapping[str, int] = field(default_factory=dict)
    missing_by_kind: Mapping[str, int] = field(default_factory=dict)
    sample: tuple[str, ...] = ()
    failure_sample: tuple[Mapping[str, Any], ...] = ()
    #: storage requests of the run by kind (``list``, ``get``, ``bulk_delete``... and ``total``)
    storage_requests: Mapping[str, int] | None = None
    #: the core plans' notes (why the plan stops where it does), as the CLI prints them
    notes: tuple[str, ...] = ()

    def to_status(self) -> dict[str, Any]:
        """``status.result`` (camelCase keys; unknown counts left out)."""
        out: dict[str, Any] = {"dryRun": self.dry_run}
        for key, value in (("expiredSnapshots", self.expired_snapshots), ("expiredChangelogs", self.expired_changelogs),
                           ("expiredPartitions", self.expired_partitions), ("expiredTags", self.expired_tags),
                           ("expiredConsumers", self.expired_consumers),
                           ("orphanFiles", self.orphan_files), ("checkedViews", self.checked_views),
                           ("checkedFiles", self.checked_files), ("brokenViews", self.broken_views),
                           ("removedEntries", self.removed_entries), ("restoredFiles", self.restored_files),
                           ("restoredSnapshotId", self.restored_snapshot_id),
                           ("targetSnapshotId", self.target_snapshot_id), ("plannedFiles", self.planned_files),
                           ("plannedBytes", self.planned_bytes), ("writtenFiles", self.written_files),
                           ("deletedFiles", self.deleted_files), ("reclaimedBytes", self.reclaimed_bytes),
                           ("missingFiles", self.missing_files), ("failures", self.failures)):
            if value is not None:
                out[key] = value
        if self.trash_run is not None:
            from tablekeeper.core import values

            out["trash"] = {"run": self.trash_run, "movedFiles": self.trash_moved_files or 0,
                            "movedBytes": self.trash_moved_bytes or 0}
            if self.trash_keep_until_ms is not None:
                out["trash"]["keepUntil"] = values.rfc3339_ms(self.trash_keep_until_ms)
        if self.planned_by_kind is not None:
            out["planned"] = {"files": dict(self.planned_by_kind), "bytes": dict(self.planned_bytes_by_kind)}
            out["executed"] = {"deleted": dict(self.deleted_by_kind), "deletedBytes": dict(self.deleted_bytes_by_kind),
                               "missing": dict(self.missing_by_kind)}
        if self.sample or self.deleted_files is not None or self.written_files is not None:
            out["sample"] = list(self.sample[:SAMPLE_MAX])
        if self.failure_sample:
            out["failureSample"] = [dict(x) for x in self.failure_sample[:SAMPLE_MAX]]
        if self.storage_requests is not None:
            out["storageRequests"] = dict(self.storage_requests)
        if self.notes:
            out["notes"] = list(self.notes[:SAMPLE_MAX])
        return out


def from_artifact(artifact: result_artifact.RunResult, run_type: str) -> RunReport:
    """The report of a Spark run from its result artifact: the in-process counts plus per-kind
    counts. ``expiredSnapshots`` / ``expiredChangelogs`` are the snapshot and ``changelog-N``
    files the job planned (and, unless a dry run, deleted)."""
    planned = sum(artifact.planned_files.values())
    snapshots = changelogs = orphans = None
    if run_type == "ExpireSnapshots":
        snapshots = int(artifact.planned_files.get("snapshot", 0))
        if "changelog" in artifact.details:  # the job's second step (with_changelog) ran
            changelogs = int(artifact.planned_files.get("changelog-meta", 0))
    elif run_type == "RemoveOrphanFiles":
        orphans = planned
    return RunReport(
        dry_run=artifact.dry_run, planned_files=planned, planned_bytes=sum(artifact.planned_bytes.values()),
        deleted_files=artifact.total_deleted, reclaimed_bytes=sum(artifact.deleted_bytes.values()),
        missing_files=sum(artifact.missing.values()), failures=artifact.failed_count,
        expired_snapshots=snapshots, expired_changelogs=changelogs, orphan_files=orphans,
        planned_by_kind=dict(artifact.planned_files), planned_bytes_by_kind=dict(artifact.planned_bytes),
        deleted_by_kind=dict(artifact.deleted), deleted_bytes_by_kind=dict(artifact.deleted_bytes),
        missing_by_kind=dict(artifact.missing), sample=tuple(artifact.sample[:SAMPLE_MAX]),
        failure_sample=tuple(dict(x) for x in artifact.failure_sample[:SAMPLE_MAX]),
        storage_requests=dict(artifact.requests) if artifact.requests else None,
        notes=tuple(dict.fromkeys(artifact.notes)), **_trash_of(artifact))


def _trash_of(artifact: result_artifact.RunResult) -> dict[str, Any]:
    """The trash run of a Spark run with a window: what it deleted, it moved there."""
    kept = artifact.details.get("trash")
    if not isinstance(kept, dict) or artifact.dry_run or not artifact.total_deleted:
        return {}
    return {"trash_run": str(kept["run"]), "trash_keep_until_ms": int(kept["keepUntilMs"]),
            "trash_moved_files": artifact.total_deleted, "trash_moved_bytes": sum(artifact.deleted_bytes.values())}
