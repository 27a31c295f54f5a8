"""Which catalog serves a table, and which CR speaks for an external object (operator-design.md
§7.1, §8): tenancy, external identities and conflicts, decided purely over the view.

- Identity of a table = (normalised warehouse URI, ``db.table``); of a tag = (table identity,
  branch, tag name); of a branch = (table identity, branch name). Two managed CRs with one
  identity: the oldest ``creationTimestamp`` wins (ties by namespace/name); the others are
  reported ``ResourceConflict`` ("Managed by ns/name") and never touch storage.
- Tenancy: a ``PaimonCatalog`` serves only its own namespace; a ``ClusterPaimonCatalog`` serves the
  namespaces its ``allowedNamespaces`` allows (by name, or by the Namespace's labels).

Namespace labels are fetched beforehand (:class:`NamespaceLabels`, by the runtime's cache); the
rest is synchronous.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from tablekeeper.core import errors as core_errors
from tablekeeper.core.policy.catalog import ClusterPaimonCatalogSpec, PaimonCatalogSpec
from tablekeeper.core.policy.policy import ClusterPaimonRetentionPolicySpec, PaimonRetentionPolicySpec
from tablekeeper.core.policy.table import PaimonTableSpec
from tablekeeper.operator.cluster.view import Obj, View, parse
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import OperatorError

__all__ = [
    "NamespaceLabels",
    "CatalogInfo",
    "TableInfo",
    "catalog_needs_labels",
    "resolve_catalog",
    "resolve_table",
    "contest",
    "winners",
    "valid_policies",
    "valid_cluster_policies",
]

class NamespaceLabels:
    """Labels of namespaces, fetched before resolution; ``None`` = unknown."""

    def __init__(self, labels: Mapping[str, Mapping[str, str] | None] | None = None) -> None:
        self._labels = dict(labels or {})

    def get(self, namespace: str) -> Mapping[str, str] | None:
        return self._labels.get(namespace)


@dataclass(frozen=True)
class CatalogInfo:
    """A catalog a table may use, with its validated spec."""

    obj: Obj
    spec: PaimonCatalogSpec

    @property
    def warehouse(self) -> str:
        return self.spec.normalized_warehouse


def catalog_needs_labels(spec: PaimonCatalogSpec) -> bool:
    """Whether deciding on this catalog's ``allowedNamespaces`` needs namespace labels."""
    return (isinstance(spec, ClusterPaimonCatalogSpec) and spec.allowed_namespaces is not None
            and spec.allowed_namespaces.selector is not None)


def resolve_catalog(view: View, table: Obj, spec: PaimonTableSpec, labels: NamespaceLabels) -> CatalogInfo:
    """The catalog ``table`` uses, after the tenancy check.

    Raises:
        OperatorError: ``CatalogNotFound``, ``CatalogNotReady`` (invalid catalog spec) or
            ``NamespaceNotAllowed``.
    """
    ref = spec.catalog_ref
    namespace = table.namespace or ""
    if ref.kind == "PaimonCatalog":
        obj = view.get("PaimonCatalog", namespace, ref.name)
        where = f"PaimonCatalog {ref.name!r} in namespace {namespace!r}"
    else:
        obj = view.get("ClusterPaimonCatalog", None, ref.name)
        where = f"ClusterPaimonCatalog {ref.name!r}"
    if obj is None or obj.deleting:
        raise OperatorError(Reason.CATALOG_NOT_FOUND, f"{where} does not exist", temporary=True)
    try:
        catalog = parse(obj)
    except core_errors.InvalidInputError as e:
        raise OperatorError(Reason.CATALOG_NOT_READY, f"{where} is invalid: {e.message}") from e
    assert isinstance(catalog, PaimonCatalogSpec)
    if isinstance(catalog, ClusterPaimonCatalogSpec):
        ns_labels = labels.get(namespace)
        if not catalog.allows(namespace, ns_labels or {}):
            raise OperatorError(Reason.NAMESPACE_NOT_ALLOWED,
                                f"{where} does not allow namespace {namespace!r} (allowedNamespaces)")
    return CatalogInfo(obj, catalog)


