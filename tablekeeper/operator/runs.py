"""Controller of ``PaimonMaintenanceRun``: one auditable maintenance execution (operator-design.md
§4.6, §7.7).

Two Kopf handler steps: ``start`` (checks, then ``phase: Running`` with ``startTime`` and the
resolved engine, persisted before any work) and ``execute`` (the engine runs the work under the
table's lock; ``phase: Succeeded|Failed``, ``completionTime``, ``duration``, ``result`` counts,
conditions ``Complete``/``Failed``, Events, metrics). A restart during ``execute`` runs it again:
maintenance is re-planned against the table as it is, so a repeat only finishes what is left.

A periodic check fails runs stuck past ``activeDeadlineSeconds`` (``DeadlineExceeded``) and
deletes finished runs after ``ttlSecondsAfterFinished``. One run per table is active at a time
(``concurrencyPolicy: Forbid``: a second one waits, ``TableLocked``).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from tablekeeper.core import errors as core_errors
from tablekeeper.core.policy.run import PaimonMaintenanceRunSpec
from tablekeeper.operator import cluster, conditions, engines, markers, metrics, objects, scopes
from tablekeeper.operator.cluster import Obj
from tablekeeper.operator.conditions import Reason
from tablekeeper.operator.errors import OperatorError, classify
from tablekeeper.operator.maintenance import TERMINAL
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status import Outcome, url_of

__all__ = ["start_run", "execute_run", "check_run", "duration_text"]


def _ts(when: datetime) -> str:
    return conditions.timestamp(when)


def _parse(text: Any) -> datetime | None:
    ms = scopes.parse_time_ms(text)
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)


def duration_text(seconds: float) -> str:
    """``2m5s`` style (the Duration printer column)."""
    total = int(round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def _labels(obj: Obj, spec: PaimonMaintenanceRunSpec) -> dict[str, str]:
    out = {markers.TABLE_LABEL: markers.label_value(spec.table_ref.name),
           markers.TYPE_LABEL: spec.type}
    if markers.TRIGGER_LABEL not in obj.labels:
        out[markers.TRIGGER_LABEL] = "Manual"
    return out


def _finished(obj: Obj, now: datetime, ok: bool, reason: str, message: str, *, started: datetime | None,
              result: dict[str, Any] | None = None) -> Outcome:
    out = Outcome(generation=obj.generation)
    out.fields.update(phase="Succeeded" if ok else "Failed", completionTime=_ts(now), message=message,
                      duration=duration_text((now - started).total_seconds()) if started else None)
    if result is not None:
        out.fields["result"] = result
    out.conditions = [
        conditions.condition(conditions.COMPLETE, ok, reason if ok else Reason.MAINTENANCE_FAILED, message,
                             generation=obj.generation, now=now),
        conditions.condition(conditions.FAILED, not ok, reason if not ok else Reason.SUCCEEDED,
                             "" if ok else message, generation=obj.generation, now=now),
    ]
    out.event("Normal" if ok else "Warning", "MaintenanceSucceeded" if ok else "MaintenanceFailed", message[:1000])
    return out


def _pending(obj: Obj, now: datetime, reason: str, message: str) -> Outcome:
    out = Outcome(generation=obj.generation)
    out.fields.update(phase="Pending", message=message)
    out.conditions = [
        conditions.condition(conditions.COMPLETE, False, reason, message, generation=obj.generation, now=now),
        conditions.condition(conditions.FAILED, False, reason, "", generation=obj.generation, now=now),
    ]
    return out


def _deadline(obj: Obj, spec: PaimonMaintenanceRunSpec, view: cluster.View) -> int:
    if spec.active_deadline_seconds is not None:
        return spec.active_deadline_seconds
    table = view.get("PaimonTable", obj.namespace, spec.table_ref.name)
    if table is not None:
        maintenance = table.spec.get("maintenance") or {}
        if isinstance(maintenance.get("activeDeadlineSeconds"), int):
            return int(maintenance["activeDeadlineSeconds"])
    return 7200


def _table_engine(view: cluster.View, obj: Obj, spec: PaimonMaintenanceRunSpec) -> str | None:
    if spec.engine is not None:
        return spec.engine
    table = view.get("PaimonTable", obj.namespace, spec.table_ref.name)
    maintenance = (table.spec.get("maintenance") or {}) if table is not None else {}
    return str(maintenance.get("engine") or "Auto")


async def start_run(rt: Runtime, view: cluster.View, obj: Obj, *, retry: int) -> Outcome:
    """Step ``start``: validate, wait for the table and for other runs of it, then mark Running."""
    now = rt.config.now()
    if obj.status.get("phase") in TERMINAL or obj.status.get("phase") == "Running":
        return Outcome()
    try:
        spec = cluster.parse(obj)
        assert isinstance(spec, PaimonMaintenanceRunSpec)
    except core_errors.InvalidInputError as e:
        return _finished(obj, now, False, Reason.INVALID_SPEC, e.message, started=None)
    out = Outcome(labels=_labels(obj, spec))
    created = _parse(obj.created) or now
    if now - created > timedelta(seconds=_deadline(obj, spec, view)):
        result = _finished(obj, now, False, Reason.DEADLINE_EXCEEDED, "never started within activeDeadlineSeconds",
                           started=None)
        result.labels = out.labels
        return result
    try:
        await objects.child_scope(rt, view, obj, spec.table_ref.name)
    except OperatorError as e:
        pending = _pending(obj, now, e.reason, e.message)
        pending.labels = out.labels
        pending.failure = classify(e)
        pending.delay = rt.config.retry_delay(retry + 1)
        return pending
    siblings = {r.uid: r for r in view.children("PaimonMaintenanceRun", obj.namespace, spec.table_ref.name)
                if r.uid != obj.uid and not r.deleting}
    busy = [r for r in siblings.values() if r.status.get("phase") == "Running"]
    key = (obj.namespace, spec.table_ref.name)
    holder = rt.run_claims.get(key)
    if holder is not None and holder in siblings and siblings[holder].status.get("phase") not in TERMINAL:
        busy.insert(0, siblings[holder])
    if busy:
        pending = _pending(obj, now, Reason.TABLE_LOCKED, f"waiting for run {busy[0].name} (concurrencyPolicy Forbid)")
        pending.labels = out.labels
        pending.failure = classify(OperatorError(Reason.TABLE_LOCKED, pending.fields["message"], temporary=True))
        pending.delay = rt.config.retry_delay(1)
        return pending
    rt.run_claims[key] = obj.uid  # no await since the check: the claim is atomic in the loop
    engine, note = engines.select(_table_engine(view, obj, spec))
    out.generation = obj.generation
    out.fields.update(phase="Running", startTime=_ts(now), engine=engine.name,
                      attempts=int(obj.status.get("attempts") or 0) + 1, message=note or "running")
    out.conditions = [
        conditions.condition(conditions.COMPLETE, False, Reason.RUNNING, note, generation=obj.generation, now=now),
        conditions.condition(conditions.FAILED, False, Reason.RUNNING, "", generation=obj.generation, now=now),
    ]
    return out


async def execute_run(rt: Runtime, view: cluster.View, obj: Obj, *, retry: int) -> Outcome:
    """Step ``execute``: run the work with the engine and record the result."""
    now = rt.config.now()
    phase = obj.status.get("phase")
    if phase in TERMINAL:
        return Outcome()
    if phase != "Running":  # the start step has not finished (or is waiting): come back
        out = Outcome()
        out.failure = classify(OperatorError(Reason.PENDING, "waiting for the start step", temporary=True))
        out.delay = rt.config.retry_delay(1)
        return out
    spec = cluster.parse(obj)
    assert isinstance(spec, PaimonMaintenanceRunSpec)
    started = _parse(obj.status.get("startTime")) or now
    if now - started > timedelta(seconds=_deadline(obj, spec, view)):
        _release(rt, obj, spec)
        return _finished(obj, now, False, Reason.DEADLINE_EXCEEDED, "activeDeadlineSeconds exceeded", started=started)
    engine, note = engines.select(_table_engine(view, obj, spec))
    table_label = f"{obj.namespace}/{spec.table_ref.name}"
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    try:
        scope = await objects.child_scope(rt, view, obj, spec.table_ref.name)
        await rt.step("run/execute", obj.ref)
        opener = rt.opener(scope.location.warehouse, scope.options)
        request = engines.RunRequest(obj.name, spec, scope, opener, now)
        async with rt.table_lock(scope.identity):
            result = await asyncio.to_thread(engine.run, request)
    except (OperatorError, core_errors.TablekeeperError, OSError) as e:
        failure = classify(e)
        if failure.temporary and retry < 3:
            out = Outcome()
            out.fields["message"] = f"attempt {retry + 1} failed: {failure.message}"
            out.failure = failure
            out.delay = rt.config.retry_delay(retry + 1)
            return out
        result = engines.RunResult(False, failure.reason, failure.message)
    seconds = loop.time() - t0
    end = rt.config.now()
    _release(rt, obj, spec)
    message = "; ".join(x for x in (result.message, note) if x)
    out = _finished(obj, end, result.succeeded, result.reason, message, started=started, result=result.result)
    if result.policy:
        out.fields["policy"] = result.policy
    outcome_label = "success" if result.succeeded else "failure"
    metrics.MAINTENANCE_RUNS.labels(type=spec.type, engine=engine.name, result=outcome_label).inc()
    metrics.MAINTENANCE_DURATION.labels(type=spec.type, engine=engine.name).observe(seconds)
    if result.succeeded:
        metrics.MAINTENANCE_LAST_SUCCESS.labels(table=table_label, type=spec.type).set(end.timestamp())
        counts = result.result
        if not counts.get("dryRun"):
            metrics.SNAPSHOTS_EXPIRED.labels(table=table_label).inc(int(counts.get("expiredSnapshots") or 0))
            metrics.BYTES_RECLAIMED.labels(table=table_label).inc(int(counts.get("reclaimedBytes") or 0))
            for kind, count in result.deleted_by_kind.items():
                metrics.FILES_DELETED.labels(table=table_label, type=kind).inc(count)
        metrics.ORPHAN_FILES_FOUND.labels(table=table_label).inc(int(counts.get("orphanFiles") or 0))
    return out


def _release(rt: Runtime, obj: Obj, spec: PaimonMaintenanceRunSpec) -> None:
    key = (obj.namespace, spec.table_ref.name)
    if rt.run_claims.get(key) == obj.uid:
        del rt.run_claims[key]


async def check_run(rt: Runtime, view: cluster.View, obj: Obj) -> Outcome | None:
    """Periodic check: deadline of stuck runs, TTL of finished ones (None: the run was deleted)."""
    now = rt.config.now()
    phase = obj.status.get("phase")
    try:
        spec = cluster.parse(obj)
        assert isinstance(spec, PaimonMaintenanceRunSpec)
    except core_errors.InvalidInputError:
        return Outcome()
    if phase in TERMINAL:
        _release(rt, obj, spec)
        done = _parse(obj.status.get("completionTime"))
        ttl = spec.ttl_seconds_after_finished
        if ttl is not None and done is not None and now - done >= timedelta(seconds=ttl):
            await rt.api.delete(url_of("paimonmaintenanceruns", obj.namespace, obj.name))
            return None
        return Outcome()
    started = _parse(obj.status.get("startTime")) or _parse(obj.created)
    if started is not None and now - started > timedelta(seconds=_deadline(obj, spec, view)):
        return _finished(obj, now, False, Reason.DEADLINE_EXCEEDED, "activeDeadlineSeconds exceeded", started=started)
    return Outcome()
