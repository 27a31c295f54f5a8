"""``metastore=filesystem`` (Paimon's default): tables at ``<warehouse>/<db>.db/<table>``, no lock,
every operation on storage."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tablekeeper.core import errors
from tablekeeper.core.catalogs.catalog import Catalog, CatalogTable, split_identifier
from tablekeeper.core.storage import FileIO, join

__all__ = ["FilesystemCatalog"]


class FilesystemCatalog(Catalog):
    metastore = "filesystem"

    def _warehouse(self) -> str:
        if not self.options.warehouse:
            raise errors.CatalogError("metastore=filesystem needs a warehouse", option="warehouse",
                                      fix="pass --warehouse URI (or --catalog-option warehouse=URI)")
        return self.options.warehouse

    def _io(self) -> FileIO:
        return FileIO.for_uri(self._warehouse(), {})

    def list_databases(self) -> list[str]:
        io = self._io()
        return sorted(s.name[:-3] for s in io.list_dir(io.normalize(self._warehouse()))
                      if s.is_dir and s.name.endswith(".db"))

    def list_tables(self, database: str) -> list[str]:
        io = self._io()
        db_path = join(io.normalize(self._warehouse()), f"{database}.db")
        return sorted(s.name for s in io.list_dir(db_path) if s.is_dir and io.is_dir(join(db_path, s.name, "schema")))

    def resolve(self, identifier: str, storage_options: Mapping[str, Any]) -> CatalogTable:
        db, name = split_identifier(identifier)
        return CatalogTable(identifier, join(self._warehouse().rstrip("/"), f"{db}.db", name), self,
                            dict(storage_options))