@dataclass(frozen=True)
class TableInfo:
    """A PaimonTable resolved to its catalog and external identity."""

    obj: Obj
    spec: PaimonTableSpec
    catalog: CatalogInfo

    @property
    def identity(self) -> tuple[str, str]:
        """(normalised warehouse, ``db.table``)."""
        return (self.catalog.warehouse, self.spec.qualified_name)


def _table_candidate(view: View, obj: Obj, labels: NamespaceLabels) -> TableInfo | None:
    if obj.unmanaged or obj.deleting:
        return None
    try:
        spec = parse(obj)
        assert isinstance(spec, PaimonTableSpec)
        catalog = resolve_catalog(view, obj, spec, labels)
    except (core_errors.InvalidInputError, OperatorError):
        return None
    return TableInfo(obj, spec, catalog)


def resolve_table(view: View, obj: Obj, labels: NamespaceLabels) -> TableInfo:
    """``obj`` (a PaimonTable) resolved, if it is the one CR managing its table.

    Raises:
        InvalidSpecError: the spec is invalid.
        OperatorError: the catalog is missing or not allowed, or an older PaimonTable manages the
            same table (``ResourceConflict``).
    """
    spec = parse(obj)
    assert isinstance(spec, PaimonTableSpec)
    info = TableInfo(obj, spec, resolve_catalog(view, obj, spec, labels))
    rivals = [c for c in (_table_candidate(view, other, labels) for other in view.all("PaimonTable")
                          if other.uid != obj.uid)
              if c is not None and c.identity == info.identity]
    winner = contest([info.obj, *(r.obj for r in rivals)])
    if winner.uid != obj.uid:
        raise OperatorError(Reason.RESOURCE_CONFLICT, f"Managed by {winner.short}")
    return info


def contest(objs: Iterable[Obj]) -> Obj:
    """The object that wins an identity: the oldest (ties by namespace/name)."""
    return min(objs, key=lambda o: o.age_key)


def winners(objs: Iterable[Obj], identity: Callable[[Obj], Any]) -> dict[str, Obj]:
    """uid -> the winner of its identity, for every object whose identity is not None."""
    groups: dict[Any, list[Obj]] = {}
    for obj in objs:
        key = identity(obj)
        if key is not None:
            groups.setdefault(key, []).append(obj)
    out: dict[str, Obj] = {}
    for members in groups.values():
        winner = contest(members)
        for member in members:
            out[member.uid] = winner
    return out


_PolicySpec = TypeVar("_PolicySpec", PaimonRetentionPolicySpec, ClusterPaimonRetentionPolicySpec)


def _parseable(objs: Iterable[Obj], spec_type: type[_PolicySpec]) -> list[tuple[Obj, _PolicySpec]]:
    """The objects that are not being deleted and parse (invalid ones report themselves)."""
    out = []
    for obj in objs:
        if obj.deleting:
            continue
        try:
            spec = parse(obj)
        except core_errors.InvalidInputError:
            continue
        assert isinstance(spec, spec_type)
        out.append((obj, spec))
    return out


def valid_policies(view: View, namespace: str | None) -> list[tuple[Obj, PaimonRetentionPolicySpec]]:
    """The parseable PaimonRetentionPolicies of ``namespace``."""
    return _parseable(view.policies(namespace), PaimonRetentionPolicySpec)


def valid_cluster_policies(view: View) -> list[tuple[Obj, ClusterPaimonRetentionPolicySpec]]:
    """The parseable ClusterPaimonRetentionPolicies."""
    return _parseable(view.all("ClusterPaimonRetentionPolicy"), ClusterPaimonRetentionPolicySpec)
