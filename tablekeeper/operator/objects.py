"""Controllers of the external-object CRs: ``PaimonTag`` and ``PaimonBranch`` (operator-design.md
§4.3, §4.4, §7.3-§7.5).

A tag or branch is reconciled in two steps, each persisted before the next runs (one Kopf
handler runs both, handlers/handle_objects.py ``on_change``):

1. ``resolve``: plan the table (:mod:`tablekeeper.operator.scopes`) and, for a create or an
   adoption, record ownership in status first (``owned``, the resolved ``tagName`` and frozen
   ``snapshotId``; for a branch ``createPending``): the write-ahead record, so a crash between the
   two steps can never leak an untracked object, and ``fromLatest`` never moves on a restart.
   :func:`write_ahead` writes it (one status PATCH), then the finalizer and labels (one PATCH);
2. ``apply``: plan again (with the recorded snapshot) and carry out this CR's own actions through
   the shared applier, then report ``Ready`` (the handler's status PATCH): three writes in all.

Before any storage change the record must be in status and, with ``deletionPolicy: Delete``,
the finalizer on the object: a step that finds otherwise records ownership or waits. Only then is
the object created, the applier's write-ahead record patched through the API first when it
differs from what the status holds.

The periodic ``check`` (a timer; skipped while Kopf's steps are in flight) takes the same path and
detects drift: a managed tag deleted out of band is recreated at its snapshot
(``TagRecreated``) or reported ``Lost`` (``SnapshotExpired``, never recreated elsewhere); a tag
whose TTL passed is ``Lost`` (``TagExpired``); a branch deleted out of band is ``Lost``; a
branch past its ``ttl`` is dropped and its CR deleted.

While a Spark run of the table (``ExpireSnapshots`` or ``RemoveOrphanFiles`` launched as a
SparkApplication or Job, or about to be) is in flight, every storage change of a tag or branch
waits, as it waits for the table's lock during an in-process run (:func:`spark_run_in_flight`):
``Synced=False`` with reason ``TableLocked`` naming the run, retried until the run is over.

Deletion (finalizer present only while ``owned`` with ``deletionPolicy: Delete``) goes through
the same planner: the CR leaves the desired state while its record stays, which plans the
deletion (tags: delete with cleanup; branches: drop). Protected objects (fork-point tags,
protected branches, branches in use) are kept and the finalizer released with a Warning; an
object already gone is success.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar
from zoneinfo import ZoneInfo

from tablekeeper import reconcile
from tablekeeper.core import errors as core_errors
from tablekeeper.core import paimon, values
from tablekeeper.core.policy.specs import PaimonBranchSpec, PaimonTableSpec, PaimonTagSpec
from tablekeeper.core.refs import fork_tag_name
from tablekeeper.operator import cluster, conditions, markers, metrics, persistence, scopes
from tablekeeper.operator.cluster import Obj
from tablekeeper.operator.conditions import Reason
from tablekeeper.operator.errors import Failure, OperatorError, classify, failure_of
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status import Outcome, label_changes, render, url_of
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.observe import TableState
from tablekeeper.reconcile.records import TableRecords

__all__ = ["Phase", "reconcile_tag", "reconcile_branch", "delete_tag", "delete_branch", "paused_outcome",
           "unmanaged_outcome", "needs_finalizer", "child_scope", "in_flight", "spark_run_in_flight",
           "SPARK_LOCKING_RUN_TYPES", "heads_to_change", "write_ahead", "kopf_holds_finalizer"]

Phase = Literal["resolve", "apply", "check"]
_PLURAL = {"PaimonTag": "paimontags", "PaimonBranch": "paimonbranches"}
_STATE_LABEL = {"PaimonTag": markers.TAG_STATE_LABEL, "PaimonBranch": markers.BRANCH_STATE_LABEL}
#: Run types whose Spark job decides from the tags and branches it read what to delete: while one
#: is in flight, tag and branch changes of its table wait (in process, the table's lock does it).
SPARK_LOCKING_RUN_TYPES = frozenset({"ExpireSnapshots", "RemoveOrphanFiles"})
#: ``status.engine`` of a Running run that launches (or may launch) Spark: the start step records
#: the requested engine; an in-process run records ``Python``.
_SPARK_ENGINES = frozenset({"Auto", "SparkOperator", "SparkJob"})
_OVER = frozenset({"Succeeded", "Failed"})


def needs_finalizer(obj_meta: Mapping[str, Any], spec: Mapping[str, Any], status: Mapping[str, Any],
                    *, default_policy: str, use_finalizers: bool) -> bool:
    """Whether the CR must hold the finalizer: it owns its object, deletion deletes it
    (``deletionPolicy: Delete``), it is managed, and no ``force-delete`` is asked for."""
    if not use_finalizers or not status.get("owned"):
        return False
    if markers.is_unmanaged(obj_meta) or markers.is_force_delete(obj_meta):
        return False
    return (spec.get("deletionPolicy") or default_policy) == "Delete"


def kopf_holds_finalizer(obj_meta: Mapping[str, Any], spec: Mapping[str, Any], status: Mapping[str, Any],
                         *, default_policy: str, use_finalizers: bool) -> bool:
    """The delete handler's filter, so Kopf's finalizer bookkeeping: :func:`needs_finalizer`,
    except while a change is being written ahead (``state: Creating`` without the finalizer yet):
    :func:`write_ahead` adds it itself in the same PATCH as the labels, and Kopf, looking at the
    watch event of the ownership record, would otherwise send a finalizer patch of its own (refused
    once the other lands: one wasted request per object)."""
    if not needs_finalizer(obj_meta, spec, status, default_policy=default_policy, use_finalizers=use_finalizers):
        return False
    return status.get("state") != "Creating" or markers.FINALIZER in (obj_meta.get("finalizers") or ())


# -- shared pieces ------------------------------------------------------------------------------------

def _table_fields(info: cluster.TableInfo) -> dict[str, Any]:
    spec = info.spec
    return {"name": info.obj.name, "catalogRef": {"kind": spec.catalog_ref.kind, "name": spec.catalog_ref.name},
            "database": spec.database, "table": spec.table, "warehouse": info.catalog.warehouse}


async def child_scope(rt: Runtime, view: cluster.View, obj: Obj, table_name: str) -> scopes.Scope:
    """The scope of the table a tag/branch belongs to.

    A child being deleted whose PaimonTable is gone uses the table recorded in its status.

    Raises:
        OperatorError: ``TableNotReady`` (temporary) naming the table's own problem.
    """
    namespace = obj.namespace or ""
    table = view.get("PaimonTable", namespace, table_name)
    if table is None and obj.deleting and isinstance(obj.status.get("table"), Mapping):
        recorded = obj.status["table"]
        table = Obj("PaimonTable", namespace, table_name, "", "", 0, {}, {},
                    {"catalogRef": recorded.get("catalogRef"), "database": recorded.get("database"),
                     "table": recorded.get("table")}, {}, False, ())
    if table is None:
        raise OperatorError(Reason.TABLE_NOT_READY, f"PaimonTable {table_name!r} does not exist in namespace "
                                                    f"{namespace!r}", temporary=True)
    try:
        spec = cluster.parse(table)
        assert isinstance(spec, PaimonTableSpec)
        labels = await rt.labels_for(view, namespace, spec)
        info = cluster.resolve_table(view, table, labels) if table.uid else \
            cluster.TableInfo(table, spec, cluster.resolve_catalog(view, table, spec, labels))
        options = await rt.catalog_options(info.catalog)
    except core_errors.InvalidInputError as e:
        raise OperatorError(Reason.TABLE_NOT_READY, f"PaimonTable {table_name!r} is invalid: {e.message}",
                            temporary=True) from e
    except OperatorError as e:
        raise OperatorError(Reason.TABLE_NOT_READY, f"PaimonTable {table_name!r}: {e.reason}: {e.message}",
                            temporary=True) from e
    return scopes.gather(view, info, options, labels, default_deletion_policy=rt.config.default_deletion_policy)


def _base(obj: Obj, state: str, ready: tuple[conditions.Status, str, str], now: datetime,
          synced: tuple[bool, str, str] = (True, Reason.RECONCILE_SUCCESS, "")) -> Outcome:
    outcome = Outcome(generation=obj.generation)
    outcome.fields["state"] = state
    outcome.conditions = [
        conditions.condition(conditions.READY, ready[0], ready[1], ready[2], generation=obj.generation, now=now),
        conditions.condition(conditions.SYNCED, synced[0], synced[1], synced[2], generation=obj.generation, now=now),
    ]
    outcome.labels[_STATE_LABEL[obj.kind]] = state
    return outcome


def _labels(obj: Obj, table: str) -> dict[str, str]:
    out = {markers.TABLE_LABEL: markers.label_value(table)}
    if obj.kind == "PaimonTag" and markers.TRIGGER_TYPE_LABEL not in obj.labels:
        out[markers.TRIGGER_TYPE_LABEL] = "Manual"
    return out


def _failed(rt: Runtime, obj: Obj, failure: Failure, now: datetime, *, retry: int | None,
            backoff_limit: int | None, keep_state: str | None = None) -> Outcome:
    """A failed reconcile: temporary failures count and back off; permanent ones stay."""
    if not failure.temporary:
        outcome = _base(obj, keep_state or "Failed", ("False", failure.reason, failure.message), now,
                        (False, Reason.RECONCILE_ERROR, failure.message))
        outcome.fields["lastError"] = failure.message
        if rt.first_time(obj.uid, failure.reason, failure.message):
            outcome.event("Warning", failure.reason, failure.message)
        return outcome
    failures = (retry + 1) if retry is not None else int(obj.status.get("failures") or 0) + 1
    exhausted = backoff_limit is not None and backoff_limit >= 0 and failures > backoff_limit
    state = "Failed" if exhausted else (keep_state or ("Creating" if obj.status.get("owned") else "Pending"))
    message = failure.message + (f" (gave up after {failures} attempt(s); the periodic check retries)"
                                 if exhausted else "")
    outcome = _base(obj, state, ("False", failure.reason, message), now, (False, Reason.RECONCILE_ERROR, message))
    outcome.fields.update(failures=failures, lastError=failure.message)
    if rt.first_time(obj.uid, failure.reason, f"{failure.message}#{failures}"):
        outcome.event("Warning", "CreateFailed" if not obj.status.get("owned") else failure.reason, message)
    if not exhausted and retry is not None:
        outcome.failure = failure
        outcome.delay = rt.config.retry_delay(failures)
    return outcome


def paused_outcome(obj: Obj, now: datetime) -> Outcome:
    """``tablekeeper.io/paused``: nothing changes in storage; deletion is still processed."""
    outcome = Outcome(generation=None, keep=(conditions.READY,))
    outcome.conditions = [
        conditions.condition(conditions.SYNCED, False, Reason.RECONCILE_PAUSED, "tablekeeper.io/paused is set",
                             generation=obj.generation, now=now),
        conditions.condition(conditions.PAUSED, True, Reason.PAUSED, "spec changes are not applied while paused",
                             generation=obj.generation, now=now),
    ]
    return outcome


def unmanaged_outcome(obj: Obj, now: datetime) -> Outcome:
    """``tablekeeper.io/managed: "false"``: detached; storage is never touched, not even on deletion."""
    outcome = Outcome(generation=None, keep=(conditions.READY,))
    outcome.conditions = [
        conditions.condition(conditions.SYNCED, False, Reason.UNMANAGED, "tablekeeper.io/managed is false",
                             generation=obj.generation, now=now),
        conditions.condition(conditions.UNMANAGED, True, Reason.UNMANAGED,
                             "detached: storage is not changed, not even when the CR is deleted",
                             generation=obj.generation, now=now),
    ]
    return outcome


async def _plan(rt: Runtime, scope: scopes.Scope, now: datetime) -> scopes.ScopePlan:
    opener = rt.opener(scope.location.warehouse, scope.options)
    return await asyncio.to_thread(scopes.plan_scope, scope, opener, now)


def _persist(rt: Runtime, obj: Obj, fields_of: Any) -> Any:
    """A write-ahead hook: when the applier changes this CR's record, PATCH its status first."""
    url = url_of(_PLURAL[obj.kind], obj.namespace, obj.name, subresource="status")
    written = dict(obj.status)  # what the status holds: a record it already holds is not written again

    def on_save(before: TableRecords, after: TableRecords) -> None:
        old, new = fields_of(before), fields_of(after)
        if old != new and any(written.get(key) != value for key, value in new.items()):
            rt.api.call(lambda: rt.api.patch(url, {"status": new}))
            written.update(new)
    return on_save


