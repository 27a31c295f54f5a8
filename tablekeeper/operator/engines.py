"""Where a ``PaimonMaintenanceRun`` executes: the engine hook (operator-design.md §7.7).

Two ways to execute a run:

- **in process** (:class:`InProcessEngine`, the ``Engine`` interface the run controller calls):
  the same planner and applier the CLI uses (``plan_table`` with schedules ignored, then
  ``apply`` of the run type's actions), under the table's lock, in a worker thread. Engine
  ``Python``, ``Auto`` below the size threshold, run types the Spark job does not do
  (``ExpireTags``, ``ExpirePartitions``), and every run while Spark runs are off (no
  ``TABLEKEEPER_SPARK_IMAGE``; :func:`select` then notes why in the run's status);
- **on Spark** (``SparkOperator``: a ``SparkApplication``; ``SparkJob``: a ``batch/v1`` Job running
  spark-submit in client mode): :func:`launch_request` turns the run and the table's effective
  policy into the job's arguments and :func:`launch_manifest` builds the object with the builders of
  :mod:`tablekeeper.spark.launch`; :mod:`tablekeeper.operator.sparkruns` creates it, observes it
  and reads the job's result artifact back into the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

from tablekeeper import reconcile
from tablekeeper.core import retention_settings
from tablekeeper.core.paimon import layout
from tablekeeper.core.policy.run import PaimonMaintenanceRunSpec
from tablekeeper.operator import scopes
from tablekeeper.operator.conditions import Reason
from tablekeeper.operator.run_report import SAMPLE_MAX, RunReport
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile import planner
from tablekeeper.spark import launch

__all__ = ["RUN_KINDS", "RunRequest", "RunResult", "Engine", "InProcessEngine", "select", "launch_request",
           "launch_manifest", "SAMPLE_MAX", "SPARK_RUN_TYPES", "dry_run_of"]

#: Run type -> the planner action kinds it carries out.
RUN_KINDS: Mapping[str, tuple[str, ...]] = {
    "ExpirePartitions": ("ExpirePartitions",),
    "ExpireSnapshots": ("ExpireSnapshots", "ExpireChangelog"),
    "ExpireTags": ("ExpireTags",),
    "RemoveOrphanFiles": ("CleanOrphans",),
}


@dataclass(frozen=True)
class RunRequest:
    """What one run asks for."""

    name: str
    spec: PaimonMaintenanceRunSpec
    scope: scopes.Scope
    opener: reconcile.Opener
    now: datetime
    #: None: the run's ``parameters.dryRun``, else for RemoveOrphanFiles the policy's ``orphanFiles.dryRun``.
    dry_run: bool | None = None


@dataclass
class RunResult:
    """How a run ended: its report (``status.result``, None when it did not get that far) plus a
    condition reason and message."""

    succeeded: bool
    reason: str
    message: str
    report: RunReport | None = None
    policy: dict[str, str] = field(default_factory=dict)


class Engine(Protocol):
    """Executes a run (blocking; called in a worker thread under the table's lock)."""

    name: str

    def run(self, request: RunRequest) -> RunResult: ...


def _counts(actions: Sequence[A.Action], dry_run: bool) -> RunReport:
    """A report with the planned counts of the run's actions."""
    def total(kind: type[A.Action], count: Callable[[Any], int]) -> int | None:
        picked = [a for a in actions if isinstance(a, kind)]
        return sum(count(a) for a in picked) if picked else None
    return RunReport(dry_run=dry_run, expired_snapshots=total(A.ExpireSnapshots, lambda a: a.snapshots),
                     expired_changelogs=total(A.ExpireChangelog, lambda a: a.changelogs),
                     expired_partitions=total(A.ExpirePartitions, lambda a: len(a.partitions)),
                     expired_tags=total(A.ExpireTags, lambda a: len(a.tags)),
                     orphan_files=total(A.CleanOrphans, lambda a: a.estimate.files))


def dry_run_of(spec: PaimonMaintenanceRunSpec, policy: Mapping[str, Any]) -> bool:
    """The run's ``parameters.dryRun``, else for RemoveOrphanFiles the policy's
    ``orphanFiles.dryRun`` (default true), else false."""
    if spec.parameters.dry_run is not None:
        return spec.parameters.dry_run
    if spec.type == "RemoveOrphanFiles":
        return bool(policy.get("orphanFiles.dryRun", True))
    return False


class InProcessEngine:
    """Runs maintenance in this process with the shared planner and applier."""

    name = "Python"

    def run(self, request: RunRequest) -> RunResult:
        spec = request.spec
        if spec.type in ("FastForward", "Rollback", "Compact"):  # branch verbs: tablekeeper.operator.verbs
            from tablekeeper.operator import verbs

            return verbs.run_verb(request)
        kinds = RUN_KINDS.get(spec.type)
        if kinds is None:
            return RunResult(False, Reason.NOT_SUPPORTED, f"run type {spec.type} is not implemented by the operator yet")
        if spec.branch != layout.MAIN:
            return RunResult(False, Reason.NOT_SUPPORTED, "maintenance of branches other than main is not "
                                                          "implemented yet")
        plan = scopes.plan_scope(request.scope, request.opener, request.now)
        dry_run = request.dry_run if request.dry_run is not None else dry_run_of(spec, plan.policy.values)
        config = reconcile.ReconcileConfig(ignore_schedules=True, estimate=dry_run)
        table_plan = planner.plan_table(plan.target, plan.table, plan.state, plan.records, plan.policy, request.now,
                                        config, kinds=kinds)
        picked: list[A.Action] = []
        for a in table_plan.actions:
            if a.kind not in kinds:
                continue
            if isinstance(a, A.CleanOrphans):
                a = a.model_copy(update={"dry_run": dry_run})
            picked.append(a)
        policy: dict[str, str] = {}
        for a in picked:
            policy.update(a.policy)
        counts = _counts(picked, dry_run)
        if dry_run or not any(a.is_change for a in picked):
            estimates = [e for e in (getattr(a, "estimate", None) for a in picked) if isinstance(e, A.Estimate)]
            report = replace(counts, planned_files=sum(e.files for e in estimates),
                             planned_bytes=sum(e.bytes for e in estimates))
            what = "dry run: nothing deleted" if dry_run else "nothing to do"
            return RunResult(True, Reason.SUCCEEDED, what, report, policy=policy)
        store = scopes.StatusRecordStore(plan.records)
        applied = scopes.apply_actions(plan, [a for a in picked if a.is_change], store, request.opener,
                                       reconcile.ReconcileConfig(ignore_schedules=True, estimate=False))
        failed = applied.failed
        totals = applied.totals()
        def executed(kind: str, planned: int | None) -> int | None:
            """What was done, not the plan's estimate made before the run changed the table."""
            done = [r.expired for r in applied.results if r.action.kind == kind and r.expired is not None]
            return sum(done) if done else planned
        counts = replace(counts, expired_snapshots=executed("ExpireSnapshots", counts.expired_snapshots),
                         expired_changelogs=executed("ExpireChangelog", counts.expired_changelogs))
        by_kind: dict[str, int] = {}  # estimated per kind (in process, the plan's sizes)
        for a in picked:
            for kind, count in getattr(a, "estimate", A.Estimate()).by_kind.items():
                by_kind[kind] = by_kind.get(kind, 0) + count
        report = replace(counts, deleted_files=totals["deletedFiles"], reclaimed_bytes=totals["deletedBytes"],
                         failures=len(failed), sample=tuple(r.message for r in applied.results),
                         deleted_by_kind=by_kind)
        if failed:
            return RunResult(False, Reason.MAINTENANCE_FAILED, failed[0].message, report, policy)
        message = "; ".join(r.message for r in applied.results)[:1000] or "nothing to do"
        return RunResult(True, Reason.SUCCEEDED, message, report, policy)


_IN_PROCESS = InProcessEngine()


def select(requested: str | None, *, spark_enabled: bool = False, run_type: str = "") -> tuple[Engine, str]:
    """The in-process engine for a run that asks for ``requested`` (Python, Auto, SparkOperator,
    SparkJob or None) and does not go to Spark, with a note for its status when it asked for Spark."""
    if requested in (None, "Auto", "Python"):
        return _IN_PROCESS, ""
    if not spark_enabled:
        return _IN_PROCESS, f"engine {requested} requested: Spark runs are off (no TABLEKEEPER_SPARK_IMAGE), ran in process"
    if run_type and run_type not in SPARK_RUN_TYPES:
        return _IN_PROCESS, f"engine {requested} requested: the Spark job does not do {run_type}, ran in process"
    return _IN_PROCESS, f"engine {requested} requested: ran in process"


# -- Spark launch (building only) ----------------------------------------------------------------------

_OPERATIONS: Mapping[str, launch.Operation] = {"ExpireSnapshots": "expire", "RemoveOrphanFiles": "clean-orphans"}
#: Run types the Spark job carries out.
SPARK_RUN_TYPES = frozenset(_OPERATIONS)


def launch_request(spec: PaimonMaintenanceRunSpec, warehouse: str, identifier: str, options: Mapping[str, str], *,
                   dry_run: bool, run_name: str | None = None, policy: Mapping[str, Any] | None = None,
                   result: str | None = None) -> launch.JobRequest | None:
    """The Spark job request of a run, or None for types the Spark job does not do. Options
    carrying credentials are left out (they come from a Secret in the pod). ``policy``: the
    table's effective policy values (``snapshots.minRetained``...), passed on as the job's
    thresholds; ``result``: where the job writes its artifact.

    ``ExpireSnapshots`` does what the in-process run does (:data:`RUN_KINDS`): snapshot
    expiration, then (unless ``changelog.state`` is ``Disabled``) expiration of the decoupled
    changelog, in one job (``with_changelog``), both with the retention the planner plans them with
    (``retention_settings.from_policy``: values, limit, decoupled rule) and in as many
    ``expireLimit`` batches as an in-process run (``batches``)."""
    operation = _OPERATIONS.get(spec.type)
    if operation is None:
        return None
    safe = {k: v for k, v in options.items() if not launch.is_secret_option(k)}
    v = policy or {}
    extra: dict[str, Any] = {}
    if operation == "expire":
        extra["batches"] = reconcile.ReconcileConfig().max_batches  # as many batches as an in-process run
    if operation == "expire" and v:
        extra["retention"] = retention_settings.from_policy(v)  # what the planner plans ExpireSnapshots with
        if v.get("changelog.state") != "Disabled":
            extra["with_changelog"] = True
    elif operation == "clean-orphans" and v.get("orphanFiles.olderThan") is not None:
        extra["older_than"] = str(v["orphanFiles.olderThan"])
    return launch.JobRequest(operation=operation, warehouse=warehouse, table=identifier, branch=spec.branch,
                             options=safe, dry_run=dry_run, run_name=run_name, result=result, **extra)


def launch_manifest(request: launch.JobRequest, *, engine: str, name: str, namespace: str, owner_name: str,
                    owner_uid: str, image: str, service_account: str, active_deadline_seconds: int,
                    ttl_seconds_after_finished: int = 604800, spark_version: str = "4.0.1",
                    credentials_secret: str | None = None, driver: launch.SparkResources | None = None,
                    executor: launch.SparkResources | None = None,
                    spark_conf: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``batch/v1`` Job (``SparkJob``) or ``SparkApplication`` (``SparkOperator``) that runs
    ``request``, owned by the run."""
    owner = launch.OwnerReference(name=owner_name, uid=owner_uid)
    if engine == "SparkOperator":
        return launch.spark_application_manifest(
            request, name=name, namespace=namespace, owner=owner, image=image, spark_version=spark_version,
            service_account=service_account, active_deadline_seconds=active_deadline_seconds,
            ttl_seconds_after_finished=ttl_seconds_after_finished, credentials_secret=credentials_secret,
            driver=driver, executor=executor, spark_conf=spark_conf)
    return launch.job_manifest(
        request, name=name, namespace=namespace, owner=owner, image=image, service_account=service_account,
        active_deadline_seconds=active_deadline_seconds, ttl_seconds_after_finished=ttl_seconds_after_finished,
        credentials_secret=credentials_secret, driver=driver, executor=executor, spark_conf=spark_conf)
