"""The catalog-owned writes of recovery: committing a snapshot, moving LATEST, creating a tag.

One function per operation and nothing else writes these files for recovery, so a catalog that
owns commits (a REST catalog) can take each operation over in one place. Today every one goes
to the table's storage, create-if-absent where Paimon's own writers are."""

from __future__ import annotations

from datetime import timedelta

from tablekeeper.core import errors, paimon, refs
from tablekeeper.core.paimon import Snapshot, Table
from tablekeeper.core.safety import concurrency
from tablekeeper.core.storage import join

__all__ = ["latest_as_planned", "commit_snapshot", "advance_latest", "create_tag", "unpublish_snapshot", "unpublish_changelog",
           "delete_tag_file", "reset_latest"]


def latest_as_planned(table: Table, planned_id: int, what: str, fix: str) -> Snapshot:
    """The branch's latest snapshot, which must still be ``planned_id`` (the one ``what`` was
    planned on) before anything is committed on top of it.

    Raises:
        ConcurrentModificationError: a writer committed since (``fix`` says what to do).
    """
    latest = table.latest_snapshot()
    if latest is None or latest.id != planned_id:
        raise errors.ConcurrentModificationError(
            f"the latest snapshot of {table.identifier} moved from {planned_id} to "
            f"{latest.id if latest else None} since the {what} was planned", fix=fix)
    return latest


def commit_snapshot(table: Table, snapshot: Snapshot) -> None:
    """Publish ``snapshot`` as ``snapshot-<id>`` of ``table``'s branch (create-if-absent).

    Raises:
        ConcurrentModificationError: another writer committed that id first.
    """
    try:
        table.file_io.write_new(table.snapshot_path(snapshot.id), snapshot.to_json())
    except FileExistsError:
        raise errors.ConcurrentModificationError(
            f"snapshot {snapshot.id} of {table.identifier} was committed by another writer meanwhile",
            fix="rerun the same command: it plans again from the new latest snapshot") from None


def advance_latest(table: Table, snapshot_id: int) -> None:
    """Point the branch's LATEST hint at ``snapshot_id`` (never backwards: core/safety/concurrency/hint_writes.py)."""
    concurrency.write_hint(table.file_io, join(table.dir(paimon.SNAPSHOT_DIR), paimon.LATEST), snapshot_id)


def create_tag(table: Table, name: str, snapshot_id: int, *, time_retained: timedelta | None = None) -> str:
    """Create tag ``name`` at ``snapshot_id`` (idempotent); returns ``created`` or ``unchanged``.

    Raises:
        TagConflictError: the tag exists at another snapshot.
    """
    return refs.create_tag(table, name, snapshot_id=snapshot_id, time_retained=time_retained).action


def unpublish_snapshot(table: Table, snapshot_id: int) -> None:
    """Remove ``snapshot-<id>`` of the branch (a rollback discarding it; its bytes are saved first)."""
    table.file_io.delete_files([table.snapshot_path(snapshot_id)], tell_missing=False)


def unpublish_changelog(table: Table, changelog_id: int) -> None:
    """Remove the long-lived ``changelog-<id>`` of the branch (saved first, as a snapshot)."""
    table.file_io.delete_files([table.changelog_path(changelog_id)], tell_missing=False)


def delete_tag_file(table: Table, name: str) -> None:
    """Remove ``tag-<name>`` of the branch (saved first; its files are cleaned afterwards)."""
    table.file_io.delete_files([table.tag_path(name)], tell_missing=False)


def reset_latest(table: Table, snapshot_id: int) -> None:
    """Point LATEST back at ``snapshot_id`` (a rollback discarding later snapshots: the one write
    that moves LATEST backwards, as Paimon's ``commitLatestHint`` after ``rollback_to``)."""
    table.file_io.overwrite(join(table.dir(paimon.SNAPSHOT_DIR), paimon.LATEST), paimon.encode_hint(snapshot_id))
