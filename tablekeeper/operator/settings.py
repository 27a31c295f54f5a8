"""The operator's own configuration (not Kopf's): intervals, jitter, retry backoff, defaults,
finalizer switch, the operator's namespace, and the test seams (clock, step hook).

One frozen :class:`OperatorConfig`, read once from the environment by :meth:`OperatorConfig.from_env`
(the Helm chart sets the variables; ``tablekeeper operator`` reads them), passed explicitly to
:func:`tablekeeper.operator.main.register`. Kopf's settings (watch timeouts, finalizer name,
annotation storages) live in :func:`tablekeeper.operator.main.build_settings`.

=====================================  ==========================================  =============
variable                               meaning                                     default
=====================================  ==========================================  =============
``TABLEKEEPER_RECONCILE_INTERVAL``     seconds between level checks of every CR    300
``TABLEKEEPER_TIMER_IDLE``             a CR must be unchanged this long first      10
``TABLEKEEPER_INITIAL_JITTER``         max random delay of the first check         30
``TABLEKEEPER_SCHEDULE_JITTER``        max random delay added to ``nextRunTime``   60
``TABLEKEEPER_RETRY_BASE_DELAY``       first retry delay (then doubled)            10
``TABLEKEEPER_RETRY_MAX_DELAY``        longest retry delay                         600
``TABLEKEEPER_DEFAULT_DELETION_POLICY``  tags/branches without ``deletionPolicy``  Delete
``TABLEKEEPER_USE_FINALIZERS``         ``false``: never add finalizers             true
``TABLEKEEPER_MAX_CONCURRENT_RUNS``    maintenance runs at once (all tables)       4
``TABLEKEEPER_CACHE_TTL``              seconds Secrets/Namespaces are cached       30
``TABLEKEEPER_MISSING_TABLE_GRACE``    seconds a run waits for its PaimonTable to  60
                                       exist before it fails ``TableNotFound``
``POD_NAMESPACE``                      the operator's namespace                    default
``TABLEKEEPER_PROTECTED_TABLE_OPTIONS``  table options never written (comma list)  (empty)
``TABLEKEEPER_MATERIALIZE_POLICY_TAGS``  policy auto tags also become PaimonTags    false
``TABLEKEEPER_SPARK_IMAGE``            image of Spark runs; empty = no Spark runs  (empty)
``TABLEKEEPER_SPARK_VERSION``          Spark version of that image                 4.0.1
``TABLEKEEPER_SPARK_MAIN_FILE``        the job's main file in that image           /opt/tablekeeper/job.py
``TABLEKEEPER_SPARK_PYTHON``           the Python of that image                    /usr/bin/python3
``TABLEKEEPER_SPARK_SUBMIT``           spark-submit in that image (SparkJob)       /opt/spark/bin/spark-submit
``TABLEKEEPER_SPARK_NAMESPACE``        where Spark objects go; empty = the run's   (empty)
``TABLEKEEPER_SPARK_SERVICE_ACCOUNT``  service account of the Spark driver         tablekeeper-spark
``TABLEKEEPER_SPARK_ENGINE``           what ``Auto`` picks above the threshold:    Detect
                                       ``Detect`` (SparkOperator when the
                                       SparkApplication CRD is installed, else
                                       SparkJob), ``SparkOperator``, ``SparkJob``
``TABLEKEEPER_SPARK_DETECT_TTL``       seconds the CRD detection is cached         300
``TABLEKEEPER_SPARK_THRESHOLD``        live files above which ``Auto`` uses Spark  500000
``TABLEKEEPER_SPARK_RESULTS``          prefix of result artifacts; empty =         (empty)
                                       ``<warehouse>/.tablekeeper/results``
``TABLEKEEPER_SPARK_TTL``              seconds a finished Job/SparkApplication     86400
                                       is kept
=====================================  ==========================================  =============
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Literal

from tablekeeper.core import errors
from tablekeeper.spark import k8s_manifests

__all__ = ["OperatorConfig", "SparkConfig", "SparkEngine", "AutoEngine", "StepHook", "utcnow"]

#: The engines that launch Spark (``PaimonMaintenanceRun.spec.engine``).
SparkEngine = Literal["SparkOperator", "SparkJob"]
#: What ``Auto`` launches above the threshold: ``Detect`` asks the API server whether the Spark
#: Operator's SparkApplication CRD is installed (:func:`tablekeeper.operator.runs.spark.auto_engine`).
AutoEngine = Literal["Detect", "SparkOperator", "SparkJob"]

#: ``await hook(step, ref)`` before each storage-changing handler step (fault injection in tests).
StepHook = Callable[[str, str], Awaitable[None]]


def utcnow() -> datetime:
    """The current time, timezone-aware (UTC)."""
    return datetime.now(timezone.utc)


def _float(env: Mapping[str, str], key: str, default: float, minimum: float = 0.0) -> float:
    raw = env.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError as e:
        raise errors.InvalidInputError(f"{key}={raw!r} is not a number", fix=f"e.g. {key}={default}") from e
    if value < minimum:
        raise errors.InvalidInputError(f"{key}={raw!r} is below {minimum}", fix=f"e.g. {key}={default}")
    return value


def _bool(env: Mapping[str, str], key: str, default: bool) -> bool:
    raw = env.get(key)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise errors.InvalidInputError(f"{key}={raw!r} is not a boolean", fix=f"{key}=true or {key}=false")


def _int(env: Mapping[str, str], key: str, default: int, minimum: int = 0) -> int:
    value = _float(env, key, default, minimum)
    if value != int(value):
        raise errors.InvalidInputError(f"{key}={env.get(key)!r} is not an integer", fix=f"e.g. {key}={default}")
    return int(value)


@dataclass(frozen=True)
class SparkConfig:
    """How the operator launches Spark runs (``TABLEKEEPER_SPARK_*``, see the module docstring).

    Without an image, Spark runs are off: every run executes in the operator process, and a run
    that asks for ``SparkOperator`` or ``SparkJob`` says so in its status."""

    image: str = ""
    spark_version: str = k8s_manifests.IMAGE_SPARK_VERSION
    #: Where the image has the main file, Python and spark-submit (default: the project's job image).
    paths: k8s_manifests.JobImage = field(default_factory=k8s_manifests.JobImage)
    #: Namespace of the launched objects; empty = the run's own namespace. In another namespace
    #: the object cannot carry an ownerReference (Kubernetes ignores cross-namespace owners and
    #: garbage-collects the dependent), so the operator deletes it itself.
    namespace: str = ""
    service_account: str = "tablekeeper-spark"
    auto_engine: AutoEngine = "Detect"
    #: Seconds the answer of the CRD detection (``auto_engine="Detect"``) is cached.
    detect_ttl: float = 300.0
    threshold: int = 500_000
    results: str = ""
    ttl_seconds: int = 86400

    @property
    def enabled(self) -> bool:
        return bool(self.image)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SparkConfig:
        """Raises:
            InvalidInputError: a variable has an unusable value."""
        engine = env.get("TABLEKEEPER_SPARK_ENGINE") or "Detect"
        if engine not in ("Detect", "SparkOperator", "SparkJob"):
            raise errors.InvalidInputError(
                f"TABLEKEEPER_SPARK_ENGINE={engine!r} is not Detect, SparkOperator or SparkJob",
                fix="use Detect (SparkOperator when its CRD is installed), SparkOperator or SparkJob")
        auto: AutoEngine = ("SparkOperator" if engine == "SparkOperator"
                            else "SparkJob" if engine == "SparkJob" else "Detect")
        return cls(
            image=env.get("TABLEKEEPER_SPARK_IMAGE") or "",
            spark_version=env.get("TABLEKEEPER_SPARK_VERSION") or k8s_manifests.IMAGE_SPARK_VERSION,
            paths=k8s_manifests.JobImage(
                main_file=env.get("TABLEKEEPER_SPARK_MAIN_FILE") or k8s_manifests.IMAGE_MAIN_FILE,
                python=env.get("TABLEKEEPER_SPARK_PYTHON") or k8s_manifests.IMAGE_PYTHON,
                spark_submit=env.get("TABLEKEEPER_SPARK_SUBMIT") or k8s_manifests.IMAGE_SPARK_SUBMIT),
            namespace=env.get("TABLEKEEPER_SPARK_NAMESPACE") or "",
            service_account=env.get("TABLEKEEPER_SPARK_SERVICE_ACCOUNT") or "tablekeeper-spark",
            auto_engine=auto,
            detect_ttl=_float(env, "TABLEKEEPER_SPARK_DETECT_TTL", 300.0),
            threshold=_int(env, "TABLEKEEPER_SPARK_THRESHOLD", 500_000),
            results=(env.get("TABLEKEEPER_SPARK_RESULTS") or "").rstrip("/"),
            ttl_seconds=_int(env, "TABLEKEEPER_SPARK_TTL", 86400),
        )


@dataclass(frozen=True)
class OperatorConfig:
    """Configuration of the controllers (see the module docstring for the environment)."""

    reconcile_interval: float = 300.0
    timer_idle: float = 10.0
    initial_jitter: float = 30.0
    schedule_jitter: float = 60.0
    retry_base_delay: float = 10.0
    retry_max_delay: float = 600.0
    default_deletion_policy: Literal["Delete", "Retain"] = "Delete"
    use_finalizers: bool = True
    max_concurrent_runs: int = 4
    cache_ttl: float = 30.0
    #: Seconds a maintenance run waits for the PaimonTable its ``tableRef`` names to exist (it
    #: may be applied in the same batch) before it fails with ``TableNotFound``.
    missing_table_grace: float = 60.0
    operator_namespace: str = "default"
    #: Table options the operator never writes, whatever a policy says (Helm
    #: ``operator.protectedTableOptions``; Strimzi's unalterable list).
    protected_table_options: frozenset[str] = frozenset()
    #: Policy auto tags are also materialised as PaimonTag CRs (``trigger-type=Policy``, owned by
    #: the PaimonTable); off: only summarised in the table's status (operator-design.md §4.3).
    materialize_policy_tags: bool = False
    spark: SparkConfig = field(default_factory=SparkConfig)
    #: The clock every decision uses (schedules, TTLs); tests pass a fake one.
    clock: Callable[[], datetime] = field(default=utcnow, compare=False)
    #: Fault injection: awaited before each storage-changing step (tests only).
    step_hook: StepHook | None = field(default=None, compare=False)

    def retry_delay(self, failures: int) -> float:
        """Backoff after the ``failures``-th failure: base·2^(n−1), capped (FlinkStateSnapshot)."""
        exponent = max(0, failures - 1)
        return float(min(self.retry_max_delay, self.retry_base_delay * (2 ** min(exponent, 30))))

    def now(self) -> datetime:
        """The configured clock's current time (timezone-aware)."""
        value = self.clock()
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorConfig:
        """Read the configuration from the environment.

        Raises:
            InvalidInputError: a variable has an unusable value.
        """
        env = os.environ if env is None else env
        policy = env.get("TABLEKEEPER_DEFAULT_DELETION_POLICY") or "Delete"
        if policy not in ("Delete", "Retain"):
            raise errors.InvalidInputError(f"TABLEKEEPER_DEFAULT_DELETION_POLICY={policy!r} is not Delete or Retain",
                                           fix="use Delete or Retain")
        return cls(
            reconcile_interval=_float(env, "TABLEKEEPER_RECONCILE_INTERVAL", 300.0, 0.05),
            timer_idle=_float(env, "TABLEKEEPER_TIMER_IDLE", 10.0),
            initial_jitter=_float(env, "TABLEKEEPER_INITIAL_JITTER", 30.0),
            schedule_jitter=_float(env, "TABLEKEEPER_SCHEDULE_JITTER", 60.0),
            retry_base_delay=_float(env, "TABLEKEEPER_RETRY_BASE_DELAY", 10.0, 0.01),
            retry_max_delay=_float(env, "TABLEKEEPER_RETRY_MAX_DELAY", 600.0, 0.01),
            default_deletion_policy="Retain" if policy == "Retain" else "Delete",
            use_finalizers=_bool(env, "TABLEKEEPER_USE_FINALIZERS", True),
            max_concurrent_runs=int(_float(env, "TABLEKEEPER_MAX_CONCURRENT_RUNS", 4, 1)),
            cache_ttl=_float(env, "TABLEKEEPER_CACHE_TTL", 30.0),
            missing_table_grace=_float(env, "TABLEKEEPER_MISSING_TABLE_GRACE", 60.0),
            operator_namespace=env.get("POD_NAMESPACE") or "default",
            protected_table_options=frozenset(
                k.strip() for k in (env.get("TABLEKEEPER_PROTECTED_TABLE_OPTIONS") or "").split(",") if k.strip()),
            materialize_policy_tags=_bool(env, "TABLEKEEPER_MATERIALIZE_POLICY_TAGS", False),
            spark=SparkConfig.from_env(env),
        )
