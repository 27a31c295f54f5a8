"""Re-checks in seconds: when an object becomes Ready, the objects waiting for it are looked at
again at once instead of at their next retry or periodic check.

Who waits for whom: a PaimonTable for its catalog; its tags, branches and maintenance runs for
the table; a branch created ``fromTag`` for the PaimonTag of that tag; and a PaimonTable's
maintenance status for its runs' ends (:func:`nudge_table_of_ended_run`); a retention policy's
table count for the tables whose applied policies changed (:func:`nudge_policies_of_table`), and
the tables a retention policy may apply to when it is created, changed or deleted
(:func:`nudge_tables_of_policy`). The watch-event handlers
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
from tablekeeper.operator.controllers.catalogs import policy_sources
from tablekeeper.operator.runs import schedule
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status import conditions, markers
from tablekeeper.operator.status.outcome import url_of

__all__ = ["dependents_of", "waiting", "became_ready", "nudge", "wants_recheck", "nudge_dependents", "retry_now",
           "nudge_table_of_ended_run", "nudge_policies_of_table", "nudge_tables_of_policy"]

_PLURALS = {"PaimonCatalog": "paimoncatalogs", "ClusterPaimonCatalog": "clusterpaimoncatalogs",
            "PaimonTable": "paimontables", "PaimonTag": "paimontags", "PaimonBranch": "paimonbranches",
            "PaimonMaintenanceRun": "paimonmaintenanceruns", "PaimonRetentionPolicy": "paimonretentionpolicies",
            "ClusterPaimonRetentionPolicy": "clusterpaimonretentionpolicies"}
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


async def nudge_table_of_ended_run(rt: Runtime, view: View, run: Obj) -> bool:
    """When ``run`` has ended and its table's maintenance status does not show it yet
    (:func:`~tablekeeper.operator.runs.schedule.table_lags`): re-check the table, once per run
    and phase. True when it was asked."""
    table_name = str((run.spec.get("tableRef") or {}).get("name") or "")
    table = view.get("PaimonTable", run.namespace, table_name)
    if table is None or table.deleting or markers.is_paused(table.meta) or markers.is_unmanaged(table.meta):
        return False
    if not schedule.table_lags(table, run, view.children("PaimonMaintenanceRun", run.namespace, table_name)):
        return False
    if not rt.first_time(run.uid, "TableNudged", str(run.status.get("phase"))):
        return False
    return await nudge(rt, [table], rt.config.now()) > 0


async def nudge_policies_of_table(rt: Runtime, view: View, table: Obj) -> int:
    """When a table's ``appliedPolicies`` or ``policyViolations`` changed since it was last seen:
    re-check the policies named before or now (their ``matchedTables`` / ``violations``). The
    first sight of a table nudges nothing (every policy counts at its own first pass). Returns
    how many were asked."""
    status = table.status
    named = frozenset(f"a:{x}" for x in status.get("appliedPolicies") or ()) | \
        frozenset(f"v:{x}" for x in status.get("policyViolations") or ())
    before = rt.policies_seen.get(table.uid)
    rt.policies_seen[table.uid] = named
    if before is None or before == named:
        return 0
    changed = {x[2:] for x in before ^ named}
    policies = [p for kind in ("PaimonRetentionPolicy", "ClusterPaimonRetentionPolicy") for p in view.all(kind)
                if not p.deleting and policy_sources(p) & changed]
    return await nudge(rt, policies, rt.config.now())


async def nudge_tables_of_policy(rt: Runtime, view: View, policy: Obj) -> int:
    """A retention policy was created, changed or deleted: re-check every table it may apply to
    (its namespace's; a cluster policy's: all), which resolve their effective policy again.
    Returns how many were asked."""
    tables = [t for t in view.all("PaimonTable")
              if (policy.kind == "ClusterPaimonRetentionPolicy" or t.namespace == policy.namespace)
              and not t.deleting and not markers.is_paused(t.meta) and not markers.is_unmanaged(t.meta)]
    return await nudge(rt, tables, rt.config.now())
