"""Opening a table through its catalog, and the catalog's side of a partition drop.

:func:`open_catalog_table` is the one place a table's handle gets its catalog's location, vended
credentials and commit lock (``FileIO.commit_guard``: every commit file tablekeeper writes for the
table is written while the lock is held). :func:`expire_partitions` is the partition drop in
Paimon's order for catalogs that keep partitions (Hive with ``metastore.partitioned-table``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tablekeeper.core import paimon
from tablekeeper.core.catalogs.catalog import Catalog, CatalogTable
from tablekeeper.core.catalogs.commit_lock import TableCommitGuard
from tablekeeper.core.paimon import Table, open_table_path
from tablekeeper.core.safety import concurrency
from tablekeeper.core.storage import FileIO

__all__ = ["open_catalog_table", "expire_partitions", "metastore_spec", "unlocked_note", "CATALOG_DROPPED"]

#: The seam between the catalog's partition drop and the storage commit (crash tests).
CATALOG_DROPPED = "expire-partitions:catalog-dropped"


def open_catalog_table(catalog: Catalog, identifier: str, *, branch: str = paimon.MAIN,
                       storage_options: Mapping[str, Any] | None = None) -> tuple[Table, CatalogTable]:
    """The table ``db.table`` where its catalog says it is, read with the catalog's credentials,
    its commits guarded by the catalog's lock (when ``lock.enabled``)."""
    resolved = catalog.resolve(identifier, dict(storage_options or {}))
    io = FileIO.for_uri(resolved.location, resolved.storage_options)
    root = io.normalize(resolved.location).rstrip("/")
    lock = catalog.commit_lock(identifier)
    if lock is not None:
        io.commit_guard = TableCommitGuard(root, lambda: lock)
    return open_table_path(root, branch=branch, file_io=io, identifier=identifier), resolved


def unlocked_note(catalog: Catalog, table: Table) -> str | None:
    """What running without a catalog lock means on an object store (said once per command), or None."""
    if table.file_io.commit_guard is not None or table.file_io.is_local or catalog.metastore == "rest":
        return None
    return ("no catalog lock (lock.enabled): tablekeeper's commits are create-if-absent, but a Paimon writer that "
            "commits by check-then-rename on this object store can still overwrite one; set lock.enabled=true "
            "with a hive or jdbc metastore when Java writers commit beside tablekeeper")


def metastore_spec(values: Sequence[Any], keys: Sequence[str], default_name: str) -> dict[str, str]:
    """A partition's typed values as the metastore names them (``InternalRowPartitionComputer``:
    a null or blank value is ``partition.default-name``; booleans lower case)."""
    out: dict[str, str] = {}
    for key, value in zip(keys, values, strict=True):
        text = ("true" if value else "false") if isinstance(value, bool) else "" if value is None else str(value)
        out[key] = text if text.strip() else default_name
    return out


def expire_partitions(resolved: CatalogTable, table: Table, specs: Sequence[Mapping[str, str]],
                      commit: Callable[[], int]) -> tuple[int, int]:
    """``HiveCatalog.dropPartitions``' order: drop the partitions in the catalog first (those still
    present on another branch are kept there), then ``commit`` (the storage commit). Returns
    (dropped in the catalog, dropped in storage). A crash between the two leaves the partitions
    in storage; the next run plans them again and finds nothing more to drop in the catalog."""
    if not specs:
        return 0, commit()
    elsewhere = _partitions_on_other_branches(table, resolved)
    in_catalog = [s for s in specs if tuple(sorted(s.items())) not in elsewhere]
    dropped = resolved.catalog.drop_partitions(resolved, in_catalog)
    concurrency.point(CATALOG_DROPPED)
    return dropped, commit()


def _partitions_on_other_branches(table: Table, resolved: CatalogTable) -> set[tuple[tuple[str, str], ...]]:
    from tablekeeper.core.reclaim import partitions

    keys = list(resolved.details.get("partition_keys") or [])
    if not keys:
        return set()
    default = table.schema().options.get("partition.default-name", "__DEFAULT_PARTITION__")
    out: set[tuple[tuple[str, str], ...]] = set()
    for other in table.all_branches():
        if other.branch == table.branch:
            continue
        for info in partitions.list_partitions(other):
            out.add(tuple(sorted(metastore_spec(info.values, keys, default).items())))
    return out
