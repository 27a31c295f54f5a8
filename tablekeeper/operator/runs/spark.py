"""Spark runs of a ``PaimonMaintenanceRun``: launching the SparkApplication or batch Job, observing it,
and reading the job's JSON result artifact back (operator-design.md §7.7, spark-jobs.md §8).

The run controller (:mod:`tablekeeper.operator.runs.controller`) drives three steps:

1. **launch** (the run's ``execute`` step, :func:`launch_run`): for engine ``SparkOperator`` or
   ``SparkJob`` (or ``Auto`` when the plan-size estimate from the manifest lists is above
   ``TABLEKEEPER_SPARK_THRESHOLD``: then ``TABLEKEEPER_SPARK_ENGINE``; its default ``Detect``
   picks ``SparkOperator`` when the Spark Operator's ``SparkApplication`` CRD is installed, else
   ``SparkJob``, see :func:`auto_engine`), build the job request from
   the table's effective policy (:func:`launch_request`) and create
   the object (:func:`launch_manifest`). Its name is derived from the
   run's uid and attempt (``tk-<table-hash8>-<op3>-<hash4>``), so an operator restarted between the
   create and the status write finds the object it made: an object of that name that carries the
   run's uid (annotation ``tablekeeper.io/run-uid``) is **adopted**, never created a second time.
   The run records ``engine``, ``sparkApplicationRef`` or ``jobRef`` ``{name, namespace, state}``
   and ``artifact`` (where the job writes its result).
2. **observe** (the run's periodic check, :func:`fetch` + :func:`observe`): a SparkApplication's
   ``status.applicationState.state`` (``COMPLETED`` succeeded; ``FAILED`` -> ``SparkJobFailed``;
   ``SUBMISSION_FAILED`` -> ``SparkSubmissionFailed``, terminal because tablekeeper sets
   ``restartPolicy: Never``; anything else is still running), a Job's ``Complete`` / ``Failed``
   condition (a Job failed by its own ``activeDeadlineSeconds`` -> ``DeadlineExceeded``). A
   launched object that is gone -> ``SparkApplicationMissing``. The run's own deadline is
   enforced by the controller (apps hang in ``SUBMITTED`` on ImagePullBackOff): the object is
   deleted and the run fails ``DeadlineExceeded``.
3. **result** (:func:`read_artifact`, then :func:`tablekeeper.operator.runs.report.from_artifact`): after a terminal state the artifact is
   read through the core FileIO with the catalog's options. Success needs the artifact: missing
   -> ``ResultArtifactMissing``, unreadable or written by another launch ->
   ``ResultArtifactInvalid``, ``status: Failed`` inside -> ``MaintenanceFailed``.

Artifacts live under ``TABLEKEEPER_SPARK_RESULTS`` (default ``<warehouse>/.tablekeeper/results``,
outside every table directory: unknown files inside a Paimon table confuse other tools), at
``<prefix>/<run namespace>/<launched name>.json``.

A launched object in the run's own namespace carries an ownerReference to the run (Kubernetes
garbage-collects it with the run). Kubernetes ignores owners in another namespace and deletes such
dependents, so an object in a separate Spark namespace (``TABLEKEEPER_SPARK_NAMESPACE``) carries only
the ``tablekeeper.io/run`` / ``tablekeeper.io/run-uid`` annotations, its own TTL, and is deleted by
the operator when the run is.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tablekeeper import reconcile
from tablekeeper.core import errors as core_errors
from tablekeeper.core import paimon
from tablekeeper.core.policy.specs import ClusterPaimonCatalogSpec, PaimonMaintenanceRunSpec, PaimonTableSpec
from tablekeeper.core.reclaim import expire
from tablekeeper.core.safety import trash
from tablekeeper.core.storage import join
from tablekeeper.operator import kopfcompat
from tablekeeper.operator.cluster.scopes import Scope, ScopePlan
from tablekeeper.operator.context import TableContext
from tablekeeper.operator.runs import schedule
from tablekeeper.operator.runs.context import RunContext
from tablekeeper.operator.runs.engines import SPARK_RUN_TYPES
from tablekeeper.operator.runs.request import dry_run_of
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.settings import SparkConfig
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import OperatorError
from tablekeeper.spark import engine_choice, job_request, k8s_manifests, result_artifact, run_names

__all__ = ["KINDS", "RUN_UID_ANNOTATION", "RUN_ANNOTATION", "RESULTS_DIR", "SPARK_APPLICATION_CRD", "Ref",
           "Launched", "Observation", "wants_spark", "auto_engine", "launch_name", "result_uri", "launch_run",
           "fetch", "observe", "delete", "read_artifact", "launch_request", "launch_manifest"]

#: engine -> (kind, API prefix, plural) of the launched object.
KINDS: Mapping[str, tuple[str, str, str]] = {
    "SparkOperator": ("SparkApplication", "/apis/sparkoperator.k8s.io/v1beta2", "sparkapplications"),
    "SparkJob": ("Job", "/apis/batch/v1", "jobs"),
}
_BY_KIND = {kind: (prefix, plural) for kind, prefix, plural in KINDS.values()}
#: kind -> the run status field that records it.
_REF_FIELDS = {"SparkApplication": "sparkApplicationRef", "Job": "jobRef"}
RUN_UID_ANNOTATION = "tablekeeper.io/run-uid"
RUN_ANNOTATION = "tablekeeper.io/run"
RESULTS_DIR = ".tablekeeper/results"
#: The Spark Operator's CRD; its presence makes ``Auto`` (``Detect``) launch SparkApplications.
SPARK_APPLICATION_CRD = "sparkapplications.sparkoperator.k8s.io"
_CRD_URL = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{SPARK_APPLICATION_CRD}"
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ref:
    """The launched object as the run's status records it."""

    kind: str
    name: str
    namespace: str
    state: str = ""

    @classmethod
    def of(cls, status: Mapping[str, Any]) -> Ref | None:
        """The object recorded in a run's status, if any."""
        for kind, key in _REF_FIELDS.items():
            value = status.get(key)
            if isinstance(value, Mapping) and value.get("name") and value.get("namespace"):
                return cls(kind, str(value["name"]), str(value["namespace"]), str(value.get("state") or ""))
        return None

    @property
    def field(self) -> str:
        return _REF_FIELDS[self.kind]

    @property
    def url(self) -> str:
        prefix, plural = _BY_KIND[self.kind]
        return f"{prefix}/namespaces/{self.namespace}/{plural}/{self.name}"

    @property
    def collection_url(self) -> str:
        prefix, plural = _BY_KIND[self.kind]
        return f"{prefix}/namespaces/{self.namespace}/{plural}"

    def as_status(self) -> dict[str, str]:
        return {"name": self.name, "namespace": self.namespace, "state": self.state}

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class Launched:
    """A launched (created or adopted) object and what the run records about it."""

    engine: str
    ref: Ref
    artifact: str
    adopted: bool
    dry_run: bool


