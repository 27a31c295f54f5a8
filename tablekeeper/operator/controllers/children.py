"""What the ``PaimonTag`` and ``PaimonBranch`` controllers share (operator-design.md §4.3, §4.4,
§7.3-§7.5): one pass resolved once (:class:`ChildContext`), the write-ahead protocol, and the
status shapes of a child.

A tag or branch is reconciled in two steps, each persisted before the next runs (one Kopf
handler runs both, handlers/handle_objects.py ``on_change``):

1. ``resolve``: plan the table (:mod:`tablekeeper.operator.cluster.scopes`) and, for a create or an
   adoption, record ownership in status first (``owned``, the resolved ``tagName`` and frozen
   ``snapshotId``; for a branch ``createPending``): the write-ahead record, so a crash between the
   two steps can never leak an untracked object, and ``fromLatest`` never moves on a restart.
   :func:`write_ahead` writes it (one status PATCH), then the finalizer and labels (one PATCH);
2. ``apply``: plan again (with the recorded snapshot) and carry out this CR's own actions through
   the shared applier, then report ``Ready`` (the handler's status PATCH): three writes in all.

Before any storage change the record must be in status and, with ``deletionPolicy: Delete``,
the finalizer on the object: a step that finds otherwise records ownership or waits
(:func:`gate`, :func:`needs_record`). Only then is the object created, the applier's write-ahead
record patched through the API first when it differs from what the status holds
(:func:`persist_records`).

The periodic ``check`` (a timer; skipped while Kopf's steps are in flight, :func:`in_flight`)
takes the same path and detects drift (:mod:`.tags`, :mod:`.branches`).

While a Spark run of the table (``ExpireSnapshots`` or ``RemoveOrphanFiles`` launched as a
SparkApplication or Job, or about to be) is in flight, every storage change of a tag or branch
waits, as it waits for the table's lock during an in-process run
(:func:`~tablekeeper.operator.runs.claims.spark_run_in_flight`, :func:`wait_for_run`):
``Synced=False`` with reason ``TableLocked`` naming the run, retried until the run is over.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from tablekeeper import reconcile
from tablekeeper.core import errors as core_errors
from tablekeeper.core import values
from tablekeeper.core.policy.specs import PaimonBranchSpec, PaimonTagSpec
from tablekeeper.operator import metrics, persistence
from tablekeeper.operator.cluster.scopes import Member, ScopePlan, StatusRecordStore
from tablekeeper.operator.cluster.view import Obj, TableInfo, View, parse
from tablekeeper.operator.context import TableContext, child_context, dependency_cause
from tablekeeper.operator.runs.claims import spark_run_in_flight
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status import conditions, markers, reasons
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import Failure, OperatorError, classify, failure_of
from tablekeeper.operator.status.outcome import Outcome, label_changes, render, url_of
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.state.observe import TableState
from tablekeeper.reconcile.state.records import TableRecords

__all__ = ["Phase", "ChildContext", "PLURAL", "STATE_LABEL", "kept_in_trash", "needs_finalizer", "kopf_holds_finalizer",
           "table_fields", "state_outcome", "child_labels", "failed_outcome", "persist_records", "in_flight",
           "wait_for_run", "gate", "needs_record", "heads_to_change", "write_ahead", "come_back", "previous_origin",
           "reconcile_child", "apply_change", "reobserve"]

Phase = Literal["resolve", "apply", "check"]
PLURAL = {"PaimonTag": "paimontags", "PaimonBranch": "paimonbranches"}
STATE_LABEL = {"PaimonTag": markers.TAG_STATE_LABEL, "PaimonBranch": markers.BRANCH_STATE_LABEL}
_SHORT = {"PaimonTag": "tag", "PaimonBranch": "branch"}
_Spec = TypeVar("_Spec", PaimonTagSpec, PaimonBranchSpec)


@dataclass(frozen=True)
class ChildContext(Generic[_Spec]):
    """One reconcile pass of a tag or branch, resolved once and handed down: the object and its
    parsed spec, the step, the clock, Kopf's retry count, its table (:class:`TableContext`) and its
    place among the table's members (name, branch, who wins its identity)."""

    obj: Obj
    spec: _Spec
    phase: Phase
    now: datetime
    retry: int | None
    table: TableContext
    member: Member

    @property
    def name(self) -> str:
        """The Paimon tag or branch name."""
        return self.member.name or ""


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


