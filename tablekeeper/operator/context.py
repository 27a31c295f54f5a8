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
from tablekeeper.operator.status import conditions
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import OperatorError
from tablekeeper.reconcile import actions as A

__all__ = ["TableContext", "table_context", "child_context", "not_ready", "dependency_cause"]

#: ``Ready=False`` reasons that do not hold the dependents: a lock another maintainer holds, a
#: lost race, ownership being recorded: retried soon anyway.
_PASSING = frozenset({Reason.TABLE_LOCKED, Reason.RECONCILE_ERROR, Reason.CREATING})


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


def not_ready(obj: Obj) -> OperatorError | None:
    """``CatalogNotReady`` / ``TableNotReady`` (temporary) when ``obj`` (a catalog or table) says it
    is not Ready for its current spec, with its reason as the cause; None when it is Ready or not
    judged yet (the first pass finds out itself).

    Why: a child's storage error is only a symptom when what it depends on already reports the
    cause (an unreachable warehouse is not "no Paimon table"); the child reports the dependency
    instead, as transient (``CatalogNotReady``, ``TableNotReady``), and is re-checked as soon as
    the dependency becomes Ready.
    """
    ready = conditions.find(obj.status.get("conditions"), conditions.READY)
    if ready is None or ready.get("status") == "True" or ready.get("reason") in _PASSING:
        return None
    if ready.get("observedGeneration") not in (None, obj.generation):
        return None  # judged for an older spec
    message = str(ready.get("message") or "")
    cause = str(ready.get("reason") or "")
    text = f"{obj.kind} {obj.name!r} is not Ready: {cause}" + (f": {message}" if message else "")
    reason = Reason.TABLE_NOT_READY if obj.kind == "PaimonTable" else Reason.CATALOG_NOT_READY
    return OperatorError(reason, text, temporary=True, cause=cause)


async def table_context(rt: Runtime, view: View, table: Obj, *, gate: bool = True) -> TableContext:
    """PaimonTable ``table`` resolved: tenancy, identity (it must be the CR that manages its table),
    credentials, members, policies and the warehouse connection. A record of a table (no uid: a
    child being deleted whose PaimonTable is gone) skips the identity contest.

    ``gate``: refuse (``CatalogNotReady``) when the catalog reports itself not Ready
    (:func:`not_ready`); a table or child being deleted is never held.

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
    if gate and not table.deleting:
        problem = not_ready(info.catalog.obj)
        if problem is not None:
            raise problem
    options = await rt.catalog_options(info.catalog)
    scope = scopes.gather(view, info, options, labels, default_deletion_policy=rt.config.default_deletion_policy)
    return TableContext(scope, rt.opener(scope.location.warehouse, scope.options))


async def child_context(rt: Runtime, view: View, child: Obj, table_name: str) -> TableContext:
    """The table a tag, branch or run belongs to (PaimonTable ``table_name`` in its namespace).

    A child being deleted whose PaimonTable is gone uses the table recorded in its status.

    Raises:
        OperatorError: ``TableNotReady`` (temporary) naming the table's own problem: it does not
            exist, is invalid, reports itself not Ready (:func:`not_ready`) or its catalog does.
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
    problem = not_ready(table) if table.uid and not child.deleting else None
    if problem is not None:
        raise problem
    try:
        return await table_context(rt, view, table, gate=not child.deleting)
    except core_errors.InvalidInputError as e:
        raise OperatorError(Reason.TABLE_NOT_READY, f"PaimonTable {table_name!r} is invalid: {e.message}",
                            temporary=True) from e
    except OperatorError as e:
        raise OperatorError(Reason.TABLE_NOT_READY, f"PaimonTable {table_name!r}: {e.reason}: {e.message}",
                            temporary=True, cause=e.cause or e.reason) from e


#: Storage errors that are only a symptom while a dependency is not Ready.
_SYMPTOMS = frozenset({Reason.TABLE_NOT_FOUND, Reason.CATALOG_UNREACHABLE})


def dependency_cause(dependency: Obj | None, reason: str, message: str) -> OperatorError | None:
    """A storage error (``reason``) seen while ``dependency`` (the catalog of a table, the table of
    a child) is not Ready, not even judged yet: reported as the dependency's (``CatalogNotReady``,
    ``TableNotReady``, transient), with the symptom in the message; None when the dependency is
    Ready or the error is not a symptom."""
    if dependency is None or reason not in _SYMPTOMS:
        return None
    ready = conditions.find(dependency.status.get("conditions"), conditions.READY)
    if ready is not None and ready.get("status") == "True":
        return None
    state = f"{ready.get('reason')}" if ready is not None else "not checked yet"
    kind = Reason.TABLE_NOT_READY if dependency.kind == "PaimonTable" else Reason.CATALOG_NOT_READY
    return OperatorError(kind, f"{dependency.kind} {dependency.name!r} is not Ready ({state}); {reason}: {message}",
                         temporary=True, cause=reason)