def in_flight(obj: Obj) -> bool:
    """Whether Kopf is in the middle of this CR's create/update handler (its progress in status:
    a failed attempt waiting for its retry), or has not finished its creation yet."""
    short = "tag" if obj.kind == "PaimonTag" else "branch"
    return persistence.in_flight(obj.status, (f"{short}-reconcile",)) or not persistence.handled(obj.meta, obj.status)


def spark_run_in_flight(rt: Runtime, view: cluster.View, namespace: str | None, table: str) -> Obj | None:
    """The run of PaimonTable ``namespace/table`` whose Spark job may be changing the table now:
    an ``ExpireSnapshots`` / ``RemoveOrphanFiles`` run that is ``Running`` with a launched
    SparkApplication or Job, or with a Spark engine not yet resolved (``Auto`` may still launch),
    or that holds the table's run claim while Spark runs are on (started, status not seen yet)."""
    holder = rt.run_claims.get((namespace, table))
    for run in view.children("PaimonMaintenanceRun", namespace, table):
        status = run.status
        if run.spec.get("type") not in SPARK_LOCKING_RUN_TYPES or status.get("phase") in _OVER:
            continue
        if status.get("phase") == "Running" and (status.get("sparkApplicationRef") or status.get("jobRef")
                                                 or status.get("engine") in _SPARK_ENGINES):
            return run
        if run.uid == holder and rt.config.spark.enabled and run.spec.get("engine") != "Python":
            return run
    return None


