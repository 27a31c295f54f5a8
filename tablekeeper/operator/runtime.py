"""Long-lived state of one operator process: configuration, the API bridge, per-table locks, one
``Opener`` per warehouse connection, and short-lived caches of Secrets and Namespace labels.

One :class:`Runtime` per :func:`tablekeeper.operator.main.register` call (tests build one per
operator); the startup handler attaches the :class:`~tablekeeper.operator.kopfcompat.Api`.

Storage work for one table is serialised by :meth:`Runtime.table_lock`: a tag creation must never
interleave with a snapshot expiration of the same table (expiration decides what is protected
from the tags it sees).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import time
from collections.abc import Iterable, Mapping
from typing import Any

from tablekeeper import reconcile
from tablekeeper.core.policy.specs import ClusterPaimonCatalogSpec
from tablekeeper.operator import kopfcompat
from tablekeeper.operator.cluster.view import (
    INDEX_IDS,
    CatalogInfo,
    NamespaceLabels,
    View,
    catalog_needs_labels,
    parse,
    valid_cluster_policies,
)
from tablekeeper.operator.settings import OperatorConfig
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import OperatorError

__all__ = ["Runtime"]


class Runtime:
    """See the module docstring."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self._api: kopfcompat.Api | None = None
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._openers: dict[tuple[str, str], reconcile.Opener] = {}
        self._secrets: dict[tuple[str, str], tuple[float, dict[str, str]]] = {}
        self._namespaces: dict[str, tuple[float, dict[str, str] | None]] = {}
        self._warned: set[tuple[str, str, str]] = set()
        self._indices: dict[str, Any] = {}
        #: (namespace, table) -> uid of the run holding the table (concurrencyPolicy Forbid).
        self.run_claims: dict[tuple[str | None, str], str] = {}
        #: PaimonTable uid -> the ``status.maintenance`` last decided (newer than a stale body).
        self.maintenance: dict[str, dict[str, Any]] = {}
        #: PaimonTable uid -> names of runs created but maybe not in the index yet.
        self.created_runs: dict[str, set[str]] = {}
        self._object_locks: dict[str, asyncio.Lock] = {}
        #: Set by the cleanup handler: timers end themselves (see handlers.common.stop_if_gone).
        self.stopping = False
        #: PaimonTable uid -> resourceVersion of the body whose run-now annotation was consumed.
        self.run_now_consumed: dict[str, str] = {}
        #: uid -> whether it was Ready when last seen (controllers/dependents.py)
        self.seen_ready: dict[str, bool] = {}
        #: PaimonTable uid -> its applied policies and violations when last seen (controllers/dependents.py)
        self.policies_seen: dict[str, frozenset[str]] = {}
        #: uid -> the ``tablekeeper.io/recheck`` value acted on
        self.rechecked: dict[str, str] = {}
        #: (monotonic expiry, installed) of the SparkApplication CRD detection
        #: (:func:`tablekeeper.operator.runs.spark.auto_engine`).
        self.spark_operator_installed: tuple[float, bool] | None = None

    # -- API ----------------------------------------------------------------------------------------
    def attach(self, api: kopfcompat.Api) -> None:
        self._api = api

    @property
    def api(self) -> kopfcompat.Api:
        if self._api is None:
            raise RuntimeError("the operator has not started (no API yet)")
        return self._api

    # -- indexes -------------------------------------------------------------------------------------
    def remember_indices(self, kwargs: Mapping[str, Any]) -> None:
        """Keep the live Kopf indexes (handlers receive them as keyword arguments)."""
        if len(self._indices) < len(INDEX_IDS):
            for index_id in INDEX_IDS.values():
                if index_id in kwargs:
                    self._indices[index_id] = kwargs[index_id]

    def view(self) -> View | None:
        """A view over the indexes once a handler has seen them (for the metrics)."""
        return View(self._indices) if self._indices else None

    # -- locks and storage ------------------------------------------------------------------------------
    def table_lock(self, identity: tuple[str, str]) -> asyncio.Lock:
        """The lock serialising storage work on one table."""
        lock = self._locks.get(identity)
        if lock is None:
            lock = self._locks[identity] = asyncio.Lock()
        return lock

    def object_lock(self, uid: str) -> asyncio.Lock:
        """The lock serialising the reconciles of one object (its handlers and timer may overlap)."""
        lock = self._object_locks.get(uid)
        if lock is None:
            if len(self._object_locks) > 100_000:
                self._object_locks = {k: v for k, v in self._object_locks.items() if v.locked()}
            lock = self._object_locks[uid] = asyncio.Lock()
        return lock

    def opener(self, warehouse: str, options: Mapping[str, str]) -> reconcile.Opener:
        """An Opener for one warehouse connection (cached per warehouse and options)."""
        digest = hashlib.sha256(repr(sorted(options.items())).encode()).hexdigest()
        key = (warehouse, digest)
        opener = self._openers.get(key)
        if opener is None:
            if len(self._openers) > 256:
                self._openers.clear()
            opener = self._openers[key] = reconcile.Opener()
            opener.register(warehouse, dict(options))
        return opener

    # -- Secrets and Namespaces ---------------------------------------------------------------------------
    async def secret(self, namespace: str, name: str) -> dict[str, str]:
        """The decoded data of a Secret (cached for ``cache_ttl`` seconds).

        Raises:
            OperatorError: ``AuthFailed`` when it is missing or unreadable.
        """
        key = (namespace, name)
        now = time.monotonic()
        cached = self._secrets.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        try:
            body = await self.api.get(f"/api/v1/namespaces/{namespace}/secrets/{name}")
        except kopfcompat.NotFound as e:
            raise OperatorError(Reason.AUTH_FAILED, f"Secret {namespace}/{name} does not exist",
                                temporary=True) from e
        except kopfcompat.ApiError as e:
            raise OperatorError(Reason.AUTH_FAILED, f"Secret {namespace}/{name} cannot be read: {e}",
                                temporary=True) from e
        data: dict[str, str] = {}
        for k, v in (body.get("data") or {}).items():
            try:
                data[str(k)] = base64.b64decode(str(v)).decode("utf-8")
            except (ValueError, UnicodeDecodeError) as e:
                raise OperatorError(Reason.AUTH_FAILED, f"Secret {namespace}/{name} key {k!r} is not UTF-8 text") from e
        for k, v in (body.get("stringData") or {}).items():
            data[str(k)] = str(v)
        self._secrets[key] = (now + self.config.cache_ttl, data)
        return data

    async def catalog_options(self, catalog: CatalogInfo) -> dict[str, str]:
        """The catalog's options with its credentials Secret merged over them.

        Credentials come only from the Secret the catalog names: for a ``PaimonCatalog`` in its own
        namespace, for a ``ClusterPaimonCatalog`` in the namespace it names (default: the
        operator's namespace). Secrets are never written to status or logged.
        """
        options = dict(catalog.spec.options)
        ref = catalog.spec.credentials_secret_ref
        if ref is None:
            return options
        if isinstance(catalog.spec, ClusterPaimonCatalogSpec):
            namespace = getattr(ref, "namespace", None) or self.config.operator_namespace
        else:
            namespace = catalog.obj.namespace or self.config.operator_namespace
        options.update(await self.secret(namespace, ref.name))
        return options

    async def namespace_labels(self, namespaces: Iterable[str]) -> NamespaceLabels:
        """Labels of ``namespaces`` (cached); a namespace that cannot be read has unknown labels."""
        out: dict[str, Mapping[str, str] | None] = {}
        now = time.monotonic()
        for namespace in set(namespaces):
            cached = self._namespaces.get(namespace)
            if cached is not None and cached[0] > now:
                out[namespace] = cached[1]
                continue
            labels: dict[str, str] | None
            try:
                body = await self.api.get(f"/api/v1/namespaces/{namespace}")
                labels = {str(k): str(v) for k, v in ((body.get("metadata") or {}).get("labels") or {}).items()}
            except kopfcompat.ApiError:
                labels = None
            self._namespaces[namespace] = (now + self.config.cache_ttl, labels)
            out[namespace] = labels
        return NamespaceLabels(out)

    async def labels_for(self, view: View, namespace: str, table_spec: Any) -> NamespaceLabels:
        """Namespace labels, fetched only when a catalog or cluster policy selects by them."""
        wanted = False
        ref = getattr(table_spec, "catalog_ref", None)
        if ref is not None and ref.kind == "ClusterPaimonCatalog":
            obj = view.get("ClusterPaimonCatalog", None, ref.name)
            if obj is not None:
                try:
                    spec = parse(obj)
                except Exception:  # reported by the catalog itself
                    spec = None
                wanted = isinstance(spec, ClusterPaimonCatalogSpec) and catalog_needs_labels(spec)
        if not wanted:
            for _obj, policy in valid_cluster_policies(view):
                selector = policy.selector
                if selector is not None and getattr(selector, "namespace_selector", None) is not None:
                    wanted = True
                    break
        if not wanted:
            return NamespaceLabels({namespace: {}})
        return await self.namespace_labels([namespace])

    # -- events ----------------------------------------------------------------------------------------------
    def first_time(self, uid: str, reason: str, detail: str = "") -> bool:
        """True once per (object, reason, detail): for Events about a lasting state."""
        key = (uid, reason, detail)
        if key in self._warned:
            return False
        if len(self._warned) > 100_000:
            self._warned.clear()
        self._warned.add(key)
        return True

    async def step(self, step: str, ref: str) -> None:
        """The test seam before a storage-changing step (no-op in production)."""
        if self.config.step_hook is not None:
            await self.config.step_hook(step, ref)
