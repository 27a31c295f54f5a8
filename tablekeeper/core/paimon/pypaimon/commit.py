"""Commits that need Paimon's conflict logic go through pypaimon: partition drops are an
OVERWRITE snapshot whose delta DELETEs every live file of the partitions (Java's
``FileStoreCommitImpl.dropPartitions``); snapshot expiration reclaims the files later. Removing
missing data files is a commit whose delta DELETEs those files' entries (Java's
``remove_unexisting_files``: a data increment of deleted files, no new file)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from pypaimon import CatalogFactory

from tablekeeper.core import errors
from tablekeeper.core.storage import FileIO, Store, store_of

__all__ = ["drop_partitions", "remove_data_files"]

#: Stores pypaimon reaches with its own file IO (``FileIO.get``) and commits on as Paimon does;
#: the others (object stores included) commit through tablekeeper's storage layer
#: (``pypaimon_store_io``): create-if-absent snapshot files where pypaimon's temp file + rename is
#: not atomic, every request counted with the command's, and no HEAD before each GET, no
#: directory check before each write, each manifest fetched once (docs/storage-internals.md).
_PYPAIMON_NATIVE = (Store.LOCAL,)


def _catalog(warehouse: str, options: dict[str, str], file_io: FileIO | None) -> Any:
    if store_of(warehouse) in _PYPAIMON_NATIVE:
        return CatalogFactory.create({"warehouse": warehouse, **options})
    from tablekeeper.core.paimon.pypaimon.store_io import store_catalog

    return store_catalog(warehouse, options, file_io)


def _table_catalog(table_root: str, branch: str, options: Mapping[str, str] | None,
                   file_io: FileIO | None) -> tuple[Any, str]:
    warehouse = table_root.rsplit("/", 2)[0]
    db = table_root.rsplit("/", 2)[1].removesuffix(".db")
    name = table_root.rsplit("/", 1)[1]
    catalog = _catalog(warehouse, dict(options or {}), file_io)
    return catalog, (f"{db}.{name}" if branch == "main" else f"{db}.{name}$branch_{branch}")


def _in_one_view(catalog: Any, commit: Callable[[], Any]) -> Any:
    io = getattr(catalog.file_io, "tk_io", None)
    if io is None:
        return commit()
    # one view until the commit writes (FileIO.one_view): schema listings and hints read once; a
    # lost race for the snapshot file forgets its answers, so pypaimon's retry reads afresh
    with io.immutable_reads(), io.one_view():
        return commit()


def drop_partitions(table_root: str, branch: str, partitions: Sequence[Mapping[str, Any]],
                    options: Mapping[str, str] | None = None, *, file_io: FileIO | None = None) -> None:
    """Commit one OVERWRITE snapshot dropping ``partitions`` (typed values per key), through
    ``file_io`` when given (the command's, so its requests are counted with the command's).

    Raises whatever pypaimon raises on a commit conflict; callers retry with a fresh plan."""
    catalog, identifier = _table_catalog(table_root, branch, options, file_io)
    _in_one_view(catalog, lambda: _commit(catalog, identifier, partitions))


def remove_data_files(table_root: str, branch: str, file_names: Collection[str], snapshot_id: int,
                      options: Mapping[str, str] | None = None, *, file_io: FileIO | None = None) -> int:
    """Commit one snapshot whose delta DELETEs the live entries of the data files ``file_names``
    of the branch's latest snapshot, which must be ``snapshot_id`` (what the caller planned on).
    Every level is read (Java's scan ``withLevelFilter(alwaysTrue)``). Returns the entries
    deleted; 0 (and no commit) when none of the files is live any more.

    Raises:
        ConcurrentModificationError: the latest snapshot is no longer ``snapshot_id``.
        Whatever pypaimon raises on a commit conflict; callers re-plan."""
    catalog, identifier = _table_catalog(table_root, branch, options, file_io)
    return int(_in_one_view(catalog, lambda: _remove(catalog, identifier, set(file_names), snapshot_id)))


def _remove(catalog: Any, identifier: str, names: set[str], snapshot_id: int) -> int:
    from pypaimon.write.commit_message import CommitMessage

    table = catalog.get_table(identifier)
    scanner = table.new_read_builder().new_scan().file_scanner
    scanner.skip_level0 = False
    entries = scanner.plan_files()
    scanned = scanner._scanned_snapshot_id
    if scanned != snapshot_id:
        raise errors.ConcurrentModificationError(
            f"the latest snapshot moved from {snapshot_id} to {scanned} while repairing",
            fix="run the repair again: it re-checks the new latest snapshot")
    grouped: dict[tuple[tuple[Any, ...], int], list[Any]] = {}
    for entry in entries:
        if entry.file.file_name in names:
            grouped.setdefault((tuple(entry.partition.values), entry.bucket), []).append(entry.file)
    if not grouped:
        return 0
    messages = [CommitMessage(partition=partition, bucket=bucket, new_files=[], deleted_files=files)
                for (partition, bucket), files in grouped.items()]
    commit = table.new_batch_write_builder().new_commit()
    try:
        commit.commit(messages)
    finally:
        commit.close()
    return sum(len(files) for files in grouped.values())


def _commit(catalog: Any, identifier: str, partitions: Sequence[Mapping[str, Any]]) -> None:
    table = catalog.get_table(identifier)
    commit = table.new_batch_write_builder().new_commit()
    try:
        commit.truncate_partitions([dict(p) for p in partitions])
    finally:
        commit.close()