def _wait_for_run(rt: Runtime, obj: Obj, run: Obj, now: datetime, *, generation: bool = True) -> Outcome:
    """A storage change of ``obj`` waits for the Spark run ``run`` of its table: ``Synced=False``
    reason ``TableLocked`` (``Ready`` as it was), retried soon (the periodic check also retries)."""
    what = "tag" if obj.kind == "PaimonTag" else "branch"
    message = (f"waiting for maintenance run {run.name} ({run.spec.get('type')}, engine "
               f"{run.status.get('engine') or run.spec.get('engine') or 'Auto'}) of this table to finish before "
               f"changing the {what} in storage")
    outcome = Outcome(generation=obj.generation if generation else None, keep=(conditions.READY,))
    outcome.conditions = [conditions.condition(conditions.SYNCED, False, Reason.TABLE_LOCKED, message,
                                               generation=obj.generation, now=now)]
    if rt.first_time(obj.uid, Reason.TABLE_LOCKED, run.uid):
        outcome.event("Normal", Reason.TABLE_LOCKED, message)
    outcome.failure = Failure(Reason.TABLE_LOCKED, message, True)
    outcome.delay = rt.config.retry_delay(1)
    return outcome


def _gate(rt: Runtime, obj: Obj, phase: Phase) -> Outcome | None:
    """Before a storage change in ``apply``: the ownership record must be in status, and the
    finalizer on the object when deletion must delete. None = go (``resolve`` and ``check`` write
    the record first when it is incomplete: :func:`_needs_record`)."""
    if phase != "apply" or not obj.status.get("owned"):
        return None
    if _finalizer_missing(rt, obj):
        out = Outcome()
        out.failure = Failure(Reason.CREATING, "waiting for the finalizer before changing storage", True, short=True)
        out.delay = rt.config.retry_delay(1)
        return out
    return None


def _finalizer_missing(rt: Runtime, obj: Obj) -> bool:
    return needs_finalizer(obj.meta, obj.spec, obj.status, default_policy=rt.config.default_deletion_policy,
                           use_finalizers=rt.config.use_finalizers) and markers.FINALIZER not in obj.finalizers


