"""Fixtures of the controller tests: the API server emulator (plus ``GET /api/v1/namespaces/<ns>``,
which kmock 0.8 cannot route), real local Paimon warehouses written by pypaimon, and a
:class:`Harness` that starts the real operator (``tablekeeper.operator.main.register``) in its own
thread with short intervals, applies objects through the API and polls with ``eventually``.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kmock
import kopf
import pytest

from tablekeeper.cli import demo
from tablekeeper.operator import main as operator_main
from tablekeeper.operator.settings import OperatorConfig
from tests.support import paimon as P
from tests.support.k8s import EVENTS, NAMESPACES, SECRETS, OperatorEmulator, OperatorThread, eventually, register_crds

PLURALS = {"PaimonCatalog": "paimoncatalogs", "ClusterPaimonCatalog": "clusterpaimoncatalogs",
           "PaimonTable": "paimontables", "PaimonTag": "paimontags", "PaimonBranch": "paimonbranches",
           "PaimonRetentionPolicy": "paimonretentionpolicies",
           "ClusterPaimonRetentionPolicy": "clusterpaimonretentionpolicies",
           "PaimonMaintenanceRun": "paimonmaintenanceruns"}
CLUSTER_KINDS = {"ClusterPaimonCatalog", "ClusterPaimonRetentionPolicy"}
OPERATOR_NAMESPACE = "tablekeeper-system"
class FakeClock:
    """A clock the test moves (schedules, TTLs)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


def fast_config(**overrides: Any) -> OperatorConfig:
    """Short intervals, no jitter: checks every 0.3 s, retries after 0.1 s."""
    base = OperatorConfig(reconcile_interval=0.3, timer_idle=0, initial_jitter=0.05, schedule_jitter=0,
                          retry_base_delay=0.1, retry_max_delay=0.5, cache_ttl=0, max_concurrent_runs=4,
                          operator_namespace=OPERATOR_NAMESPACE)
    return replace(base, **overrides)


def obj(kind: str, name: str, spec: dict[str, Any], *, namespace: str | None = "sales",
        annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if kind not in CLUSTER_KINDS:
        meta["namespace"] = namespace
    if annotations:
        meta["annotations"] = annotations
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "tablekeeper.io/v1alpha1", "kind": kind, "metadata": meta, "spec": spec}


