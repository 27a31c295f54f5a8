"""What the operator knows about the cluster: compact snapshots of every tablekeeper object (kept in
Kopf indexes, fully populated before any handler runs), parsed specs, external identities,
conflict resolution and tenancy (operator-design.md §7.1, §8).

- :class:`Obj`: one object as indexed (kind, name, metadata that matters, spec, status).
- :class:`View`: read access to the indexes handed to every handler (``tk_*`` keyword arguments).
- :func:`parse`: an object's validated spec, cached per uid and generation.
- Identity of a table = (normalised warehouse URI, ``db.table``); of a tag = (table identity,
  branch, tag name); of a branch = (table identity, branch name). Two managed CRs with one
  identity: the oldest ``creationTimestamp`` wins (ties by namespace/name); the others are
  reported ``ResourceConflict`` ("Managed by ns/name") and never touch storage.
- Tenancy: a ``PaimonCatalog`` serves only its own namespace; a ``ClusterPaimonCatalog`` serves the
  namespaces its ``allowedNamespaces`` allows (by name, or by the Namespace's labels).

Everything here is synchronous and pure over the view, except that namespace labels must be
fetched beforehand (:class:`NamespaceLabels`, by the runtime's cache).
"""


from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from tablekeeper.core import errors as core_errors
from tablekeeper.core.policy import CLUSTER_SCOPED, SpecModel, parse_spec
from tablekeeper.core.policy.specs import (
    ClusterPaimonCatalogSpec,
    ClusterPaimonRetentionPolicySpec,
    PaimonBranchSpec,
    PaimonCatalogSpec,
    PaimonRetentionPolicySpec,
    PaimonTableSpec,
    PaimonTagSpec,
)
from tablekeeper.operator.status import markers
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import OperatorError

