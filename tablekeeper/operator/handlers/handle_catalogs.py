"""Handlers of the catalog and retention-policy kinds (controller: :mod:`tablekeeper.operator.controllers.catalogs`)."""

from __future__ import annotations

from typing import Any

import kopf

from tablekeeper.operator.controllers import catalogs, dependents
from tablekeeper.operator.handlers.common import finish, obj_of, only_own_changes, stop_if_gone, view_of
from tablekeeper.operator.runtime import Runtime

__all__ = ["on_catalog", "on_catalog_check", "on_catalog_event", "on_policy", "on_policy_check", "on_policy_event"]


async def on_catalog(rt: Runtime, kind: str, *, body: kopf.Body, patch: kopf.Patch, retry: int,
                     diff: Any = None, **kwargs: Any) -> None:
    """create/update/resume of a PaimonCatalog or ClusterPaimonCatalog."""
    if only_own_changes(diff):
        return
    view_of(rt, kwargs)
    finish(await catalogs.reconcile_catalog(rt, obj_of(kind, body), retry=retry), body=body, patch=patch)


async def on_catalog_check(rt: Runtime, kind: str, *, body: kopf.Body, patch: kopf.Patch, stopped: Any,
                           **kwargs: Any) -> None:
    if stop_if_gone(view_of(rt, kwargs), obj_of(kind, body), stopped, rt):
        return
    outcome = await catalogs.reconcile_catalog(rt, obj_of(kind, body), retry=None)
    finish(outcome, body=body, patch=patch)


async def on_catalog_event(rt: Runtime, kind: str, *, body: kopf.Body, patch: kopf.Patch, **kwargs: Any) -> None:
    """Every watch event of a catalog: when it has just become Ready, re-check the tables that
    wait for it; ``tablekeeper.io/recheck`` probes it again now."""
    view, obj = view_of(rt, kwargs), obj_of(kind, body)
    if obj.deleting:
        return
    await dependents.nudge_dependents(rt, view, obj)
    if dependents.wants_recheck(rt, obj) and view.contains(obj):
        if not await dependents.retry_now(rt, obj, rt.config.now()):
            finish(await catalogs.reconcile_catalog(rt, obj, retry=None), body=body, patch=patch)


async def on_policy(rt: Runtime, kind: str, *, body: kopf.Body, patch: kopf.Patch, reason: Any = None,
                    **kwargs: Any) -> None:
    """create/update/resume of a retention policy; a created or changed one has the tables it may
    apply to re-checked at once (a resume after a restart changes nothing for them)."""
    view, obj = view_of(rt, kwargs), obj_of(kind, body)
    if str(reason) in ("create", "update"):
        await dependents.nudge_tables_of_policy(rt, view, obj)
    finish(await catalogs.reconcile_policy(rt, view, obj), body=body, patch=patch)


async def on_policy_check(rt: Runtime, kind: str, *, body: kopf.Body, patch: kopf.Patch, stopped: Any,
                          **kwargs: Any) -> None:
    """The periodic check of a retention policy (its table counts)."""
    view, obj = view_of(rt, kwargs), obj_of(kind, body)
    if stop_if_gone(view, obj, stopped, rt):
        return
    finish(await catalogs.reconcile_policy(rt, view, obj), body=body, patch=patch)


async def on_policy_event(rt: Runtime, kind: str, *, body: kopf.Body, patch: kopf.Patch, type: Any = None,
                          **kwargs: Any) -> None:
    """Every watch event of a retention policy: ``tablekeeper.io/recheck`` (set by a table whose
    applied policies changed, or by a user) counts its tables again now; a deleted policy has
    the tables it applied to re-checked."""
    view, obj = view_of(rt, kwargs), obj_of(kind, body)
    if type == "DELETED":
        await dependents.nudge_tables_of_policy(rt, view, obj)
        return
    if not obj.deleting and dependents.wants_recheck(rt, obj) and view.contains(obj):
        finish(await catalogs.reconcile_policy(rt, view, obj), body=body, patch=patch)
