"""The permissions in ``tablekeeper.operator.rbac`` cover every API call Kopf makes for the operator
(recorded by the emulator while the operator runs with its production settings), cluster-wide and
namespaced, and ``required_grants`` places them as documented."""

from __future__ import annotations

import kopf
import pytest

from tablekeeper.core.policy.kinds import API_GROUP
from tablekeeper.operator import rbac
from tablekeeper.operator.runs import spark as sparkruns
from tests.operator.test_operator_smoke import paimontag, trivial_registry
from tests.support.k8s import ApiServerEmulator, OperatorThread, eventually, url_of

pytestmark = pytest.mark.k8s


def _covered(call: tuple[str | None, str, str, str], grants: set[rbac.Grant]) -> bool:
    return rbac.covers(grants, *call)


async def _exercise(k8s: ApiServerEmulator, settings: kopf.OperatorSettings, namespaces: list[str] | None) -> None:
    seen: list[tuple[str, ...]] = []
    operator = OperatorThread(trivial_registry(seen), str(k8s.url).rstrip("/"), settings=settings,
                              namespaces=namespaces)
    await operator.start()
    try:
        await k8s.post(url_of("paimontags", "sales"), json=paimontag("t1", fromLatest=True))
        await k8s.post(url_of("clusterpaimoncatalogs"), json={
            "apiVersion": "tablekeeper.io/v1alpha1", "kind": "ClusterPaimonCatalog", "metadata": {"name": "c1"},
            "spec": {"warehouse": "s3://lake/wh"}})
        await eventually(lambda: ("create-catalog", "c1", "filesystem") in seen and len(seen) >= 2)
        await k8s.delete(url_of("paimontags", "sales", "t1"))
        await eventually(lambda: ("delete", "sales/t1") in seen)
        await eventually(lambda: any(call[4] == "create" and call[3] == "events" for call in k8s.api_calls))
    finally:
        await operator.stop()


@pytest.mark.parametrize("namespaces", [None, ["sales"]], ids=["cluster-wide", "namespaced"])
async def test_operator_calls_are_covered(k8s: ApiServerEmulator, operator_settings: kopf.OperatorSettings,
                                          namespaces: list[str] | None) -> None:
    await _exercise(k8s, operator_settings, namespaces)
    calls = {call[1:] for call in k8s.api_calls if call[0].startswith("kopf")}
    assert {call[3] for call in calls} >= {"list", "watch", "patch", "create"}
    # Kopf outside a cluster posts Events about cluster-scoped objects to "default".
    grants = rbac.required_grants(operator_namespace="default", watch_namespaces=namespaces or ())
    assert not {call for call in calls if not _covered(call, grants)}
    assert {call[2] for call in calls} <= {*rbac.TABLEKEEPER_PLURALS.values(),
                                          *(f"{p}/status" for p in rbac.TABLEKEEPER_PLURALS.values()), "events"}


def test_permissions_are_specific() -> None:
    for permission in rbac.PERMISSIONS:
        assert "*" not in (permission.group, permission.resource, *permission.verbs, *permission.names)
        assert permission.why
    tablekeeper = {p.resource for p in rbac.PERMISSIONS if p.group == API_GROUP}
    for plural in rbac.TABLEKEEPER_PLURALS.values():
        assert {plural, f"{plural}/status"} <= tablekeeper
    # the only named permission: the one CRD engine Auto looks up, by name, never listed
    [named] = [p for p in rbac.PERMISSIONS if p.names]
    assert (named.group, named.resource, named.verbs, named.names) == \
        ("apiextensions.k8s.io", "customresourcedefinitions", ("get",), (sparkruns.SPARK_APPLICATION_CRD,))
    assert rbac.SPARK_APPLICATION_CRD == sparkruns.SPARK_APPLICATION_CRD


def test_required_grants_places_permissions() -> None:
    cluster = rbac.required_grants(operator_namespace="tk")
    assert (None, API_GROUP, "paimontags", "watch", "") in cluster
    assert (None, API_GROUP, "clusterpaimoncatalogs", "patch", "") in cluster
    assert ("tk", "batch", "jobs", "create", "") in cluster
    assert not rbac.covers(cluster, None, "batch", "jobs", "create")
    assert not [g for g in cluster if g[0] is not None and g[2] in ("events", "secrets")]  # covered cluster-wide
    crd = ("apiextensions.k8s.io", "customresourcedefinitions", "get")
    assert rbac.covers(cluster, None, *crd, name=sparkruns.SPARK_APPLICATION_CRD)
    assert not rbac.covers(cluster, None, *crd, name="paimontables.tablekeeper.io")
    assert not rbac.covers(cluster, None, *crd)  # no unnamed get (and no list/watch)

    namespaced = rbac.required_grants(operator_namespace="tk", watch_namespaces=["a", "b"], job_namespaces=["jobs"])
    assert (None, API_GROUP, "paimontags", "watch", "") not in namespaced
    assert {("a", API_GROUP, "paimontags", "watch", ""), ("b", API_GROUP, "paimontags", "watch", "")} <= namespaced
    assert (None, API_GROUP, "clusterpaimonretentionpolicies", "list", "") in namespaced
    assert {("tk", "", "events", "create", ""), ("tk", "", "secrets", "get", "")} <= namespaced
    assert not rbac.covers(namespaced, "tk", API_GROUP, "paimontags", "watch")
    assert {g[0] for g in namespaced if g[1] == "sparkoperator.k8s.io"} == {"jobs"}
    assert (None, *crd, sparkruns.SPARK_APPLICATION_CRD) in namespaced
