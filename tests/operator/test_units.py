"""Pure parts of the operator: conditions and minimal status patches, the reason vocabulary, error
classification, configuration from the environment, the maintenance scheduler (jittered,
restart-safe ``nextRunTime``, Forbid, history limits, run-now), conflict resolution, the engine
hook's Spark manifests, and the Kopf internals the operator relies on."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import kopf
import pytest

from tablekeeper.core import errors as core_errors
from tablekeeper.core.policy.effective import resolution, result
from tablekeeper.core.policy.kinds import parse_spec
from tablekeeper.core.policy.specs.run import PaimonMaintenanceRunSpec
from tablekeeper.core.policy.specs.table import PaimonTableSpec
from tablekeeper.operator import kopfcompat
from tablekeeper.operator.cluster import view as cluster
from tablekeeper.operator.runs import engines as run_engines
from tablekeeper.operator.runs import schedule as maintenance
from tablekeeper.operator.runs import spark as sparkruns
from tablekeeper.operator.settings import OperatorConfig
from tablekeeper.operator.status import conditions, errors
from tablekeeper.operator.status import outcome as status
from tablekeeper.operator.status.conditions import Reason

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def obj(kind: str, name: str, spec: dict[str, Any], *, created: str = "2026-01-01T00:00:00Z",
        status_: dict[str, Any] | None = None, labels: dict[str, str] | None = None, uid: str | None = None,
        namespace: str = "sales") -> cluster.Obj:
    return cluster.Obj(kind, namespace, name, uid or f"uid-{name}", created, 1, labels or {}, {}, spec,
                       status_ or {}, False, ())


# -- conditions and status ---------------------------------------------------------------------

def test_merge_keeps_transition_time_while_status_holds() -> None:
    old = [conditions.condition("Ready", True, Reason.CREATED, "a", generation=1, now=NOW)]
    later = NOW + timedelta(hours=1)
    same = conditions.merge(old, [conditions.condition("Ready", True, Reason.ADOPTED, "b", generation=2, now=later)])
    assert same[0]["lastTransitionTime"] == "2026-11-20T12:00:00Z" and same[0]["reason"] == "Adopted"
    flipped = conditions.merge(old, [conditions.condition("Ready", False, Reason.TABLE_NOT_FOUND, "", generation=2,
                                                          now=later)])
    assert flipped[0]["lastTransitionTime"] == "2026-11-20T13:00:00Z"
    kept = conditions.merge(old + [conditions.condition("Synced", True, Reason.RECONCILE_SUCCESS, "", generation=1,
                                                        now=NOW)], [], keep=("Ready",))
    assert [c["type"] for c in kept] == ["Ready"]


def test_reasons_are_camel_case_words() -> None:
    assert {"ResourceConflict", "SnapshotNotFound", "NamespaceNotAllowed", "TableOutsideWarehouse",
            "AlreadyExistsDifferentSnapshot", "TagNotFound", "ReconcilePaused"} <= conditions.REASONS
    for reason in conditions.REASONS:
        conditions.condition("Ready", True, reason, generation=None, now=NOW)
    with pytest.raises(ValueError):
        conditions.condition("Ready", True, "not a word", generation=None, now=NOW)


def test_render_writes_only_what_changed() -> None:
    cond = conditions.condition("Ready", True, Reason.RECONCILED, "", generation=3, now=NOW)
    current = {"observedGeneration": 3, "conditions": [cond], "table": {"snapshotCount": 6, "tagCount": 1},
               "lastError": "old"}
    outcome = status.Outcome(fields={"table": {"snapshotCount": 6, "tagCount": 1}, "lastError": None},
                             conditions=[conditions.condition("Ready", True, Reason.RECONCILED, "", generation=3,
                                                              now=NOW + timedelta(minutes=5))], generation=3)
    assert status.render(current, outcome) == {"lastError": None}
    assert status.render({**current, "lastError": None} | {}, outcome) == {"lastError": None}
    del current["lastError"]
    assert status.render(current, outcome) == {}
    outcome.fields["table"] = {"snapshotCount": 7}
    assert status.render(current, outcome) == {"table": {"snapshotCount": 7, "tagCount": None}}


# -- errors and settings ---------------------------------------------------------------------------

@pytest.mark.parametrize(("error", "reason", "temporary"), [
    (core_errors.StorageError("s3 down"), Reason.CATALOG_UNREACHABLE, True),
    (core_errors.ConcurrentModificationError("raced"), Reason.RECONCILE_ERROR, True),
    (core_errors.TableNotFoundError("no table"), Reason.TABLE_NOT_FOUND, True),
    (core_errors.SnapshotNotFoundError("no snapshot"), Reason.SNAPSHOT_NOT_FOUND, True),
    (core_errors.TagConflictError("moved"), Reason.ALREADY_EXISTS_DIFFERENT_SNAPSHOT, False),
    (core_errors.ProtectedObjectError("fork point"), Reason.PROTECTED_BY_BRANCH, False),
    (result.PolicyNotFoundError("gold"), Reason.POLICY_NOT_FOUND, True),
    (core_errors.InvalidInputError("bad"), Reason.INVALID_SPEC, False),
    (RuntimeError("boom"), Reason.ENGINE_ERROR, True),
    (errors.OperatorError(Reason.NAMESPACE_NOT_ALLOWED, "no"), Reason.NAMESPACE_NOT_ALLOWED, False),
])
def test_errors_map_to_reasons_and_retry_semantics(error: Exception, reason: str, temporary: bool) -> None:
    failure = errors.classify(error)
    assert (failure.reason, failure.temporary) == (reason, temporary)
    kopf_error = errors.to_kopf(failure, 12.0)
    assert isinstance(kopf_error, kopf.TemporaryError if temporary else kopf.PermanentError)


def test_config_from_environment_and_backoff() -> None:
    config = OperatorConfig.from_env({"TABLEKEEPER_RECONCILE_INTERVAL": "30", "TABLEKEEPER_USE_FINALIZERS": "false",
                                      "TABLEKEEPER_DEFAULT_DELETION_POLICY": "Retain", "POD_NAMESPACE": "tk"})
    assert (config.reconcile_interval, config.use_finalizers, config.default_deletion_policy,
            config.operator_namespace) == (30.0, False, "Retain", "tk")
    assert [OperatorConfig().retry_delay(n) for n in (1, 2, 3, 10)] == [10.0, 20.0, 40.0, 600.0]
    with pytest.raises(core_errors.InvalidInputError):
        OperatorConfig.from_env({"TABLEKEEPER_USE_FINALIZERS": "maybe"})


# -- conflicts -----------------------------------------------------------------------------------------

def test_the_oldest_wins_ties_by_namespace_and_name() -> None:
    a = obj("PaimonTag", "b", {}, created="2026-01-01T00:00:01Z")
    b = obj("PaimonTag", "a", {}, created="2026-01-01T00:00:02Z")
    c = obj("PaimonTag", "c", {}, created="2026-01-01T00:00:01Z", namespace="finance")
    won = cluster.winners([a, b, c], lambda o: "same")
    assert {won[o.uid].short for o in (a, b, c)} == {"finance/c"}


# -- maintenance scheduling -------------------------------------------------------------------------

def table_and_policy(schedule: str | None = "@every 1 h", **spec: Any) -> tuple[cluster.Obj, PaimonTableSpec,
                                                                                result.EffectivePolicy]:
    raw: dict[str, Any] = {"database": "sales", "table": "orders",
                           "retention": {"snapshots": {"minRetained": 1, "maxRetained": 5}, "tags": {"state": "Disabled"}}, **spec}
    if schedule:
        raw["maintenance"] = {**raw.get("maintenance", {}), "schedule": schedule}
    table_spec = parse_spec("PaimonTable", raw, source="t")
    assert isinstance(table_spec, PaimonTableSpec)
    policy = resolution.resolve_effective_policy(result.TableContext("orders", "sales", table_spec))
    return obj("PaimonTable", "orders", raw), table_spec, policy


def test_next_run_time_is_jittered_stored_and_kept() -> None:
    table, spec, policy = table_and_policy()
    first = maintenance.decide(table, spec, policy, [], now=NOW, previous=None, run_now=None, active_elsewhere=0,
                               max_concurrent=4, jitter=60, rng=random.Random(7))
    entry = first.maintenance["snapshotExpiration"]
    assert entry["schedule"] == "@every 1 h"
    planned = datetime.fromisoformat(entry["nextRunTime"].replace("Z", "+00:00"))
    assert NOW <= planned <= NOW + timedelta(seconds=60)
    assert first.maintenance["orphanFileCleanup"] == {"state": "Disabled"}
    if planned > NOW:  # not due yet
        assert first.create is None
    later = maintenance.decide(table, spec, policy, [], now=planned, previous=first.maintenance, run_now=None,
                               active_elsewhere=0, max_concurrent=4, jitter=60, rng=random.Random(8))
    assert later.create is not None and later.create["spec"]["type"] == "ExpireSnapshots"
    assert later.create["metadata"]["labels"]["tablekeeper.io/trigger"] == "Schedule"
    assert len(later.create["metadata"]["name"]) <= 40
    nxt = datetime.fromisoformat(later.maintenance["snapshotExpiration"]["nextRunTime"].replace("Z", "+00:00"))
    assert planned + timedelta(hours=1) <= nxt <= planned + timedelta(hours=1, seconds=60)
    again = maintenance.decide(table, spec, policy, [], now=planned + timedelta(minutes=1),
                               previous=later.maintenance, run_now=None, active_elsewhere=0, max_concurrent=4,
                               jitter=60, rng=random.Random(9))
    assert again.create is None and again.maintenance["snapshotExpiration"]["nextRunTime"] == \
        later.maintenance["snapshotExpiration"]["nextRunTime"]


def test_stale_consumers_are_expired_before_the_snapshots_they_hold() -> None:
    """Both due at once: the consumer run goes first (Paimon's commit expires consumers first), the
    snapshot run at the next check; without consumers.expiration there is no consumer job."""
    table, spec, policy = table_and_policy(retention={"snapshots": {"minRetained": 1}, "consumers": {"expiration": "7 d"},
                                                      "tags": {"state": "Disabled"}})
    kwargs: dict[str, Any] = {"run_now": None, "active_elsewhere": 0, "max_concurrent": 4, "jitter": 0}
    first = maintenance.decide(table, spec, policy, [], now=NOW, previous=None, rng=random.Random(1), **kwargs)
    assert first.create is not None and first.create["spec"]["type"] == "ExpireConsumers"
    assert first.create["metadata"]["name"].split("-")[2] == "con"
    assert first.maintenance["snapshotExpiration"]["state"] == "NotYetRun"
    done = obj("PaimonMaintenanceRun", first.create["metadata"]["name"], first.create["spec"],
               status_={"phase": "Succeeded", "completionTime": "2026-11-20T12:00:00Z", "result": {"dryRun": False,
                                                                                             "expiredConsumers": 1}})
    second = maintenance.decide(table, spec, policy, [done], now=NOW, previous=first.maintenance,
                                rng=random.Random(2), **kwargs)
    assert second.create is not None and second.create["spec"]["type"] == "ExpireSnapshots"
    assert second.maintenance["consumerExpiration"]["lastResult"]["expiredConsumers"] == 1
    _, _, without = table_and_policy(retention={"snapshots": {"minRetained": 1}})
    assert maintenance.decide(table, spec, without, [], now=NOW, previous=None, rng=random.Random(1),
                              **kwargs).maintenance["consumerExpiration"] == {"state": "Disabled"}


def test_forbid_concurrency_and_cluster_limit() -> None:
    table, spec, policy = table_and_policy()
    due = {"snapshotExpiration": {"state": "Succeeded", "schedule": "@every 1 h",
                                  "nextRunTime": "2026-11-20T11:00:00Z"}}
    running = obj("PaimonMaintenanceRun", "r1", {"type": "ExpireSnapshots"}, status_={"phase": "Running"})
    kwargs: dict[str, Any] = {"now": NOW, "previous": due, "run_now": None, "jitter": 0, "rng": random.Random(1)}
    assert maintenance.decide(table, spec, policy, [running], active_elsewhere=0, max_concurrent=4,
                              **kwargs).create is None
    assert maintenance.decide(table, spec, policy, [], active_elsewhere=4, max_concurrent=4, **kwargs).create is None
    assert maintenance.decide(table, spec, policy, [], active_elsewhere=3, max_concurrent=4,
                              **kwargs).create is not None


def test_history_limits_prune_only_operator_runs() -> None:
    table, spec, policy = table_and_policy(None, maintenance={"successfulRunsHistoryLimit": 1,
                                                              "failedRunsHistoryLimit": 0})
    mine = {"tablekeeper.io/trigger": "Schedule", "app.kubernetes.io/managed-by": "tablekeeper"}
    runs = [obj("PaimonMaintenanceRun", f"ok{i}", {"type": "ExpireSnapshots"}, labels=mine,
                created=f"2026-01-0{i}T00:00:00Z", status_={"phase": "Succeeded"}) for i in (1, 2, 3)]
    runs.append(obj("PaimonMaintenanceRun", "bad", {"type": "ExpireSnapshots"}, labels=mine,
                    status_={"phase": "Failed"}))
    runs.append(obj("PaimonMaintenanceRun", "users", {"type": "ExpireSnapshots"}, status_={"phase": "Succeeded"}))
    decision = maintenance.decide(table, spec, policy, runs, now=NOW, previous=None, run_now=None,
                                  active_elsewhere=0, max_concurrent=4, jitter=0, rng=random.Random(1))
    assert sorted(r.name for r in decision.prune) == ["bad", "ok1", "ok2"]


def test_a_dry_run_is_neither_the_jobs_success_nor_its_last_run() -> None:
    table, spec, policy = table_and_policy()
    real = obj("PaimonMaintenanceRun", "real", {"type": "ExpireSnapshots"}, created="2026-11-20T09:00:00Z",
               status_={"phase": "Succeeded", "startTime": "2026-11-20T09:00:00Z",
                        "completionTime": "2026-11-20T09:00:05Z", "result": {"dryRun": False, "expiredSnapshots": 3}})
    dry = obj("PaimonMaintenanceRun", "dry", {"type": "ExpireSnapshots"}, created="2026-11-20T11:30:00Z",
              status_={"phase": "Succeeded", "startTime": "2026-11-20T11:30:00Z",
                       "completionTime": "2026-11-20T11:30:02Z", "result": {"dryRun": True, "expiredSnapshots": 0}})
    # the schedule changed meanwhile: the next run is counted again from the last run (paused: none created)
    previous = {"snapshotExpiration": {"state": "Running", "schedule": "@every 6 h", "lastRunRef": "dry",
                                       "lastRunTime": "2026-11-20T11:30:00Z"}}
    decision = maintenance.decide(table, spec, policy, [real, dry], now=NOW, previous=previous, run_now=None,
                                  active_elsewhere=0, max_concurrent=4, jitter=0, rng=random.Random(1), paused=True)
    entry = decision.maintenance["snapshotExpiration"]
    assert entry["lastRunRef"] == "real" and entry["lastRunTime"] == "2026-11-20T09:00:00Z"
    assert entry["lastSuccessTime"] == "2026-11-20T09:00:05Z" and entry["lastResult"]["expiredSnapshots"] == 3
    assert entry["state"] == "Succeeded" and entry["lastDryRunRef"] == "dry"
    assert entry["lastDryRunTime"] == "2026-11-20T11:30:02Z" and entry["lastDryRunResult"]["dryRun"] is True
    assert entry["nextRunTime"] == "2026-11-20T10:00:00Z"  # from the real run, not the dry one
    assert decision.last_maintenance_time == "2026-11-20T09:00:05Z"


def test_a_table_lags_a_dry_run_until_it_records_it_as_a_dry_run() -> None:
    table, _, _ = table_and_policy()
    dry = obj("PaimonMaintenanceRun", "dry", {"type": "ExpireSnapshots"}, created="2026-11-20T11:30:00Z",
              status_={"phase": "Succeeded", "result": {"dryRun": True}})
    assert maintenance.table_lags(table, dry, [dry])
    recorded = obj("PaimonTable", "orders", table.spec, status_={"maintenance": {"snapshotExpiration": {
        "state": "NotYetRun", "lastDryRunRef": "dry"}}})
    assert not maintenance.table_lags(recorded, dry, [dry])  # a dry run is never the job's lastRunRef


def test_run_now_creates_a_manual_run_or_is_refused() -> None:
    table, spec, policy = table_and_policy(None)
    kwargs: dict[str, Any] = {"now": NOW, "previous": None, "active_elsewhere": 0, "max_concurrent": 4,
                              "jitter": 0, "rng": random.Random(1)}
    ok = maintenance.decide(table, spec, policy, [], run_now="ExpireTags", **kwargs)
    assert ok.create is not None and ok.clear_run_now and ok.create["metadata"]["labels"]["tablekeeper.io/trigger"] \
        == "Manual"
    bad = maintenance.decide(table, spec, policy, [], run_now="Vacuum", **kwargs)
    assert bad.create is None and bad.clear_run_now and bad.events[0].reason == "ValidationError"


# -- engines -----------------------------------------------------------------------------------------

def test_in_process_fallback_notes_and_launch_manifests_are_built() -> None:
    engine, note = run_engines.select("SparkOperator")
    assert engine.name == "Python" and "Spark runs are off" in note
    _, note = run_engines.select("SparkJob", spark_enabled=True, run_type="ExpireTags")
    assert "does not do ExpireTags" in note
    assert run_engines.select("Auto", spark_enabled=True) == (run_engines.select(None)[0], "")
    spec = PaimonMaintenanceRunSpec.model_validate({"tableRef": {"name": "orders"}, "type": "ExpireSnapshots"})
    request = sparkruns.launch_request(spec, "s3://lake/wh", "sales.orders",
                                     {"s3.endpoint": "http://minio", "s3.secret-key": "hidden"}, dry_run=True,
                                     run_name="tk-12345678-exp-abcd")
    assert request is not None and "s3.secret-key" not in request.options
    job = sparkruns.launch_manifest(request, engine="SparkJob", name="tk-12345678-exp-abcd", namespace="jobs",
                                  owner_name="run-1", owner_uid="u-1", image="tk:1", service_account="tk-spark",
                                  active_deadline_seconds=600)
    assert job["kind"] == "Job" and job["metadata"]["ownerReferences"][0]["kind"] == "PaimonMaintenanceRun"
    app = sparkruns.launch_manifest(request, engine="SparkOperator", name="tk-12345678-exp-abcd", namespace="jobs",
                                  owner_name="run-1", owner_uid="u-1", image="tk:1", service_account="tk-spark",
                                  active_deadline_seconds=600)
    assert app["kind"] == "SparkApplication" and app["spec"]["restartPolicy"] == {"type": "Never"}
    assert sparkruns.launch_request(spec.model_copy(update={"type": "ExpireTags"}), "s3://l/w", "a.b", {},
                                  dry_run=False) is None


# -- Kopf internals ----------------------------------------------------------------------------------

def test_kopf_internals_the_operator_relies_on() -> None:
    registry = kopf.OperatorRegistry()

    def tick(**_: Any) -> None:
        return None

    kopfcompat.timer(tick, "tablekeeper.io", "v1alpha1", "paimontags", registry=registry, interval=1)
    [handler] = registry._spawning._handlers
    assert handler.fn is tick and handler.requires_finalizer is False
    from kopf._core.intents import stoppers

    setter = stoppers.DaemonStopper()
    import asyncio

    async def stop() -> None:
        kopfcompat.stop_timer(setter.async_waiter)

    asyncio.run(stop())
    assert setter.is_set()
    from kopf._cogs.clients import api

    assert callable(api.get) and callable(api.post) and callable(api.patch) and callable(api.delete)


def test_event_posting_settings_follow_the_design() -> None:
    """§10.4: posting.level INFO; Kopf's per-handler log lines are not posted as Events (the
    controllers post theirs explicitly, Normal ones included: see the lifecycle tests)."""
    import logging

    from tablekeeper.operator import main

    settings = main.build_settings()
    assert settings.posting.level == logging.INFO
    assert settings.posting.enabled and not settings.posting.loggers
    assert settings.persistence.finalizer == "tablekeeper.io/finalizer"
