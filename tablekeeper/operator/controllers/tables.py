"""Controller of ``PaimonTable`` (operator-design.md §4.2, §6, §7.2, §7.6).

Each pass, on create/update/resume and then periodically:

1. resolve the catalog (tenancy: ``allowedNamespaces``; credentials from its Secret) and the
   table's identity (an older PaimonTable for the same table wins: ``ResourceConflict``);
2. check that the table lies inside the catalog's warehouse, observe it, and resolve the
   effective policy with a source per field (``status.effectivePolicy``), clamps reported in
   ``PolicyCompliant``;
3. create the policy's automatic tags where tablekeeper creates them (``tags.autoCreate``;
   summarised in the table's status, not materialised as PaimonTags);
4. decide maintenance (:mod:`tablekeeper.operator.runs.schedule`): create a ``PaimonMaintenanceRun``
   when a job is due or ``run-now`` asks for one, prune old runs;
5. write ``status.table`` statistics, ``status.maintenance``, conditions and
   ``observedGeneration`` — only what changed.

With ``enforcement: TableOptions`` or ``Both`` the managed fields are also written as Paimon table
options (step 2 of §7.2, before the auto tags): a new schema file as ``ALTER TABLE ... SET`` writes,
only the fields some level sets, never ``protectedOptions`` nor the operator's unalterable list;
``status.appliedTableOptions`` and its hash record them, and an out-of-band change is reverted on
the next pass (``DriftCorrected``). ``TableOptions`` tables get no operator jobs; with ``Both`` the
operator still runs maintenance and creates auto tags itself (``tag.automatic-creation`` is then
not written, so writers and the operator never both create auto tags).
"""

from __future__ import annotations

import asyncio
import random
from datetime import datetime
from typing import Any

from tablekeeper import reconcile
from tablekeeper.core import errors as core_errors
from tablekeeper.core import paimon, values
from tablekeeper.core.policy.effective import EffectivePolicy
from tablekeeper.core.safety import trash
from tablekeeper.operator import metrics
from tablekeeper.operator.cluster.scopes import ScopePlan, StatusRecordStore
from tablekeeper.operator.cluster.view import Obj, View
from tablekeeper.operator.context import TableContext, dependency_cause, table_context
from tablekeeper.operator.controllers import pins as table_pins
from tablekeeper.operator.runs import schedule
from tablekeeper.operator.runs.claims import spark_run_in_flight
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status import conditions, markers
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import Failure, OperatorError, classify, failure_of
from tablekeeper.operator.status.outcome import Event, Outcome, url_of
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.planners import table_options as table_options_planner
from tablekeeper.reconcile.state.observe import TableState

__all__ = ["TableOutcome", "reconcile_table", "table_stats"]

_RNG = random.Random()


class TableOutcome(Outcome):
    """An :class:`Outcome` plus whether to clear the ``run-now`` annotation."""

    clear_run_now: bool = False


def _newer(version: str, than: str | None) -> bool:
    """Whether resourceVersion ``version`` is newer than ``than`` (None: nothing to compare)."""
    if than is None:
        return True
    if version.isdigit() and than.isdigit():
        return int(version) > int(than)
    return version != than


def table_stats(state: TableState) -> dict[str, Any]:
    """``status.table``: counts and times of the main branch."""
    snaps = state.branch_snapshots(paimon.MAIN)
    out: dict[str, Any] = {"snapshotCount": len(snaps), "tagCount": len(state.branch_tags(paimon.MAIN)),
                           "branchCount": len(state.branches),
                           "writeOnly": str(state.options.get("write-only", "false")).lower() == "true"}
    if snaps:
        out.update(latestSnapshotId=snaps[-1].id, earliestSnapshotId=snaps[0].id,
                   earliestSnapshotTime=values.rfc3339_ms(snaps[0].time_millis),
                   lastCommitTime=values.rfc3339_ms(snaps[-1].time_millis))
    return out


