"""Purging trash runs for good: after their window (or undone), or older than asked.

A purge first writes the run's record to ``purged/`` (so an undo says the run was purged rather
than unknown), then the versions the run kept (S3 with versioning: each file's recorded version
id, deleted for good, except one that is its file's current version, i.e. never deleted, or one
a run not purged recorded too), then the run's files and its directory, so a crash leaves the
records that name what is left. Only paths below the table's trash are ever deleted, and
versions of table files only as recorded. A crash in between is finished by the next purge: the run is then listed
as purged-in-progress (its record is still in ``purged/`` and its directory partly there)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tablekeeper.core import values
from tablekeeper.core.safety import concurrency
from tablekeeper.core.safety.trash import layout
from tablekeeper.core.storage import DeleteOutcome, FileIO, join

__all__ = ["PurgeResult", "purge"]


@dataclass
class PurgeResult:
    runs: list[str] = field(default_factory=list)
    files: int = 0
    bytes: int = 0
    failed: int = 0

    def as_dict(self) -> dict[str, object]:
        return {"purged_runs": list(self.runs), "purged_files": self.files, "purged_bytes": self.bytes,
                "failed": self.failed}


def due(io: FileIO, table_root: str, now_ms: int, older_than_ms: int | None = None) -> list[layout.RunRecord]:
    """The runs a purge removes: those past their window or undone; with ``older_than_ms``, those
    created before it instead (whatever their window)."""
    runs = layout.list_runs(io, table_root)
    if older_than_ms is not None:
        return [r for r in runs if r.created_ms < older_than_ms]
    return [r for r in runs if layout.state_of(io, table_root, r, now_ms) is not layout.RunState.KEPT]


def purge(io: FileIO, table_root: str, now_ms: int, older_than_ms: int | None = None, *,
          dry_run: bool = False) -> PurgeResult:
    """Delete the :func:`due` runs of the table's trash (``dry_run``: only say which, and how much)."""
    root = table_root.rstrip("/")
    trash = layout.trash_root(root).rstrip("/") + "/"
    result = PurgeResult()
    runs = due(io, root, now_ms, older_than_ms)
    purging = {r.run_id for r in runs}
    # versions a run that stays recorded too (a rerun after a crash records the same one): kept
    still_needed = {(m.relative, m.version) for r in layout.list_runs(io, root) if r.run_id not in purging
                    for m in layout.read_moves(io, root, r.run_id) if m.version is not None}
    for record in runs:
        run_dir = layout.run_dir(root, record.run_id)
        # (only what lies inside the trash, whatever a listing answered)
        files = [s for s in io.walk_files(run_dir) if io.normalize(s.path).startswith(io.normalize(trash))]
        result.runs.append(record.run_id)
        stored = [s for s in files if s.path.startswith(layout.files_dir(root, record.run_id))]
        versions = [m for m in layout.read_moves(io, root, record.run_id)
                    if m.version is not None and (m.relative, m.version) not in still_needed
                    and not m.relative.startswith(f"{concurrency.LEASE_DIR}/") and ".." not in m.relative.split("/")]
        if dry_run:
            result.files += len(stored) + len(versions)
            result.bytes += sum(s.size for s in stored) + sum(m.size or 0 for m in versions)
            continue
        try:
            io.write_new(layout.purged_record(root, record.run_id), record.as_json())
        except FileExistsError:
            pass
        if not _delete_versions(io, root, versions, result):
            continue  # the run's records stay, naming what is left: the next purge retries
        paths = [s.path for s in files]
        sizes = {s.path: s.size for s in stored}
        for start in range(0, len(paths), values.DELETE_BATCH_MAX):
            for r in io.delete_files(paths[start:start + values.DELETE_BATCH_MAX]):
                if r.outcome is DeleteOutcome.FAILED:
                    result.failed += 1
                elif r.path in sizes:
                    result.files += 1
                    result.bytes += sizes[r.path]
        if not result.failed:
            io.delete_tree(run_dir)
    return result


def _delete_versions(io: FileIO, root: str, versions: list[layout.MovedFile], result: PurgeResult) -> bool:
    """Delete the kept ``versions`` for good, except a file's current version (its run never
    deleted it: it is the table's file); one HEAD each, then the deletes in batches. True when
    none failed."""
    doomed: list[tuple[str, str]] = []
    sizes: dict[tuple[str, str], int] = {}
    for m in versions:
        if m.version is None:
            continue
        place = join(root, m.relative)
        try:
            current, _size = io.version_of(place)
        except FileNotFoundError:
            current = None
        if current == m.version:
            continue
        doomed.append((place, m.version))
        sizes[(place, m.version)] = m.size or 0
    ok = True
    for start in range(0, len(doomed), values.DELETE_BATCH_MAX):
        batch = doomed[start:start + values.DELETE_BATCH_MAX]
        for pair, r in zip(batch, io.delete_versions(batch), strict=True):
            if r.outcome is DeleteOutcome.FAILED:
                result.failed += 1
                ok = False
            else:
                result.files += 1
                result.bytes += sizes[pair]
    return ok
