"""Handlers of ``PaimonTable`` (controller: :mod:`tablekeeper.operator.controllers.tables`)."""

from __future__ import annotations

from typing import Any

import kopf

from tablekeeper.operator.controllers import dependents, modes, tables
from tablekeeper.operator.handlers.common import finish, mode_change, obj_of, only_own_changes, stop_if_gone, view_of
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status import markers

__all__ = ["on_change", "on_check", "on_paused", "on_unmanaged", "on_event"]


async def _reconcile(rt: Runtime, body: kopf.Body, patch: kopf.Patch, retry: int | None,
                     kwargs: dict[str, Any]) -> None:
    view, obj = view_of(rt, kwargs), obj_of("PaimonTable", body)
    if "stopped" in kwargs and stop_if_gone(view, obj, kwargs["stopped"], rt):
        return
    outcome = await tables.reconcile_table(rt, view, obj, retry=retry)
    if outcome.clear_run_now:
        patch.metadata.annotations[markers.RUN_NOW] = None
    if retry is None:
        outcome.failure = None
    finish(outcome, body=body, patch=patch, view=view)


async def on_change(rt: Runtime, *, body: kopf.Body, patch: kopf.Patch, retry: int, diff: Any = None,
                    **kwargs: Any) -> None:
    """create/update/resume."""
    if only_own_changes(diff):
        return
    await _reconcile(rt, body, patch, retry, kwargs)


async def on_check(rt: Runtime, *, body: kopf.Body, patch: kopf.Patch, **kwargs: Any) -> None:
    """The periodic pass: drift, statistics, schedules, run creation; writes only changes."""
    await _reconcile(rt, body, patch, None, kwargs)


def on_paused(rt: Runtime, *, body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    finish(modes.paused_outcome(obj_of("PaimonTable", body), rt.config.now()), body=body, patch=patch)


def on_unmanaged(rt: Runtime, *, body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    finish(modes.unmanaged_outcome(obj_of("PaimonTable", body), rt.config.now()), body=body, patch=patch)


async def on_event(rt: Runtime, *, body: kopf.Body, patch: kopf.Patch, **kwargs: Any) -> None:
    """Every watch event: react at once to annotation changes Kopf does not report as changes
    (paused, managed, resumed, ``run-now``, ``recheck``); when the table has just become Ready,
    re-check its tags, branches and runs that wait for it, and when its applied policies
    changed, the policies concerned (:mod:`~tablekeeper.operator.controllers.dependents`)."""
    change = mode_change(body)
    obj = obj_of("PaimonTable", body)
    view = view_of(rt, kwargs)
    if not obj.deleting:
        await dependents.nudge_dependents(rt, view, obj)
        await dependents.nudge_policies_of_table(rt, view, obj)
    if dependents.wants_recheck(rt, obj) and change is None and not obj.deleting and view.contains(obj):
        if not await dependents.retry_now(rt, obj, rt.config.now()):
            await _reconcile(rt, body, patch, None, kwargs)
        return
    if change == "unmanaged":
        on_unmanaged(rt, body=body, patch=patch)
    elif change == "paused":
        on_paused(rt, body=body, patch=patch)
    elif change == "resumed" or (markers.RUN_NOW in ((body.get("metadata") or {}).get("annotations") or {})
                                 and not markers.is_paused(body.get("metadata")) and change is None
                                 and not markers.is_unmanaged(body.get("metadata"))):
        await _reconcile(rt, body, patch, None, kwargs)