def _policy_conditions(obj: Obj, policy: EffectivePolicy, now: datetime) -> tuple[dict[str, Any], list[Event]]:
    events: list[Event] = []
    if policy.clamped:
        message = "; ".join(policy.notes)
        events.append(Event("Warning", "PolicyClamped", message))
        cond = conditions.condition(conditions.POLICY_COMPLIANT, False, Reason.CLAMPED, message,
                                    generation=obj.generation, now=now)
    elif policy.warnings:
        message = "; ".join(str(w) for w in policy.warnings)
        events.append(Event("Warning", "PolicyViolation", message))
        cond = conditions.condition(conditions.POLICY_COMPLIANT, False, Reason.POLICY_VIOLATION, message,
                                    generation=obj.generation, now=now)
    else:
        cond = conditions.condition(conditions.POLICY_COMPLIANT, True, Reason.COMPLIANT, "",
                                    generation=obj.generation, now=now)
    return cond, events


def _failed(rt: Runtime, obj: Obj, failure: Failure, now: datetime, retry: int | None) -> TableOutcome:
    out = TableOutcome(generation=obj.generation)
    out.conditions = [
        conditions.condition(conditions.READY, False, failure.reason, failure.message, generation=obj.generation,
                             now=now),
        conditions.condition(conditions.SYNCED, False, Reason.RECONCILE_ERROR, failure.message,
                             generation=obj.generation, now=now),
    ]
    if failure.reason == Reason.POLICY_VIOLATION:
        out.conditions.append(conditions.condition(conditions.POLICY_COMPLIANT, False, Reason.POLICY_VIOLATION,
                                                   failure.message, generation=obj.generation, now=now))
    out.keep = ((conditions.POLICY_COMPLIANT, conditions.MAINTENANCE_HEALTHY, conditions.CONSUMERS_HEALTHY)
                if failure.reason != Reason.POLICY_VIOLATION else (conditions.MAINTENANCE_HEALTHY, conditions.CONSUMERS_HEALTHY))
    if failure.reason == Reason.RESOURCE_CONFLICT:
        out.fields.update(effectivePolicy=None, table=None)
    if rt.first_time(obj.uid, failure.reason, failure.message):
        out.event("Warning", failure.reason, failure.message)
    if failure.temporary and retry is not None:
        out.failure = failure
        out.delay = rt.config.retry_delay(retry + 1)
    return out


def _policy_tag_name(table: str, tag: str) -> str:
    """A DNS-1123 name for the PaimonTag of policy tag ``tag`` (e.g. ``orders-2026-03-01``)."""
    slug = "".join(c if c.isalnum() else "-" for c in tag.lower()).strip("-")
    return f"{table}-{slug}"[:253].strip("-")


async def _materialize(rt: Runtime, view: View, obj: Obj, created: list[A.CreateTag],
                       out: TableOutcome) -> None:
    """``operator.materializePolicyTags``: one PaimonTag per policy tag just created (§4.3): label
    ``trigger-type=Policy``, owned by the PaimonTable, ``deletionPolicy: Retain`` (the policy expires
    the tag; deleting the CR never does) and adopted at its snapshot by the tag controller."""
    existing = {(m.spec.get("tagName") or m.name) for m in view.children("PaimonTag", obj.namespace, obj.name)}
    for action in created:
        if action.tag in existing:
            continue
        body = {
            "apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonTag",
            "metadata": {"name": _policy_tag_name(obj.name, action.tag), "namespace": obj.namespace,
                         "labels": {markers.TABLE_LABEL: markers.label_value(obj.name),
                                    markers.TRIGGER_TYPE_LABEL: "Policy"},
                         "ownerReferences": [{"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonTable",
                                              "name": obj.name, "uid": obj.uid, "controller": True,
                                              "blockOwnerDeletion": False}]},
            "spec": {"tableRef": {"name": obj.name}, "tagName": action.tag, "snapshotId": action.snapshot_id,
                     "deletionPolicy": "Retain"},
        }
        try:
            await rt.api.create(f"/apis/tablekeeper.io/v1alpha1/namespaces/{obj.namespace}/paimontags", body)
        except Exception as e:  # already there (a previous pass), or the API refused: the next pass retries
            if "409" not in str(e) and "AlreadyExists" not in str(e):
                out.event("Warning", "CreateFailed", f"cannot create PaimonTag for policy tag {action.tag!r}: {e}")


