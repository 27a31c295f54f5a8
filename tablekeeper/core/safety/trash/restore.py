"""Undoing a trash run: every file back to its place, then the hints.

Checked before anything moves (bad input changes nothing): the run exists and was neither purged
nor undone; no later run of the table is still in the trash (a later run may have removed what
this run's restored files need, e.g. a tag deleted and then the snapshot it held expired: runs
are undone newest first, and the error names the one to undo first); no place of the run's files
holds other bytes.

Files go back referenced-first (data, changelog, index and statistics files, manifests, manifest
lists, index manifests, schemas, changelog and snapshot files, hints, then tags), so a reader never
sees a snapshot or tag whose files are not back yet. Restored names are immutable (UUID or
numbered files a writer never reuses), so commits made since the run are untouched and the views
of that moment simply reappear. Then each snapshot directory's EARLIEST names the oldest snapshot
of the unbroken run of ids ending at the latest one (forward-consistent with what exists).

A file the run kept as a version (S3 with versioning: its move record names the version id)
is copied back from that version, server-side; one whose recorded version the store no longer
holds refuses the undo before anything moves, and one whose place holds that very version (the
run crashed before deleting it) or equal bytes counts as back.

On object stores a file goes back by one server-side copy (its place was checked empty: one
HEAD), and the trash copies are deleted together once every file is back, in the store's bulk
deletes; local disk and HDFS rename each file back.

A crash at any point is finished by a rerun: a file already back (its trash copy gone, or equal
bytes at its place) counts as restored."""

from __future__ import annotations

from dataclasses import dataclass, field

from tablekeeper.core import errors, paimon
from tablekeeper.core.safety.trash import layout
from tablekeeper.core.safety.trash.moves import same_file
from tablekeeper.core.storage import DeleteOutcome, FileIO, basename, join, parent

__all__ = ["UndoResult", "undo", "RESTORE_ORDER"]

#: Restore stages: a file only after every file it names.
RESTORE_ORDER: tuple[str, ...] = ("data", "changelog", "index", "statistics", "manifest", "schema",
                                  "changelog-meta", "snapshot", "other", "hint", "tag")


@dataclass
class UndoResult:
    run: layout.RunRecord
    restored: int = 0
    restored_bytes: int = 0
    already_back: int = 0
    #: recorded but never moved (the run was interrupted before moving them): left as they are
    never_moved: int = 0
    hints: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"run": self.run.run_id, "operation": self.run.operation, "restored": self.restored,
                "restored_bytes": self.restored_bytes, "already_back": self.already_back,
                "never_moved": self.never_moved, "hints": list(self.hints)}


def _rank(moved: layout.MovedFile) -> tuple[int, int, str]:
    name = basename(moved.relative)
    sub = 0
    if moved.kind == "manifest":
        sub = 2 if name.startswith("index-manifest-") else 1 if name.startswith("manifest-list-") else 0
    kind = moved.kind if moved.kind in RESTORE_ORDER else "other"
    if name in (paimon.EARLIEST, paimon.LATEST):
        kind = "hint"
    elif name.startswith(paimon.SCHEMA_PREFIX) and basename(parent(moved.relative)) == paimon.SCHEMA_DIR:
        kind = "schema"
    return RESTORE_ORDER.index(kind), sub, moved.relative


def _checked(io: FileIO, table_root: str, run_id: str) -> layout.RunRecord:
    record = layout.read_run(io, table_root, run_id)
    if record is None:
        if io.file_exists(layout.purged_record(table_root, run_id)):
            raise errors.InvalidInputError(f"trash run {run_id} was purged: its files are gone for good",
                                           fix="nothing can bring it back; `tablekeeper trash list TABLE` shows "
                                               "the runs that can still be undone")
        raise errors.InvalidInputError(f"no trash run {run_id} on {table_root}",
                                       fix="`tablekeeper trash list TABLE` shows the runs that can be undone")
    if io.file_exists(layout.undone_marker(table_root, run_id)):
        raise errors.InvalidInputError(f"trash run {run_id} was undone already", fix="nothing to do")
    later = [r for r in layout.list_runs(io, table_root)
             if (r.created_ms, r.run_id) > (record.created_ms, record.run_id)
             and not io.file_exists(layout.undone_marker(table_root, r.run_id))]
    if later:
        raise errors.InvalidInputError(
            f"trash run {later[-1].run_id} ({later[-1].operation}) ran after {run_id} and may have removed "
            "what this run's files need", fix=f"undo {later[-1].run_id} first (runs are undone newest first)")
    return record