def _needs_record(rt: Runtime, obj: Obj, phase: Phase) -> bool:
    """Whether this pass reports ``Creating`` (the handler then writes ownership and finalizer
    ahead and applies): always in ``resolve``; in the others when the record is not complete (a
    status that says owned without the finalizer, e.g. written by an older operator, is completed
    by the next check instead of waiting forever)."""
    return phase == "resolve" or not obj.status.get("owned") or (phase == "check" and _finalizer_missing(rt, obj))


def heads_to_change(outcome: Outcome) -> bool:
    """Whether a ``resolve`` outcome records ownership ahead of a storage change (state
    ``Creating``, owned, no failure): the handler then writes it ahead and runs ``apply``."""
    return outcome.failure is None and outcome.fields.get("state") == "Creating" and outcome.fields.get("owned") is True


async def write_ahead(rt: Runtime, obj: Obj, outcome: Outcome) -> dict[str, Any]:
    """Before a storage change: the ownership record into status (one PATCH of ``/status``), then
    the finalizer (``deletionPolicy: Delete``) and the labels onto the object (one PATCH, guarded
    by the ``resourceVersion`` the first returned). Returns the object as the server has it now.

    The state label is written as the state the change heads to (``Ready``): the object's one
    metadata write happens here, before the change, so the label is not written again after it
    (a failed change writes its own state label). This is what keeps a PaimonTag at three writes
    to Ready (status record, metadata, status Ready; operator-design.md §7.2, docs/operator.md).
    """
    plural = _PLURAL[obj.kind]
    body: dict[str, Any] = {"metadata": {"resourceVersion": obj.resource_version, "labels": dict(obj.labels),
                                         "finalizers": list(obj.finalizers)}, "status": dict(obj.status)}
    # an object that owns already has its record in status (the snapshot is frozen): a retry of
    # the change (a run held the table, the finalizer was missing) does not write it again
    patch = render(obj.status, outcome) if not obj.status.get("owned") else {}
    if patch:
        body = await rt.api.patch(url_of(plural, obj.namespace, obj.name, subresource="status"), {"status": patch})
    meta = body.get("metadata") or {}
    new_status = body.get("status") or {}
    labels = label_changes(meta.get("labels"), {**outcome.labels, _STATE_LABEL[obj.kind]: "Ready"})
    finalizers = list(meta.get("finalizers") or ())
    meta_patch: dict[str, Any] = {}
    if labels:
        meta_patch["labels"] = labels
    if markers.FINALIZER not in finalizers and needs_finalizer(
            obj.meta, obj.spec, new_status, default_policy=rt.config.default_deletion_policy,
            use_finalizers=rt.config.use_finalizers):
        meta_patch["finalizers"] = [*finalizers, markers.FINALIZER]
    if meta_patch:
        meta_patch["resourceVersion"] = meta.get("resourceVersion") or obj.resource_version  # 409 if it moved
        body = await rt.api.patch(url_of(plural, obj.namespace, obj.name), {"metadata": meta_patch})
    return body


def _come_back(rt: Runtime, outcome: Outcome, phase: Phase) -> None:
    """The apply step recorded ownership itself (its resolve step did not run first): retry soon
    to do the change once the finalizer is on."""
    if phase == "apply":
        outcome.failure = Failure(Reason.CREATING, "ownership recorded; the change follows", True, short=True)
        outcome.delay = rt.config.retry_delay(1)


# -- tags --------------------------------------------------------------------------------------------------

def _tag_record_fields(member: scopes.Member) -> Any:
    def fields_of(records: TableRecords) -> dict[str, Any]:
        rec = records.tag(member.branch, member.name or "")
        if rec is None or rec.resource != member.obj.ref:
            return {"owned": False}
        return {"owned": True, "snapshotId": rec.snapshot_id, "tagName": member.name, "branch": member.branch,
                "expired": rec.expired or None}
    return fields_of


def _tag_ready(plan: scopes.ScopePlan, member: scopes.Member, records: TableRecords, reason: str,
               now: datetime) -> Outcome:
    obj = member.obj
    name = member.name or ""
    tag = plan.state.branch_tags(member.branch).get(name)
    rec = records.tag(member.branch, name)
    outcome = _base(obj, "Ready", ("True", reason, f"tag {name!r} of {plan.scope.location.identifier} at snapshot "
                                               f"{tag.snapshot_id if tag else '?'}"), now)
    expire_ms = rec.expires_ms if rec is not None else None
    if expire_ms is None and tag is not None and tag.create_time is not None and tag.time_retained is not None \
            and plan.target.writer_zone:
        local = (tag.create_time + tag.time_retained).replace(tzinfo=ZoneInfo(plan.target.writer_zone))
        expire_ms = int(local.astimezone(UTC).timestamp() * 1000)
    forks = plan.state.protected_tags(member.branch).get(name, ())
    outcome.fields.update(
        owned=True, tagName=name, branch=member.branch,
        snapshotId=tag.snapshot_id if tag else (rec.snapshot_id if rec else None),
        snapshotCommitTime=values.rfc3339_ms(tag.snapshot_time_ms) if tag else None,
        createTime=tag.create_time.strftime("%Y-%m-%dT%H:%M:%S") if tag and tag.create_time else None,
        expireTime=values.rfc3339_ms(expire_ms), forkPointOf=list(forks) or None, expired=None, origin=reason,
        failures=None, lastError=None, table=_table_fields(plan.scope.table))
    return outcome


