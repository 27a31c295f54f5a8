"""Handlers of ``PaimonMaintenanceRun`` (controller: :mod:`tablekeeper.operator.runs.controller`)."""

from __future__ import annotations

from typing import Any

import kopf

from tablekeeper.operator.controllers import dependents
from tablekeeper.operator.handlers.common import finish, obj_of, stop_if_gone, view_of
from tablekeeper.operator.runs import controller as runs
from tablekeeper.operator.runtime import Runtime

__all__ = ["on_start", "on_execute", "on_check", "on_event"]


async def on_start(rt: Runtime, *, body: kopf.Body, patch: kopf.Patch, retry: int, **kwargs: Any) -> None:
    view = view_of(rt, kwargs)
    outcome = await runs.start_run(rt, view, obj_of("PaimonMaintenanceRun", body), retry=retry)
    finish(outcome, body=body, patch=patch, view=view)


async def on_execute(rt: Runtime, *, body: kopf.Body, patch: kopf.Patch, retry: int, **kwargs: Any) -> None:
    view = view_of(rt, kwargs)
    outcome = await runs.execute_run(rt, view, obj_of("PaimonMaintenanceRun", body), retry=retry)
    finish(outcome, body=body, patch=patch, view=view)


async def on_check(rt: Runtime, *, body: kopf.Body, patch: kopf.Patch, stopped: Any, **kwargs: Any) -> None:
    view, obj = view_of(rt, kwargs), obj_of("PaimonMaintenanceRun", body)
    if stop_if_gone(view, obj, stopped, rt):
        return
    outcome = await runs.check_run(rt, view, obj)
    if outcome is not None:
        finish(outcome, body=body, patch=patch, view=view)


async def on_event(rt: Runtime, *, body: kopf.Body, **kwargs: Any) -> None:
    """Every watch event of a run: ``tablekeeper.io/recheck`` (or its table becoming Ready) moves
    a waiting start step's retry to now; a run that has just ended has its table re-checked (its
    maintenance status follows at once)."""
    obj = obj_of("PaimonMaintenanceRun", body)
    if not obj.deleting:
        await dependents.nudge_table_of_ended_run(rt, view_of(rt, kwargs), obj)
    if not obj.deleting and dependents.wants_recheck(rt, obj):
        await dependents.retry_now(rt, obj, rt.config.now())