class Harness:
    """The emulator plus a real operator; helpers to apply objects and wait for their status."""

    def __init__(self, emu: OperatorEmulator, kinds: dict[str, Any], settings: kopf.OperatorSettings) -> None:
        self.emu = emu
        self.kinds = kinds
        self.settings = settings
        self.operator: OperatorThread | None = None
        self.config = fast_config()

    # -- the operator ---------------------------------------------------------------------------
    async def start(self, config: OperatorConfig | None = None, namespaces: list[str] | None = None) -> None:
        if config is not None:
            self.config = config
        registry = operator_main.register(kopf.OperatorRegistry(), config=self.config, login=False)
        settings = self.settings  # a fresh object per test (operator_settings)
        settings.batching.idle_timeout = 0.5  # idle per-object workers exit quickly
        settings.batching.exit_timeout = 0.5
        settings.persistence.consistency_timeout = 1.0
        settings.networking.connect_timeout = 1.0  # an orphaned request at shutdown gives up fast
        settings.networking.request_timeout = 2.0
        if namespaces:
            settings.scanning.disabled = True
        self.operator = OperatorThread(registry, str(self.emu.url).rstrip("/"), settings=settings,
                                       namespaces=namespaces)
        await self.operator.start()

    async def stop(self) -> None:
        if self.operator is not None:
            operator, self.operator = self.operator, None
            await operator.stop(timeout=20)

    # -- objects --------------------------------------------------------------------------------
    def url(self, kind: str, namespace: str | None = None, name: str | None = None) -> str:
        base = "/apis/tablekeeper.io/v1alpha1"
        scope = f"/namespaces/{namespace}" if namespace and kind not in CLUSTER_KINDS else ""
        return f"{base}{scope}/{PLURALS[kind]}" + (f"/{name}" if name else "")

    async def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        meta = body["metadata"]
        resp = await self.emu.post(self.url(body["kind"], meta.get("namespace")), json=body)
        payload = await resp.json()
        assert resp.status == 201, payload
        return dict(payload)

    async def patch(self, kind: str, name: str, body: dict[str, Any], namespace: str | None = "sales") -> None:
        resp = await self.emu.patch(self.url(kind, namespace, name), json=body)
        assert resp.status == 200, await resp.text()

    async def delete(self, kind: str, name: str, namespace: str | None = "sales") -> None:
        resp = await self.emu.delete(self.url(kind, namespace, name))
        assert resp.status in (200, 202), await resp.text()

    def get(self, kind: str, name: str, namespace: str | None = "sales") -> dict[str, Any] | None:
        key = (self.kinds[kind], None if kind in CLUSTER_KINDS else namespace, name)
        if key not in self.emu.objects or self.emu.objects[key].deleted:
            return None
        return dict(self.emu.objects[key].raw)

    def all(self, kind: str, namespace: str | None = "sales") -> list[dict[str, Any]]:
        return [dict(o.raw) for (res, ns, _), o in self.emu.objects.items()
                if res == self.kinds[kind] and not o.deleted and (namespace is None or ns == namespace)]

    def status(self, kind: str, name: str, namespace: str | None = "sales") -> dict[str, Any]:
        body = self.get(kind, name, namespace)
        return dict((body or {}).get("status") or {})

    def condition(self, kind: str, name: str, type_: str = "Ready",
                  namespace: str | None = "sales") -> dict[str, Any] | None:
        for cond in self.status(kind, name, namespace).get("conditions") or ():
            if cond.get("type") == type_:
                return dict(cond)
        return None

    async def wait_condition(self, kind: str, name: str, status: str = "True", reason: str | None = None,
                             type_: str = "Ready", namespace: str | None = "sales",
                             timeout: float = 30) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            cond = self.condition(kind, name, type_, namespace)
            if cond and cond["status"] == status and (reason is None or cond["reason"] == reason):
                return cond
            return None
        try:
            result: dict[str, Any] = await eventually(check, timeout=timeout)
        except AssertionError:
            raise AssertionError(f"{kind} {name}: {type_}={status} {reason or ''} not reached; "
                                 f"status={self.status(kind, name, namespace)}") from None
        return result

    async def wait_gone(self, kind: str, name: str, namespace: str | None = "sales", timeout: float = 30) -> None:
        try:
            await eventually(lambda: self.get(kind, name, namespace) is None, timeout=timeout)
        except AssertionError:
            body = self.get(kind, name, namespace) or {}
            raise AssertionError(f"{kind} {name} is still there: metadata={body.get('metadata')} "
                                 f"status={body.get('status')} events={[e['reason'] for e in self.events(name)]}"
                                 ) from None

    def events(self, name: str, reason: str | None = None) -> list[dict[str, Any]]:
        return [dict(o.raw) for (res, _, _), o in self.emu.objects.items()
                if res == EVENTS and not o.deleted and o.raw["involvedObject"]["name"] == name
                and (reason is None or o.raw["reason"] == reason)]

    async def wait_event(self, name: str, reason: str, timeout: float = 20) -> dict[str, Any]:
        found: list[dict[str, Any]] = await eventually(lambda: self.events(name, reason), timeout=timeout)
        return found[0]

    def writes(self, plural: str) -> int:
        """PATCH/PUT requests to ``plural`` and its status made so far."""
        return sum(1 for call in self.emu.api_calls
                   if call[3] in (plural, f"{plural}/status") and call[4] in ("patch", "update"))

    def add_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        self.emu.objects[NAMESPACES, None, name] = {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": name, "labels": labels or {},
                                                                 "resourceVersion": "1"}}

    def add_secret(self, namespace: str, name: str, data: dict[str, str]) -> None:
        import base64

        self.emu.objects[SECRETS, namespace, name] = {
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


@pytest.fixture
async def emu(tablekeeper_crds: list[dict[str, Any]]) -> AsyncIterator[tuple[OperatorEmulator, dict[str, Any]]]:
    async with OperatorEmulator() as server, kmock.Server(server):
        kinds = register_crds(server, tablekeeper_crds)
        yield server, kinds


@pytest.fixture
async def harness(emu: tuple[OperatorEmulator, dict[str, Any]],
                  operator_settings: kopf.OperatorSettings) -> AsyncIterator[Harness]:
    server, kinds = emu
    h = Harness(server, kinds, operator_settings)
    h.add_namespace("sales", {"team": "sales"})
    h.add_namespace("finance", {"team": "finance"})
    h.add_namespace(OPERATOR_NAMESPACE)
    try:
        yield h
    finally:
        await h.stop()


# -- warehouses ------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def small_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``sales.orders``: 6 snapshots (pypaimon, primary key, partitioned)."""
    root = tmp_path_factory.mktemp("small-template") / "wh"
    P.build_history(str(root), "sales.orders", commits=6)
    return root


@pytest.fixture
def warehouse(small_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of the small warehouse."""
    dst = tmp_path / "wh"
    shutil.copytree(small_template, dst, copy_function=shutil.copy2)
    return dst


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The demo warehouse of ``tablekeeper demo`` (sales.orders and sales.events, 8 days)."""
    root = tmp_path_factory.mktemp("demo-template") / "wh"
    demo.build_history(str(root), datetime.now(UTC))
    yield root


@pytest.fixture
def demo_warehouse(demo_template: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "demo-wh"
    shutil.copytree(demo_template, dst, copy_function=shutil.copy2)
    return dst


def basic_objects(warehouse: Path, *, namespace: str = "sales") -> list[dict[str, Any]]:
    """A PaimonCatalog and a PaimonTable for ``sales.orders``."""
    return [
        obj("PaimonCatalog", "lake", {"warehouse": str(warehouse), "writerTimeZone": "UTC"}, namespace=namespace),
        obj("PaimonTable", "orders", {"catalogRef": {"kind": "PaimonCatalog", "name": "lake"},
                                      "database": "sales", "table": "orders"}, namespace=namespace),
    ]


async def started_table(harness: Harness, warehouse: Path, **table_spec: Any) -> None:
    """The operator started, with :func:`basic_objects` applied (``table_spec`` merged into the
    table's spec) and the table reconciled."""
    await harness.start()
    catalog, table = basic_objects(warehouse)
    table["spec"].update(table_spec)
    await harness.apply(catalog)
    await harness.apply(table)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")