def undo(io: FileIO, table_root: str, run_id: str, *, dry_run: bool = False) -> UndoResult:
    """Put every file of trash run ``run_id`` of the table at ``table_root`` back (``dry_run``:
    check and count only).

    Raises:
        InvalidInputError: unknown, purged or undone run, a later run still in the trash, or a
        place that holds other bytes now; nothing was changed.
        StorageError: every file is back but some trash copies could not be deleted (a rerun
        deletes them).
    """
    root = table_root.rstrip("/")
    record = _checked(io, root, run_id)
    trash = layout.files_dir(root, run_id)
    moved = sorted(layout.read_moves(io, root, run_id), key=_rank)
    plan: list[tuple[layout.MovedFile, str, str, bool, bool]] = []  # (file, from, to, in the trash, at its place)
    conflicts: list[str] = []
    gone: list[str] = []
    for m in moved:
        src, dst = join(trash, m.relative), join(root, m.relative)
        if m.version is not None:
            to_restore = _version_to_restore(io, dst, m.version, conflicts, gone)
            plan.append((m, dst, dst, to_restore, False))
            continue
        in_trash = io.file_exists(src)
        at_place = in_trash and io.file_exists(dst)
        if at_place and not same_file(io, src, dst):
            conflicts.append(dst)
        plan.append((m, src, dst, in_trash, at_place))
    if gone:
        raise errors.InvalidInputError(
            f"{len(gone)} file(s) of trash run {run_id} were kept as versions the store no longer holds, "
            f"e.g. {gone[0]}",
            fix="nothing was restored; those versions were deleted outside tablekeeper (a lifecycle rule "
                "expiring noncurrent versions sooner than the window?): keep them longer than trash.keep")
    if conflicts:
        raise errors.InvalidInputError(
            f"{len(conflicts)} file(s) of trash run {run_id} have other bytes at their place now, e.g. {conflicts[0]}",
            fix="move those files away first if they are not the table's (nothing was restored)")
    result = UndoResult(record)
    copied: list[str] = []  # object stores: trash copies to delete once every file is back
    for m, src, dst, in_trash, at_place in plan:
        if dry_run:
            result.restored += in_trash and not at_place
            result.already_back += at_place
            result.restored_bytes += (m.size or 0) if in_trash and not at_place else 0
            continue
        if not in_trash:
            if io.file_exists(dst):
                result.already_back += 1
            else:
                result.never_moved += 1
            continue
        if m.version is not None:  # a server-side copy from the version (checked above: the place is empty)
            io.copy_version(dst, dst, m.version)
            result.restored += 1
            result.restored_bytes += m.size or 0
            continue
        if at_place:  # an interrupted undo copied it already (equal bytes: checked above)
            copied.append(src)
            result.already_back += 1
            continue
        if io.moves_by_copy:
            # the place was empty a moment ago and restored names are immutable: one server-side
            # copy, the trash copy deleted with the others after every file is back
            io.copy_file(src, dst)
            copied.append(src)
        else:
            try:
                io.move_file(src, dst)  # local disk, HDFS: one rename
            except FileExistsError:
                io.delete_files([src])
                result.already_back += 1
                continue
        result.restored += 1
        result.restored_bytes += m.size or 0
    if dry_run:
        return result
    failed = [r for r in io.delete_files(copied, tell_missing=False) if r.outcome is DeleteOutcome.FAILED]
    if failed:  # every file is back; only trash copies are left over (a rerun deletes them)
        raise errors.StorageError(f"trash run {run_id} is restored, but {len(failed)} trash copies could not be "
                                  f"deleted, e.g. {failed[0].path}: {failed[0].error}",
                                  fix="run the undo again to delete them (the table reads as before already)")
    result.hints = _earliest_hints(io, root, moved)
    io.write_new(layout.undone_marker(root, run_id), record.run_id)
    return result


def _version_to_restore(io: FileIO, place: str, version: str, conflicts: list[str], gone: list[str]) -> bool:
    """Whether the file kept as ``version`` must be copied back to ``place``: not when the place
    holds that version (never deleted) or equal bytes (back already); a place holding other bytes
    goes to ``conflicts``, a version the store lost to ``gone`` (one HEAD of each, and a read of
    both when the place holds another version)."""
    if not io.has_version(place, version):
        gone.append(f"{place} (version {version})")
        return False
    try:
        current, _size = io.version_of(place)
    except FileNotFoundError:
        return True
    if current != version and io.read_bytes(place) != io.read_version(place, version):
        conflicts.append(place)
    return False


def _earliest_hints(io: FileIO, root: str, moved: list[layout.MovedFile]) -> list[str]:
    """Point EARLIEST of every snapshot or changelog directory the run touched at the oldest id
    of the unbroken run ending at the latest id there; returns the hints rewritten."""
    dirs = sorted({parent(m.relative) for m in moved if m.kind in ("snapshot", "changelog-meta")
                   or basename(parent(m.relative)) in (paimon.SNAPSHOT_DIR, paimon.CHANGELOG_DIR)})
    written: list[str] = []
    for rel in dirs:
        directory = join(root, rel)
        prefix = paimon.CHANGELOG_PREFIX if basename(rel) == paimon.CHANGELOG_DIR \
            else paimon.SNAPSHOT_PREFIX
        ids = sorted(i for i in (paimon.parse_versioned_name(s.name, prefix)
                                 for s in io.list_dir(directory) if not s.is_dir) if i is not None)
        if not ids:
            continue
        oldest = ids[-1]
        present = set(ids)
        while oldest - 1 in present:
            oldest -= 1
        path = join(directory, paimon.EARLIEST)
        try:
            current = int(io.read_text(path).strip())
        except (FileNotFoundError, ValueError):
            current = None
        if current is None or current > oldest or current not in present:
            io.overwrite(path, str(oldest))
            written.append(f"{rel}/{paimon.EARLIEST}={oldest}")
    return written