@dataclass(frozen=True)
class Observation:
    """What the launched object says: ``state`` (SparkApplication state or Job condition),
    whether it is over, and if so how (``reason`` / ``message`` of a failure)."""

    state: str
    terminal: bool = False
    succeeded: bool = False
    reason: str = ""
    message: str = ""


# -- building the request and the object ---------------------------------------------------------
_OPERATIONS: Mapping[str, job_request.Operation] = {"ExpireSnapshots": "expire", "RemoveOrphanFiles": "clean-orphans"}


def launch_request(spec: PaimonMaintenanceRunSpec, warehouse: str, identifier: str, options: Mapping[str, str], *,
                   dry_run: bool, run_name: str | None = None, policy: Mapping[str, Any] | None = None,
                   result: str | None = None, secret_keys: Collection[str] = (),
                   trash_run: Mapping[str, Any] | None = None) -> job_request.JobRequest | None:
    """The Spark job request of a run, or None for types the Spark job does not do. Options
    carrying credentials are left out; ``secret_keys`` (the keys of the catalog's Secret when it is
    mounted into the pods) go by *name* only, as ``env_options``: the pods read their values from
    the Secret, mounted as environment variables of the same names. ``policy``: the
    table's effective policy values (``snapshots.minRetained``...), passed on as the job's
    thresholds; ``result``: where the job writes its artifact; ``trash_run``: the trash run the
    job's deletes move into (the table's ``trash.keep``).

    ``ExpireSnapshots`` does what the in-process run does (:data:`RUN_KINDS`): snapshot
    expiration, then (unless ``changelog.state`` is ``Disabled``) expiration of the decoupled
    changelog, in one job (``with_changelog``), both with the retention the planner plans them with
    (``retention_settings.from_policy``: values, limit, decoupled rule) and in as many
    ``expireLimit`` batches as an in-process run (``batches``)."""
    operation = _OPERATIONS.get(spec.type)
    if operation is None:
        return None
    safe = {k: v for k, v in options.items() if not job_request.is_secret_option(k) and k not in secret_keys}
    extra_env = tuple(sorted(k for k in options if k in secret_keys))
    v = policy or {}
    extra: dict[str, Any] = {}
    if operation == "expire":
        extra["batches"] = reconcile.ReconcileConfig().max_batches  # as many batches as an in-process run
    if operation == "expire" and v:
        extra["retention"] = expire.from_policy(v)  # what the planner plans ExpireSnapshots with
        if v.get("changelog.state") != "Disabled":
            extra["with_changelog"] = True
    elif operation == "clean-orphans" and v.get("orphanFiles.olderThan") is not None:
        extra["older_than"] = str(v["orphanFiles.olderThan"])
    if operation == "clean-orphans" and v.get("orphanFiles.listing") is not None:
        extra["listing"] = str(v["orphanFiles.listing"])  # the driver reads the inventory
    return job_request.JobRequest(operation=operation, warehouse=warehouse, table=identifier, branch=spec.branch,
                             options=safe, dry_run=dry_run, run_name=run_name, result=result,
                             env_options=extra_env, trash_run=trash_run, **extra)


