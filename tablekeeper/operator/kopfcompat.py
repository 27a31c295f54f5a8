"""Every use of Kopf internals, in one module (kopf is pinned to 1.45.2 for this reason).

Two things Kopf's public API does not offer:

- **API calls with Kopf's own credentials.** Kopf has no public client; the operator creates and
  deletes ``PaimonMaintenanceRun`` objects, reads Secrets and Namespaces, and writes a status
  ahead of a storage change. It does so through ``kopf._cogs.clients.api`` so that every call uses
  the login handler's credentials (in-cluster service account, kubeconfig, or the test
  emulator), Kopf's retries and timeouts, and shows up as Kopf's user agent (which the RBAC test
  checks against ``tablekeeper.operator.rbac``). The functions must run in the operator's event
  loop (they read Kopf's credentials vault from a context variable); :class:`Api` bridges calls
  from worker threads.
- **Timers without a finalizer.** ``@kopf.timer`` marks its handler ``requires_finalizer=True``
  unconditionally, which would put a finalizer on every object with a timer; tablekeeper adds
  finalizers only for ``deletionPolicy: Delete`` (operator-design.md §7.3). :func:`timer`
  registers the handler and clears that flag.

  Kopf stops timers on deletion only for objects that hold a finalizer (it stops them while the
  finalizer blocks the deletion); for the others it forgets the object and its timer keeps
  firing until the operator exits. :func:`stop_timer` sets the timer's own stop flag (the
  ``stopped`` keyword argument), which ends its loop; the timers call it when their object has
  left the index.

``tests/operator/test_kopfcompat.py`` fails loudly if these internals move.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

import kopf
from kopf._cogs.clients import api as kopf_api
from kopf._cogs.clients import errors as kopf_errors

__all__ = ["Api", "ApiError", "NotFound", "Conflict", "timer", "stop_timer"]

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: Errors of the Kubernetes API as Kopf raises them.
ApiError = kopf_errors.APIError
NotFound = kopf_errors.APINotFoundError
Conflict = kopf_errors.APIConflictError
_MERGE = {"Content-Type": "application/merge-patch+json"}


class Api:
    """Kubernetes API calls through Kopf's authenticated session (see the module docstring).

    Create it in a ``@kopf.on.startup`` handler (the loop and the settings are known there).
    """

    def __init__(self, settings: kopf.OperatorSettings, loop: asyncio.AbstractEventLoop) -> None:
        self.settings = settings
        self.loop = loop

    async def get(self, url: str) -> dict[str, Any]:
        """GET a JSON object.

        Raises:
            NotFound: 404; ApiError: any other API error.
        """
        result: dict[str, Any] = await kopf_api.get(url, settings=self.settings, logger=logger)
        return result

    async def create(self, url: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST an object to a collection URL."""
        result: dict[str, Any] = await kopf_api.post(url, payload=dict(body), settings=self.settings,
                                                     logger=logger)
        return result

    async def patch(self, url: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Merge-PATCH an object (``url`` ending in ``/status`` for the status subresource)."""
        logger.debug("Merge-patching %s with: %r", url, body)
        result: dict[str, Any] = await kopf_api.patch(url, payload=dict(body), headers=dict(_MERGE),
                                                      settings=self.settings, logger=logger)
        return result

    async def delete(self, url: str) -> None:
        """DELETE an object; an object already gone is success."""
        try:
            await kopf_api.delete(url, settings=self.settings, logger=logger)
        except NotFound:
            pass

    def call(self, coro_fn: Callable[[], Coroutine[Any, Any, T]], timeout: float = 60.0) -> T:
        """Run ``coro_fn()`` in the operator's loop from a worker thread and wait for it.

        The calling thread must have been started from a handler (``asyncio.to_thread``), so that
        Kopf's credentials context travels along.
        """
        future = asyncio.run_coroutine_threadsafe(coro_fn(), self.loop)
        return future.result(timeout)


def timer(fn: Callable[..., Any], *args: Any, registry: kopf.OperatorRegistry, **kwargs: Any) -> None:
    """``@kopf.timer(*args, **kwargs)`` for ``fn``, without a finalizer on the objects it serves."""
    kopf.timer(*args, registry=registry, **kwargs)(fn)
    spawning = registry._spawning
    handlers = spawning._handlers
    last = handlers[-1]
    if last.fn is not fn:  # pragma: no cover - Kopf changed how it stores handlers
        raise RuntimeError("kopf internals changed: cannot find the timer just registered")
    handlers[-1] = dataclasses.replace(last, requires_finalizer=False)


def stop_timer(stopped: Any) -> None:
    """End the timer whose handler received ``stopped`` (its ``stopped`` keyword argument)."""
    from kopf._core.intents import stoppers

    setter = getattr(stopped, "_setter", None)
    if setter is None:  # pragma: no cover - Kopf changed its stop flags
        raise RuntimeError("kopf internals changed: the timer's stop flag has no setter")
    setter.set(stoppers.DaemonStoppingReason.RESOURCE_DELETED)
