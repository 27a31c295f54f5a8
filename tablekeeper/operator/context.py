"""A table resolved once for one pass: the one place that turns a PaimonTable (or the ``tableRef``
of a tag, branch or run) into its catalog, identity, credentials, members, policies and warehouse
connection.

Every controller that works on a table's storage starts its pass with :func:`table_context` (the
table's own controller) or :func:`child_context` (tags, branches, runs) and hands the frozen
:class:`TableContext` down: nothing below asks the view, the Secret and Namespace caches or the
opener cache again for that table in that pass. What must be asked at the moment of a change
stays with the caller: the table's lock, and whether a Spark run of the table is in flight
(:func:`tablekeeper.operator.runs.claims.spark_run_in_flight`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tablekeeper import reconcile
from tablekeeper.core import errors as core_errors
from tablekeeper.core.policy.specs import PaimonTableSpec
from tablekeeper.operator.cluster import scopes
from tablekeeper.operator.cluster.view import Obj, TableInfo, View, parse, resolve_catalog, resolve_table
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import OperatorError
from tablekeeper.reconcile import actions as A

__all__ = ["TableContext", "table_context", "child_context"]


@dataclass(frozen=True)
class TableContext:
    """One PaimonTable resolved for one pass: its :class:`~tablekeeper.operator.cluster.scopes.Scope`
    (catalog with credentials merged in, identity, tags, branches, candidate policies) and the
    connection to its warehouse."""

    scope: scopes.Scope
    opener: reconcile.Opener

    @property
    def identity(self) -> tuple[str, str]:
        """(normalised warehouse, ``db.table``): the key of the table's lock."""
        return self.scope.identity

    @property
    def location(self) -> reconcile.TableLocation:
        return self.scope.location

    @property
    def spec(self) -> PaimonTableSpec:
        return self.scope.table.spec

    def plan(self, now: datetime, *, objects: bool = True) -> scopes.ScopePlan:
        """Observe the table and plan (:func:`~tablekeeper.operator.cluster.scopes.plan_scope`). Blocking."""
        return scopes.plan_scope(self.scope, self.opener, now, objects=objects)

    def apply(self, plan: scopes.ScopePlan, actions: Sequence[A.Action], store: scopes.StatusRecordStore,
              config: reconcile.ReconcileConfig | None = None) -> reconcile.ApplyResult:
        """Carry out ``actions`` of ``plan`` (:func:`~tablekeeper.operator.cluster.scopes.apply_actions`). Blocking."""
        return scopes.apply_actions(plan, actions, store, self.opener, config)


async def table_context(rt: Runtime, view: View, table: Obj) -> TableContext:
    """PaimonTable ``table`` resolved: tenancy, identity (it must be the CR that manages its table),
    credentials, members, policies and the warehouse connection. A record of a table (no uid: a
    child being deleted whose PaimonTable is gone) skips the identity contest.

    Raises:
        InvalidInputError: the table's spec is invalid.
        OperatorError: ``CatalogNotFound``, ``CatalogNotReady``, ``NamespaceNotAllowed``,
            ``ResourceConflict`` (an older PaimonTable manages the table), ``AuthFailed``.
    """
    spec = parse(table)
    assert isinstance(spec, PaimonTableSpec)
    labels = await rt.labels_for(view, table.namespace or "", spec)
    if table.uid:
        info = resolve_table(view, table, labels)
    else:
        info = TableInfo(table, spec, resolve_catalog(view, table, spec, labels))
    options = await rt.catalog_options(info.catalog)
    scope = scopes.gather(view, info, options, labels, default_deletion_policy=rt.config.default_deletion_policy)
    return TableContext(scope, rt.opener(scope.location.warehouse, scope.options))


async def child_context(rt: Runtime, view: View, child: Obj, table_name: str) -> TableContext:
    """The table a tag, branch or run belongs to (PaimonTable ``table_name`` in its namespace).

    A child being deleted whose PaimonTable is gone uses the table recorded in its status.

    Raises:
        OperatorError: ``TableNotReady`` (temporary) naming the table's own problem.
    """
    namespace = child.namespace or ""
    table = view.get("PaimonTable", namespace, table_name)
    if table is None and child.deleting and isinstance(child.status.get("table"), Mapping):
        recorded = child.status["table"]
        table = Obj("PaimonTable", namespace, table_name, "", "", 0, {}, {},
                    {"catalogRef": recorded.get("catalogRef"), "database": recorded.get("database"),
                     "table": recorded.get("table")}, {}, False, ())
    if table is None:
        raise OperatorError(Reason.TABLE_NOT_READY, f"PaimonTable {table_name!r} does not exist in namespace "
                                                    f"{namespace!r}", temporary=True)
    try:
        return await table_context(rt, view, table)
    except core_errors.InvalidInputError as e:
        raise OperatorError(Reason.TABLE_NOT_READY, f"PaimonTable {table_name!r} is invalid: {e.message}",
                            temporary=True) from e
    except OperatorError as e:
        raise OperatorError(Reason.TABLE_NOT_READY, f"PaimonTable {table_name!r}: {e.reason}: {e.message}",
                            temporary=True) from e