def _tag_previous_reason(obj: Obj) -> str:
    """How the CR came to own its object: ``Created`` or ``Adopted`` (``status.origin``)."""
    origin = obj.status.get("origin")
    return origin if origin in (Reason.CREATED, Reason.ADOPTED) else Reason.CREATED


_Spec = TypeVar("_Spec", PaimonTagSpec, PaimonBranchSpec)


async def _reconcile_child(rt: Runtime, view: cluster.View, obj: Obj, phase: Phase, retry: int | None,
                           spec_type: type[_Spec],
                           inner: Callable[[Runtime, cluster.View, Obj, _Spec, Phase, datetime, int | None],
                                           Awaitable[Outcome]],
                           backoff_limit: Callable[[_Spec], int]) -> Outcome:
    """What a tag and a branch reconcile share: parsing, the skip rules, failure classification,
    labels and metrics around ``inner``."""
    if phase == "check" and in_flight(obj):
        return Outcome()  # Kopf's create/update steps are running; they own this pass
    now = rt.config.now()
    started = asyncio.get_running_loop().time()
    try:
        spec = cluster.parse(obj)
        assert isinstance(spec, spec_type)
    except core_errors.InvalidInputError as e:
        return _failed(rt, obj, Failure(Reason.INVALID_SPEC, e.message, False), now, retry=retry, backoff_limit=None)
    if phase == "apply" and obj.status.get("state") == "Failed" and not obj.status.get("owned") \
            and obj.status.get("observedGeneration") == obj.generation and not obj.status.get("failures"):
        return Outcome()  # the resolve step has just reported why; the periodic check retries
    try:
        outcome = await inner(rt, view, obj, spec, phase, now, retry)
        result = "error" if outcome.failure else "success"
    except (OperatorError, core_errors.TablekeeperError, OSError) as e:
        failure = classify(e)
        lost = failure.reason == Reason.TABLE_NOT_FOUND and obj.status.get("owned")  # table dropped out of band
        outcome = _failed(rt, obj, failure, now, retry=retry, backoff_limit=backoff_limit(spec),
                          keep_state="Lost" if lost else None)
        result = "error"
    outcome.labels.update(_labels(obj, spec.table_ref.name))
    metrics.observe_reconcile(obj.kind, result, asyncio.get_running_loop().time() - started)
    return outcome


async def _apply_one(rt: Runtime, obj: Obj, plan: scopes.ScopePlan, change: A.Action,
                     record_fields: Any) -> tuple[scopes.StatusRecordStore, reconcile.ActionResult | None]:
    """Apply one tag or branch change, its records persisted into the CR's status; (the record
    store, the failed result or None)."""
    store = scopes.StatusRecordStore(plan.records, _persist(rt, obj, record_fields))
    opener = rt.opener(plan.scope.location.warehouse, plan.scope.options)
    result = await asyncio.to_thread(scopes.apply_actions, plan, [change], store, opener)
    failed = [r for r in result.results if r.status == "failed"]
    return store, (failed[0] if failed else None)


async def reconcile_tag(rt: Runtime, view: cluster.View, obj: Obj, *, phase: Phase,
                        retry: int | None = None) -> Outcome:
    """One reconcile of a PaimonTag (see the module docstring)."""
    return await _reconcile_child(rt, view, obj, phase, retry, PaimonTagSpec, _reconcile_tag,
                                  lambda spec: spec.backoff_limit)


