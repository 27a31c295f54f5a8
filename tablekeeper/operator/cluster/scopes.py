"""One table as the reconciler sees it: the operator's adapter over ``tablekeeper.reconcile``.

The CLI's ``plan``/``apply -f DIR`` and the operator share one brain: manifests become
:class:`~tablekeeper.reconcile.Resource` objects, :func:`~tablekeeper.reconcile.build_desired_state`
joins them, :func:`~tablekeeper.reconcile.observe` reads storage, the planner decides
(``plan_objects`` for tags and branches, ``plan_table`` for maintenance) and
:func:`~tablekeeper.reconcile.apply` carries actions out. Here the resources come from CRs:

- a :class:`Scope` is one PaimonTable with its catalog (credentials merged in), its tags and
  branches (:class:`Member`, each marked active, or why not: invalid spec, ``ResourceConflict``),
  and the retention policies that may apply;
- :func:`plan_scope` builds the desired state of the scope, attributes every problem to the CR
  it concerns (a bad tag never blocks its siblings), checks that the table lies inside the
  catalog's warehouse, observes the table and plans;
- ownership records (:class:`~tablekeeper.reconcile.state.records.TableRecords`) are not a warehouse
  file as for the CLI but the ``status`` of each PaimonTag/PaimonBranch (``owned``,
  ``snapshotId``, ``expireTime``...), read by :func:`records_of`; :class:`StatusRecordStore` is the
  ``RecordStore`` the applier writes through, with an optional write-ahead callback;
- each CR applies only the actions whose ``resource`` is itself (:meth:`ScopePlan.actions_for`),
  so one CR's handler never creates or deletes another CR's object.

A tag whose snapshot was resolved (``fromLatest``, ``fromTimestamp``) is planned with that
snapshot frozen (``status.snapshotId``), so a restart between resolving and creating cannot move it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tablekeeper import reconcile
from tablekeeper.core import errors as core_errors
from tablekeeper.core import paimon, values
from tablekeeper.core.paimon import Table, table_path
from tablekeeper.core.policy import SpecModel, effective
from tablekeeper.core.policy.specs import (
    ClusterPaimonCatalogSpec,
    ClusterPaimonRetentionPolicySpec,
    PaimonBranchSpec,
    PaimonRetentionPolicySpec,
    PaimonTagSpec,
)
from tablekeeper.operator.cluster.view import (
    NamespaceLabels,
    Obj,
    TableInfo,
    View,
    branch_name_of,
    parse,
    tag_name_of,
    valid_cluster_policies,
    valid_policies,
    winners,
)
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import Failure, OperatorError
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.state.desired import TableTarget
from tablekeeper.reconcile.state.documents import Problem
from tablekeeper.reconcile.state.observe import TableState
from tablekeeper.reconcile.state.records import BranchRecord, TableRecords, TagRecord

__all__ = [
    "SOURCE",
    "Member",
    "Scope",
    "ScopePlan",
    "StatusRecordStore",
    "members",
    "gather",
    "plan_scope",
    "records_of",
    "apply_actions",
    "deletion_policy",
    "check_confined",
]

#: ``Resource.file`` of objects that come from the cluster (messages read "cluster (PaimonTag ns/x)").
SOURCE = "cluster"


def deletion_policy(spec: PaimonTagSpec | PaimonBranchSpec, default: str) -> str:
    """The effective deletion policy: the spec's, else the operator default."""
    return spec.deletion_policy or default


@dataclass(frozen=True)
class Member:
    """One PaimonTag or PaimonBranch of a table scope."""

    obj: Obj
    spec: PaimonTagSpec | PaimonBranchSpec | None
    name: str | None
    branch: str
    winner: Obj | None
    failure: Failure | None = None

    @property
    def owner(self) -> bool:
        """The CR that speaks for its tag/branch (valid, managed, the oldest of its identity)."""
        return (self.failure is None and self.spec is not None and not self.obj.unmanaged
                and self.winner is not None and self.winner.uid == self.obj.uid)

    @property
    def active(self) -> bool:
        """An owner that declares its object (not being deleted)."""
        return self.owner and not self.obj.deleting

    @property
    def where(self) -> str:
        return f"{SOURCE} ({self.obj.ref})"


