"""The desired state: validated manifest objects joined into per-table targets.

``build_desired_state(resources)`` resolves every reference (catalogs, tables, policies, tags a
branch starts from) and rejects what cannot be meant: a tag or branch of a table that is not
declared, two objects for one tag/branch/table, a policy reference that does not exist, a
catalog a namespace may not use, policies whose merged result breaks a safety rail. Checks that
need storage (the table exists, a branch's tag exists) happen when planning, still before
anything is applied.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tablekeeper.core import errors, policy
from tablekeeper.core.policy import InvalidSpecError
from tablekeeper.core.policy.specs import (
    ClusterPaimonCatalogSpec,
    ClusterPaimonRetentionPolicySpec,
    PaimonBranchSpec,
    PaimonCatalogSpec,
    PaimonRetentionPolicySpec,
    PaimonTableSpec,
    PaimonTagSpec,
)
from tablekeeper.reconcile.state.documents import ManifestError, Problem, Resource

__all__ = [
    "TableLocation",
    "CatalogTarget",
    "TagTarget",
    "BranchTarget",
    "TableTarget",
    "DesiredState",
    "build_desired_state",
]


@dataclass(frozen=True)
class TableLocation:
    """Where a table lives: the catalog's warehouse (normalised), its options, ``db.table``."""

    warehouse: str
    identifier: str
    options: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> tuple[str, str]:
        return (self.warehouse, self.identifier)

    def __str__(self) -> str:
        return f"{self.identifier} ({self.warehouse})"


@dataclass(frozen=True)
class CatalogTarget:
    resource: Resource
    spec: PaimonCatalogSpec

    @property
    def warehouse(self) -> str:
        return self.spec.normalized_warehouse


class _OwnedRef:
    """What tag and branch targets share: the ``deletionPolicy`` of the object they own."""

    spec: PaimonTagSpec | PaimonBranchSpec

    @property
    def deletion_policy(self) -> str:
        """``spec.deletionPolicy``; ``Delete`` when unset."""
        return self.spec.deletion_policy or "Delete"


@dataclass(frozen=True)
class TagTarget(_OwnedRef):
    """A ``PaimonTag``: the tag ``tag`` on ``branch`` of its table."""

    resource: Resource
    spec: PaimonTagSpec
    tag: str
    branch: str


@dataclass(frozen=True)
class BranchTarget(_OwnedRef):
    """A ``PaimonBranch``: branch ``name`` of its table."""

    resource: Resource
    spec: PaimonBranchSpec
    name: str


@dataclass(frozen=True)
class TableTarget:
    """A ``PaimonTable`` with everything that applies to it."""

    resource: Resource
    spec: PaimonTableSpec
    catalog: CatalogTarget
    location: TableLocation
    tags: tuple[TagTarget, ...]
    branches: tuple[BranchTarget, ...]
    policies: tuple[policy.NamespacedPolicy, ...]
    cluster_policies: tuple[policy.ClusterPolicy, ...]
    #: Labels of the table's namespace (cluster policies and catalogs may select namespaces by
    #: label; the operator knows them, manifests on disk do not).
    namespace_labels: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def writer_zone(self) -> str | None:
        """The writers' IANA zone: ``spec.timeZone``, else the catalog's ``writerTimeZone``."""
        return self.spec.time_zone or self.catalog.spec.writer_time_zone

    @property
    def context(self) -> policy.TableContext:
        return policy.TableContext(name=self.resource.name, namespace=self.resource.namespace or "",
                                      spec=self.spec, labels=dict(self.resource.labels),
                                      namespace_labels=dict(self.namespace_labels))

    def resolve_policy(self, table_options: Mapping[str, str] | None) -> policy.EffectivePolicy:
        """The effective retention (operator-design.md §6) with the table's own options.

        Raises:
            PolicyNotFoundError, UnsafeSpecError, InvalidSpecError, InvalidInputError.
        """
        return policy.resolve_effective_policy(self.context, policies=self.policies,
                                                  cluster_policies=self.cluster_policies,
                                                  table_options=table_options)


@dataclass(frozen=True)
class DesiredState:
    """Everything the manifests ask for."""

    resources: tuple[Resource, ...]
    tables: tuple[TableTarget, ...]

    def table(self, identifier: str) -> TableTarget:
        for t in self.tables:
            if t.location.identifier == identifier:
                return t
        raise KeyError(identifier)


