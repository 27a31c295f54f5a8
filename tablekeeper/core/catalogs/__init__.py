"""The table's catalog: where its tables are, who carries out each operation, and which lock
guards a commit.

Chosen by ``metastore`` with Paimon's option names (``filesystem`` by default, ``hive``, ``jdbc``,
``rest``; ``uri``, ``warehouse``, ``lock.enabled``, ``lock-acquire-timeout``,
``lock-check-max-sleep``, ``jdbc.*``, ``catalog-key``, ``token.provider``, ``token``). Anything
unsupported, misconfigured or unreachable is one :class:`~tablekeeper.core.errors.CatalogError`
naming the option, never a fallback to the filesystem. The catalog lock is taken at one seam, the
table's FileIO (``commit_guard``), around every snapshot, tag, branch and schema file written.
"""

from __future__ import annotations

from collections.abc import Mapping

from tablekeeper.core.catalogs.catalog import Catalog, CatalogTable, Operation, Owner, SkippedTable
from tablekeeper.core.catalogs.commit_lock import COMMIT_DIRS, TableCommitGuard, TableLock
from tablekeeper.core.catalogs.options import IGNORED_OPTIONS, METASTORES, CatalogOptions, parse_catalog_options
from tablekeeper.core.catalogs.tables import expire_partitions, metastore_spec, open_catalog_table, unlocked_note

__all__ = [
    "COMMIT_DIRS", "Catalog", "CatalogOptions", "CatalogTable", "IGNORED_OPTIONS", "METASTORES", "Operation", "Owner",
    "SkippedTable", "TableCommitGuard", "TableLock", "expire_partitions", "metastore_spec", "open_catalog",
    "open_catalog_table", "parse_catalog_options", "unlocked_note",
]


def open_catalog(options: Mapping[str, str] | CatalogOptions, *, warehouse: str | None = None) -> Catalog:
    """The catalog ``options`` describe, connected (Hive, JDBC and REST are reached here).

    Raises:
        CatalogError: an unknown or unimplemented metastore or option, a missing option, a server
            that does not answer or refuses the credentials (the error names the option).
    """
    parsed = options if isinstance(options, CatalogOptions) else parse_catalog_options(options, warehouse=warehouse)
    if parsed.metastore == "hive":
        from tablekeeper.core.catalogs.hive import HiveCatalog

        return HiveCatalog(parsed)
    if parsed.metastore == "jdbc":
        from tablekeeper.core.catalogs.jdbc import JdbcCatalog

        return JdbcCatalog(parsed)
    if parsed.metastore == "rest":
        from tablekeeper.core.catalogs.rest import RestCatalog

        return RestCatalog(parsed)
    from tablekeeper.core.catalogs.filesystem import FilesystemCatalog

    return FilesystemCatalog(parsed)