def table_fields(info: TableInfo) -> dict[str, Any]:
    """``status.table``: the table the CR belongs to, as resolved (a deletion after the table is gone reads it)."""
    spec = info.spec
    return {"name": info.obj.name, "catalogRef": {"kind": spec.catalog_ref.kind, "name": spec.catalog_ref.name},
            "database": spec.database, "table": spec.table, "warehouse": info.catalog.warehouse}


def state_outcome(obj: Obj, state: str, ready: tuple[conditions.Status, str, str], now: datetime,
                  synced: tuple[bool, str, str] = (True, Reason.RECONCILE_SUCCESS, "")) -> Outcome:
    """``status.state`` with its ``Ready`` and ``Synced`` conditions and the state label."""
    outcome = Outcome(generation=obj.generation)
    outcome.fields["state"] = state
    outcome.conditions = [
        conditions.condition(conditions.READY, ready[0], ready[1], ready[2], generation=obj.generation, now=now),
        conditions.condition(conditions.SYNCED, synced[0], synced[1], synced[2], generation=obj.generation, now=now),
    ]
    outcome.labels[STATE_LABEL[obj.kind]] = state
    return outcome


def child_labels(obj: Obj, table: str) -> dict[str, str]:
    """The labels every tag and branch carries: its table, and a tag's trigger type."""
    out = {markers.TABLE_LABEL: markers.label_value(table)}
    if obj.kind == "PaimonTag" and markers.TRIGGER_TYPE_LABEL not in obj.labels:
        out[markers.TRIGGER_TYPE_LABEL] = "Manual"
    return out


def failed_outcome(rt: Runtime, obj: Obj, failure: Failure, now: datetime, *, retry: int | None,
                   backoff_limit: int | None, keep_state: str | None = None) -> Outcome:
    """A failed reconcile: temporary failures count and back off; permanent ones stay ``Failed``
    (``Stalled``). A transient reason (:mod:`~tablekeeper.operator.status.reasons`) never makes
    the object ``Failed``: it waits (``Pending``, or its state) until the periodic check or a
    change of what it depends on finds the cause gone, also once its retries are used up."""
    if not failure.temporary and reasons.is_transient(failure.reason):
        state = keep_state or ("Creating" if obj.status.get("owned") else "Pending")
        outcome = state_outcome(obj, state, ("False", failure.reason, failure.message), now,
                                (False, Reason.RECONCILE_ERROR, failure.message))
        outcome.fields["lastError"] = failure.message
        if rt.first_time(obj.uid, failure.reason, failure.message):
            outcome.event("Warning", failure.reason, failure.message)
        return outcome
    if not failure.temporary:
        outcome = state_outcome(obj, keep_state or "Failed", ("False", failure.reason, failure.message), now,
                                (False, Reason.RECONCILE_ERROR, failure.message))
        outcome.fields["lastError"] = failure.message
        if rt.first_time(obj.uid, failure.reason, failure.message):
            outcome.event("Warning", failure.reason, failure.message)
        return outcome
    failures = (retry + 1) if retry is not None else int(obj.status.get("failures") or 0) + 1
    exhausted = backoff_limit is not None and backoff_limit >= 0 and failures > backoff_limit
    state = ("Failed" if exhausted and not reasons.is_transient(failure.reason)
             else keep_state or ("Creating" if obj.status.get("owned") else "Pending"))
    message = failure.message + (f" (gave up after {failures} attempt(s); the periodic check retries)"
                                 if exhausted else "")
    outcome = state_outcome(obj, state, ("False", failure.reason, message), now,
                            (False, Reason.RECONCILE_ERROR, message))
    outcome.fields.update(failures=failures, lastError=failure.message)
    if rt.first_time(obj.uid, failure.reason, f"{failure.message}#{failures}"):
        outcome.event("Warning", "CreateFailed" if not obj.status.get("owned") else failure.reason, message)
    if not exhausted and retry is not None:
        outcome.failure = failure
        outcome.delay = rt.config.retry_delay(failures)
    return outcome


