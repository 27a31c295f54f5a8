"""What a catalog is to tablekeeper: where its tables are, which operations it owns, its lock.

:class:`Catalog` is the contract each metastore's module meets; :class:`CatalogTable` is one
table as the catalog resolved it. Operations are named as the commands that run them
(:class:`Operation`); an operation the catalog owns (a REST server commits snapshots, tags and
branches itself) is either carried out through the catalog or refused: never written to
storage behind its back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tablekeeper.core import errors
from tablekeeper.core.catalogs.commit_lock import TableLock
from tablekeeper.core.catalogs.options import CatalogOptions
from tablekeeper.core.pycompat import StrEnum

__all__ = ["Operation", "Owner", "Catalog", "CatalogTable", "SkippedTable", "split_identifier"]


class Operation(StrEnum):
    """Everything tablekeeper changes in a table, named as its command (and lease) is."""

    TAG_CREATE = "tag create"
    TAG_DELETE = "tag delete"
    TAG_RENAME = "tag rename"
    TAG_REPLACE = "tag replace"
    BRANCH_CREATE = "branch create"
    BRANCH_DROP = "branch drop"
    BRANCH_FAST_FORWARD = "branch fast-forward"
    BRANCH_REPLACE_MAIN = "branch replace-main"
    BRANCH_RENAME = "branch rename"
    ROLLBACK = "rollback"
    CONSUMER_RESET = "consumer reset"
    EXPIRE = "expire"
    EXPIRE_CHANGELOG = "expire-changelog"
    EXPIRE_PARTITIONS = "expire-partitions"
    CLEAN_ORPHANS = "clean-orphans"
    SET_OPTIONS = "set options"


class Owner(StrEnum):
    """Who carries an operation out: tablekeeper on storage, or the catalog (through its API)."""

    STORAGE = "storage"
    CATALOG = "catalog"


def split_identifier(identifier: str) -> tuple[str, str]:
    parts = identifier.split(".")
    if len(parts) != 2 or not all(parts):
        raise errors.InvalidInputError(f"table identifier {identifier!r} is not 'database.table'",
                                       fix="name the table as database.table, e.g. sales.orders")
    return parts[0], parts[1]


@dataclass(frozen=True)
class SkippedTable:
    """A table the catalog lists that tablekeeper does not maintain, and why (not a Paimon table)."""

    identifier: str
    reason: str


@dataclass(frozen=True)
class CatalogTable:
    """One table as its catalog resolved it: the location, the storage options to open its files
    with (the catalog's vended credentials merged in), and the catalog it belongs to."""

    identifier: str
    location: str
    catalog: Catalog
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    #: the metastore's own record (Hive's table parameters ...), for the catalog's side effects
    details: Mapping[str, Any] = field(default_factory=dict)


class Catalog:
    """A catalog of Paimon tables. Subclasses: one per ``metastore`` (filesystem, hive, jdbc, rest)."""

    metastore = "filesystem"

    def __init__(self, options: CatalogOptions) -> None:
        self.options = options

    # -- what is in it -------------------------------------------------------------------
    def list_databases(self) -> list[str]:
        raise NotImplementedError

    def list_tables(self, database: str) -> list[str]:
        """Paimon tables of ``database``, sorted (tables that are not Paimon's are left out:
        :meth:`skipped_tables` says which and why)."""
        raise NotImplementedError

    def skipped_tables(self, database: str) -> list[SkippedTable]:
        return []

    def resolve(self, identifier: str, storage_options: Mapping[str, Any]) -> CatalogTable:
        """Where ``db.table`` is. Raises TableNotFoundError, or CatalogError (not a Paimon table,
        the catalog cannot be reached)."""
        raise NotImplementedError

    # -- who does what -------------------------------------------------------------------
    def owner(self, operation: Operation) -> Owner:
        """Filesystem, Hive and JDBC catalogs leave every operation to storage (their lock is
        taken around the commit files, :meth:`commit_lock`); the REST catalog owns commits."""
        return Owner.STORAGE

    def refuse_unless_storage(self, operation: Operation | str) -> None:
        """Raise CatalogError (one line) when the catalog owns ``operation``: the caller has no
        path through the catalog for it and must not write storage behind its back."""
        op = Operation(operation)
        if self.owner(op) is Owner.CATALOG:
            raise errors.CatalogError(
                f"'{op.value}' is owned by the {self.metastore} catalog: tablekeeper does not write it to "
                "storage behind the catalog's back", option="metastore",
                fix=f"run '{op.value}' through the catalog (Paimon's own client or procedure)")

    # -- the commit lock -----------------------------------------------------------------
    def commit_lock(self, identifier: str) -> TableLock | None:
        """The lock Paimon's writers of this catalog take around a commit (``lock.enabled``), or None."""
        return None

    # -- side effects of a partition drop ----------------------------------------------------
    def drop_partitions(self, table: CatalogTable, partitions: Sequence[Mapping[str, str]]) -> int:
        """Drop partitions (specs of partition-key -> string value) the catalog keeps for the
        table, before the storage commit drops them (Paimon's order); missing ones are fine.
        Returns how many the catalog dropped."""
        return 0

    def close(self) -> None:
        """Give back connections (idempotent)."""