async def _prune_policy_tags(rt: Runtime, view: View, obj: Obj) -> None:
    """Delete the PaimonTags of policy tags the policy has expired (state ``Lost``: terminal, the
    storage tag is already gone, so storage goes before the CR); never a Ready one."""
    for tag in view.children("PaimonTag", obj.namespace, obj.name):
        if (tag.labels.get(markers.TRIGGER_TYPE_LABEL) == "Policy" and tag.status.get("state") == "Lost"
                and not tag.deleting):
            await rt.api.delete(url_of("paimontags", tag.namespace, tag.name))


async def _enforce_table_options(rt: Runtime, obj: Obj, table: TableContext, plan: ScopePlan,
                                 out: TableOutcome) -> tuple[dict[str, str], list[str]]:
    """``enforcement: TableOptions``/``Both`` (§4.2, §7.2 step 2): write the managed options that
    differ (a new schema file; ``protectedOptions`` and the operator's unalterable list are never
    written). Returns (the options now applied, conflicts on protected keys). An out-of-band change
    of an option this table had applied is reverted with a ``DriftCorrected`` event.

    Raises:
        OperatorError: writing the options failed (reason from the core error).
    """
    actions = table_options_planner.plan_table_options(plan.target, plan.state, plan.policy, rt.config.protected_table_options)
    conflicts = [a.reason.split(": ", 1)[1] for a in actions if isinstance(a, A.Skipped)]
    desired = table_options_planner.managed_table_options(plan.target, plan.policy)
    protected = set(plan.target.spec.protected_options) | rt.config.protected_table_options
    applied = {k: v for k, v in desired.items() if k not in protected}
    changes = [a for a in actions if isinstance(a, A.SetTableOptions)]
    if not changes:
        return applied, conflicts
    change = changes[0]
    await rt.step("table/options", obj.ref)
    result = await asyncio.to_thread(table.apply, plan, [change], StatusRecordStore(plan.records))
    failed = result.failed
    if failed:
        failure = failure_of(failed[0])
        raise OperatorError(failure.reason, f"writing table options failed: {failure.message}",
                            temporary=failure.temporary)
    if result.results and result.results[0].status == "applied":
        drift = obj.status.get("appliedTableOptionsHash") == paimon.options_hash(applied)
        if drift:
            was = ", ".join(f"{k}={v if v is not None else 'unset'}" for k, v in change.previous.items())
            out.event("Normal", Reason.DRIFT_CORRECTED, f"table options changed out of band ({was}); "
                                                        f"{result.results[0].message}")
        else:
            out.event("Normal", Reason.TABLE_OPTIONS_APPLIED, result.results[0].message)
        plan.state = await asyncio.to_thread(reconcile.observe, plan.table)
    return applied, conflicts


async def reconcile_table(rt: Runtime, view: View, obj: Obj, *, retry: int | None = None) -> TableOutcome:
    """One pass over a PaimonTable (see the module docstring)."""
    now = rt.config.now()
    started = asyncio.get_running_loop().time()
    try:
        async with rt.object_lock(obj.uid):  # the create/update handler, the timer and events overlap
            outcome = await _reconcile(rt, view, obj, rt.config.now())
        result = "success"
    except (OperatorError, core_errors.TablekeeperError, OSError) as e:
        failure = classify(e)
        ref = obj.spec.get("catalogRef") or {}
        kind = str(ref.get("kind") or "PaimonCatalog")
        catalog = view.get(kind, None if kind == "ClusterPaimonCatalog" else obj.namespace, str(ref.get("name")))
        cause = dependency_cause(catalog, failure.reason, failure.message)
        outcome = _failed(rt, obj, classify(cause) if cause is not None else failure, now, retry)
        result = "error"
    metrics.observe_reconcile(obj.kind, result, asyncio.get_running_loop().time() - started)
    return outcome


async def _purge_trash(plan: ScopePlan, table_label: str, now_ms: int, out: TableOutcome) -> None:
    """Purge the trash runs past their window (Event ``TrashPurged``) and export what is left."""
    io, root = plan.table.file_io, plan.table.root
    purged = await asyncio.to_thread(trash.purge, io, root, now_ms)
    if purged.runs:
        out.event("Normal", "TrashPurged", f"purged {len(purged.runs)} trash run(s) past their window "
                                           f"({purged.files} file(s), {purged.bytes} bytes): "
                                           + ", ".join(purged.runs[:5]))
        metrics.TRASH_PURGED_BYTES.labels(table=table_label).inc(purged.bytes)
    left = await asyncio.to_thread(trash.usage, io, root, now_ms)
    metrics.TRASH_BYTES.labels(table=table_label).set(left.bytes)
    metrics.TRASH_RUNS.labels(table=table_label).set(left.runs)


