"""Handlers of ``PaimonTag`` and ``PaimonBranch`` (controllers: :mod:`tablekeeper.operator.controllers.tags`,
:mod:`~tablekeeper.operator.controllers.branches`, :mod:`~tablekeeper.operator.controllers.deletion`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from tablekeeper.operator import kopfcompat
from tablekeeper.operator.controllers import branches, children, deletion, dependents, modes, tags
from tablekeeper.operator.handlers.common import (
    finish,
    mode_change,
    obj_of,
    only_own_changes,
    post_events,
    stop_if_gone,
    view_of,
)
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status import errors, markers
from tablekeeper.operator.status.outcome import Outcome

__all__ = ["on_change", "on_check", "on_delete", "on_paused", "on_unmanaged", "on_event"]

_RECONCILE = {"PaimonTag": tags.reconcile_tag, "PaimonBranch": branches.reconcile_branch}
_DELETE = {"PaimonTag": deletion.delete_tag, "PaimonBranch": deletion.delete_branch}
_CHECK_STEP = {"PaimonTag": "tag/check", "PaimonBranch": "branch/check"}  # test seams (Runtime.step)


async def on_change(rt: Runtime, kind: str, *, body: kopf.Body, patch: kopf.Patch, retry: int, diff: Any = None,
                    **kwargs: Any) -> None:
    """create/update/resume: ``resolve``; when it heads to a storage change, write ownership,
    finalizer and labels ahead (children.write_ahead), then ``apply``; Kopf writes the outcome
    with its own bookkeeping in one status PATCH."""
    if only_own_changes(diff):
        return
    outcome, current = await _reconcile(rt, kind, body, "resolve", retry, kwargs)
    finish(outcome, body=current, patch=patch, view=view_of(rt, kwargs))


async def on_check(rt: Runtime, kind: str, *, body: kopf.Body, patch: kopf.Patch, stopped: Any,
                   **kwargs: Any) -> None:
    """The periodic level check (drift, TTL); writes status only when something changed."""
    obj = obj_of(kind, body)
    view = view_of(rt, kwargs)
    if stop_if_gone(view, obj, stopped, rt) or obj.deleting:
        return
    await rt.step(_CHECK_STEP[kind], obj.ref)
    outcome, current = await _reconcile(rt, kind, body, "check", None, kwargs)
    outcome.failure = None  # the timer's interval is the retry
    finish(outcome, body=current, patch=patch, view=view)


async def _reconcile(rt: Runtime, kind: str, body: kopf.Body, phase: children.Phase, retry: int | None,
                     kwargs: dict[str, Any]) -> tuple[Any, Mapping[str, Any]]:
    """One pass in ``phase``; an outcome heading to a storage change is written ahead and the
    change applied in the same pass. Returns the outcome and the object as it is now."""
    view = view_of(rt, kwargs)
    obj = obj_of(kind, body)
    outcome = await _RECONCILE[kind](rt, view, obj, phase=phase, retry=retry)
    current: Mapping[str, Any] = body
    if children.heads_to_change(outcome):
        try:
            fresh = await children.write_ahead(rt, obj, outcome)
        except kopfcompat.Conflict as e:  # changed meanwhile: redo the pass on the new version
            raise kopf.TemporaryError(f"the object changed while its ownership was recorded: {e}",
                                      delay=min(rt.config.retry_delay(1), errors.SHORT_DELAY)) from e
        except Exception as e:  # not written (timeout, API error): soon again, not Kopf's 60 s default
            raise kopf.TemporaryError(f"recording ownership failed: {e!r}", delay=rt.config.retry_delay(1)) from e
        current = {**body, "metadata": {**body.get("metadata", {}), **fresh.get("metadata", {})},
                   "status": fresh.get("status") or {}}
        outcome = await _RECONCILE[kind](rt, view, obj_of(kind, current), phase="apply", retry=retry)
    return outcome, current


async def on_delete(rt: Runtime, kind: str, *, body: kopf.Body, patch: kopf.Patch, retry: int,
                    **kwargs: Any) -> None:
    """Deletion with the finalizer: delete the tag / drop the branch (or keep it, see controllers.deletion)."""
    view = view_of(rt, kwargs)
    outcome = await _DELETE[kind](rt, view, obj_of(kind, body), retry=retry)
    finish(outcome, body=body, patch=patch, view=view)


def on_paused(rt: Runtime, kind: str, *, body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    """``tablekeeper.io/paused``: report it; storage is left alone."""
    finish(modes.paused_outcome(obj_of(kind, body), rt.config.now()), body=body, patch=patch)


def on_unmanaged(rt: Runtime, kind: str, *, body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    """``tablekeeper.io/managed: "false"``: report it (Kopf drops the finalizer: its filter no longer matches)."""
    finish(modes.unmanaged_outcome(obj_of(kind, body), rt.config.now()), body=body, patch=patch)


async def on_event(rt: Runtime, kind: str, finalizer: str, *, body: kopf.Body, patch: kopf.Patch,
                   **kwargs: Any) -> None:
    """Every watch event: react to annotation changes Kopf does not see as changes
    (paused, managed, resumed: see :func:`~tablekeeper.operator.handlers.common.mode_change`;
    ``tablekeeper.io/recheck``), post ``ForceDeleted`` when ``force-delete`` is about to release a
    finalizer, and when a tag has just become Ready re-check the branches waiting for it
    (:mod:`~tablekeeper.operator.controllers.dependents`)."""
    meta = body.get("metadata") or {}
    if (markers.is_force_delete(meta) and finalizer in (meta.get("finalizers") or ())
            and rt.first_time(str(meta.get("uid")), "ForceDeleted")):
        forced = Outcome()
        forced.event("Warning", "ForceDeleted",
                     "tablekeeper.io/force-delete: the finalizer is removed without touching storage")
        post_events(forced, body=body)
    change = mode_change(body)
    obj = obj_of(kind, body)
    view = view_of(rt, kwargs)
    if kind == "PaimonTag" and not obj.deleting:
        await dependents.nudge_dependents(rt, view, obj)  # branches waiting for this tag
    recheck = dependents.wants_recheck(rt, obj) and change is None and not obj.deleting
    if recheck and await dependents.retry_now(rt, obj, rt.config.now()):
        return  # Kopf's pending retry runs now
    if change == "unmanaged":
        on_unmanaged(rt, kind, body=body, patch=patch)
    elif change == "paused":
        on_paused(rt, kind, body=body, patch=patch)
    elif change == "resumed" or (recheck and view.contains(obj)):
        # a resumed object may head to a storage change (a tag created while paused): write it
        # ahead and apply it now, as the periodic check would, instead of reporting "Creating";
        # a re-check (tablekeeper.io/recheck) takes the same path
        outcome, current = await _reconcile(rt, kind, body, "check", None, kwargs)
        outcome.failure = None
        finish(outcome, body=current, patch=patch, view=view)
