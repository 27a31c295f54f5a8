"""The operator test :class:`~tests.operator.conftest.Harness` on a real kube-apiserver.

Same interface as the emulator's harness, so the emulator's life-cycle scenarios run unchanged
(tests/apiserver/test_lifecycles.py). Differences, each because a real server works that way:

- the operator logs in as the chart's ServiceAccount (a TokenRequest token) with exactly the RBAC
  the chart renders, so a missing verb is a 403; every 403 the server counts during a test fails it
  (:meth:`RealHarness.forbidden`, checked by the fixture);
- one API server per session and no controller-manager (deleted namespaces would stay Terminating):
  the fixed namespaces of the scenarios (``sales``, ``finance``...) are reused, and the fixture
  empties them after each test (every tablekeeper object with its finalizers dropped, Events,
  Secrets, Jobs and SparkApplications), so the next test starts from nothing.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterable
from typing import Any

import kopf

from tablekeeper.operator import main as operator_main
from tablekeeper.operator.settings import OperatorConfig
from tests.operator.conftest import CLUSTER_KINDS, PLURALS, Harness
from tests.support.apiserver import Testenv
from tests.support.k8s import OperatorThread

#: Namespaced resources the scenarios create besides tablekeeper's, emptied after each test.
OTHER_NAMESPACED = ("/api/v1/namespaces/{ns}/events", "/api/v1/namespaces/{ns}/secrets",
                    "/apis/batch/v1/namespaces/{ns}/jobs",
                    "/apis/sparkoperator.k8s.io/v1beta2/namespaces/{ns}/sparkapplications")


class ForbiddenLog(logging.Handler):
    """Counts the operator's log records about a 403 (Kopf logs every refused request: the server
    answers an RBAC denial before its request metrics see it)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "APIForbiddenError" in text or "status=403" in text or " is forbidden: " in text:
            self.records.append(text)


class RealHarness(Harness):
    """A :class:`Harness` whose API is a real kube-apiserver and whose operator is a ServiceAccount."""

    def __init__(self, testenv: Testenv, settings: kopf.OperatorSettings, token: str) -> None:
        super().__init__(emu=None, kinds={}, settings=settings)  # type: ignore[arg-type]
        self.testenv = testenv
        self.rest = testenv.admin
        self.token = token
        self.namespaces: set[str] = {"default"}
        self.forbidden_log = ForbiddenLog()
        logging.getLogger("kopf").addHandler(self.forbidden_log)

    # -- the operator ---------------------------------------------------------------------------
    async def start(self, config: OperatorConfig | None = None, namespaces: list[str] | None = None) -> None:
        if config is not None:
            self.config = config
        registry = operator_main.register(kopf.OperatorRegistry(), config=self.config, login=False)
        settings = self.settings
        settings.batching.idle_timeout = 0.5
        settings.batching.exit_timeout = 0.5
        # Kopf's consistency_timeout stays the operator's own (main.CONSISTENCY_TIMEOUT_S): on a real
        # server the tier measures the writes the operator really makes (test_writes.py)
        settings.networking.connect_timeout = 2.0
        settings.networking.request_timeout = 5.0
        settings.scanning.disabled = True
        self.operator = OperatorThread(registry, self.testenv.server, settings=settings, namespaces=namespaces,
                                       connection=self.testenv.connection(self.token))
        await self.operator.start()

    # -- objects --------------------------------------------------------------------------------
    def _path(self, kind: str, namespace: str | None, name: str | None = None) -> str:
        if namespace and kind not in CLUSTER_KINDS:
            self.namespaces.add(namespace)
        return self.url(kind, namespace, name)

    async def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        meta = body["metadata"]
        resp = self.rest.create(self._path(body["kind"], meta.get("namespace")), body)
        assert resp.status_code == 201, resp.text
        return dict(resp.json())

    async def patch(self, kind: str, name: str, body: dict[str, Any], namespace: str | None = "sales") -> None:
        resp = self.rest.merge_patch(self._path(kind, namespace, name), body)
        assert resp.status_code == 200, resp.text

    async def delete(self, kind: str, name: str, namespace: str | None = "sales") -> None:
        resp = self.rest.delete(self._path(kind, namespace, name))
        assert resp.status_code in (200, 202), resp.text

    def get(self, kind: str, name: str, namespace: str | None = "sales") -> dict[str, Any] | None:
        return self.rest.get(self._path(kind, namespace, name))

    def all(self, kind: str, namespace: str | None = "sales") -> list[dict[str, Any]]:
        found = self.rest.get(self._path(kind, namespace))
        return list((found or {}).get("items") or [])

    def events(self, name: str, reason: str | None = None) -> list[dict[str, Any]]:
        selector = f"involvedObject.name={name}" + (f",reason={reason}" if reason else "")
        found = self.rest.get("/api/v1/events", fieldSelector=selector)
        return list((found or {}).get("items") or [])

    def writes(self, plural: str) -> int:
        raise NotImplementedError("per-request records exist only in the emulator; see bench/operator_scale.py")

    def add_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        self.testenv.ensure_namespace(name, labels)
        self.namespaces.add(name)

    def add_secret(self, namespace: str, name: str, data: dict[str, str]) -> None:
        self.add_namespace(namespace)
        body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
                "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}
        resp = self.rest.apply(f"/api/v1/namespaces/{namespace}/secrets/{name}", body)
        assert resp.status_code in (200, 201), resp.text

    # -- between tests --------------------------------------------------------------------------
    def forbidden(self) -> list[str]:
        """The operator's 403s since this harness was made (its RBAC lacks something)."""
        return list(self.forbidden_log.records)

    def clean(self, extra_namespaces: Iterable[str] = ()) -> None:
        """Remove everything the test made (see :func:`clean_all`)."""
        logging.getLogger("kopf").removeHandler(self.forbidden_log)
        clean_all(self.testenv, {*self.namespaces, *extra_namespaces})


def clean_all(testenv: Testenv, namespaces: Iterable[str] = ("default", "sales", "finance", "demo")) -> None:
    """Remove every tablekeeper object (finalizers dropped first: no operator may be running), and
    the Events, Secrets, Jobs and SparkApplications of ``namespaces``. Namespaces stay: without a
    controller-manager a deleted namespace would stay Terminating."""
    rest = testenv.admin
    for kind in PLURALS:
        base = "/apis/tablekeeper.io/v1alpha1"
        for item in (rest.get(f"{base}/{PLURALS[kind]}") or {}).get("items") or []:
            meta = item["metadata"]
            scope = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
            path = f"{base}{scope}/{PLURALS[kind]}/{meta['name']}"
            if meta.get("finalizers"):
                rest.merge_patch(path, {"metadata": {"finalizers": None}})
            rest.delete(path)
    for namespace in namespaces:
        for collection in OTHER_NAMESPACED:
            rest.request("DELETE", collection.format(ns=namespace))