async def _reconcile_tag(rt: Runtime, view: cluster.View, obj: Obj, spec: PaimonTagSpec, phase: Phase,
                         now: datetime, retry: int | None) -> Outcome:
    scope = await child_scope(rt, view, obj, spec.table_ref.name)
    member = scope.member(obj.uid)
    assert member is not None
    if member.failure is not None:
        out = _failed(rt, obj, member.failure, now, retry=retry, backoff_limit=None)
        out.fields["owned"] = None if member.failure.reason == Reason.RESOURCE_CONFLICT else obj.status.get("owned")
        return out
    async with rt.table_lock(scope.identity):
        plan = await _plan(rt, scope, now)
        if obj.uid in plan.excluded:
            return _failed(rt, obj, plan.excluded[obj.uid], now, retry=retry, backoff_limit=None)
        name = member.name or ""
        acts = plan.actions_for(obj.ref)
        changes = [a for a in acts if isinstance(a, (A.CreateTag, A.AdoptTag))]
        conflicts = [a for a in acts if isinstance(a, A.TagConflict)]
        waiting = [a for a in acts if isinstance(a, A.Skipped)]
        rec = plan.records.tag(member.branch, name)
        if conflicts:
            c = conflicts[0]
            lost = c.conflict == Reason.SNAPSHOT_EXPIRED
            out = _failed(rt, obj, Failure(c.conflict, c.reason, False), now, retry=retry, backoff_limit=None,
                          keep_state="Lost" if lost else "Failed")
            if not lost:
                out.fields["owned"] = None if rec is None else True
            return out
        if not changes:
            tag_exists = name in plan.state.branch_tags(member.branch)
            if rec is not None and not tag_exists:
                if any(w.cause == "TagExpired" for w in waiting):  # the planner decided (TTL or policy tag)
                    out = _base(obj, "Lost", ("False", Reason.TAG_EXPIRED, f"tag {name!r} expired by its TTL "
                                                                            "(timeRetained); it is not recreated"),
                                now)
                    out.fields.update(expired=True, failures=None, lastError=None)
                    if rt.first_time(obj.uid, Reason.TAG_EXPIRED):
                        out.event("Normal", "TagExpired", f"tag {name!r} expired by its TTL")
                    return out
            if waiting or rec is None or not tag_exists:
                why = waiting[0].reason if waiting else "the tag cannot be created yet"
                reason = Reason.BRANCH_NOT_FOUND if waiting and waiting[0].cause == "BranchNotFound" \
                    else Reason.SNAPSHOT_NOT_FOUND
                return _failed(rt, obj, Failure(reason, f"waiting: {why}", True), now, retry=retry,
                               backoff_limit=spec.backoff_limit)
            return _tag_ready(plan, member, plan.records, _tag_previous_reason(obj), now)
        change = changes[0]
        gate = _gate(rt, obj, phase)
        if gate is not None:
            return gate
        if _needs_record(rt, obj, phase):
            out = _base(obj, "Creating", ("Unknown", Reason.CREATING,
                                          f"tag {name!r} will be {'adopted' if isinstance(change, A.AdoptTag) else 'created'}"
                                          f" at snapshot {change.snapshot_id}"), now)
            out.fields.update(owned=True, tagName=name, branch=member.branch, snapshotId=change.snapshot_id,
                              origin=Reason.ADOPTED if isinstance(change, A.AdoptTag) else Reason.CREATED,
                              table=_table_fields(scope.table))
            _come_back(rt, out, phase)
            return out
        busy = spark_run_in_flight(rt, view, obj.namespace, spec.table_ref.name)
        if busy is not None:
            return _wait_for_run(rt, obj, busy, now)
        await rt.step("tag/apply", obj.ref)
        store, failed = await _apply_one(rt, obj, plan, change, _tag_record_fields(member))
        if failed is not None:
            return _failed(rt, obj, failure_of(failed), now, retry=retry, backoff_limit=spec.backoff_limit)
        state = await asyncio.to_thread(_reobserve, plan)
    plan.state = state
    recreated = isinstance(change, A.CreateTag) and rec is not None and obj.status.get("state") in ("Ready", "Lost")
    reason = Reason.ADOPTED if isinstance(change, A.AdoptTag) else Reason.CREATED
    out = _tag_ready(plan, member, store.records, _tag_previous_reason(obj) if recreated else reason, now)
    if recreated:
        out.event("Normal", "TagRecreated", f"tag {name!r} was deleted out of band; recreated at snapshot "
                                             f"{change.snapshot_id}")
    else:
        out.event("Normal", reason, f"tag {name!r} {reason.lower()} at snapshot {change.snapshot_id} of "
                                    f"{scope.location.identifier}")
    return out


def _reobserve(plan: scopes.ScopePlan) -> TableState:
    return reconcile.observe(plan.table)


# -- branches -------------------------------------------------------------------------------------------

def _branch_record_fields(member: scopes.Member) -> Any:
    def fields_of(records: TableRecords) -> dict[str, Any]:
        rec = records.branches.get(member.name or "")
        if rec is None or rec.resource != member.obj.ref:
            return {"owned": False}
        return {"owned": True, "branchName": member.name, "createPending": rec.pending or None,
                "createTime": values.rfc3339_ms(rec.created_ms) if rec.created_ms else None,
                "forkTag": rec.fork_tag, "expired": rec.expired or None}
    return fields_of


def _branch_ready(plan: scopes.ScopePlan, member: scopes.Member, records: TableRecords, reason: str,
                  now: datetime) -> Outcome:
    obj, name = member.obj, member.name or ""
    spec = member.spec
    assert isinstance(spec, PaimonBranchSpec)
    current = plan.state.branches.get(name)
    rec = records.branches.get(name)
    outcome = _base(obj, "Ready", ("True", reason, f"branch {name!r} of {plan.scope.location.identifier}"), now)
    created = rec.created_ms if rec is not None and rec.created_ms else (current.created_ms if current else None)
    outcome.fields.update(
        owned=True, branchName=name, createPending=None, createTime=values.rfc3339_ms(created), origin=reason,
        forkTag=rec.fork_tag if rec else None, basedOnTag=spec.from_tag,
        forkSnapshotId=current.fork_snapshot_id if current else None,
        lastWriteTime=values.rfc3339_ms(current.latest_commit_ms) if current else None,
        expired=None, failures=None, lastError=None, table=_table_fields(plan.scope.table))
    return outcome


#: Retries of a failing branch reconcile (PaimonBranch has no backoffLimit field).
_BRANCH_BACKOFF_LIMIT = 6
_BRANCH_KEEP = {"Protected": Reason.BRANCH_PROTECTED, "BranchInUse": Reason.BRANCH_IN_USE,
                "HasDependentBranches": Reason.HAS_DEPENDENT_BRANCHES, "TagsStillNeeded": Reason.TAGS_STILL_NEEDED}


async def reconcile_branch(rt: Runtime, view: cluster.View, obj: Obj, *, phase: Phase,
                           retry: int | None = None) -> Outcome:
    """One reconcile of a PaimonBranch (see the module docstring)."""
    return await _reconcile_child(rt, view, obj, phase, retry, PaimonBranchSpec, _reconcile_branch,
                                  lambda _spec: _BRANCH_BACKOFF_LIMIT)