def launch_manifest(request: job_request.JobRequest, *, engine: str, name: str, namespace: str, owner_name: str,
                    owner_uid: str, image: str, service_account: str, active_deadline_seconds: int,
                    ttl_seconds_after_finished: int = 604800,
                    spark_version: str = k8s_manifests.IMAGE_SPARK_VERSION,
                    credentials_secret: str | None = None, driver: k8s_manifests.SparkResources | None = None,
                    executor: k8s_manifests.SparkResources | None = None,
                    spark_conf: Mapping[str, str] | None = None,
                    paths: k8s_manifests.JobImage | None = None) -> dict[str, Any]:
    """The ``batch/v1`` Job (``SparkJob``) or ``SparkApplication`` (``SparkOperator``) that runs
    ``request``, owned by the run."""
    owner = k8s_manifests.OwnerReference(name=owner_name, uid=owner_uid)
    if engine == "SparkOperator":
        return k8s_manifests.spark_application_manifest(
            request, name=name, namespace=namespace, owner=owner, image=image, spark_version=spark_version,
            service_account=service_account, active_deadline_seconds=active_deadline_seconds,
            ttl_seconds_after_finished=ttl_seconds_after_finished, credentials_secret=credentials_secret,
            driver=driver, executor=executor, spark_conf=spark_conf, paths=paths)
    return k8s_manifests.job_manifest(
        request, name=name, namespace=namespace, owner=owner, image=image, service_account=service_account,
        active_deadline_seconds=active_deadline_seconds, ttl_seconds_after_finished=ttl_seconds_after_finished,
        credentials_secret=credentials_secret, driver=driver, executor=executor, spark_conf=spark_conf, paths=paths)


def wants_spark(config: SparkConfig, requested: str | None, spec: PaimonMaintenanceRunSpec) -> bool:
    """Whether a run may go to Spark: Spark runs are on, the engine is not ``Python``, and the job
    does the run's type (on ``main``; the job's orphan cleanup covers the whole table)."""
    return (config.enabled and requested not in (None, "Python") and spec.type in SPARK_RUN_TYPES
            and spec.branch == paimon.MAIN)


