"""What every handler shares: building the object snapshot and the view from Kopf's arguments,
and recording an outcome (:func:`finish`: status, labels, Events and their log lines)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import kopf

from tablekeeper.operator import kopfcompat, logs
from tablekeeper.operator.cluster.view import Obj, View
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status import errors, markers
from tablekeeper.operator.status.outcome import Outcome, label_changes, render

__all__ = ["obj_of", "view_of", "finish", "post_events", "only_own_changes", "stop_if_gone", "mode_change"]


def stop_if_gone(view: View, obj: Obj, stopped: Any, rt: Runtime | None = None) -> bool:
    """Stop the timer of an object that is gone, or of any object once the operator is stopping;
    True when it was stopped.

    Kopf stops timers on deletion only for objects with a finalizer; the others keep firing until
    the operator exits. And a timer spawned by an event that arrives while Kopf is stopping is
    never stopped (Kopf then waits 5 s for it). A timer whose object left the index, or that runs
    after the cleanup handler, ends itself here.
    """
    if rt is not None and rt.stopping:
        kopfcompat.stop_timer(stopped)
        return True
    if not view.contains(obj):
        kopfcompat.stop_timer(stopped)
        return True
    return False


def obj_of(kind: str, body: Mapping[str, Any]) -> Obj:
    """The snapshot of the object being handled."""
    return Obj.from_body(kind, body)


def view_of(rt: Runtime, kwargs: Mapping[str, Any]) -> View:
    """The view over the indexes Kopf passes to every handler (remembered for the metrics)."""
    rt.remember_indices(kwargs)
    return View(kwargs)


def only_own_changes(diff: Iterable[Any] | None) -> bool:
    """Whether an update changed nothing but labels the operator maintains itself."""
    items = list(diff or ())
    if not items:
        return False
    for item in items:
        path = tuple(item[1]) if len(item) > 1 else ()
        if path[:2] == ("metadata", "labels"):
            changed = set()
            if len(path) >= 3:
                changed.add(path[2])
            else:
                old, new = dict(item[2] or {}), dict(item[3] or {})
                changed = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
            if changed <= markers.OWN_LABELS:
                continue
        return False
    return True


def finish(outcome: Outcome, *, body: Mapping[str, Any], patch: kopf.Patch, view: View | None = None) -> None:
    """Record ``outcome``: status patch (only changes), labels, Events and their log lines (``view``
    names the table of an object not resolved yet); then raise its failure."""
    current = body.get("status") or {}
    for key, value in render(current, outcome).items():
        patch.status[key] = value
    labels = (body.get("metadata") or {}).get("labels") or {}
    for key, value in label_changes(labels, outcome.labels).items():
        patch.metadata.labels[key] = value
    post_events(outcome, body=body, view=view)
    if outcome.failure is not None:
        raise errors.to_kopf(outcome.failure, outcome.delay)


def post_events(outcome: Outcome, *, body: Mapping[str, Any], view: View | None = None) -> None:
    """Post the Events of ``outcome`` and log each one with its failure (:func:`.logs.log_outcome`):
    one place, so the Events and the log lines say the same thing."""
    about = body if isinstance(body, kopf.Body) else kopf.Body(dict(body))  # type: ignore[arg-type]
    for event in outcome.events:
        kopf.event(about, type=event.type, reason=event.reason, message=event.message[:1024])
    logs.log_outcome(outcome, body, view)


def mode_change(body: kopf.Body) -> str | None:
    """What an annotation change asks for that the status does not show yet: ``"paused"``,
    ``"unmanaged"``, ``"resumed"`` (an annotation was removed) or None.

    Kopf leaves annotations under its own storage prefix (``tablekeeper.io/``) out of its change
    detection, so adding or removing ``tablekeeper.io/paused`` is no update cause; the watch-event
    handlers use this to react at once (the periodic check would also get there).
    """
    if (body.get("metadata") or {}).get("deletionTimestamp"):
        return None
    meta = body.get("metadata") or {}
    conds = {c.get("type"): c for c in ((body.get("status") or {}).get("conditions") or ())}
    unmanaged, paused = markers.is_unmanaged(meta), markers.is_paused(meta)
    if unmanaged:
        return None if "Unmanaged" in conds else "unmanaged"
    if paused:
        return None if "ReconciliationPaused" in conds else "paused"
    if "Unmanaged" in conds or "ReconciliationPaused" in conds:
        return "resumed"
    return None