def members(view: View, table: Obj, kind: str) -> tuple[Member, ...]:
    """The tags or branches (``kind``) of the PaimonTable ``table``, with conflicts resolved."""
    parsed: list[tuple[Obj, PaimonTagSpec | PaimonBranchSpec | None, str | None, str, Failure | None]] = []
    for obj in view.children(kind, table.namespace, table.name):
        try:
            parsed_spec = parse(obj)
            if isinstance(parsed_spec, PaimonTagSpec):
                parsed.append((obj, parsed_spec, tag_name_of(obj, parsed_spec), parsed_spec.branch, None))
            else:
                assert isinstance(parsed_spec, PaimonBranchSpec)
                branch_name = branch_name_of(obj, parsed_spec)
                parsed.append((obj, parsed_spec, branch_name, branch_name, None))
        except core_errors.InvalidInputError as e:
            parsed.append((obj, None, None, paimon.MAIN, Failure(Reason.INVALID_SPEC, e.message, False)))
    contenders = [(o, n, b) for o, s, n, b, f in parsed if f is None and not o.unmanaged]
    won = winners((o for o, _, _ in contenders),
                          lambda o: next(((b, n) if kind == "PaimonTag" else n
                                          for c, n, b in contenders if c.uid == o.uid), None))
    out = []
    for obj, spec, name, branch, failure in parsed:
        winner = won.get(obj.uid)
        if failure is None and winner is not None and winner.uid != obj.uid:
            failure = Failure(Reason.RESOURCE_CONFLICT, f"Managed by {winner.short}", False)
        out.append(Member(obj, spec, name, branch, winner, failure))
    return tuple(out)


@dataclass(frozen=True)
class Scope:
    """One PaimonTable, its catalog connection, tags, branches and candidate policies."""

    table: TableInfo
    options: Mapping[str, str]
    labels: NamespaceLabels
    tags: tuple[Member, ...]
    branches: tuple[Member, ...]
    policies: tuple[tuple[Obj, PaimonRetentionPolicySpec], ...]
    cluster_policies: tuple[tuple[Obj, ClusterPaimonRetentionPolicySpec], ...]
    default_deletion_policy: str = "Delete"

    @property
    def identity(self) -> tuple[str, str]:
        return self.table.identity

    @property
    def location(self) -> reconcile.TableLocation:
        return reconcile.TableLocation(self.table.catalog.warehouse, self.table.spec.qualified_name,
                                       dict(self.options))

    def member(self, uid: str) -> Member | None:
        return next((m for m in (*self.tags, *self.branches) if m.obj.uid == uid), None)


def gather(view: View, table: TableInfo, options: Mapping[str, str],
           labels: NamespaceLabels, *, default_deletion_policy: str = "Delete") -> Scope:
    """The scope of a resolved table."""
    return Scope(table, dict(options), labels, members(view, table.obj, "PaimonTag"),
                 members(view, table.obj, "PaimonBranch"), tuple(valid_policies(view, table.obj.namespace)),
                 tuple(valid_cluster_policies(view)), default_deletion_policy)


# -- records in status ------------------------------------------------------------------------------

def records_of(scope: Scope) -> TableRecords:
    """The ownership records of the scope: what every owning PaimonTag/PaimonBranch says in its
    status (``owned: true``)."""
    records = TableRecords()
    for m in scope.branches:
        status = m.obj.status
        if not m.owner or not status.get("owned") or m.name is None:
            continue
        assert isinstance(m.spec, PaimonBranchSpec)
        records = records.with_branch(m.name, BranchRecord(
            m.obj.ref, deletion_policy(m.spec, scope.default_deletion_policy),
            values.parse_rfc3339_ms(status.get("createTime")) or 0, status.get("forkTag"),
            bool(status.get("expired")), bool(status.get("createPending"))))
    for m in scope.tags:
        status = m.obj.status
        if not m.owner or not status.get("owned") or m.name is None or status.get("snapshotId") is None:
            continue
        assert isinstance(m.spec, PaimonTagSpec)
        records = records.with_tag(m.branch, m.name, TagRecord(
            m.obj.ref, int(status["snapshotId"]), deletion_policy(m.spec, scope.default_deletion_policy),
            bool(status.get("expired")), values.parse_rfc3339_ms(status.get("expireTime"))))
    return records


