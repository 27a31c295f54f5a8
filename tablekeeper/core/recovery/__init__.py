"""Getting a table back on its feet: what a rollback writes (``rollback``: the target, the new
latest snapshot, the tags that keep it readable) and the catalog-owned writes it makes
(``catalog_writes``: one function per operation, so a catalog service can carry them); which
views lost files (``check``) and the commit that drops missing data files (``repair``); and what
pins history, per snapshot, for a user deciding what to roll back or release (``pins``)."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"check_table": "check", "discard_later": "discard", "restore_as_latest": "rollback",
    "RollbackRequest": "rollback", "plan_remove_missing": "repair", "remove_missing": "repair",
    "plan_remove_missing_manifests": "repair", "remove_missing_manifests": "repair"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .check import check_table as check_table
    from .discard import discard_later as discard_later
    from .repair import (plan_remove_missing as plan_remove_missing, remove_missing as remove_missing,
        plan_remove_missing_manifests as plan_remove_missing_manifests,
        remove_missing_manifests as remove_missing_manifests)
    from .rollback import restore_as_latest as restore_as_latest, RollbackRequest as RollbackRequest
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
