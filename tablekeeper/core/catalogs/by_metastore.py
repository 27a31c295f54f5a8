"""The one place that picks the class of a catalog by its ``metastore``; a metastore's module (and
its client library) is imported only when that metastore is used."""

from __future__ import annotations

from collections.abc import Mapping

from tablekeeper.core.catalogs.catalog import Catalog
from tablekeeper.core.catalogs.options import CatalogOptions, parse_catalog_options

__all__ = ["open_catalog"]


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