async def auto_engine(rt: Runtime) -> str:
    """What ``Auto`` launches above the threshold: ``TABLEKEEPER_SPARK_ENGINE`` when it names an
    engine; for ``Detect``, ``SparkOperator`` when the API server has the
    ``sparkapplications.sparkoperator.k8s.io`` CRD (one GET by name; the answer is cached for
    ``TABLEKEEPER_SPARK_DETECT_TTL`` seconds), else ``SparkJob``. An API error other than 404
    (no permission, server trouble) is not cached and picks ``SparkJob``."""
    config = rt.config.spark
    if config.auto_engine != "Detect":
        return config.auto_engine
    now = time.monotonic()
    cached = rt.spark_operator_installed
    if cached is not None and cached[0] > now:
        return "SparkOperator" if cached[1] else "SparkJob"
    try:
        await rt.api.get(_CRD_URL)
        installed = True
    except kopfcompat.NotFound:
        installed = False
    except kopfcompat.ApiError as e:
        log.warning("cannot tell whether the Spark Operator is installed (%s); Auto uses SparkJob", e)
        return "SparkJob"
    rt.spark_operator_installed = (now + config.detect_ttl, installed)
    return "SparkOperator" if installed else "SparkJob"


def launch_name(table_identity: str, operation: str, run_uid: str, attempt: int) -> str:
    """``tk-<table-hash8>-<op3>-<hash4>``: unique per run and attempt, and the same for both, so a
    restarted operator derives the name of the object it may already have created."""
    digest = hashlib.sha256(f"{run_uid}:{attempt}".encode()).digest()
    suffix = "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:4])
    return run_names.run_name(table_identity, operation, suffix=suffix)


def result_uri(config: SparkConfig, warehouse: str, namespace: str, name: str) -> str:
    """Where the launched job ``name`` of a run in ``namespace`` writes its result artifact."""
    prefix = config.results or join(warehouse, RESULTS_DIR)
    return join(prefix, namespace, f"{name}.json")


def _credentials_secret(scope: Scope, namespace: str, operator_namespace: str) -> str | None:
    """The catalog's credentials Secret when it lives where the job runs (pods can only use
    Secrets of their own namespace); otherwise the job relies on pod identity (IRSA...)."""
    catalog = scope.table.catalog
    ref = catalog.spec.credentials_secret_ref
    if ref is None:
        return None
    if isinstance(catalog.spec, ClusterPaimonCatalogSpec):
        where = getattr(ref, "namespace", None) or operator_namespace
    else:
        where = catalog.obj.namespace or operator_namespace
    return ref.name if where == namespace else None


def _resources(table: PaimonTableSpec) -> tuple[k8s_manifests.SparkResources | None, k8s_manifests.SparkResources | None,
                                                 dict[str, str], str | None, str | None]:
    """(driver, executor, conf, image, sparkVersion) from ``PaimonTable.spec.maintenance.spark``."""
    spark = table.maintenance.spark if table.maintenance is not None else None
    if spark is None:
        return None, None, {}, None, None
    base_driver, base_executor = k8s_manifests.SparkResources(instances=1), k8s_manifests.SparkResources()
    driver = executor = None
    if spark.driver is not None:
        driver = k8s_manifests.SparkResources(cores=spark.driver.cores or base_driver.cores,
                                       memory=spark.driver.memory or base_driver.memory, instances=1)
    if spark.executor is not None:
        executor = k8s_manifests.SparkResources(cores=spark.executor.cores or base_executor.cores,
                                         memory=spark.executor.memory or base_executor.memory,
                                         instances=spark.executor.instances or base_executor.instances)
    return driver, executor, dict(spark.conf), spark.image, spark.spark_version


def _plan(table: TableContext, now: datetime, estimate: bool,
          plan: ScopePlan | None) -> tuple[ScopePlan, int | None]:
    """The table's effective policy (an observation without a tag/branch plan, unless the step
    made one already) and, for ``Auto``, the plan-size estimate. Blocking."""
    if plan is None:
        plan = table.plan(now, objects=False)
    return plan, (engine_choice.estimate_plan_size(plan.table) if estimate else None)


