"""Controller of ``PaimonMaintenanceRun``: one auditable maintenance execution (operator-design.md
§4.6, §7.7).

Two Kopf handler steps: ``start`` (checks, then ``phase: Running`` with ``startTime`` and the
requested engine, persisted before any work) and ``execute``. ``execute`` either

- runs the work **in process** under the table's lock (``phase: Succeeded|Failed``,
  ``completionTime``, ``duration``, ``result`` counts, conditions ``Complete``/``Failed``, Events,
  metrics). A restart during it runs it again: maintenance is re-planned against the table as it
  is, so a repeat only finishes what is left; or
- **launches Spark** (:mod:`tablekeeper.operator.runs.spark`): creates or adopts the
  SparkApplication / batch Job and records it (``sparkApplicationRef`` / ``jobRef``, ``artifact``);
  the run stays ``Running``.

A periodic check observes launched objects (terminal state -> the result artifact is read into
``status.result``; failure, a vanished object or a missing artifact -> ``Failed`` with a stable
reason and a Warning Event), fails runs past ``activeDeadlineSeconds`` (``DeadlineExceeded``;
a launched object is deleted) and deletes finished runs after ``ttlSecondsAfterFinished``. One
run per table is active at a time (``concurrencyPolicy: Forbid``: a second one waits,
``TableLocked``: :mod:`.claims`).

Each step resolves the run's context once (:mod:`.context`: the table, its catalog and
connection, the engine asked for, the deadline) and hands it down to the Spark launch and the
engine.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from tablekeeper.core import errors as core_errors
from tablekeeper.core import values
from tablekeeper.core.policy.specs import PaimonMaintenanceRunSpec
from tablekeeper.operator import kopfcompat, metrics
from tablekeeper.operator.cluster.scopes import ScopePlan
from tablekeeper.operator.cluster.view import Obj, View, parse
from tablekeeper.operator.runs import claims, engines, spark
from tablekeeper.operator.runs import context as run_context
from tablekeeper.operator.runs.context import RunContext
from tablekeeper.operator.runs.report import RunReport, from_artifact
from tablekeeper.operator.runs.request import RunRequest, RunResult
from tablekeeper.operator.runs.schedule import TERMINAL
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status import conditions, markers
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import OperatorError, classify
from tablekeeper.operator.status.outcome import Outcome, url_of
from tablekeeper.reconcile.planners import maintenance as maintenance_planner
from tablekeeper.spark import result_artifact

__all__ = ["start_run", "execute_run", "check_run", "duration_text"]


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


def run_conditions(obj: Obj, now: datetime, phase: str, reason: str, message: str) -> list[dict[str, Any]]:
    """A run's conditions in ``phase``: ``Complete`` and ``Failed`` as a Job has them, and
    ``Ready`` (what ``kubectl get`` shows in READY/REASON): True once it succeeded, False with
    the reason while it waits, runs or after it failed."""
    ok, failed = phase == "Succeeded", phase == "Failed"
    generation = obj.generation
    return [
        conditions.condition(conditions.READY, ok, reason, message, generation=generation, now=now),
        conditions.condition(conditions.COMPLETE, ok, Reason.MAINTENANCE_FAILED if failed else reason, message,
                             generation=generation, now=now),
        conditions.condition(conditions.FAILED, failed, Reason.SUCCEEDED if ok else reason,
                             message if failed else "", generation=generation, now=now),
    ]


def _finished(obj: Obj, now: datetime, ok: bool, reason: str, message: str, *, started: datetime | None,
              report: RunReport | None = None, rendered: bool = False) -> Outcome:
    """The terminal status; ``status.result`` is ``report.to_status()`` (with ``rendered`` and no
    report: an empty result)."""
    out = Outcome(generation=obj.generation)
    out.fields.update(phase="Succeeded" if ok else "Failed", completionTime=values.rfc3339(now), message=message,
                      duration=duration_text((now - started).total_seconds()) if started else None)
    if report is not None or rendered:
        out.fields["result"] = report.to_status() if report is not None else {}
    out.conditions = run_conditions(obj, now, ("Succeeded" if ok else "Failed"), reason, message)
    out.event("Normal" if ok else "Warning", "MaintenanceSucceeded" if ok else "MaintenanceFailed", message[:1000])
    return out


def _pending(obj: Obj, now: datetime, reason: str, message: str) -> Outcome:
    out = Outcome(generation=obj.generation)
    out.fields.update(phase="Pending", message=message)
    out.conditions = run_conditions(obj, now, "Pending", reason, message)
    return out


async def start_run(rt: Runtime, view: View, obj: Obj, *, retry: int) -> Outcome:
    """Step ``start``: validate, wait for the table and for other runs of it, then mark Running."""
    now = rt.config.now()
    if obj.status.get("phase") in TERMINAL or obj.status.get("phase") == "Running":
        return Outcome()
    try:
        spec = parse(obj)
        assert isinstance(spec, PaimonMaintenanceRunSpec)
    except core_errors.InvalidInputError as e:
        return _finished(obj, now, False, Reason.INVALID_SPEC, e.message, started=None)
    out = Outcome(labels=_labels(obj, spec))
    ctx = await run_context.resolve(rt, view, obj, spec)
    created = values.parse_rfc3339(obj.created) or now
    if now - created > timedelta(seconds=ctx.deadline_seconds):
        result = _finished(obj, now, False, Reason.DEADLINE_EXCEEDED, "never started within activeDeadlineSeconds",
                           started=None)
        result.labels = out.labels
        return result
    if ctx.table_obj is None:
        waited = (now - created).total_seconds()
        grace = rt.config.missing_table_grace
        if waited >= grace:  # a typo in tableRef never resolves itself: say so instead of waiting forever
            result = _finished(obj, now, False, Reason.TABLE_NOT_FOUND,
                               f"PaimonTable {ctx.table_name!r} does not exist in namespace {obj.namespace!r} "
                               f"(waited {duration_text(grace)}); fix: create a new run whose spec.tableRef.name "
                               "names an existing PaimonTable (a run's spec cannot change)", started=None)
            result.labels = out.labels
            return result
    if ctx.problem is not None:
        message = ctx.problem.message
        if ctx.table_obj is None:
            message += f"; the run fails with TableNotFound unless it appears within {duration_text(grace)}"
        pending = _pending(obj, now, ctx.problem.reason, message)
        pending.labels = out.labels
        pending.failure = classify(ctx.problem)
        pending.delay = rt.config.retry_delay(retry + 1)
        if ctx.table_obj is None:
            pending.delay = max(0.05, min(pending.delay, grace - waited + 0.05))
        return pending
    siblings = {r.uid: r for r in view.children("PaimonMaintenanceRun", obj.namespace, ctx.table_name)
                if r.uid != obj.uid and not r.deleting}
    busy = [r for r in siblings.values() if r.status.get("phase") == "Running"]
    holder = claims.holder(rt, obj.namespace, ctx.table_name)
    if holder is not None and holder in siblings and siblings[holder].status.get("phase") not in TERMINAL:
        busy.insert(0, siblings[holder])
    if busy:
        pending = _pending(obj, now, Reason.TABLE_LOCKED, f"waiting for run {busy[0].name} (concurrencyPolicy Forbid)")
        pending.labels = out.labels
        pending.failure = classify(OperatorError(Reason.TABLE_LOCKED, pending.fields["message"], temporary=True))
        pending.delay = rt.config.retry_delay(1)
        return pending
    claims.claim(rt, obj, ctx.table_name)  # no await since the check: the claim is atomic in the loop
    if spark.wants_spark(rt.config.spark, ctx.engine, spec):
        engine_name, note = ctx.engine, ""  # resolved (Auto) and launched by the execute step
    else:
        engine, note = engines.select(ctx.engine, spark_enabled=rt.config.spark.enabled, run_type=spec.type)
        engine_name = engine.name
    out.generation = obj.generation
    out.fields.update(phase="Running", startTime=values.rfc3339(now), engine=engine_name,
                      attempts=int(obj.status.get("attempts") or 0) + 1, message=note or "running")
    out.conditions = run_conditions(obj, now, "Running", Reason.RUNNING, note)
    out.event("Normal", "MaintenanceStarted", f"{spec.type} started on the {engine_name} engine"
                                              + (f" ({note})" if note else ""))
    return out


async def execute_run(rt: Runtime, view: View, obj: Obj, *, retry: int) -> Outcome:
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
    spec = parse(obj)
    assert isinstance(spec, PaimonMaintenanceRunSpec)
    if spark.Ref.of(obj.status) is not None:
        return Outcome()  # launched: the periodic check observes it (and enforces the deadline)
    ctx = await run_context.resolve(rt, view, obj, spec)
    started = values.parse_rfc3339(obj.status.get("startTime")) or now
    if now - started > timedelta(seconds=ctx.deadline_seconds):
        _release(rt, ctx)
        return _finished(obj, now, False, Reason.DEADLINE_EXCEEDED, "activeDeadlineSeconds exceeded", started=started)
    deferred, preview = await _deferred_to_writers(ctx, now)
    if deferred is not None:
        _release(rt, ctx)
        return _finished(obj, now, True, Reason.SUCCEEDED, deferred, started=started)
    if spark.wants_spark(rt.config.spark, ctx.engine, spec):
        try:
            launched = await spark.launch_run(rt, ctx, now=now, plan=preview)
        except (OperatorError, core_errors.TablekeeperError, OSError, kopfcompat.ApiError) as e:
            retried = _retry(rt, e, retry)
            if retried is not None:
                return retried
            _release(rt, ctx)
            failure = classify(e)
            return _finished(obj, rt.config.now(), False, failure.reason, failure.message, started=started)
        if launched is not None:
            return _launched(obj, launched, now)
    engine, note = engines.select(ctx.engine, spark_enabled=rt.config.spark.enabled, run_type=spec.type)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    try:
        table = ctx.require_table()
        await rt.step("run/execute", obj.ref)
        request = RunRequest(obj.name, spec, table.scope, table.opener, now)
        async with rt.table_lock(table.identity):
            result = await asyncio.to_thread(engine.run, request)
    except (OperatorError, core_errors.TablekeeperError, OSError) as e:
        retried = _retry(rt, e, retry)
        if retried is not None:
            return retried
        failure = classify(e)
        result = RunResult(False, failure.reason, failure.message)
    seconds = loop.time() - t0
    end = rt.config.now()
    _release(rt, ctx)
    message = "; ".join(x for x in (result.message, note) if x)
    out = _finished(obj, end, result.succeeded, result.reason, message, started=started, report=result.report,
                    rendered=True)
    out.fields["engine"] = engine.name
    if result.policy:
        out.fields["policy"] = result.policy
    _record_metrics(spec, engine.name, ctx.table_label, result.succeeded, result.report, seconds, end)
    return out


#: Run types the writers carry out themselves under ``enforcement: Both``.
_WRITER_RUN_TYPES = frozenset({"ExpireSnapshots", "ExpirePartitions"})


async def _deferred_to_writers(ctx: RunContext, now: datetime) -> tuple[str | None, ScopePlan | None]:
    """A scheduled expiration run of an ``enforcement: Both`` table whose writers expire it (they
    commit and are not write-only): why it does nothing, else None; and the table's observation
    made to decide it (handed on to the Spark launch), if one was made. Manual runs always run.

    Raises:
        OperatorError: ``TableNotReady`` when the decision needs the table and it is not ready.
        TablekeeperError, OSError: observing the table failed.
    """
    if ctx.run.labels.get(markers.TRIGGER_LABEL) != "Schedule" or ctx.spec.type not in _WRITER_RUN_TYPES:
        return None, None
    if ctx.table_spec is None or ctx.table_spec.enforcement != "Both":
        return None, None  # no table, or an invalid one (it reports that itself): the run goes on as before
    plan = await asyncio.to_thread(ctx.require_table().plan, now, objects=False)
    why = maintenance_planner.writers_enforce(plan.target, plan.state, plan.policy, now)
    return (None if why is None else f"enforcement Both: left to the writers ({why}); nothing run"), plan


def _retry(rt: Runtime, error: BaseException, retry: int) -> Outcome | None:
    """A retry of the step for a temporary failure (at most 3), else None."""
    failure = classify(error)
    if not failure.temporary or retry >= 3:
        return None
    out = Outcome()
    out.fields["message"] = f"attempt {retry + 1} failed: {failure.message}"
    out.failure = failure
    out.delay = rt.config.retry_delay(retry + 1)
    return out


def _record_metrics(spec: PaimonMaintenanceRunSpec, engine: str, table_label: str, ok: bool,
                    report: RunReport | None, seconds: float, end: datetime) -> None:
    metrics.MAINTENANCE_RUNS.labels(type=spec.type, engine=engine, result="success" if ok else "failure").inc()
    metrics.MAINTENANCE_DURATION.labels(type=spec.type, engine=engine).observe(seconds)
    for op, count in ((report.storage_requests or {}) if report is not None else {}).items():
        if op != "total":  # failed runs made requests too
            metrics.STORAGE_REQUESTS.labels(op=op, type=spec.type).inc(count)
    if not ok:
        return
    if report is None or not report.dry_run:  # a dry run changed nothing: never the job's success
        metrics.MAINTENANCE_LAST_SUCCESS.labels(table=table_label, type=spec.type).set(end.timestamp())
    if report is None:
        return
    if not report.dry_run:
        metrics.SNAPSHOTS_EXPIRED.labels(table=table_label).inc(report.expired_snapshots or 0)
        metrics.BYTES_RECLAIMED.labels(table=table_label).inc(report.reclaimed_bytes or 0)
        for kind, count in report.deleted_by_kind.items():
            metrics.FILES_DELETED.labels(table=table_label, type=kind).inc(count)
    metrics.ORPHAN_FILES_FOUND.labels(table=table_label).inc(report.orphan_files or 0)


def _launched(obj: Obj, launched: spark.Launched, now: datetime) -> Outcome:
    """The run status of a created or adopted Spark object (the run stays Running)."""
    verb = "adopted" if launched.adopted else "created"
    message = f"{launched.ref} {verb}; waiting for it to finish"
    out = Outcome(generation=obj.generation)
    out.fields.update({"engine": launched.engine, launched.ref.field: launched.ref.as_status(),
                       "artifact": launched.artifact, "message": message})
    out.conditions = run_conditions(obj, now, "Running", Reason.RUNNING, message)
    out.event("Normal", "Adopted" if launched.adopted else "Created", message)
    return out


def _release(rt: Runtime, ctx: RunContext) -> None:
    claims.release(rt, ctx.run, ctx.table_name)


async def check_run(rt: Runtime, view: View, obj: Obj) -> Outcome | None:
    """Periodic check: launched Spark objects, deadline of stuck runs, TTL of finished ones (None:
    the run was deleted)."""
    now = rt.config.now()
    phase = obj.status.get("phase")
    try:
        spec = parse(obj)
        assert isinstance(spec, PaimonMaintenanceRunSpec)
    except core_errors.InvalidInputError:
        return Outcome()
    ref = spark.Ref.of(obj.status)
    if phase in TERMINAL:
        claims.release(rt, obj, spec.table_ref.name)
        done = values.parse_rfc3339(obj.status.get("completionTime"))
        ttl = spec.ttl_seconds_after_finished
        if ttl is not None and done is not None and now - done >= timedelta(seconds=ttl):
            if ref is not None and ref.namespace != obj.namespace:  # not garbage-collected with the run
                await spark.delete(rt.api, ref)
            await rt.api.delete(url_of("paimonmaintenanceruns", obj.namespace, obj.name))
            return None
        return Outcome()
    ctx = run_context.of_view(view, obj, spec)
    started = values.parse_rfc3339(obj.status.get("startTime")) or values.parse_rfc3339(obj.created)
    if ref is not None and phase == "Running":
        return await _check_launched(rt, view, ctx, ref, started or now)
    if started is not None and now - started > timedelta(seconds=ctx.deadline_seconds):
        return _finished(obj, now, False, Reason.DEADLINE_EXCEEDED, "activeDeadlineSeconds exceeded", started=started)
    return Outcome()


async def _check_launched(rt: Runtime, view: View, ctx: RunContext, ref: spark.Ref, started: datetime) -> Outcome:
    """Observe a launched object: still running (state mirrored into the ref), over (result
    artifact read back), gone, or past the run's deadline."""
    obj = ctx.run
    now = rt.config.now()
    deadline = ctx.deadline_seconds
    late = now - started > timedelta(seconds=deadline)
    try:
        body = await spark.fetch(rt.api, ref)
    except kopfcompat.ApiError as e:
        if not late:
            out = Outcome()
            out.fields["message"] = f"cannot read {ref}: {e} (retrying)"
            return out
        body = {}
    if body is None:
        return _end_launched(rt, ctx, ref, now, started, False, Reason.SPARK_APPLICATION_MISSING,
                             f"{ref} is gone before it finished")
    seen = spark.observe(ref.kind, body)
    current = replace(ref, state=seen.state)
    if not seen.terminal:
        if late:
            await spark.delete(rt.api, ref)
            return _end_launched(rt, ctx, current, now, started, False, Reason.DEADLINE_EXCEEDED,
                                 f"activeDeadlineSeconds ({deadline}) exceeded while {ref} was "
                                 f"{seen.state}; deleted it")
        out = Outcome()
        if seen.state != ref.state:
            out.fields[ref.field] = current.as_status()
            out.fields["message"] = f"{ref} is {seen.state}"
        return out
    artifact: result_artifact.RunResult | None = None
    problem: tuple[str, str] | None = None
    uri = str(obj.status.get("artifact") or "")
    try:
        # the catalog's options (credentials included) to read the artifact with: only now
        options = dict((await run_context.with_table(rt, view, ctx)).require_table().scope.options)
        artifact = await asyncio.to_thread(spark.read_artifact, uri, options, ref.name)
    except FileNotFoundError:
        problem = (Reason.RESULT_ARTIFACT_MISSING, f"{ref} ended {seen.state} but wrote no result artifact at {uri}")
    except core_errors.FormatError as e:
        problem = (Reason.RESULT_ARTIFACT_INVALID, f"{ref} ended {seen.state}; its result artifact is unusable: "
                                                   f"{e.message}")
    except (OperatorError, core_errors.TablekeeperError, OSError) as e:
        if seen.succeeded and not late:  # storage hiccup: read it at the next check
            out = Outcome()
            out.fields[ref.field] = current.as_status()
            out.fields["message"] = (f"{ref} ended {seen.state}; reading its result artifact failed: "
                                     f"{classify(e).message} (retrying)")
            return out
        problem = (Reason.RESULT_ARTIFACT_MISSING, f"{ref} ended {seen.state}; its result artifact at {uri} could "
                                                   f"not be read: {classify(e).message}")
    report = from_artifact(artifact, ctx.spec.type) if artifact is not None else None
    if not seen.succeeded:
        detail = (f"; job error: {artifact.errors[0].get('message')}"
                  if artifact is not None and artifact.errors else "")
        return _end_launched(rt, ctx, current, now, started, False, seen.reason, seen.message + detail, report)
    if problem is not None:
        return _end_launched(rt, ctx, current, now, started, False, problem[0], problem[1])
    assert artifact is not None and report is not None
    if artifact.status != "Succeeded":
        error = artifact.errors[0].get("message") if artifact.errors else "no error recorded"
        return _end_launched(rt, ctx, current, now, started, False, Reason.MAINTENANCE_FAILED,
                             f"{ref} completed but the job reports a failure: {error}", report)
    what = ("dry run: nothing deleted" if artifact.dry_run
            else f"{artifact.total_deleted} file(s) deleted, {report.reclaimed_bytes} bytes reclaimed")
    message = f"{ref} completed: {report.planned_files} file(s) planned, {what}"
    if artifact.failed_count:
        message += f", {artifact.failed_count} deletion(s) failed"
    message = "; ".join([message, *report.notes])[:1000]  # the job's plan notes, as the CLI prints them
    return _end_launched(rt, ctx, current, now, started, True, Reason.SUCCEEDED, message, report)


def _end_launched(rt: Runtime, ctx: RunContext, ref: spark.Ref, now: datetime, started: datetime, ok: bool,
                  reason: str, message: str, report: RunReport | None = None) -> Outcome:
    _release(rt, ctx)
    out = _finished(ctx.run, now, ok, reason, message, started=started, report=report)
    out.fields[ref.field] = ref.as_status()
    engine = str(ctx.run.status.get("engine") or ref.kind)
    _record_metrics(ctx.spec, engine, ctx.table_label, ok, report, (now - started).total_seconds(), now)
    return out
