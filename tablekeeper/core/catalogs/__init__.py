"""The table's catalog: where its tables are, who carries out each operation, and which lock
guards a commit.

Chosen by ``metastore`` with Paimon's option names (``filesystem`` by default, ``hive``, ``jdbc``,
``rest``; ``uri``, ``warehouse``, ``lock.enabled``, ``lock-acquire-timeout``,
``lock-check-max-sleep``, ``jdbc.*``, ``catalog-key``, ``token.provider``, ``token``). Anything
unsupported, misconfigured or unreachable is one :class:`~tablekeeper.core.errors.CatalogError`
naming the option, never a fallback to the filesystem. The catalog lock is taken at one seam, the
table's FileIO (``commit_guard``), around every snapshot, tag, branch and schema file written.
"""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"open_catalog": "by_metastore", "Catalog": "catalog", "CatalogTable": "catalog", "Operation": "catalog",
    "Owner": "catalog", "TableCommitGuard": "commit_lock", "parse_catalog_options": "options", "RestCatalog": "rest",
    "expire_partitions": "tables", "metastore_spec": "tables", "open_catalog_table": "tables",
    "unlocked_note": "tables"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .by_metastore import open_catalog as open_catalog
    from .catalog import Catalog as Catalog, CatalogTable as CatalogTable, Operation as Operation, Owner as Owner
    from .commit_lock import TableCommitGuard as TableCommitGuard
    from .options import parse_catalog_options as parse_catalog_options
    from .rest import RestCatalog as RestCatalog
    from .tables import (expire_partitions as expire_partitions, metastore_spec as metastore_spec,
        open_catalog_table as open_catalog_table, unlocked_note as unlocked_note)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
