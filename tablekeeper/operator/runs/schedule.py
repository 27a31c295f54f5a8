"""Scheduling maintenance for a table: which jobs are enabled, when each is due next, which
``PaimonMaintenanceRun`` to create now, and which finished runs to prune (operator-design.md §4.2,
§4.6, §7.6).

Each job type has one entry in ``PaimonTable.status.maintenance`` (S3 Tables shape)::

    snapshotExpiration: {state: Succeeded, schedule: "@every 6 h", nextRunTime: ..., lastRunTime: ...,
                         lastSuccessTime: ..., lastRunRef: tk-3f9a1c2e-exp-x7k2, lastResult: {...},
                         lastDryRunRef: ..., lastDryRunTime: ..., lastDryRunResult: {...}}

A dry run that succeeded (:func:`is_dry_run`) changed nothing: it is recorded under
``lastDryRun*`` only, never as the job's ``lastRunRef``/``lastRunTime``/``lastSuccessTime``/
``lastResult`` nor the table's ``lastMaintenanceTime``, so it neither reads as done maintenance
nor moves the next scheduled run.

``state`` is the phase of the job's latest run in the run's own words (``Pending``, ``Running``,
``Succeeded``, ``Failed``, ``Cancelled``), or ``NotYetRun`` / ``Disabled``.

``nextRunTime`` is computed once (from the last run, or now for a job that never ran) plus a
random jitter, and stored: it survives operator restarts and is only recomputed when the
schedule changes or a run is created. At most one run of a table is active at a time
(``concurrencyPolicy: Forbid``) and at most ``maxConcurrentRuns`` in the whole cluster; a due job
waits for the next check otherwise. ``tablekeeper.io/run-now: <type>`` creates one run at once
(trigger ``Manual``) and is then cleared. Finished runs the operator created are pruned to the
table's ``successfulRunsHistoryLimit`` / ``failedRunsHistoryLimit``.

:func:`decide` is pure (clock, randomness and the current runs are inputs).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from tablekeeper.core import values
from tablekeeper.core.policy import Schedule
from tablekeeper.core.policy.effective import EffectivePolicy
from tablekeeper.core.policy.specs import PaimonTableSpec
from tablekeeper.operator.cluster.view import Obj
from tablekeeper.operator.status import markers
from tablekeeper.operator.status.outcome import Event
from tablekeeper.reconcile.planners import enabled_jobs, schedules

__all__ = ["Job", "JOBS", "RUN_TYPES", "TERMINAL", "Decision", "decide", "run_body", "run_name", "enabled",
           "schedule_of", "is_operator_run", "is_dry_run", "table_lags"]


@dataclass(frozen=True)
class Job:
    """One maintenance job type of a table."""

    key: str
    run_type: str
    code: str


JOBS: tuple[Job, ...] = (
    Job("partitionExpiration", "ExpirePartitions", "prt"),
    # before snapshots: when both are due, the consumers go first and free what they held
    Job("consumerExpiration", "ExpireConsumers", "con"),
    Job("snapshotExpiration", "ExpireSnapshots", "exp"),
    Job("tagExpiration", "ExpireTags", "tag"),
    Job("orphanFileCleanup", "RemoveOrphanFiles", "orp"),
)
RUN_TYPES = frozenset(j.run_type for j in JOBS)
TERMINAL = frozenset({"Succeeded", "Failed", "Cancelled"})
_PHASES = frozenset({"Pending", "Running", *TERMINAL})


#: The action kind whose enablement decides whether a run type is scheduled.
_KIND = {"ExpirePartitions": "ExpirePartitions", "ExpireConsumers": "ExpireConsumers",
         "ExpireSnapshots": "ExpireSnapshots", "ExpireTags": "ExpireTags", "RemoveOrphanFiles": "CleanOrphans"}


def enabled(job: Job, spec: PaimonTableSpec, policy: EffectivePolicy) -> bool:
    """Whether the operator runs ``job`` for the table: the planner's rule
    (:func:`tablekeeper.reconcile.planners.enabled_jobs.enabled`), never a copy of it."""
    return enabled_jobs.enabled(_KIND[job.run_type], spec.enforcement, policy)


def schedule_of(job: Job, spec: PaimonTableSpec, policy: EffectivePolicy) -> Schedule | None:
    """The job's schedule: orphan cleanup may have its own, the rest use the table's."""
    table_schedule = spec.maintenance.schedule if spec.maintenance is not None else None
    if job.run_type == "RemoveOrphanFiles":
        own = policy.values.get("orphanFiles.schedule")
        return Schedule(str(own)) if own else table_schedule
    return table_schedule


def _next_after(schedule: Schedule, after: datetime, spec: PaimonTableSpec) -> datetime:
    """The first fire time of ``schedule`` after ``after`` (cron evaluated in the window's zone,
    UTC without a window, as the CLI's scheduler does)."""
    interval = schedule.interval
    if interval is not None:
        return after + interval
    window = spec.maintenance.window if spec.maintenance is not None else None
    zone = ZoneInfo(window.time_zone) if window is not None else timezone.utc
    cron = schedule.cron
    assert cron is not None
    wall = schedules.next_fire(cron, after.astimezone(zone).replace(tzinfo=None))
    return wall.replace(tzinfo=zone).astimezone(timezone.utc)


def run_name(table: Obj, job: Job, rng: random.Random) -> str:
    """``tk-<hash8 of ns/table>-<code>-<rand4>``: unique, DNS-1123, short enough for Spark."""
    digest = hashlib.sha256(f"{table.namespace}/{table.name}".encode()).hexdigest()[:8]
    suffix = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(4))
    return f"tk-{digest}-{job.code}-{suffix}"