class StatusRecordStore:
    """The applier's ``RecordStore`` for one scope: records start as the CRs' statuses say;
    every ``save`` calls ``on_save(before, after)`` (the write-ahead hook of the CR being
    reconciled), then keeps ``after`` for the handler to write into status."""

    def __init__(self, records: TableRecords,
                 on_save: Callable[[TableRecords, TableRecords], None] | None = None) -> None:
        self.records = records
        self._on_save = on_save

    def load(self, warehouse: str, identifier: str) -> TableRecords:
        return self.records

    def save(self, warehouse: str, identifier: str, records: TableRecords) -> None:
        before, self.records = self.records, records
        if self._on_save is not None:
            self._on_save(before, records)


# -- planning ------------------------------------------------------------------------------------------

@dataclass
class ScopePlan:
    """The plan of one scope: observed state, effective policy, records and tag/branch actions."""

    scope: Scope
    target: TableTarget
    table: Table
    state: TableState
    policy: effective.EffectivePolicy
    records: TableRecords
    actions: list[A.Action]
    excluded: dict[str, Failure]
    now: datetime

    def actions_for(self, ref: str) -> list[A.Action]:
        """The actions a CR (``PaimonTag ns/name``) carries out itself."""
        return [a for a in self.actions if a.resource == ref]


def _frozen(m: Member) -> SpecModel:
    """The spec as planned: a tag's resolved snapshot frozen (``status.snapshotId``)."""
    spec = m.spec
    assert spec is not None
    snapshot = m.obj.status.get("snapshotId")
    if isinstance(spec, PaimonTagSpec) and snapshot is not None and spec.snapshot_id is None:
        return spec.model_copy(update={"snapshot_id": int(snapshot), "from_latest": None, "from_timestamp": None})
    return spec


def _desired(scope: Scope, resources: Sequence[reconcile.Resource]) -> reconcile.DesiredState:
    """The desired state of the scope's resources, with the table's namespace labels."""
    namespace = scope.table.obj.namespace or ""
    labels = {namespace: dict(scope.labels.get(namespace) or {})}
    return reconcile.build_desired_state(resources, namespace_labels=labels)


def _resources(scope: Scope, excluded: Mapping[str, Failure]) -> tuple[list[reconcile.Resource], reconcile.Resource]:
    info = scope.table
    catalog_spec = info.catalog.spec.model_copy(update={"options": dict(scope.options)})
    if isinstance(catalog_spec, ClusterPaimonCatalogSpec):  # tenancy was decided with namespace labels
        catalog_spec = catalog_spec.model_copy(update={"allowed_namespaces": None})
    cat = info.catalog.obj
    resources = [reconcile.Resource(cat.kind, cat.name, cat.namespace, catalog_spec, SOURCE, 0)]
    table = reconcile.Resource("PaimonTable", info.obj.name, info.obj.namespace, info.spec, SOURCE, 0,
                               dict(info.obj.labels), dict(info.obj.annotations))
    resources.append(table)
    for m in (*scope.tags, *scope.branches):
        if m.active and m.obj.uid not in excluded:
            resources.append(reconcile.Resource(m.obj.kind, m.obj.name, m.obj.namespace, _frozen(m), SOURCE, 0,
                                                dict(m.obj.labels)))
    for obj, spec in scope.policies:
        resources.append(reconcile.Resource(obj.kind, obj.name, obj.namespace, spec, SOURCE, 0, dict(obj.labels)))
    for obj, cspec in scope.cluster_policies:
        resources.append(reconcile.Resource(obj.kind, obj.name, None, cspec, SOURCE, 0, dict(obj.labels)))
    return resources, table


_MEMBER_REASONS = {"spec.branch": Reason.BRANCH_NOT_FOUND, "spec.fromTag": Reason.TAG_NOT_FOUND,
                   "spec.fromSnapshotId": Reason.SNAPSHOT_NOT_FOUND}


def _table_failure(problem: Problem) -> OperatorError:
    if problem.field.startswith("spec.policyRefs"):
        reason = Reason.POLICY_NOT_FOUND
    elif problem.field.startswith("spec.retention"):
        reason = Reason.POLICY_VIOLATION
    else:
        reason = Reason.INVALID_SPEC
    text = f"{problem.field}: {problem.message}" if problem.field else problem.message
    return OperatorError(reason, text + (f" (fix: {problem.fix})" if problem.fix else ""))


