"""How GitOps tools judge an object's health, ported for the tests.

:func:`kstatus` is kstatus's generic rule set for a custom resource, as Flux runs it
(sigs.k8s.io/cli-utils ``pkg/kstatus/status``: ``Compute`` -> ``checkGenericProperties`` ->
``checkGeneration``; no type-specific rules for a CRD):

1. ``metadata.deletionTimestamp`` set -> ``Terminating``;
2. ``status.observedGeneration`` present and != ``metadata.generation`` -> ``InProgress``
   (``LatestGenerationNotObserved``);
3. a condition ``Reconciling=True`` -> ``InProgress``; ``Stalled=True`` -> ``Failed``;
4. otherwise ``Current`` (kstatus assumes an object without those conditions is done).

Rule 4 makes a plain kstatus blind to the ``Ready`` condition of a CRD, so Flux users give it a
health expression and Argo CD a Lua health check. :func:`health` is that check for the tablekeeper
kinds (shipped as docs/health-checks.md), on top of rules 1-3:

5. no status yet, or no ``Ready`` condition -> ``InProgress`` (the operator has not looked yet);
6. ``Ready`` whose ``observedGeneration`` is older than the object's -> ``InProgress``;
7. ``Ready=True`` -> ``Current``;
8. (PaimonMaintenanceRun, Job-style) ``Failed=True`` -> ``Failed``, ``Complete=True`` -> ``Current``,
   else ``InProgress``;
9. ``Ready=False`` with a permanent failure (``status.state`` or ``status.phase`` ``Failed``) ->
   ``Failed`` with the condition's reason; any other ``Ready=False``/``Unknown`` -> ``InProgress``
   (retrying, paused, waiting for a table).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Health", "health", "kstatus"]

Status = Literal["Current", "InProgress", "Failed", "Terminating"]


@dataclass(frozen=True)
class Health:
    status: Status
    reason: str = ""
    message: str = ""


def _conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((obj.get("status") or {}).get("conditions") or [])


def _generic(obj: Mapping[str, Any]) -> Health | None:
    meta = obj.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return Health("Terminating", "", "Resource scheduled for deletion")
    generation = meta.get("generation")
    observed = (obj.get("status") or {}).get("observedGeneration")
    if generation is not None and observed is not None and observed != generation:
        return Health("InProgress", "LatestGenerationNotObserved",
                      f"{obj.get('kind')} generation is {generation}, but latest observed generation is {observed}")
    for cond in _conditions(obj):
        if cond.get("type") == "Reconciling" and cond.get("status") == "True":
            return Health("InProgress", str(cond.get("reason", "")), str(cond.get("message", "")))
        if cond.get("type") == "Stalled" and cond.get("status") == "True":
            return Health("Failed", str(cond.get("reason", "")), str(cond.get("message", "")))
    return None


def kstatus(obj: Mapping[str, Any]) -> Health:
    """kstatus ``Compute`` for a custom resource (rules 1-4)."""
    return _generic(obj) or Health("Current", "", "Resource is current")


def health(obj: Mapping[str, Any]) -> Health:
    """The tablekeeper health check (rules 1-3, 5-9)."""
    generic = _generic(obj)
    if generic is not None:
        return generic
    status = obj.get("status") or {}
    by_type = {c.get("type"): c for c in _conditions(obj)}
    if "Complete" in by_type or "Failed" in by_type:  # PaimonMaintenanceRun: Job-style conditions
        for type_, verdict in (("Failed", "Failed"), ("Complete", "Current")):
            cond = by_type.get(type_)
            if cond is not None and cond.get("status") == "True":
                return Health(verdict, str(cond.get("reason", "")), str(cond.get("message", "")))  # type: ignore[arg-type]
        return Health("InProgress", str(status.get("phase", "")), "running")
    ready = by_type.get("Ready")
    if ready is None:
        return Health("InProgress", "", "waiting for the operator")
    generation = (obj.get("metadata") or {}).get("generation")
    if generation is not None and ready.get("observedGeneration") not in (None, generation):
        return Health("InProgress", "LatestGenerationNotObserved", "Ready describes an older generation")
    reason, message = str(ready.get("reason", "")), str(ready.get("message", ""))
    if ready.get("status") == "True":
        return Health("Current", reason, message)
    if "Failed" in (status.get("state"), status.get("phase")):
        return Health("Failed", reason, message)
    return Health("InProgress", reason, message)