async def _reconcile(rt: Runtime, view: View, obj: Obj, now: datetime) -> TableOutcome:
    table = await table_context(rt, view, obj)
    spec = table.spec
    namespace = obj.namespace or ""
    out = TableOutcome(generation=obj.generation)
    async with rt.table_lock(table.identity):
        plan = await asyncio.to_thread(table.plan, now)
        if trash.policy_window(plan.policy.values) is not None:  # the window's end, on every pass
            await _purge_trash(plan, obj.short, int(now.timestamp() * 1000), out)
        applied_options, option_conflicts = await _enforce_table_options(rt, obj, table, plan, out)
        auto = [a for a in plan.actions if isinstance(a, A.CreateTag) and a.auto]
        busy = spark_run_in_flight(rt, view, obj.namespace, obj.name) if auto else None
        if busy is not None:  # as tag CRs do: policy tags wait for the Spark run (a later pass creates them)
            if rt.first_time(obj.uid, Reason.TABLE_LOCKED, busy.uid):
                out.event("Normal", Reason.TABLE_LOCKED, f"{len(auto)} policy tag(s) wait for maintenance run "
                                                         f"{busy.name} ({busy.spec.get('type')}) to finish")
            auto = []
        if auto:
            await rt.step("table/auto-tags", obj.ref)
            result = await asyncio.to_thread(table.apply, plan, auto, StatusRecordStore(plan.records))
            for r in result.results:
                if r.status == "applied":
                    out.event("Normal", "Created", f"policy tag: {r.message}")
                elif r.status == "failed":
                    out.event("Warning", "CreateFailed", f"policy tag: {r.message}")
            plan.state = await asyncio.to_thread(reconcile.observe, plan.table)
            if rt.config.materialize_policy_tags:
                await _materialize(rt, view, obj, [r.action for r in result.results if r.status != "failed"
                                                   and isinstance(r.action, A.CreateTag)], out)
    if rt.config.materialize_policy_tags:
        await _prune_policy_tags(rt, view, obj)
    policy = plan.policy
    stats = table_stats(plan.state)
    try:
        found: table_pins.TablePins | None = await asyncio.to_thread(
            table_pins.table_pins, plan.table, policy.values, plan.state.options, now)
    except core_errors.TablekeeperError:  # status only: the maintenance runs report the cause
        found = None
    table_label = obj.short
    metrics.TABLE_SNAPSHOTS.labels(table=table_label).set(stats["snapshotCount"])
    metrics.TABLE_TAGS.labels(table=table_label).set(stats["tagCount"])
    metrics.TABLE_BRANCHES.labels(table=table_label).set(stats["branchCount"])

    runs = view.children("PaimonMaintenanceRun", obj.namespace, obj.name)
    created = rt.created_runs.setdefault(obj.uid, set())
    created -= {r.name for r in runs}
    runs = runs + [Obj("PaimonMaintenanceRun", obj.namespace, name, f"pending-{name}", "", 0, {}, {}, {}, {},
                       False, ()) for name in sorted(created)]  # created, not in the index yet
    elsewhere = sum(1 for r in view.all("PaimonMaintenanceRun")
                    if r.status.get("phase") not in schedule.TERMINAL and not r.deleting
                    and (r.namespace, (r.spec.get("tableRef") or {}).get("name")) != (obj.namespace, obj.name))
    run_now = obj.annotations.get(markers.RUN_NOW) or None
    if run_now and not _newer(obj.resource_version, rt.run_now_consumed.get(obj.uid)):
        run_now = None  # a stale body: this request was consumed already
    previous = rt.maintenance.get(obj.uid) or obj.status.get("maintenance")
    decision = schedule.decide(obj, spec, policy, runs, now=now, previous=previous,
                               run_now=run_now, active_elsewhere=elsewhere,
                               max_concurrent=rt.config.max_concurrent_runs, jitter=rt.config.schedule_jitter,
                               rng=_RNG)
    if decision.create is not None:
        name = decision.create["metadata"]["name"]
        try:
            await rt.api.create(f"/apis/tablekeeper.io/v1alpha1/namespaces/{namespace}/paimonmaintenanceruns",
                                decision.create)
        except Exception as e:  # the next pass decides again
            out.event("Warning", "MaintenanceFailed", f"cannot create run {name}: {e}")
            decision.maintenance = dict(previous or {})
            decision.clear_run_now = False
        else:
            created.add(name)
            out.events.extend(decision.events)
    elif decision.events:
        out.events.extend(decision.events)
    for run in decision.prune:
        await rt.api.delete(url_of("paimonmaintenanceruns", run.namespace, run.name))
    out.clear_run_now = decision.clear_run_now
    if decision.clear_run_now:
        rt.run_now_consumed[obj.uid] = obj.resource_version
    rt.maintenance[obj.uid] = decision.maintenance

    policy_cond, policy_events = _policy_conditions(obj, policy, now)
    if option_conflicts and policy_cond["status"] == "True":
        message = "; ".join(option_conflicts)
        policy_cond = conditions.condition(conditions.POLICY_COMPLIANT, False, Reason.CONFLICTING_TABLE_OPTION,
                                           message, generation=obj.generation, now=now)
        policy_events.append(Event("Warning", Reason.CONFLICTING_TABLE_OPTION, message))
    for event in policy_events:
        if rt.first_time(obj.uid, event.reason, event.message):
            out.events.append(event)
    failed_jobs = decision.failed_jobs
    health = conditions.condition(
        conditions.MAINTENANCE_HEALTHY, not failed_jobs,
        Reason.MAINTENANCE_FAILED if failed_jobs else Reason.ALL_JOBS_SUCCEEDED,
        ("failed: " + ", ".join(failed_jobs)) if failed_jobs else "", generation=obj.generation, now=now)
    out.conditions = [
        conditions.condition(conditions.READY, True, Reason.RECONCILED,
                             f"{table.location.identifier} in {table.location.warehouse}",
                             generation=obj.generation, now=now),
        conditions.condition(conditions.SYNCED, True, Reason.RECONCILE_SUCCESS, "", generation=obj.generation,
                             now=now),
        policy_cond,
        health,
    ]
    if found is not None and found.limit is not None:
        if found.over_limit:
            message, key = table_pins.consumer_warning(found)
            out.conditions.append(conditions.condition(conditions.CONSUMERS_HEALTHY, False,
                                                       Reason.CONSUMER_PINS_HISTORY, message,
                                                       generation=obj.generation, now=now))
            if rt.first_time(obj.uid, Reason.CONSUMER_PINS_HISTORY, key):
                out.event("Warning", Reason.CONSUMER_PINS_HISTORY, message)
        else:
            out.conditions.append(conditions.condition(
                conditions.CONSUMERS_HEALTHY, True, Reason.CONSUMERS_WITHIN_LIMIT,
                f"no consumer keeps more than {found.limit} snapshots", generation=obj.generation, now=now))
    violations = sorted({c.policy for c in policy.clamped.values()} | {w.policy for w in policy.warnings})
    out.fields.update(
        identity={"warehouse": table.location.warehouse, "table": table.location.identifier},
        effectivePolicy=policy.to_status(), appliedPolicies=list(policy.policies), policyViolations=violations or None,
        table=stats, pins=found.status if found is not None else None, maintenance=decision.maintenance, lastMaintenanceTime=decision.last_maintenance_time,
        writerTimeZone=plan.target.writer_zone, lastError=None,
        appliedTableOptions=applied_options or None,
        appliedTableOptionsHash=paimon.options_hash(applied_options) if applied_options else None)
    if plan.target.writer_zone is None and rt.first_time(obj.uid, Reason.TIME_ZONE_UNSET):
        out.event("Normal", Reason.TIME_ZONE_UNSET, "no writer time zone (spec.timeZone or the catalog's "
                                                   "writerTimeZone): tag TTLs and partition times use a 12 h margin")
    return out