def _attribute(problems: Sequence[Problem], scope: Scope, table: reconcile.Resource,
               excluded: dict[str, Failure]) -> None:
    """Exclude the members the problems are about; raise for the table's own problems."""
    by_where = {m.where: m for m in (*scope.tags, *scope.branches)}
    for problem in problems:
        member = by_where.get(problem.where)
        if member is None:
            if problem.where.startswith(table.where) or not problem.message:
                raise _table_failure(problem)
            raise _table_failure(problem)
        text = problem.message + (f" (fix: {problem.fix})" if problem.fix else "")
        excluded[member.obj.uid] = Failure(_MEMBER_REASONS.get(problem.field, Reason.INVALID_SPEC), text, False)


def check_confined(warehouse: str, identifier: str, local: bool) -> None:
    """A table must lie inside its catalog's warehouse: for a local warehouse, the real path of
    the table (symlinks resolved) must be under the real path of the warehouse.

    Raises:
        OperatorError: ``TableOutsideWarehouse``.
    """
    if not local:
        return  # object stores have no links; identifiers cannot contain '/' or '..'
    root = os.path.realpath(warehouse.removeprefix("file://"))
    path = os.path.realpath(table_path(warehouse.removeprefix("file://"), identifier))
    if os.path.commonpath([root, path]) != root:
        raise OperatorError(Reason.TABLE_OUTSIDE_WAREHOUSE,
                            f"table {identifier} resolves to {path}, outside the catalog's warehouse {root}; "
                            "tablekeeper never touches it")


def plan_scope(scope: Scope, opener: reconcile.Opener, now: datetime, *, objects: bool = True) -> ScopePlan:
    """Desired state, observation and (with ``objects``) the tag/branch plan of a scope. Blocking.

    Raises:
        OperatorError: a problem of the table itself (policy, outside the warehouse).
        TablekeeperError: from storage (TableNotFoundError, StorageError...).
    """
    excluded: dict[str, Failure] = {}
    for _ in range(1 + len(scope.tags) + len(scope.branches)):
        resources, table_res = _resources(scope, excluded)
        try:
            desired = _desired(scope, resources)
        except reconcile.ManifestError as e:
            _attribute([p for p in e.problems if isinstance(p, Problem)], scope, table_res, excluded)
            continue
        break
    else:  # pragma: no cover - every round excludes at least one member or raises
        raise OperatorError(Reason.INVALID_SPEC, "the desired state of the table cannot be built")
    target = desired.tables[0]
    io = opener.file_io(scope.location.warehouse)
    check_confined(scope.location.warehouse, scope.location.identifier, io.is_local)
    table = opener.open(target.location)
    state = reconcile.observe(table)
    policy = target.resolve_policy(state.options)
    records = records_of(scope)
    for _ in range(1 + len(scope.tags) + len(scope.branches)):
        problems = reconcile.planner.validate_against_storage(target, state, records)
        if not problems:
            break
        before = len(excluded)
        _attribute(problems, scope, target.resource, excluded)
        if len(excluded) == before:  # pragma: no cover - defensive
            break
        resources, _ = _resources(scope, excluded)
        target = _desired(scope, resources).tables[0]
    actions = reconcile.plan_objects(target, state, records, policy, now) if objects else []
    return ScopePlan(scope, target, table, state, policy, records, list(actions), excluded, now)


def apply_actions(plan: ScopePlan, actions: Sequence[A.Action], store: StatusRecordStore,
                  opener: reconcile.Opener, config: reconcile.ReconcileConfig | None = None) -> reconcile.ApplyResult:
    """Carry out ``actions`` (a subset of the plan's) through the shared applier. Blocking."""
    if not actions:
        return reconcile.ApplyResult()
    table_plan = reconcile.TablePlan.of(plan.target, actions, plan.policy)
    return reconcile.apply(reconcile.ReconcilePlan(plan.now, (table_plan,)), store=store, opener=opener,
                           config=config or reconcile.ReconcileConfig(estimate=False))
