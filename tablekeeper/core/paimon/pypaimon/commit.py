"""Commits that need Paimon's conflict logic go through pypaimon: partition drops are an
OVERWRITE snapshot whose delta DELETEs every live file of the partitions (Java's
``FileStoreCommitImpl.dropPartitions``); snapshot expiration reclaims the files later."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypaimon import CatalogFactory

from tablekeeper.core.storage import FileIO, Store, store_of

__all__ = ["drop_partitions"]

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


def drop_partitions(table_root: str, branch: str, partitions: Sequence[Mapping[str, Any]],
                    options: Mapping[str, str] | None = None, *, file_io: FileIO | None = None) -> None:
    """Commit one OVERWRITE snapshot dropping ``partitions`` (typed values per key), through
    ``file_io`` when given (the command's, so its requests are counted with the command's).

    Raises whatever pypaimon raises on a commit conflict; callers retry with a fresh plan."""
    warehouse = table_root.rsplit("/", 2)[0]
    db = table_root.rsplit("/", 2)[1].removesuffix(".db")
    name = table_root.rsplit("/", 1)[1]
    catalog = _catalog(warehouse, dict(options or {}), file_io)
    identifier = f"{db}.{name}" if branch == "main" else f"{db}.{name}$branch_{branch}"
    io = getattr(catalog.file_io, "tk_io", None)
    if io is None:
        _commit(catalog, identifier, partitions)
        return
    # one view until the commit writes (FileIO.one_view): schema listings and hints read once; a
    # lost race for the snapshot file forgets its answers, so pypaimon's retry reads afresh
    with io.immutable_reads(), io.one_view():
        _commit(catalog, identifier, partitions)


def _commit(catalog: Any, identifier: str, partitions: Sequence[Mapping[str, Any]]) -> None:
    table = catalog.get_table(identifier)
    commit = table.new_batch_write_builder().new_commit()
    try:
        commit.truncate_partitions([dict(p) for p in partitions])
    finally:
        commit.close()