__all__ = [
    "Obj",
    "View",
    "INDEX_IDS",
    "index_key",
    "parse",
    "tag_name_of",
    "branch_name_of",
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

#: Index id (the handler keyword argument) per kind.
INDEX_IDS: Mapping[str, str] = {
    "PaimonCatalog": "tk_catalogs",
    "ClusterPaimonCatalog": "tk_cluster_catalogs",
    "PaimonTable": "tk_tables",
    "PaimonTag": "tk_tags",
    "PaimonBranch": "tk_branches",
    "PaimonRetentionPolicy": "tk_policies",
    "ClusterPaimonRetentionPolicy": "tk_cluster_policies",
    "PaimonMaintenanceRun": "tk_runs",
}
#: Kinds indexed by the PaimonTable they belong to (``spec.tableRef.name``).
_BY_TABLE = frozenset({"PaimonTag", "PaimonBranch", "PaimonMaintenanceRun"})
#: Kinds indexed by namespace only.
_BY_NAMESPACE = frozenset({"PaimonRetentionPolicy"})


@dataclass(frozen=True)
class Obj:
    """One tablekeeper object as the operator last saw it."""

    kind: str
    namespace: str | None
    name: str
    uid: str
    created: str
    generation: int
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: Mapping[str, Any]
    status: Mapping[str, Any]
    deleting: bool
    finalizers: tuple[str, ...]
    resource_version: str = ""

    @classmethod
    def from_body(cls, kind: str, body: Mapping[str, Any]) -> Obj:
        meta = body.get("metadata") or {}
        return cls(
            kind=kind,
            namespace=None if kind in CLUSTER_SCOPED else meta.get("namespace"),
            name=str(meta.get("name")),
            uid=str(meta.get("uid") or ""),
            created=str(meta.get("creationTimestamp") or ""),
            generation=int(meta.get("generation") or 0),
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
            spec=_plain(body.get("spec") or {}),
            status=_plain(body.get("status") or {}),
            deleting=bool(meta.get("deletionTimestamp")),
            finalizers=tuple(meta.get("finalizers") or ()),
            resource_version=str(meta.get("resourceVersion") or ""),
        )

    @property
    def ref(self) -> str:
        """``PaimonTag ns/name`` (cluster kinds: ``ClusterPaimonCatalog name``): the owner label
        in ownership records and action reasons."""
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    @property
    def short(self) -> str:
        """``ns/name`` (or ``name``)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def meta(self) -> dict[str, Any]:
        return {"annotations": dict(self.annotations), "labels": dict(self.labels)}

    @property
    def paused(self) -> bool:
        return markers.is_paused(self.meta)

    @property
    def unmanaged(self) -> bool:
        return markers.is_unmanaged(self.meta)

    @property
    def age_key(self) -> tuple[str, str, str]:
        """Sort key: oldest first, ties by namespace and name."""
        return (self.created, self.namespace or "", self.name)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def index_key(kind: str, body: Mapping[str, Any]) -> Any:
    """The index key of an object: ``(namespace, table)`` for tags, branches and runs, the
    namespace for namespaced policies, ``(namespace, name)`` otherwise."""
    meta = body.get("metadata") or {}
    namespace = None if kind in CLUSTER_SCOPED else meta.get("namespace")
    if kind in _BY_TABLE:
        return (namespace, ((body.get("spec") or {}).get("tableRef") or {}).get("name"))
    if kind in _BY_NAMESPACE:
        return namespace
    return (namespace, meta.get("name"))


class View:
    """Read access to the operator's indexes (``indices``: the handler's keyword arguments)."""

    def __init__(self, indices: Mapping[str, Any]) -> None:
        self._indices = {kind: indices.get(index_id) for kind, index_id in INDEX_IDS.items()}

    def _values(self, kind: str, key: Any) -> list[Obj]:
        index = self._indices.get(kind)
        if index is None or key not in index:
            return []
        return [obj for obj in index[key] if isinstance(obj, Obj)]

    def all(self, kind: str) -> Iterator[Obj]:
        """Every indexed object of ``kind``."""
        index = self._indices.get(kind)
        if index is None:
            return
        for key in list(index):
            for obj in list(index[key]):
                if isinstance(obj, Obj):
                    yield obj

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        """One object by name (tables, catalogs, cluster policies)."""
        if kind in _BY_TABLE or kind in _BY_NAMESPACE:
            return next((o for o in self.all(kind) if o.namespace == namespace and o.name == name), None)
        found = self._values(kind, (None if kind in CLUSTER_SCOPED else namespace, name))
        return found[0] if found else None

    def contains(self, obj: Obj) -> bool:
        """Whether ``obj`` (by uid) is still in the index, i.e. not deleted."""
        if obj.kind in _BY_TABLE:
            key: Any = (obj.namespace, (obj.spec.get("tableRef") or {}).get("name"))
        elif obj.kind in _BY_NAMESPACE:
            key = obj.namespace
        else:
            key = (obj.namespace, obj.name)
        return any(o.uid == obj.uid for o in self._values(obj.kind, key))

    def children(self, kind: str, namespace: str | None, table: str) -> list[Obj]:
        """Tags, branches or runs of the PaimonTable ``namespace/table``."""
        return self._values(kind, (namespace, table))

    def policies(self, namespace: str | None) -> list[Obj]:
        """The PaimonRetentionPolicies of ``namespace``."""
        return self._values("PaimonRetentionPolicy", namespace)


# -- specs -----------------------------------------------------------------------------------------

_CACHE: dict[tuple[str, str, int, str], SpecModel | core_errors.InvalidInputError] = {}
_CACHE_MAX = 20_000


def parse(obj: Obj) -> SpecModel:
    """The validated spec of ``obj`` (cached per uid and generation).

    Raises:
        InvalidInputError (InvalidSpecError): the spec breaks a model check the CRD cannot state.
    """
    key = (obj.kind, obj.uid, obj.generation, repr(sorted(obj.spec.items())) if not obj.uid else "")
    cached = _CACHE.get(key)
    if cached is None:
        try:
            cached = parse_spec(obj.kind, dict(obj.spec), source=obj.ref)
        except core_errors.InvalidInputError as e:
            cached = e
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[key] = cached
    if isinstance(cached, core_errors.InvalidInputError):
        raise cached
    return cached


def tag_name_of(obj: Obj, spec: PaimonTagSpec) -> str:
    """The Paimon tag name of a PaimonTag (``spec.tagName`` or ``metadata.name``).

    Raises:
        InvalidNameError: ``metadata.name`` is not a usable tag name and ``tagName`` is absent.
    """
    return spec.resolved_tag_name(obj.name)


def branch_name_of(obj: Obj, spec: PaimonBranchSpec) -> str:
    """The Paimon branch name of a PaimonBranch."""
    return spec.resolved_branch_name(obj.name)


# -- tenancy and identities ----------------------------------------------------------------------------

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