def persist_records(rt: Runtime, obj: Obj, fields_of: Callable[[TableRecords], dict[str, Any]]
                    ) -> Callable[[TableRecords, TableRecords], None]:
    """A write-ahead hook: when the applier changes this CR's record, PATCH its status first."""
    url = url_of(PLURAL[obj.kind], obj.namespace, obj.name, subresource="status")
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
    return persistence.in_flight(obj.status, (f"{_SHORT[obj.kind]}-reconcile",)) or not persistence.handled(obj.meta, obj.status)


def wait_for_run(rt: Runtime, obj: Obj, run: Obj, now: datetime, *, generation: bool = True) -> Outcome:
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


def gate(rt: Runtime, obj: Obj, phase: Phase) -> Outcome | None:
    """Before a storage change in ``apply``: the ownership record must be in status, and the
    finalizer on the object when deletion must delete. None = go (``resolve`` and ``check`` write
    the record first when it is incomplete: :func:`needs_record`)."""
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


def needs_record(rt: Runtime, obj: Obj, phase: Phase) -> bool:
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
    """Before a storage change: the ownership record into status (one PATCH of ``/status``, guarded
    by the ``resourceVersion`` the pass planned from), then the finalizer (``deletionPolicy:
    Delete``) and the labels onto the object (one PATCH, guarded by the ``resourceVersion`` the
    first returned). Returns the object as the server has it now.

    The state label is written as the state the change heads to (``Ready``): the object's one
    metadata write happens here, before the change, so the label is not written again after it
    (a failed change writes its own state label). This is what keeps a PaimonTag at three writes
    to Ready (status record, metadata, status Ready; operator-design.md §7.2, docs/operator.md).
    """
    plural = PLURAL[obj.kind]
    body: dict[str, Any] = {"metadata": {"resourceVersion": obj.resource_version, "labels": dict(obj.labels),
                                         "finalizers": list(obj.finalizers)}, "status": dict(obj.status)}
    # an object that owns already has its record in status (the snapshot is frozen): a retry of
    # the change (a run held the table, the finalizer was missing) does not write it again
    patch = render(obj.status, outcome) if not obj.status.get("owned") else {}
    if patch:
        # under the version the pass planned from: a pass that read the object (and the view) before
        # another pass recorded ownership and changed storage gets 409 and changes nothing
        body = await rt.api.patch(url_of(plural, obj.namespace, obj.name, subresource="status"),
                                  {"metadata": {"resourceVersion": obj.resource_version}, "status": patch})
    meta = body.get("metadata") or {}
    new_status = body.get("status") or {}
    labels = label_changes(meta.get("labels"), {**outcome.labels, STATE_LABEL[obj.kind]: "Ready"})
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


def come_back(rt: Runtime, outcome: Outcome, phase: Phase) -> None:
    """The apply step recorded ownership itself (its resolve step did not run first): retry soon
    to do the change once the finalizer is on."""
    if phase == "apply":
        outcome.failure = Failure(Reason.CREATING, "ownership recorded; the change follows", True, short=True)
        outcome.delay = rt.config.retry_delay(1)


def previous_origin(obj: Obj) -> str:
    """How the CR came to own its object: ``Created`` or ``Adopted`` (``status.origin``)."""
    origin = obj.status.get("origin")
    return origin if origin in (Reason.CREATED, Reason.ADOPTED) else Reason.CREATED


