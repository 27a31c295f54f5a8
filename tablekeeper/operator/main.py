"""Kopf settings and the ``tablekeeper operator`` entry point.

:func:`build_settings` applies operator-design.md §10.4 (own finalizer and annotation prefix,
watch and request timeouts, events from INFO logs, no resource scanning); :func:`register` fills a
Kopf registry with tablekeeper's handlers (``register(registry)`` so that tests can use a fresh
registry); :func:`run` starts Kopf.

The operator always runs standalone (no Kopf peering): the chart deploys one replica with the
``Recreate`` strategy, and peering is not leader election (§10.5). Scanning is off, so Kopf never
lists CRDs or namespaces: the CRDs must be installed before the operator starts, and the RBAC in
:mod:`tablekeeper.operator.rbac` needs no cluster-wide read access to them.

The reconcilers for the tablekeeper kinds are not written yet: :func:`register` installs the
startup and probe handlers only, and the operator logs that it serves no kind.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import kopf

from tablekeeper.core.policy.kinds import API_GROUP

__all__ = [
    "FINALIZER",
    "ANNOTATION_PREFIX",
    "DEFAULT_LIVENESS_ENDPOINT",
    "DEFAULT_METRICS_PORT",
    "build_settings",
    "register",
    "run",
]

FINALIZER = f"{API_GROUP}/finalizer"
ANNOTATION_PREFIX = API_GROUP
DEFAULT_LIVENESS_ENDPOINT = "http://0.0.0.0:8080/healthz"
DEFAULT_METRICS_PORT = 9090

logger = logging.getLogger(__name__)


def build_settings() -> kopf.OperatorSettings:
    """Kopf settings of the tablekeeper operator (operator-design.md §10.4)."""
    settings = kopf.OperatorSettings()
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=ANNOTATION_PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=ANNOTATION_PREFIX, key="last-handled-configuration")
    settings.watching.server_timeout = 120
    settings.watching.client_timeout = 150
    settings.watching.connect_timeout = 5
    settings.networking.request_timeout = 30
    settings.networking.error_backoffs = [1, 2, 5, 10, 20]
    settings.execution.max_workers = 20
    settings.posting.level = logging.INFO
    settings.posting.reporting_component = "tablekeeper"
    settings.posting.event_name_prefix = "tablekeeper-"
    settings.peering.standalone = True
    settings.scanning.disabled = True
    return settings


def register(registry: kopf.OperatorRegistry, *, metrics_port: int = 0, login: bool = True) -> kopf.OperatorRegistry:
    """Attach tablekeeper's handlers to ``registry``.

    Args:
        registry: a fresh Kopf registry (one per test; one per process in production).
        metrics_port: serve Prometheus metrics on this port from startup; 0 = no metrics server.
        login: log in through the ``kubernetes`` client (in-cluster service account, else the
            kubeconfig). A fresh registry has no login handler of its own; tests pass False and
            add one that points at the emulator, so they can never reach a real cluster.

    Returns:
        ``registry``.
    """
    if login:
        @kopf.on.login(registry=registry)
        def _login(**kwargs: Any) -> kopf.ConnectionInfo | None:
            return kopf.login_via_client(**kwargs)

    @kopf.on.startup(registry=registry)
    def _startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        if metrics_port:
            import prometheus_client

            prometheus_client.start_http_server(metrics_port)
        logger.warning("no tablekeeper controllers are registered yet: the operator watches no kind")

    @kopf.on.probe(id="tablekeeper", registry=registry)
    def _probe(**_: Any) -> str:
        return "ok"

    return registry


def run(*, namespaces: Sequence[str] = (), liveness_endpoint: str | None = DEFAULT_LIVENESS_ENDPOINT,
        metrics_port: int = DEFAULT_METRICS_PORT) -> None:
    """Run the operator until it is stopped (SIGINT/SIGTERM).

    Args:
        namespaces: watch these namespaces only; empty = the whole cluster.
        liveness_endpoint: Kopf's health endpoint (``http://0.0.0.0:8080/healthz``); None = none.
        metrics_port: Prometheus metrics port; 0 = no metrics server.
    """
    registry = register(kopf.OperatorRegistry(), metrics_port=metrics_port)
    kopf.run(
        registry=registry,
        settings=build_settings(),
        standalone=True,
        clusterwide=not namespaces,
        namespaces=list(namespaces),
        liveness_endpoint=liveness_endpoint,
    )
