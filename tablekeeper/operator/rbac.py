"""Every Kubernetes API permission the operator needs, in one place.

The Helm chart's RBAC must grant exactly these (``tests/chart/test_chart.py`` renders the chart
and compares), so a new API call starts here. Each :class:`Permission` says where it is needed:

- ``cluster``: cluster-scoped resources, always granted cluster-wide;
- ``watched``: namespaced resources in the namespaces the operator watches (cluster-wide when it
  watches the whole cluster);
- ``operator``: namespaced resources in the operator's own namespace (Events about
  cluster-scoped objects land there, and a ``ClusterPaimonCatalog`` credentials Secret without a
  namespace is read from there); covered by ``watched`` in cluster-wide mode;
- ``jobs``: the namespaces where maintenance Jobs and SparkApplications run.

Deliberately absent:

- ``coordination.k8s.io/leases``: no leader election; one replica with the ``Recreate`` strategy;
- ``kopf.dev`` peerings: the operator runs ``--standalone`` (peering is not leader election);
- ``apiextensions.k8s.io/customresourcedefinitions`` and ``namespaces`` list/watch: Kopf's
  resource scanning is disabled (``tablekeeper.operator.main.build_settings``); the operator only
  *gets* single Namespaces, for their labels, when a ``ClusterPaimonCatalog.allowedNamespaces``
  or a ``ClusterPaimonRetentionPolicy`` namespace selector needs them, and *gets* the one CRD
  ``sparkapplications.sparkoperator.k8s.io`` (``resourceNames``) to tell whether engine ``Auto``
  can launch SparkApplications;
- ``pods`` and logs: run results come from a JSON artifact, never from logs (spark-jobs.md §8.3);
- ``list``/``watch`` on Jobs and SparkApplications: the operator observes the one object a run
  recorded, by name, from the run's periodic check;
- ``update`` on ``/status``: Kopf and the controller patch status.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from tablekeeper.core.policy import API_GROUP, CLUSTER_SCOPED

__all__ = [
    "Scope",
    "Permission",
    "Grant",
    "PERMISSIONS",
    "TABLEKEEPER_PLURALS",
    "permissions",
    "required_grants",
    "covers",
    "SPARK_APPLICATION_CRD",
]

Scope = Literal["cluster", "watched", "operator", "jobs"]

#: kind -> plural (same as the CRDs; tests check both agree).
TABLEKEEPER_PLURALS: dict[str, str] = {
    "PaimonCatalog": "paimoncatalogs",
    "ClusterPaimonCatalog": "clusterpaimoncatalogs",
    "PaimonTable": "paimontables",
    "PaimonTag": "paimontags",
    "PaimonBranch": "paimonbranches",
    "PaimonRetentionPolicy": "paimonretentionpolicies",
    "ClusterPaimonRetentionPolicy": "clusterpaimonretentionpolicies",
    "PaimonMaintenanceRun": "paimonmaintenanceruns",
}

_READ_WRITE = ("get", "list", "watch", "patch", "update")
#: Extra verbs by kind: the operator creates and deletes its own child objects.
_EXTRA_VERBS: dict[str, tuple[str, ...]] = {
    "PaimonTag": ("create", "delete"),  # policy tags (trigger-type=Policy) and their expiry, design §4.3
    "PaimonBranch": ("delete",),  # branch TTL deletes the CR, design §4.4
    "PaimonMaintenanceRun": ("create", "delete"),  # scheduled runs and history pruning, design §4.6, §7.6
}
#: Launched Jobs and SparkApplications are read one by one by the name the run records (the run's
#: periodic check), never listed or watched (tablekeeper.operator.runs.spark).
_LAUNCH_VERBS = ("create", "get", "delete")
#: Kinds that own other objects with ``blockOwnerDeletion`` (the OwnerReferencesPermissionEnforcement
#: admission plugin then requires ``update`` on the owner's ``finalizers`` subresource).
_OWNERS = ("PaimonTable", "PaimonMaintenanceRun")
#: The Spark Operator's CRD (``tablekeeper.operator.runs.spark.SPARK_APPLICATION_CRD``).
SPARK_APPLICATION_CRD = "sparkapplications.sparkoperator.k8s.io"


@dataclass(frozen=True)
class Permission:
    """Verbs on one resource (``plural`` or ``plural/subresource``) of one API group; with
    ``names``, only on the objects of those names (RBAC ``resourceNames``)."""

    group: str
    resource: str
    verbs: tuple[str, ...]
    scope: Scope
    why: str
    names: tuple[str, ...] = ()


def _tablekeeper_permissions() -> Iterable[Permission]:
    for kind, plural in TABLEKEEPER_PLURALS.items():
        scope: Scope = "cluster" if kind in CLUSTER_SCOPED else "watched"
        verbs = _READ_WRITE + _EXTRA_VERBS.get(kind, ())
        yield Permission(API_GROUP, plural, verbs, scope,
                         "watch and reconcile; Kopf patches finalizers and annotations")
        yield Permission(API_GROUP, f"{plural}/status", ("patch",), scope, "status, conditions")
        if kind in _OWNERS:
            yield Permission(API_GROUP, f"{plural}/finalizers", ("update",), scope,
                             "ownerReferences with blockOwnerDeletion on objects it owns")


#: The complete list.
PERMISSIONS: tuple[Permission, ...] = (
    *_tablekeeper_permissions(),
    Permission("", "events", ("create",), "watched", "Events about objects (Kopf posting, design §7.9)"),
    Permission("", "events", ("create",), "operator", "Events about cluster-scoped objects"),
    Permission("", "namespaces", ("get",), "cluster",
               "labels of a CR's namespace for allowedNamespaces.selector / namespaceSelector (design §8)"),
    Permission("", "secrets", ("get",), "watched", "PaimonCatalog credentialsSecretRef"),
    Permission("", "secrets", ("get",), "operator", "ClusterPaimonCatalog credentialsSecretRef without namespace"),
    Permission("apiextensions.k8s.io", "customresourcedefinitions", ("get",), "cluster",
               "engine Auto: is the Spark Operator installed (its SparkApplication CRD)? (design §7.7)",
               names=(SPARK_APPLICATION_CRD,)),
    Permission("batch", "jobs", _LAUNCH_VERBS, "jobs",
               "SparkJob maintenance runs: create or adopt, observe by name, delete past the deadline or with "
               "their run (design §7.7)"),
    Permission("sparkoperator.k8s.io", "sparkapplications", _LAUNCH_VERBS, "jobs",
               "SparkOperator maintenance runs: create or adopt, observe by name, delete past the deadline or "
               "with their run (design §7.7)"),
)

#: (namespace or None for cluster-wide, group, resource, verb, resource name or "" for any).
Grant = tuple[str | None, str, str, str, str]


def permissions(scope: Scope) -> tuple[Permission, ...]:
    """The permissions of one scope."""
    return tuple(p for p in PERMISSIONS if p.scope == scope)


def required_grants(*, operator_namespace: str, watch_namespaces: Sequence[str] = (),
                    job_namespaces: Sequence[str] = ()) -> set[Grant]:
    """Every (namespace, group, resource, verb, name) the operator needs, without redundancy.

    Args:
        operator_namespace: where the operator runs.
        watch_namespaces: the namespaces it watches; empty = the whole cluster.
        job_namespaces: where it launches runs; empty = ``operator_namespace``.
    """
    grants: set[Grant] = set()

    def add(where: str | None, scope: Scope) -> None:
        for permission in permissions(scope):
            grants.update((where, permission.group, permission.resource, verb, name)
                          for verb in permission.verbs for name in permission.names or ("",))

    add(None, "cluster")
    if watch_namespaces:
        for namespace in watch_namespaces:
            add(namespace, "watched")
        if operator_namespace not in watch_namespaces:
            add(operator_namespace, "operator")
    else:
        add(None, "watched")
    for namespace in job_namespaces or (operator_namespace,):
        add(namespace, "jobs")
    # A cluster-wide grant makes the same grant in a namespace redundant.
    cluster_wide = {grant[1:] for grant in grants if grant[0] is None}
    return {grant for grant in grants if grant[0] is None or grant[1:] not in cluster_wide}


def covers(grants: set[Grant], namespace: str | None, group: str, resource: str, verb: str, name: str = "") -> bool:
    """Whether ``grants`` allow one request (``name``: the object's name; "" for collections)."""
    names = ("", name) if name else ("",)
    wheres = (None, namespace) if namespace is not None else (None,)
    return any((where, group, resource, verb, n) in grants for where in wheres for n in names)