def is_operator_run(run: Obj) -> bool:
    """A run the operator created (scheduled or run-now): the only ones it prunes."""
    return (run.labels.get(markers.MANAGED_BY_LABEL) == "tablekeeper"
            and run.labels.get(markers.TRIGGER_LABEL) in ("Schedule", "Manual"))


def run_body(table: Obj, spec: PaimonTableSpec, job: Job, name: str, trigger: str) -> dict[str, Any]:
    """The PaimonMaintenanceRun the operator creates (owned by the PaimonTable)."""
    deadline = spec.maintenance.active_deadline_seconds if spec.maintenance is not None else 7200
    return {
        "apiVersion": "tablekeeper.io/v1alpha1",
        "kind": "PaimonMaintenanceRun",
        "metadata": {
            "name": name,
            "namespace": table.namespace,
            "labels": {markers.TABLE_LABEL: markers.label_value(table.name),
                       markers.TYPE_LABEL: job.run_type, markers.TRIGGER_LABEL: trigger,
                       markers.MANAGED_BY_LABEL: "tablekeeper"},
            "ownerReferences": [{"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonTable", "name": table.name,
                                 "uid": table.uid, "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {"tableRef": {"name": table.name}, "type": job.run_type, "activeDeadlineSeconds": deadline},
    }


@dataclass
class Decision:
    """What the table's reconcile does about maintenance now."""

    maintenance: dict[str, dict[str, Any]]
    create: dict[str, Any] | None = None
    prune: list[Obj] = field(default_factory=list)
    clear_run_now: bool = False
    events: list[Event] = field(default_factory=list)
    last_maintenance_time: str | None = None

    @property
    def failed_jobs(self) -> list[str]:
        return sorted(k for k, v in self.maintenance.items() if v.get("state") == "Failed")


def table_lags(table: Obj, run: Obj, runs: Sequence[Obj]) -> bool:
    """Whether ``table``'s ``status.maintenance`` does not show yet that ``run`` (the latest run
    of its type among ``runs``, the table's runs) has ended: the table is then looked at again at
    once, so its maintenance status follows its runs within seconds (the same words,
    :func:`decide`), not at its next periodic check."""
    job = next((j for j in JOBS if j.run_type == run.spec.get("type")), None)
    phase = run.status.get("phase")
    if job is None or phase not in TERMINAL:
        return False
    mine = _by_created([r for r in runs if r.spec.get("type") == job.run_type and not r.deleting])
    if not mine or mine[-1].uid != run.uid:
        return False
    entry = ((table.status.get("maintenance") or {}).get(job.key) or {})
    if is_dry_run(run):  # recorded under lastDryRun* only (see decide)
        return entry.get("lastDryRunRef") != run.name
    return entry.get("lastRunRef") != run.name or entry.get("state") != phase


def _by_created(runs: Sequence[Obj]) -> list[Obj]:
    return sorted(runs, key=lambda r: (r.created, r.name))


def is_dry_run(run: Obj) -> bool:
    """A run that succeeded as a dry run (its ``status.result.dryRun``): it changed nothing, so it
    is never the job's success nor its last run; the schedule counts from the last real run."""
    return run.status.get("phase") == "Succeeded" and bool((run.status.get("result") or {}).get("dryRun"))


def decide(table: Obj, spec: PaimonTableSpec, policy: EffectivePolicy, runs: Sequence[Obj], *, now: datetime,
           previous: Mapping[str, Any] | None, run_now: str | None, active_elsewhere: int, max_concurrent: int,
           jitter: float, rng: random.Random, paused: bool = False) -> Decision:
    """The maintenance decision for one table (see the module docstring)."""
    previous = previous or {}
    runs = [r for r in runs if not r.deleting]
    active = [r for r in runs if r.status.get("phase") not in TERMINAL]
    decision = Decision({})
    completions = [str(r.status.get("completionTime")) for r in runs
                   if r.status.get("completionTime") and not is_dry_run(r)]
    if completions:
        decision.last_maintenance_time = max(completions)
    due: list[Job] = []
    for job in JOBS:
        entry = dict(previous.get(job.key) or {})
        of_type = _by_created([r for r in runs if r.spec.get("type") == job.run_type])
        dry = [r for r in of_type if is_dry_run(r)]
        if dry:
            entry.update(lastDryRunRef=dry[-1].name, lastDryRunTime=dry[-1].status.get("completionTime"),
                         lastDryRunResult=dict(dry[-1].status.get("result") or {}))
            if entry.get("lastRunRef") in {r.name for r in dry}:  # recorded when it was created
                entry.pop("lastRunRef", None)
                entry.pop("lastRunTime", None)
                entry["state"] = ("Failed" if entry.get("failureMessage") else
                                  "Succeeded" if entry.get("lastSuccessTime") else "NotYetRun")
        mine = [r for r in of_type if not is_dry_run(r)]
        if mine:
            latest = mine[-1]
            phase = str(latest.status.get("phase") or "Pending")
            entry["state"] = phase if phase in _PHASES else "Running"
            entry["lastRunRef"] = latest.name
            entry["lastRunTime"] = latest.status.get("startTime") or latest.created or entry.get("lastRunTime")
            if phase == "Succeeded":
                entry["lastSuccessTime"] = latest.status.get("completionTime") or entry.get("lastSuccessTime")
                entry["lastResult"] = dict(latest.status.get("result") or {})
                entry.pop("failureMessage", None)
            elif phase in ("Failed", "Cancelled"):
                entry["failureMessage"] = str(latest.status.get("message") or latest.status.get("lastError") or phase)
        if not enabled(job, spec, policy):
            entry["state"] = "Disabled"
            entry.pop("nextRunTime", None)
            entry.pop("schedule", None)
            decision.maintenance[job.key] = entry
            continue
        entry.setdefault("state", "NotYetRun")
        if entry["state"] == "Disabled":
            entry["state"] = "NotYetRun" if not entry.get("lastRunRef") else "Succeeded"
        sched = schedule_of(job, spec, policy)
        if sched is None:
            entry.pop("nextRunTime", None)
            entry.pop("schedule", None)
        else:
            if entry.get("schedule") != str(sched) or not values.parse_rfc3339(entry.get("nextRunTime")):
                last = values.parse_rfc3339(entry.get("lastRunTime"))
                base = _next_after(sched, last, spec) if last is not None else now
                entry["nextRunTime"] = values.rfc3339(base + timedelta(seconds=rng.uniform(0, jitter)))
                entry["schedule"] = str(sched)
            nxt = values.parse_rfc3339(entry.get("nextRunTime"))
            window = spec.maintenance.window if spec.maintenance is not None else None
            if nxt is not None and now >= nxt and (window is None or schedules.in_window(window, now)):
                due.append(job)
        decision.maintenance[job.key] = entry

    free = not paused and not active and active_elsewhere < max_concurrent
    if run_now:
        requested = next((j for j in JOBS if j.run_type == run_now), None)
        if requested is None:
            decision.clear_run_now = True
            decision.events.append(Event("Warning", "ValidationError",
                                         f"tablekeeper.io/run-now: {run_now!r} is not one of "
                                         f"{', '.join(sorted(RUN_TYPES))}"))
        elif free:
            decision.clear_run_now = True
            decision.create = run_body(table, spec, requested, run_name(table, requested, rng), "Manual")
            entry = decision.maintenance[requested.key]
            entry.update(state="Running", lastRunRef=decision.create["metadata"]["name"], lastRunTime=values.rfc3339(now))
            decision.events.append(Event("Normal", "MaintenanceRequested",
                                         f"{requested.run_type} requested by tablekeeper.io/run-now: run "
                                         f"{decision.create['metadata']['name']}"))
            free = False
    if free and due:
        job = due[0]
        decision.create = run_body(table, spec, job, run_name(table, job, rng), "Schedule")
        entry = decision.maintenance[job.key]
        sched = schedule_of(job, spec, policy)
        assert sched is not None
        entry.update(state="Running", lastRunRef=decision.create["metadata"]["name"], lastRunTime=values.rfc3339(now),
                     nextRunTime=values.rfc3339(_next_after(sched, now, spec) + timedelta(seconds=rng.uniform(0, jitter))))
        decision.events.append(Event("Normal", "MaintenanceScheduled",
                                     f"{job.run_type} due by schedule {sched}: run {decision.create['metadata']['name']}"))

    limits = spec.maintenance
    keep_ok = limits.successful_runs_history_limit if limits is not None else 3
    keep_failed = limits.failed_runs_history_limit if limits is not None else 5
    finished = [r for r in _by_created(runs) if is_operator_run(r) and r.status.get("phase") in TERMINAL]
    ok = [r for r in finished if r.status.get("phase") == "Succeeded"]
    bad = [r for r in finished if r.status.get("phase") != "Succeeded"]
    decision.prune = ok[:max(0, len(ok) - keep_ok)] + bad[:max(0, len(bad) - keep_failed)]
    return decision