def _by_kind(resources: Sequence[Resource], kind: str) -> list[Resource]:
    return [r for r in resources if r.kind == kind]


def _locate(r: Resource, table_name: str, resolve_name: Callable[[str], str], name_fix: str,
            tables: Collection[tuple[str | None, str]], skip: Collection[tuple[str, str | None, str]],
            problems: list[Problem]) -> tuple[tuple[str | None, str], str] | None:
    """(key of the table, Paimon name) of a ``PaimonTag`` or ``PaimonBranch``. None, after adding
    a problem, when the PaimonTable it names is not declared (no problem when that table failed
    validation: it is in ``skip``) or when its name is invalid."""
    key = (r.namespace, table_name)
    if key not in tables:
        if ("PaimonTable", r.namespace, table_name) not in skip:
            problems.append(Problem(r.where, "spec.tableRef.name",
                                    f"PaimonTable {table_name!r} is not declared in namespace "
                                    f"{r.namespace!r}", "declare the PaimonTable or fix tableRef.name"))
        return None
    try:
        return key, resolve_name(r.name)
    except errors.InvalidNameError as e:
        problems.append(Problem(r.where, "metadata.name", e.message, name_fix))
        return None


def build_desired_state(resources: Sequence[Resource], *, problems: Sequence[Problem] = (),
                        invalid: Collection[tuple[str, str | None, str]] = (),
                        namespace_labels: Mapping[str, Mapping[str, str]] | None = None) -> DesiredState:
    """Join the objects into per-table targets.

    Args:
        resources: valid objects.
        problems: problems found while loading, reported together with these.
        invalid: (kind, namespace, name) of objects that failed validation: references to them
            are not reported as missing.
        namespace_labels: labels per namespace, where known (the operator): cluster catalogs'
            ``allowedNamespaces.selector`` and cluster policies' ``namespaceSelector`` see them.

    Raises:
        ManifestError: every broken reference or duplicate, naming file, object and field.
    """
    problems = list(problems)
    skip = set(invalid)
    catalogs: dict[tuple[str, str | None, str], CatalogTarget] = {}
    for r in resources:
        if r.kind in ("PaimonCatalog", "ClusterPaimonCatalog"):
            assert isinstance(r.spec, PaimonCatalogSpec)
            catalogs[(r.kind, r.namespace, r.name)] = CatalogTarget(r, r.spec)
    policies = tuple(policy.NamespacedPolicy(r.name, r.namespace or "", r.spec)
                     for r in _by_kind(resources, "PaimonRetentionPolicy")
                     if isinstance(r.spec, PaimonRetentionPolicySpec))
    cluster_policies = tuple(policy.ClusterPolicy(r.name, r.spec)
                             for r in _by_kind(resources, "ClusterPaimonRetentionPolicy")
                             if isinstance(r.spec, ClusterPaimonRetentionPolicySpec))

    tables: dict[tuple[str | None, str], tuple[Resource, PaimonTableSpec, CatalogTarget]] = {}
    identities: dict[tuple[str, str], Resource] = {}
    for r in _by_kind(resources, "PaimonTable"):
        assert isinstance(r.spec, PaimonTableSpec)
        ref = r.spec.catalog_ref
        catalog = catalogs.get((ref.kind, r.namespace if ref.kind == "PaimonCatalog" else None, ref.name))
        if catalog is None and (ref.kind, r.namespace if ref.kind == "PaimonCatalog" else None, ref.name) in skip:
            continue
        if catalog is None:
            where = f"in namespace {r.namespace!r}" if ref.kind == "PaimonCatalog" else "(cluster-scoped)"
            problems.append(Problem(r.where, "spec.catalogRef",
                                    f"{ref.kind} {ref.name!r} {where} is not declared in the manifests",
                                    f"add a {ref.kind} named {ref.name!r}, or point catalogRef at one"))
            continue
        ns_labels = dict((namespace_labels or {}).get(r.namespace or "") or {})
        if isinstance(catalog.spec, ClusterPaimonCatalogSpec) and not catalog.spec.allows(r.namespace or "",
                                                                                          ns_labels):
            problems.append(Problem(r.where, "spec.catalogRef",
                                    f"ClusterPaimonCatalog {ref.name!r} does not allow namespace {r.namespace!r}",
                                    "add the namespace to the catalog's allowedNamespaces.names (namespace labels "
                                    "are unknown to plan/apply)"))
            continue
        identity = (catalog.warehouse, r.spec.qualified_name)
        if identity in identities:
            other = identities[identity]
            problems.append(Problem(r.where, "spec.table",
                                    f"table {r.spec.qualified_name} in {catalog.warehouse} is also managed by "
                                    f"{other.ref} ({other.file})", "keep one PaimonTable per Paimon table"))
            continue
        identities[identity] = r
        tables[(r.namespace, r.name)] = (r, r.spec, catalog)
        known = {p.name for p in policies if p.namespace == r.namespace}
        for i, pref in enumerate(r.spec.policy_refs):
            if pref.name not in known and ("PaimonRetentionPolicy", r.namespace, pref.name) not in skip:
                problems.append(Problem(r.where, f"spec.policyRefs[{i}].name",
                                        f"PaimonRetentionPolicy {pref.name!r} is not declared in namespace "
                                        f"{r.namespace!r}", "add it to the manifests or remove the reference"))

    tags_of: dict[tuple[str | None, str], list[TagTarget]] = {key: [] for key in tables}
    seen_tags: dict[tuple[tuple[str | None, str], str, str], Resource] = {}
    for r in _by_kind(resources, "PaimonTag"):
        assert isinstance(r.spec, PaimonTagSpec)
        located = _locate(r, r.spec.table_ref.name, r.spec.resolved_tag_name, "set spec.tagName",
                          tables, skip, problems)
        if located is None:
            continue
        key, name = located
        ident = (key, r.spec.branch, name)
        if ident in seen_tags:
            other = seen_tags[ident]
            problems.append(Problem(r.where, "spec.tagName" if r.spec.tag_name else "metadata.name",
                                    f"tag {name!r} of {tables[key][1].qualified_name} (branch {r.spec.branch}) is "
                                    f"also declared by {other.ref} ({other.file})",
                                    "declare each Paimon tag once"))
            continue
        seen_tags[ident] = r
        tags_of[key].append(TagTarget(r, r.spec, name, r.spec.branch))

    branches_of: dict[tuple[str | None, str], list[BranchTarget]] = {key: [] for key in tables}
    seen_branches: dict[tuple[tuple[str | None, str], str], Resource] = {}
    for r in _by_kind(resources, "PaimonBranch"):
        assert isinstance(r.spec, PaimonBranchSpec)
        located = _locate(r, r.spec.table_ref.name, r.spec.resolved_branch_name, "set spec.branchName",
                          tables, skip, problems)
        if located is None:
            continue
        key, name = located
        if (key, name) in seen_branches:
            other = seen_branches[(key, name)]
            problems.append(Problem(r.where, "spec.branchName" if r.spec.branch_name else "metadata.name",
                                    f"branch {name!r} of {tables[key][1].qualified_name} is also declared by "
                                    f"{other.ref} ({other.file})", "declare each branch once"))
            continue
        seen_branches[(key, name)] = r
        branches_of[key].append(BranchTarget(r, r.spec, name))

    targets: list[TableTarget] = []
    for key, (r, spec, catalog) in tables.items():
        location = TableLocation(catalog.warehouse, spec.qualified_name, dict(catalog.spec.options))
        target = TableTarget(r, spec, catalog, location, tuple(tags_of[key]), tuple(branches_of[key]),
                             policies, cluster_policies,
                             dict((namespace_labels or {}).get(r.namespace or "") or {}))
        try:
            target.resolve_policy(None)
        except policy.PolicyNotFoundError:
            pass  # reported above with its field
        except InvalidSpecError as e:
            problems.append(_policy_problem(r, e))
        except errors.InvalidInputError as e:
            problems.append(Problem(r.where, "spec.retention", e.message, e.fix))
        targets.append(target)
    if problems:
        raise ManifestError(problems)
    return DesiredState(tuple(resources), tuple(targets))


def _policy_problem(r: Resource, e: InvalidSpecError) -> Problem:
    fields = ", ".join(f"spec.retention.{f}" for f in e.fields) if e.fields else "spec.retention"
    return Problem(r.where, fields, e.message, e.fix)


def describe(values: Mapping[str, Any], sources: Mapping[str, str], paths: Sequence[str]) -> dict[str, str]:
    """``{path: "value (source)"}`` for the given effective-policy paths (for action records)."""
    out = {}
    for path in paths:
        value = values.get(path)
        out[path] = f"{'unset' if value is None else value} ({sources.get(path, '?')})"
    return out