async def launch_run(rt: Runtime, ctx: RunContext, *, now: datetime, plan: ScopePlan | None = None) -> Launched | None:
    """Create (or adopt) the Spark object of a run; None when the run executes in process
    (``Auto`` below the threshold, or the policy leaves nothing for this run type to do).
    ``plan``: the table's observation the step made already (objects not planned), if any.

    Raises:
        OperatorError: ``TableNotReady`` (temporary), ``SparkSubmissionFailed`` (the object cannot
            be built, or its name is taken by another run's object; permanent; the API refused
            it: temporary).
        TablekeeperError, OSError: reading the table's metadata failed.
    """
    config = rt.config.spark
    obj, spec, requested = ctx.run, ctx.spec, ctx.engine
    table = ctx.require_table()
    scope = table.scope
    observed, size = await asyncio.to_thread(_plan, table, now, requested == "Auto", plan)
    job = next(j for j in schedule.JOBS if j.run_type == spec.type)
    if not schedule.enabled(job, scope.table.spec, observed.policy):
        return None  # in process: "nothing to do", exactly as a Python run reports it
    engine = requested
    if requested == "Auto":
        if size is None or size <= config.threshold:
            return None
        engine = await auto_engine(rt)
    namespace = config.namespace or obj.namespace or rt.config.operator_namespace
    operation = "expire" if spec.type == "ExpireSnapshots" else "clean-orphans"
    identity = "/".join(scope.identity)
    attempt = int(obj.status.get("attempts") or 1)
    name = launch_name(identity, operation, obj.uid, attempt)
    artifact = result_uri(config, scope.location.warehouse, obj.namespace or namespace, name)
    dry_run = dry_run_of(spec, observed.policy.values)
    secret = _credentials_secret(scope, namespace, rt.config.operator_namespace)
    window = None if dry_run else trash.policy_window(observed.policy.values)
    trash_run = None
    if window is not None:  # the table's trash.keep: the job moves what it removes into one trash run
        with trash.keeping(observed.table.file_io, observed.table.root, operation, window,
                           table=scope.location.identifier) as kept:
            trash_run = kept.spec() if kept is not None else None
    request = launch_request(spec, scope.location.warehouse, scope.location.identifier, scope.options,
                             dry_run=dry_run, run_name=name, policy=observed.policy.values, result=artifact,
                             secret_keys=tuple(await rt.secret(namespace, secret)) if secret else (),
                             trash_run=trash_run)
    assert request is not None  # spec.type is one of engines.SPARK_RUN_TYPES
    driver, executor, conf, image, version = _resources(scope.table.spec)
    try:
        manifest = launch_manifest(
            request, engine=engine, name=name, namespace=namespace, owner_name=obj.name, owner_uid=obj.uid,
            image=image or config.image, service_account=config.service_account,
            active_deadline_seconds=ctx.deadline_seconds, ttl_seconds_after_finished=config.ttl_seconds,
            spark_version=version or config.spark_version, credentials_secret=secret, driver=driver,
            executor=executor, spark_conf=conf, paths=config.paths)
    except core_errors.InvalidInputError as e:  # credentials in options, bad memory syntax...
        raise OperatorError(Reason.SPARK_SUBMISSION_FAILED, f"cannot build the {engine} object: {e.message}") from e
    meta = manifest["metadata"]
    meta.setdefault("annotations", {}).update({RUN_UID_ANNOTATION: obj.uid,
                                               RUN_ANNOTATION: f"{obj.namespace}/{obj.name}"})
    if namespace != obj.namespace:
        meta.pop("ownerReferences", None)  # cross-namespace owners are ignored and the dependent deleted
    kind = KINDS[engine][0]
    ref = Ref(kind, name, namespace, observe(kind, {}).state)  # what a poll says until the object reports
    # Under the table's lock: a tag or branch change in flight finishes before the launch; from
    # here on they wait for the run (claims.spark_run_in_flight).
    async with rt.table_lock(table.identity):
        adopted = await _create_or_adopt(rt.api, ref, manifest, obj.uid)
    await rt.step("run/launched", obj.ref)  # test seam: a restart before the run records the object
    return Launched(engine, ref, artifact, adopted, dry_run)