async def _reconcile_branch(rt: Runtime, view: cluster.View, obj: Obj, spec: PaimonBranchSpec, phase: Phase,
                            now: datetime, retry: int | None) -> Outcome:
    scope = await child_scope(rt, view, obj, spec.table_ref.name)
    member = scope.member(obj.uid)
    assert member is not None
    if member.failure is not None:
        out = _failed(rt, obj, member.failure, now, retry=retry, backoff_limit=None)
        out.fields["owned"] = None if member.failure.reason == Reason.RESOURCE_CONFLICT else obj.status.get("owned")
        return out
    name = member.name or ""
    async with rt.table_lock(scope.identity):
        plan = await _plan(rt, scope, now)
        if obj.uid in plan.excluded:
            return _failed(rt, obj, plan.excluded[obj.uid], now, retry=retry, backoff_limit=None)
        acts = plan.actions_for(obj.ref)
        rec = plan.records.branches.get(name)
        conflicts = [a for a in acts if isinstance(a, A.BranchConflict)]
        creates = [a for a in acts if isinstance(a, (A.CreateBranch, A.AdoptBranch))]
        drops = [a for a in acts if isinstance(a, A.DropBranch) and a.ttl_expired and a.name == name]
        skipped = [a for a in acts if isinstance(a, A.Skipped)]
        if drops and phase == "check":
            busy = spark_run_in_flight(rt, view, obj.namespace, spec.table_ref.name)
            if busy is not None:
                return _wait_for_run(rt, obj, busy, now)
            return await _expire_branch(rt, obj, plan, scope, drops[0], member, now)
        if conflicts:
            c = conflicts[0]
            if c.conflict == "Lost":
                out = _failed(rt, obj, Failure(Reason.BRANCH_LOST, c.reason, False), now, retry=retry,
                              backoff_limit=None, keep_state="Lost")
                return out
            reason = {"AlreadyExistsDifferentHistory": Reason.ALREADY_EXISTS_DIFFERENT_HISTORY,
                      "AlreadyExists": Reason.ALREADY_EXISTS, "FromTagUnavailable": Reason.TAG_NOT_FOUND,
                      "InvalidSpec": Reason.INVALID_SPEC}.get(
                c.conflict, _BRANCH_KEEP.get(c.conflict, Reason.RESOURCE_CONFLICT))
            if c.conflict in _BRANCH_KEEP and rec is not None:  # a TTL drop refused: stays Ready
                out = _branch_ready(plan, member, plan.records, _previous_branch_reason(obj), now)
                if rt.first_time(obj.uid, reason):
                    out.event("Warning", reason, c.reason)
                return out
            out = _failed(rt, obj, Failure(reason, c.reason, c.conflict == "FromTagUnavailable"), now,
                          retry=retry, backoff_limit=6)
            out.fields["owned"] = True if rec is not None else None
            return out
        if skipped and rec is not None and rec.expired:
            out = _base(obj, "Lost", ("False", Reason.BRANCH_EXPIRED, skipped[0].reason), now)
            return out
        if not creates:
            if rec is None or name not in plan.state.branches:
                return _failed(rt, obj, Failure(Reason.PENDING, "the branch cannot be created yet", True), now,
                               retry=retry, backoff_limit=6)
            return _branch_ready(plan, member, plan.records, _previous_branch_reason(obj), now)
        change = creates[0]
        if isinstance(change, A.CreateBranch) and change.from_tag is not None \
                and change.from_tag not in plan.state.branch_tags(paimon.MAIN):
            return _failed(rt, obj, Failure(Reason.TAG_NOT_FOUND, f"waiting for tag {change.from_tag!r} to be created "
                                                                  "(declared by a PaimonTag)", True),
                           now, retry=retry, backoff_limit=None)
        gate = _gate(rt, obj, phase)
        if gate is not None:
            return gate
        if _needs_record(rt, obj, phase):
            out = _base(obj, "Creating", ("Unknown", Reason.CREATING, f"branch {name!r} will be "
                                          f"{'adopted' if isinstance(change, A.AdoptBranch) else 'created'}"), now)
            fork = fork_tag_name(name, change.from_snapshot_id) if isinstance(change, A.CreateBranch) \
                and change.from_snapshot_id is not None else None
            out.fields.update(owned=True, branchName=name, createPending=True if isinstance(change, A.CreateBranch)
                              else None, createTime=values.rfc3339_ms(values.epoch_ms(now)),
                              forkTag=fork, table=_table_fields(scope.table),
                              origin=Reason.ADOPTED if isinstance(change, A.AdoptBranch) else Reason.CREATED)
            _come_back(rt, out, phase)
            return out
        busy = spark_run_in_flight(rt, view, obj.namespace, spec.table_ref.name)
        if busy is not None:
            return _wait_for_run(rt, obj, busy, now)
        await rt.step("branch/apply", obj.ref)
        store, failed = await _apply_one(rt, obj, plan, change, _branch_record_fields(member))
        if failed is not None:
            return _failed(rt, obj, failure_of(failed), now, retry=retry, backoff_limit=_BRANCH_BACKOFF_LIMIT)
        plan.state = await asyncio.to_thread(_reobserve, plan)
    reason = Reason.ADOPTED if isinstance(change, A.AdoptBranch) else Reason.CREATED
    out = _branch_ready(plan, member, store.records, reason, now)
    out.event("Normal", reason, f"branch {name!r} {reason.lower()} in {scope.location.identifier}")
    return out


def _previous_branch_reason(obj: Obj) -> str:
    return _tag_previous_reason(obj)