async def reconcile_child(rt: Runtime, view: View, obj: Obj, phase: Phase, retry: int | None, spec_type: type[_Spec],
                          inner: Callable[[Runtime, View, ChildContext[_Spec]], Awaitable[Outcome]],
                          backoff_limit: Callable[[_Spec], int]) -> Outcome:
    """What a tag and a branch reconcile share around ``inner``: parsing, the skip rules, the
    table resolved once (a member that lost its identity or is invalid fails here), failure
    classification, labels and metrics."""
    if phase == "check" and in_flight(obj):
        return Outcome()  # Kopf's create/update steps are running; they own this pass
    now = rt.config.now()
    started = asyncio.get_running_loop().time()
    try:
        spec = parse(obj)
        assert isinstance(spec, spec_type)
    except core_errors.InvalidInputError as e:
        return failed_outcome(rt, obj, Failure(Reason.INVALID_SPEC, e.message, False), now, retry=retry,
                              backoff_limit=None)
    if (phase == "apply" and obj.status.get("state") == "Failed" and not obj.status.get("owned")
            and obj.status.get("observedGeneration") == obj.generation and not obj.status.get("failures")):
        return Outcome()  # the resolve step has just reported why; the periodic check retries
    try:
        table = await child_context(rt, view, obj, spec.table_ref.name)
        member = table.scope.member(obj.uid)
        assert member is not None
        if member.failure is not None:
            outcome = failed_outcome(rt, obj, member.failure, now, retry=retry, backoff_limit=None)
            outcome.fields["owned"] = (None if member.failure.reason == Reason.RESOURCE_CONFLICT
                                       else obj.status.get("owned"))
        else:
            outcome = await inner(rt, view, ChildContext(obj, spec, phase, now, retry, table, member))
        result = "error" if outcome.failure else "success"
    except (OperatorError, core_errors.TablekeeperError, OSError) as e:
        failure = classify(e)
        symptom = dependency_cause(view.get("PaimonTable", obj.namespace, spec.table_ref.name), failure.reason,
                                   failure.message) if not obj.status.get("owned") else None
        failure = classify(symptom) if symptom is not None else failure
        cause = e.cause if isinstance(e, OperatorError) else failure.reason
        lost = Reason.TABLE_NOT_FOUND in (failure.reason, cause) and obj.status.get("owned")  # table dropped
        outcome = failed_outcome(rt, obj, failure, now, retry=retry, backoff_limit=backoff_limit(spec),
                                 keep_state="Lost" if lost else None)
        result = "error"
    outcome.labels.update(child_labels(obj, spec.table_ref.name))
    metrics.observe_reconcile(obj.kind, result, asyncio.get_running_loop().time() - started)
    return outcome


async def apply_change(rt: Runtime, view: View, ctx: ChildContext[Any], plan: ScopePlan, change: A.Action,
                       record_fields: Callable[[TableRecords], dict[str, Any]], *, backoff_limit: int
                       ) -> tuple[StatusRecordStore, Outcome | None]:
    """The storage change of a tag or branch pass, under the table's lock: wait while a Spark run
    of the table is in flight, then apply ``change`` with the CR's record persisted into its
    status first, and observe the table again (``plan.state``). Returns the record store and
    None, or the outcome to report instead (waiting, or the change failed)."""
    obj = ctx.obj
    store = StatusRecordStore(plan.records, persist_records(rt, obj, record_fields))
    busy = spark_run_in_flight(rt, view, obj.namespace, ctx.spec.table_ref.name)
    if busy is not None:
        return store, wait_for_run(rt, obj, busy, ctx.now)
    await rt.step(f"{_SHORT[obj.kind]}/apply", obj.ref)
    result = await asyncio.to_thread(ctx.table.apply, plan, [change], store)
    failed = [r for r in result.results if r.status == "failed"]
    if failed:
        return store, failed_outcome(rt, obj, failure_of(failed[0]), ctx.now, retry=ctx.retry,
                                     backoff_limit=backoff_limit)
    plan.state = await asyncio.to_thread(reobserve, plan)
    return store, None


def reobserve(plan: ScopePlan) -> TableState:
    """The table observed again after a change (blocking)."""
    return reconcile.observe(plan.table)


def kept_in_trash(outcome: Outcome, result: reconcile.ApplyResult, what: str) -> None:
    """An Event per trash run an apply filled (the table's ``trash.keep``): the deletion can be
    undone until the window's end, and how."""
    for kept in result.kept:
        outcome.event("Normal", "KeptInTrash",
                      f"what deleting the {what} removed is kept in the trash as run {kept.run} until "
                      f"{values.iso_ms(kept.keep_until_ms)}: an Undo run with parameters.undoRun {kept.run} "
                      f"(or 'tablekeeper undo {kept.table} {kept.run}') puts it back")
