"""Fixtures of the ``apiserver`` tier: one real kube-apiserver + etcd per session (scripts/k8s-testenv),
the CRDs applied with ``kubectl apply --server-side`` and Established, the chart's RBAC rendered by
helm-python-sdk and applied, and a :class:`RealHarness` whose operator logs in as the chart's
ServiceAccount.

Skips with one line when Go is missing (and no cached build exists); under ``CI=true`` that, and
any build or start failure, fails instead.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import kopf
import pytest
import yaml

from tests.apiserver.harness import RealHarness
from tests.operator.conftest import OPERATOR_NAMESPACE, demo_template, demo_warehouse, small_template, warehouse
from tests.support.apiserver import Testenv, TestenvUnavailable, ensure_built, object_path, start
from tests.support.k8s import CRD_DIR, REPO_ROOT

__all__ = ["demo_template", "demo_warehouse", "small_template", "warehouse"]  # the emulator tests' warehouses

HERE = Path(__file__).parent
CHART = REPO_ROOT / "charts" / "tablekeeper"
SPARK_CRD = REPO_ROOT / "tests" / "operator" / "data" / "crds" / "sparkoperator.k8s.io_sparkapplications.yaml"
RELEASE = "tk"
RBAC_PLURALS = {"ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles",
                "ClusterRoleBinding": "clusterrolebindings", "Role": "roles", "RoleBinding": "rolebindings"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.apiserver)


@pytest.fixture(scope="session")
def testenv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testenv]:
    """A running kube-apiserver + etcd (RBAC on, no controller-manager), stopped at the end."""
    try:
        ensure_built()
    except TestenvUnavailable as err:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the apiserver tier cannot build its control plane under CI: {err}")
        pytest.skip(f"apiserver tier skipped: {err}")
    env = start(tmp_path_factory.mktemp("k8s-testenv"))
    try:
        yield env
    finally:
        env.stop()


@pytest.fixture(scope="session")
def crds(testenv: Testenv) -> Testenv:
    """The CRDs of ``crds/`` (and the Spark operator's, for the Spark runs) applied and Established,
    as the quick start (README, docs/operator.md) does it."""
    assert (REPO_ROOT / "crds") == CRD_DIR
    # the quick start, word for word (kubectl runs in the repository root)
    testenv.kubectl("apply", "--server-side", "-f", "crds/")
    testenv.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", "crds/")
    testenv.kubectl("apply", "--server-side", "-f", str(SPARK_CRD))
    testenv.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", str(SPARK_CRD))
    return testenv


def render_chart(values: dict[str, Any] | None = None, *, release: str = RELEASE,
                 namespace: str = OPERATOR_NAMESPACE) -> list[dict[str, Any]]:
    """Every object the chart renders (helm-python-sdk, offline)."""
    with helm.Chart.load(CHART) as chart:
        rendered = chart.render(values or {}, name=release, namespace=namespace, is_install=True)
    objects: list[dict[str, Any]] = []
    for path, text in sorted(rendered.items()):
        if path.endswith(".yaml"):
            objects += [doc for doc in yaml.safe_load_all(text) if doc]
    return objects


def rbac_objects(objects: list[dict[str, Any]], namespace: str = OPERATOR_NAMESPACE) -> list[dict[str, Any]]:
    """The ServiceAccounts, roles and bindings among ``objects`` (namespaced ones placed)."""
    out = []
    for obj in objects:
        if obj["kind"] in RBAC_PLURALS:
            if obj["kind"] in ("ServiceAccount", "Role", "RoleBinding"):
                obj.setdefault("metadata", {}).setdefault("namespace", namespace)
            out.append(obj)
    return out


def apply_objects(testenv: Testenv, objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        namespace = obj["metadata"].get("namespace")
        if namespace:
            testenv.ensure_namespace(namespace)
        resp = testenv.admin.apply(object_path(obj, plural=RBAC_PLURALS[obj["kind"]]), obj)
        assert resp.status_code in (200, 201), resp.text


def operator_account(objects: list[dict[str, Any]]) -> tuple[str, str]:
    """``(namespace, name)`` of the operator's ServiceAccount (the Deployment's)."""
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    name = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    return deployment["metadata"].get("namespace") or OPERATOR_NAMESPACE, name


def install_rbac(testenv: Testenv, values: dict[str, Any] | None = None, *, release: str = RELEASE,
                 edit: Any = None) -> str:
    """Render the chart, apply exactly its RBAC (after ``edit(objects)``), return the operator's token."""
    objects = render_chart(values, release=release)
    rbac = rbac_objects(objects)
    if edit is not None:
        edit(rbac)
    apply_objects(testenv, rbac)
    namespace, name = operator_account(objects)
    return testenv.service_account_token(namespace, name)


@pytest.fixture(scope="session")
def operator_token(crds: Testenv) -> str:
    """The chart's ServiceAccount token, its default (cluster-wide) RBAC applied."""
    return install_rbac(crds)


@pytest.fixture
async def real_harness(crds: Testenv, operator_token: str,
                       operator_settings: kopf.OperatorSettings) -> AsyncIterator[RealHarness]:
    """The harness on the real API server: namespaces ``sales``, ``finance`` and the operator's,
    emptied afterwards; a test fails when the server answered any 403 during it."""
    h = RealHarness(crds, operator_settings, operator_token)
    h.add_namespace("sales", {"team": "sales"})
    h.add_namespace("finance", {"team": "finance"})
    h.add_namespace(OPERATOR_NAMESPACE)
    try:
        yield h
        await h.stop()
        assert h.forbidden() == [], "the API server refused the operator (403): the chart's RBAC lacks a verb"
    finally:
        await h.stop()
        h.clean()
