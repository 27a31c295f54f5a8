"""Re-checks in seconds: when an object becomes Ready, the objects waiting for it are looked at
again at once instead of at their next retry or periodic check.

Who waits for whom: a PaimonTable for its catalog; its tags, branches and maintenance runs for
the table; a branch created ``fromTag`` for the PaimonTag of that tag. The watch-event handlers
see every change of an object; :func:`became_ready` tells them when one turned Ready, and
:func:`nudge` asks for a re-check of every dependent that is not Ready itself:

- a dependent whose create/update handler is waiting for its retry (Kopf's progress in
  ``status.kopf.progress``, :mod:`tablekeeper.operator.persistence`) gets that retry moved to now
  (one status PATCH; Kopf wakes on the watch event and runs the handler);
- any other gets the annotation ``tablekeeper.io/recheck`` set to the current time (one PATCH);
  its watch-event handler runs the periodic check's pass once per new value
  (:func:`wants_recheck`). Users set the same annotation to force a re-check
  (``kubectl annotate --overwrite ... tablekeeper.io/recheck="$(date +%s)"``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from datetime import datetime

from tablekeeper.operator import persistence
from tablekeeper.operator.cluster.view import Obj, View
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status import conditions, markers
from tablekeeper.operator.status.outcome import url_of

__all__ = ["dependents_of", "waiting", "became_ready", "nudge", "wants_recheck", "nudge_dependents", "retry_now"]

_PLURALS = {"PaimonCatalog": "paimoncatalogs", "ClusterPaimonCatalog": "clusterpaimoncatalogs",
            "PaimonTable": "paimontables", "PaimonTag": "paimontags", "PaimonBranch": "paimonbranches",
            "PaimonMaintenanceRun": "paimonmaintenanceruns"}
#: At most this many nudges in flight at once (a catalog of a thousand tables).
_PARALLEL = 16


def _ready(obj: Obj) -> bool:
    ready = conditions.find(obj.status.get("conditions"), conditions.READY)
    return (ready is not None and ready.get("status") == "True"
            and ready.get("observedGeneration") in (None, obj.generation))


def waiting(obj: Obj) -> bool:
    """Whether ``obj`` may be waiting for something: not Ready (a run: not started), not being
    deleted, managed and not paused, and handled once (a nudge while its first pass runs would
    only make that pass's write-ahead conflict)."""
    if obj.deleting or markers.is_paused(obj.meta) or markers.is_unmanaged(obj.meta):
        return False
    if not persistence.handled(obj.meta, obj.status) and not _in_flight(obj):
        return False  # its create handler has not run yet (or is running): it sees the dependency itself
    if obj.kind == "PaimonMaintenanceRun":
        return obj.status.get("phase") in (None, "Pending")
    return not _ready(obj)


def _tag_name(tag: Obj) -> str:
    return str(tag.status.get("tagName") or tag.spec.get("tagName") or tag.name)


def dependents_of(view: View, obj: Obj) -> list[Obj]:
    """The objects that wait for ``obj`` when it is not Ready (see the module docstring)."""
    if obj.kind in ("PaimonCatalog", "ClusterPaimonCatalog"):
        return [t for t in view.all("PaimonTable")
                if (t.spec.get("catalogRef") or {}).get("name") == obj.name
                and (t.spec.get("catalogRef") or {}).get("kind", "PaimonCatalog") == obj.kind
                and (obj.kind == "ClusterPaimonCatalog" or t.namespace == obj.namespace)]
    if obj.kind == "PaimonTable":
        return [child for kind in ("PaimonTag", "PaimonBranch", "PaimonMaintenanceRun")
                for child in view.children(kind, obj.namespace, obj.name)]
    if obj.kind == "PaimonTag":
        table = (obj.spec.get("tableRef") or {}).get("name")
        name = _tag_name(obj)
        return [b for b in view.children("PaimonBranch", obj.namespace, str(table)) if b.spec.get("fromTag") == name]
    return []


def became_ready(rt: Runtime, obj: Obj) -> bool:
    """Whether ``obj`` is Ready now and was not when last seen (first sight counts: after a
    restart its waiting dependents are looked at once)."""
    now_ready = _ready(obj)
    before = rt.seen_ready.get(obj.uid)
    rt.seen_ready[obj.uid] = now_ready
    return now_ready and before is not True


def _in_flight(obj: Obj) -> list[str]:
    progress = ((obj.status.get("kopf") or {}).get("progress") or {})
    return [hid for hid, record in progress.items()
            if isinstance(record, Mapping) and record.get("delayed") and not record.get("success")
            and not record.get("failure")]


async def retry_now(rt: Runtime, obj: Obj, now: datetime) -> bool:
    """Move the pending retries of ``obj``'s handlers to ``now``; False when none waits."""
    handlers = _in_flight(obj)
    if not handlers:
        return False
    stamp = now.isoformat(timespec="microseconds")
    body = {"status": {"kopf": {"progress": {hid: {"delayed": stamp} for hid in handlers}}}}
    await rt.api.patch(url_of(_PLURALS[obj.kind], obj.namespace, obj.name, subresource="status"), body)
    return True


async def nudge(rt: Runtime, objs: Iterable[Obj], now: datetime) -> int:
    """Ask for a re-check of every object of ``objs`` (see the module docstring). Returns how
    many were asked. A failed request is left to the object's retry or periodic check."""
    gate = asyncio.Semaphore(_PARALLEL)
    stamp = now.isoformat(timespec="milliseconds")

    async def one(obj: Obj) -> bool:
        async with gate:
            try:
                if await retry_now(rt, obj, now):
                    return True
                await rt.api.patch(url_of(_PLURALS[obj.kind], obj.namespace, obj.name),
                                   {"metadata": {"annotations": {markers.RECHECK: stamp}}})
                return True
            except Exception:  # the object's own retry or periodic check gets there
                return False

    results = await asyncio.gather(*(one(o) for o in objs))
    return sum(results)


async def nudge_dependents(rt: Runtime, view: View, obj: Obj) -> int:
    """When ``obj`` has just become Ready: re-check its waiting dependents. Returns how many."""
    if not became_ready(rt, obj):
        return 0
    return await nudge(rt, [d for d in dependents_of(view, obj) if waiting(d)], rt.config.now())


def wants_recheck(rt: Runtime, obj: Obj) -> bool:
    """Whether ``obj`` carries a ``tablekeeper.io/recheck`` value not acted on yet (recorded now)."""
    value = obj.annotations.get(markers.RECHECK)
    if not value or rt.rechecked.get(obj.uid) == value:
        return False
    rt.rechecked[obj.uid] = value
    return True