async def _expire_branch(rt: Runtime, obj: Obj, plan: scopes.ScopePlan, scope: scopes.Scope, drop: A.DropBranch,
                         member: scopes.Member, now: datetime) -> Outcome:
    """Branch TTL: drop the branch, then delete the CR (only ``deletionPolicy: Delete``, never
    protected: the planner only proposes such drops)."""
    await rt.step("branch/expire", obj.ref)
    store = scopes.StatusRecordStore(plan.records, _persist(rt, obj, _branch_record_fields(member)))
    opener = rt.opener(scope.location.warehouse, scope.options)
    result = await asyncio.to_thread(scopes.apply_actions, plan, [drop], store, opener)
    failed = [r for r in result.results if r.status == "failed"]
    if failed:
        return _failed(rt, obj, failure_of(failed[0], reason=Reason.DELETE_FAILED), now, retry=None,
                       backoff_limit=None)
    out = _base(obj, "Deleting", ("False", Reason.BRANCH_EXPIRED, f"dropped: {drop.reason}"), now)
    out.fields.update(owned=None, expired=True)
    out.event("Normal", "Deleted", f"branch {drop.name!r} dropped ({drop.reason}); deleting the PaimonBranch")
    await rt.api.delete(url_of("paimonbranches", obj.namespace, obj.name))
    return out


# -- deletion --------------------------------------------------------------------------------------------

async def _delete(rt: Runtime, view: cluster.View, obj: Obj, table_name: str, retry: int,
                  pick: Any, what: str) -> Outcome:
    now = rt.config.now()
    outcome = Outcome()
    if not obj.status.get("owned"):
        return outcome
    try:
        scope = await child_scope(rt, view, obj, table_name)
    except OperatorError as e:
        outcome.event("Warning", "DeleteFailed", f"{e.message}: the {what} is left in storage, unmanaged")
        return outcome
    member = scope.member(obj.uid)
    if member is None or not member.owner:
        return outcome  # a conflict loser never touches storage
    try:
        async with rt.table_lock(scope.identity):
            plan = await _plan(rt, scope, now)
            acts = [a for a in plan.actions_for(obj.ref) if pick(a)]
            kept = [a for a in acts if isinstance(a, (A.TagConflict, A.BranchConflict))]
            if kept:
                reason = (Reason.PROTECTED_BY_BRANCH if isinstance(kept[0], A.TagConflict)
                          else _BRANCH_KEEP.get(kept[0].conflict, Reason.DELETE_FAILED))
                if isinstance(kept[0], A.BranchConflict) and kept[0].conflict == "TagsStillNeeded":
                    raise OperatorError(Reason.TAGS_STILL_NEEDED, kept[0].reason, temporary=True)
                outcome.event("Warning", reason, f"{kept[0].reason}; the {what} is kept in storage and the "
                                                 "finalizer released")
                return outcome
            changes = [a for a in acts if isinstance(a, (A.DeleteTag, A.DropBranch))]
            if not changes:
                return outcome
            busy = spark_run_in_flight(rt, view, obj.namespace, table_name)
            if busy is not None:
                return _wait_for_run(rt, obj, busy, now, generation=False)
            await rt.step(f"{what}/delete", obj.ref)
            opener = rt.opener(scope.location.warehouse, scope.options)
            store = scopes.StatusRecordStore(plan.records)
            result = await asyncio.to_thread(scopes.apply_actions, plan, changes, store, opener)
    except core_errors.TableNotFoundError:
        return outcome  # the table is gone: nothing left to delete
    except (OperatorError, core_errors.TablekeeperError, OSError) as e:
        failure = classify(e)
        return _delete_failed(rt, obj, Failure(Reason.DELETE_FAILED, f"{failure.reason}: {failure.message}", True),
                              retry, now)
    failed = [r for r in result.results if r.status == "failed"]
    if failed:
        return _delete_failed(rt, obj, replace(failure_of(failed[0], reason=Reason.DELETE_FAILED), temporary=True),
                              retry, now)
    for r in result.results:
        outcome.event("Normal", "Deleted", r.message)
    metrics.observe_reconcile(obj.kind, "deleted", 0.0)
    return outcome


def _delete_failed(rt: Runtime, obj: Obj, failure: Failure, retry: int, now: datetime) -> Outcome:
    outcome = _base(obj, "Deleting", ("False", Reason.DELETE_FAILED, failure.message), now,
                    (False, Reason.RECONCILE_ERROR, failure.message))
    outcome.generation = None
    outcome.fields.update(failures=retry + 1, lastError=failure.message)
    outcome.event("Warning", "DeleteFailed", failure.message)
    outcome.failure = failure
    outcome.delay = rt.config.retry_delay(retry + 1)
    return outcome


async def delete_tag(rt: Runtime, view: cluster.View, obj: Obj, *, retry: int) -> Outcome:
    """A PaimonTag with the finalizer is being deleted: delete the tag (with Paimon's cleanup)."""
    spec = obj.spec.get("tableRef") or {}
    return await _delete(rt, view, obj, str(spec.get("name")), retry,
                         lambda a: isinstance(a, (A.DeleteTag, A.TagConflict, A.ReleaseObject)), "tag")


async def delete_branch(rt: Runtime, view: cluster.View, obj: Obj, *, retry: int) -> Outcome:
    """A PaimonBranch with the finalizer is being deleted: drop the branch."""
    spec = obj.spec.get("tableRef") or {}
    return await _delete(rt, view, obj, str(spec.get("name")), retry,
                         lambda a: isinstance(a, (A.DropBranch, A.BranchConflict, A.ReleaseObject)), "branch")
