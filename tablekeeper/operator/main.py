"""Kopf settings, the wiring of every handler, and the ``tablekeeper operator`` entry point.

This is the only module with ``@kopf.*`` decorators (crate-operator style, style.md §1.4): each
one wires a Kopf cause to a thin function of :mod:`tablekeeper.operator.handlers`.
:func:`register` fills a registry (``register(registry)``, so tests use a fresh one);
:func:`build_settings` applies operator-design.md §10.4; :func:`run` starts Kopf.

What is registered, per kind (``G/V`` = ``tablekeeper.io/v1alpha1``):

- an index of every kind (``tk_*``): compact snapshots the controllers read instead of API calls;
  Kopf fills them before any handler runs;
- ``PaimonTag`` / ``PaimonBranch``: one handler on create/update/resume running both steps
  (``resolve`` then ``apply``, only while managed and not paused), a periodic check (drift, TTL; jittered first run, no
  finalizer), a delete handler that exists only while the CR owns its object with
  ``deletionPolicy: Delete`` (so Kopf adds the finalizer right before the first create and drops
  it when the policy flips to Retain, the CR is unmanaged or force-deleted), handlers reporting
  paused/unmanaged, and a watcher posting ``ForceDeleted``;
- ``PaimonTable``: reconcile on create/update/resume and periodically; paused/unmanaged reports;
- ``PaimonMaintenanceRun``: ``start`` and ``execute`` steps, a periodic deadline/TTL check;
- catalogs and retention policies: reconcile on create/update/resume and periodically.

The operator always runs standalone (no Kopf peering): the chart deploys one replica with the
``Recreate`` strategy, and peering is not leader election (§10.5). Scanning is off, so Kopf never
lists CRDs or namespaces: the CRDs must be installed before the operator starts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import kopf

from tablekeeper.core.policy import API_GROUP, API_VERSION
from tablekeeper.operator import kopfcompat, logs, metrics, persistence, rbac
from tablekeeper.operator.cluster.view import INDEX_IDS, Obj, index_key
from tablekeeper.operator.controllers.children import kopf_holds_finalizer
from tablekeeper.operator.handlers import handle_catalogs, handle_objects, handle_runs, handle_tables
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.settings import OperatorConfig
from tablekeeper.operator.status import markers

__all__ = [
    "FINALIZER",
    "ANNOTATION_PREFIX",
    "DEFAULT_LIVENESS_ENDPOINT",
    "DEFAULT_METRICS_PORT",
    "build_settings",
    "register",
    "run",
]

FINALIZER = markers.FINALIZER
ANNOTATION_PREFIX = API_GROUP
DEFAULT_LIVENESS_ENDPOINT = "http://0.0.0.0:8080/healthz"
DEFAULT_METRICS_PORT = 9090
G, V = API_GROUP, API_VERSION

logger = logging.getLogger(__name__)


#: How often a deletion re-checks whether the object's timers (periodic checks) have exited.
DAEMON_EXIT_POLL_S = 2.0
#: How long Kopf waits for the watch event of its own status PATCH before it acts on older events
#: of the object as if they were current (Kopf's ``consistency_timeout``, default 5 s).
CONSISTENCY_TIMEOUT_S = 60.0


def build_settings() -> kopf.OperatorSettings:
    """Kopf settings of the tablekeeper operator (operator-design.md §10.4).

    The labels the operator mirrors (``tablekeeper.io/tag-state``...) are left out of Kopf's change
    detection. ``posting.level`` is INFO (§10.4): ``kopf.info``/``kopf.warn`` and, where log posting is on,
    object-logger records at INFO and above become Events. Kopf's own per-handler success lines are
    not posted: ``posting.loggers`` stays off (Kopf's default; it would post "Handler ... succeeded" on
    every change) and timers log through Kopf's local-only logger. The controllers post their Events
    (``Created``, ``Adopted``, ``Deleted``, ``MaintenanceRequested``...) explicitly, and each is also
    a log line (:mod:`.logs`; Kopf's "succeeded" lines are lowered to DEBUG there).
    """
    settings = kopf.OperatorSettings()
    settings.persistence.finalizer = FINALIZER
    # Kopf's own state rides in the status PATCH of each outcome (persistence.py: no extra writes)
    settings.persistence.progress_storage = persistence.progress_storage()
    settings.persistence.diffbase_storage = persistence.StatusDiffBase(
        # labels the operator mirrors itself are not changes to react to (one cycle less per transition)
        ignored_fields=[("metadata", "labels", label) for label in sorted(markers.OWN_LABELS)])
    settings.watching.server_timeout = 120
    settings.watching.client_timeout = 150
    settings.watching.connect_timeout = 5
    settings.networking.request_timeout = 30
    settings.networking.error_backoffs = [1, 2, 5, 10, 20]
    settings.execution.max_workers = 20
    settings.posting.level = logging.INFO
    settings.posting.loggers = False
    settings.posting.reporting_component = "tablekeeper"
    settings.posting.event_name_prefix = "tablekeeper-"
    settings.peering.standalone = True
    settings.scanning.disabled = True
    # A CR deleted while its periodic check runs waits for that timer to exit before the finalizer
    # is released; Kopf re-checks only every `cancellation_polling` seconds (default 60, and no
    # event wakes it), so a deletion could hang for a minute. Re-check every 2 s instead.
    settings.background.cancellation_polling = DAEMON_EXIT_POLL_S
    # After Kopf writes an outcome (Ready and its diff base), the object's older watch events (those
    # of the write-ahead PATCHes, still queued) are only acted on once Kopf's own write has come
    # back through the watch, or this timeout has passed. With Kopf's 5 s, a busy operator (1,000
    # tags: its event loop or the watch seconds behind) ran the create handler a second time on the
    # body without the diff base, and wrote Ready (a new lastTransitionTime) and the labels again:
    # one or two extra writes for ~15% of the tags (bench/operator_apiserver.py --audit). The wait
    # normally ends the moment the event arrives; it runs out only when that event never comes (a
    # watch relist), and then holds the object's next change by at most this long.
    settings.persistence.consistency_timeout = CONSISTENCY_TIMEOUT_S
    return settings


def _indexer(kind: str) -> Callable[..., dict[Any, Obj]]:
    def index(body: kopf.Body, **_: Any) -> dict[Any, Obj]:
        return {index_key(kind, body): Obj.from_body(kind, body)}
    return index


def _call(fn: Callable[..., Any], *args: Any) -> Callable[..., Any]:
    """A Kopf handler calling ``fn(*args, **kwargs)`` (keeps the coroutine-ness of ``fn``)."""
    if asyncio.iscoroutinefunction(fn):
        async def handler(**kwargs: Any) -> None:
            await fn(*args, **kwargs)
    else:
        def handler(**kwargs: Any) -> None:  # type: ignore[misc]
            fn(*args, **kwargs)
    handler.__qualname__ = handler.__name__ = getattr(fn, "__name__", "handler")
    return handler


def _register_controllers(registry: kopf.OperatorRegistry, rt: Runtime) -> None:
    config = rt.config

    def active(meta: Mapping[str, Any], **_: Any) -> bool:
        return not markers.is_paused(meta) and not markers.is_unmanaged(meta)

    def paused(meta: Mapping[str, Any], **_: Any) -> bool:
        return markers.is_paused(meta) and not markers.is_unmanaged(meta)

    def unmanaged(meta: Mapping[str, Any], **_: Any) -> bool:
        return markers.is_unmanaged(meta)

    def owns_for_deletion(meta: Mapping[str, Any], spec: Mapping[str, Any], status: Mapping[str, Any],
                          **_: Any) -> bool:
        return kopf_holds_finalizer(meta, spec, status, default_policy=config.default_deletion_policy,
                                            use_finalizers=config.use_finalizers)

    def jitter(**_: Any) -> float:
        return random.uniform(0, config.initial_jitter)

    timer_options: dict[str, Any] = {"interval": config.reconcile_interval, "initial_delay": jitter,
                                     "idle": config.timer_idle or None}
    plurals = rbac.TABLEKEEPER_PLURALS

    for kind, index_id in INDEX_IDS.items():
        kopf.index(G, V, plurals[kind], id=index_id, registry=registry)(_indexer(kind))

    def on_change(ids: str, fn: Callable[..., Any], plural: str, *, when: Any = None, update: bool = True,
                  resume: bool = True) -> None:
        causes = ([kopf.on.resume] if resume else []) + [kopf.on.create] + ([kopf.on.update] if update else [])
        for cause in causes:
            cause(G, V, plural, id=ids, when=when, registry=registry)(fn)

    # tags and branches
    for kind, short in (("PaimonTag", "tag"), ("PaimonBranch", "branch")):
        plural = plurals[kind]
        # One handler per cause (create/update/resume): it records ownership, puts the finalizer
        # and labels on, changes storage and reports, in one Kopf cycle (handle_objects.on_change):
        # three writes per object to Ready, none for a settled object on resume.
        on_change(f"{short}-reconcile", _call(handle_objects.on_change, rt, kind), plural, when=active)
        kopfcompat.timer(_call(handle_objects.on_check, rt, kind), G, V, plural, id=f"{short}-check",
                         when=active, registry=registry, **timer_options)
        kopf.on.delete(G, V, plural, id=f"{short}-delete", when=owns_for_deletion,
                       registry=registry)(_call(handle_objects.on_delete, rt, kind))
        on_change(f"{short}-paused", _call(handle_objects.on_paused, rt, kind), plural, when=paused)
        on_change(f"{short}-unmanaged", _call(handle_objects.on_unmanaged, rt, kind), plural, when=unmanaged)
        kopf.on.event(G, V, plural, id=f"{short}-events",
                      registry=registry)(_call(handle_objects.on_event, rt, kind, FINALIZER))

    # tables
    on_change("table-reconcile", _call(handle_tables.on_change, rt), plurals["PaimonTable"], when=active)
    kopfcompat.timer(_call(handle_tables.on_check, rt), G, V, plurals["PaimonTable"], id="table-check", when=active,
                     registry=registry, **timer_options)
    on_change("table-paused", _call(handle_tables.on_paused, rt), plurals["PaimonTable"], when=paused)
    on_change("table-unmanaged", _call(handle_tables.on_unmanaged, rt), plurals["PaimonTable"], when=unmanaged)
    kopf.on.event(G, V, plurals["PaimonTable"], id="table-events", registry=registry)(_call(handle_tables.on_event, rt))

    # maintenance runs
    runs = plurals["PaimonMaintenanceRun"]
    on_change("run-start", _call(handle_runs.on_start, rt), runs, update=False)
    on_change("run-execute", _call(handle_runs.on_execute, rt), runs, update=False)
    kopfcompat.timer(_call(handle_runs.on_check, rt), G, V, runs, id="run-check", registry=registry, **timer_options)
    kopf.on.event(G, V, runs, id="run-events", registry=registry)(_call(handle_runs.on_event, rt))

    # catalogs and policies
    for kind in ("PaimonCatalog", "ClusterPaimonCatalog"):
        on_change("catalog", _call(handle_catalogs.on_catalog, rt, kind), plurals[kind])
        kopfcompat.timer(_call(handle_catalogs.on_catalog_check, rt, kind), G, V, plurals[kind], id="catalog-check",
                         registry=registry, **timer_options)
        kopf.on.event(G, V, plurals[kind], id="catalog-events",
                      registry=registry)(_call(handle_catalogs.on_catalog_event, rt, kind))
    for kind in ("PaimonRetentionPolicy", "ClusterPaimonRetentionPolicy"):
        on_change("policy", _call(handle_catalogs.on_policy, rt, kind), plurals[kind])
        kopfcompat.timer(_call(handle_catalogs.on_policy_check, rt, kind), G, V, plurals[kind], id="policy-check",
                         registry=registry, **timer_options)
        kopf.on.event(G, V, plurals[kind], id="policy-events",
                      registry=registry)(_call(handle_catalogs.on_policy_event, rt, kind))


def register(registry: kopf.OperatorRegistry, *, config: OperatorConfig | None = None, metrics_port: int = 0,
             login: bool = True, controllers: bool = True) -> kopf.OperatorRegistry:
    """Attach tablekeeper's handlers to ``registry``.

    Args:
        registry: a fresh Kopf registry (one per test; one per process in production).
        config: the controllers' configuration; default: from the environment.
        metrics_port: serve Prometheus metrics on this port from startup; 0 = no metrics server.
        login: log in through the ``kubernetes`` client (in-cluster service account, else the
            kubeconfig). A fresh registry has no login handler of its own; tests pass False and
            add one that points at the emulator, so they can never reach a real cluster.
        controllers: register the controllers (False: only startup, login and probe, for tests
            of the harness itself).

    Returns:
        ``registry``.
    """
    rt = Runtime(config if config is not None else OperatorConfig.from_env())
    logs.install_filter()  # Kopf's per-handler "succeeded" lines at DEBUG (tablekeeper's own lines say what happened)
    if login:
        @kopf.on.login(registry=registry)
        def _login(**kwargs: Any) -> kopf.ConnectionInfo | None:
            return kopf.login_via_client(**kwargs)

    @kopf.on.startup(registry=registry)
    async def _startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        rt.attach(kopfcompat.Api(settings, asyncio.get_running_loop()))
        metrics.watch_view(rt.view)
        if metrics_port:
            import prometheus_client

            prometheus_client.start_http_server(metrics_port)
        if controllers:
            logger.info("tablekeeper controllers started for %d kinds (reconcile interval %ss)",
                        len(INDEX_IDS), rt.config.reconcile_interval)
        else:
            logger.warning("no tablekeeper controllers are registered: the operator watches no kind")

    @kopf.on.cleanup(registry=registry)
    def _cleanup(**_: Any) -> None:
        rt.stopping = True

    @kopf.on.probe(id="tablekeeper", registry=registry)
    def _probe(**_: Any) -> str:
        return "ok"

    if controllers:
        _register_controllers(registry, rt)
    return registry


def run(*, namespaces: Sequence[str] = (), liveness_endpoint: str | None = DEFAULT_LIVENESS_ENDPOINT,
        metrics_port: int = DEFAULT_METRICS_PORT, log_format: logs.LogFormat = "text") -> None:
    """Run the operator until it is stopped (SIGINT/SIGTERM).

    Args:
        namespaces: watch these namespaces only; empty = the whole cluster. Cluster-scoped kinds
            (ClusterPaimonCatalog, ClusterPaimonRetentionPolicy) are always watched.
        liveness_endpoint: Kopf's health endpoint (``http://0.0.0.0:8080/healthz``); None = none.
        metrics_port: Prometheus metrics port; 0 = no metrics server.
        log_format: ``text`` (one line per record) or ``json`` (one JSON object per line), see :mod:`.logs`.
    """
    logs.configure(log_format, debug=bool(os.environ.get("TABLEKEEPER_DEBUG")))
    registry = register(kopf.OperatorRegistry(), config=OperatorConfig.from_env(), metrics_port=metrics_port)
    kopf.run(
        registry=registry,
        settings=build_settings(),
        standalone=True,
        clusterwide=not namespaces,
        namespaces=list(namespaces),
        liveness_endpoint=liveness_endpoint,
    )