async def _create_or_adopt(api: kopfcompat.Api, ref: Ref, manifest: Mapping[str, Any], run_uid: str) -> bool:
    """Create the object, or adopt the one of that name this run created before (True)."""
    for _ in range(2):
        existing = await fetch(api, ref)
        if existing is not None:
            owner = ((existing.get("metadata") or {}).get("annotations") or {}).get(RUN_UID_ANNOTATION)
            if owner != run_uid:
                raise OperatorError(Reason.SPARK_SUBMISSION_FAILED,
                                    f"{ref} exists and belongs to another run (uid {owner})")
            return True
        try:
            await api.create(ref.collection_url, manifest)
            return False
        except kopfcompat.Conflict:
            continue  # 409 AlreadyExists: created meanwhile (by ourselves before a restart): look again
        except kopfcompat.ApiError as e:
            raise OperatorError(Reason.SPARK_SUBMISSION_FAILED, f"creating {ref} failed: {e}", temporary=True) from e
    raise OperatorError(Reason.SPARK_SUBMISSION_FAILED, f"{ref} could not be created or read", temporary=True)


async def fetch(api: kopfcompat.Api, ref: Ref) -> dict[str, Any] | None:
    """The launched object, or None when it does not exist.

    Raises:
        ApiError: any other API error.
    """
    try:
        return await api.get(ref.url)
    except kopfcompat.NotFound:
        return None


async def delete(api: kopfcompat.Api, ref: Ref) -> None:
    """Delete the launched object (stops a hung application; gone already is fine)."""
    await api.delete(ref.url)


_SPARK_FAILED = {"FAILED": Reason.SPARK_JOB_FAILED, "SUBMISSION_FAILED": Reason.SPARK_SUBMISSION_FAILED}


def observe(kind: str, body: Mapping[str, Any]) -> Observation:
    """Map the launched object's status (see the module docstring)."""
    status = body.get("status") or {}
    if kind == "SparkApplication":
        app = status.get("applicationState") or {}
        state = str(app.get("state") or "")
        if state == "COMPLETED":
            return Observation(state, terminal=True, succeeded=True)
        if state in _SPARK_FAILED:
            detail = str(app.get("errorMessage") or "no errorMessage")
            return Observation(state, terminal=True, reason=_SPARK_FAILED[state],
                               message=f"SparkApplication {state}: {detail}")
        return Observation(state or "NEW")
    for cond in status.get("conditions") or ():
        if cond.get("status") != "True":
            continue
        if cond.get("type") == "Complete":
            return Observation("Complete", terminal=True, succeeded=True)
        if cond.get("type") == "Failed":
            job_reason = str(cond.get("reason") or "")
            reason = Reason.DEADLINE_EXCEEDED if job_reason == "DeadlineExceeded" else Reason.SPARK_JOB_FAILED
            return Observation("Failed", terminal=True, reason=reason,
                               message=f"Job failed ({job_reason or 'no reason'}): {cond.get('message') or ''}".rstrip(": "))
    return Observation("Active" if status.get("active") else "Pending")


def read_artifact(uri: str, options: Mapping[str, str], expected_name: str) -> result_artifact.RunResult:
    """Read and check the artifact of launch ``expected_name``. Blocking.

    Raises:
        FileNotFoundError: no artifact (the job did not get far enough to write one).
        FormatError: not an artifact, or one written by another launch.
        StorageError, OSError: the storage could not be read.
    """
    artifact = result_artifact.read_result(uri, options)
    if artifact.run_name != expected_name:
        raise core_errors.FormatError(f"result artifact at {uri} was written by {artifact.run_name!r}, "
                                      f"not {expected_name!r}", fix="check TABLEKEEPER_SPARK_RESULTS")
    return artifact
