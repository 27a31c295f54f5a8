"""How a tablekeeper Spark job is launched and what it leaves behind — without importing pyspark.

The operator and the CLI import this module; only the driver (``tablekeeper.spark.job``) and the
executors (``tablekeeper.spark.executor``) need Spark. It holds:

- ``JobRequest``: what one run does (operation, table, policy overrides, dry run), with its
  command-line form (``to_args`` / ``parse_args``, shared by ``python -m tablekeeper.spark``);
- ``run_name``: unique, short (<= ``safety.SPARK_NAME_MAX``) DNS-1123 names for runs, Spark
  applications, Jobs and executor pods (spark-operator issues #2509, #1566);
- builders: ``spark_submit_argv`` (a local spark-submit process), ``job_manifest`` (a
  ``batch/v1`` Job running spark-submit in client mode inside the pod) and
  ``spark_application_manifest`` (``sparkoperator.k8s.io/v1beta2``); both manifests carry an
  ownerReference to the ``PaimonMaintenanceRun``, labels, a deadline and a TTL;
- the JSON result artifact: ``RunResult`` (schema version ``RESULT_SCHEMA_VERSION``),
  ``write_result`` and ``read_result`` (local path or any FileIO URI such as ``s3://``).
  The operator reads the artifact after a terminal state, never logs (spark-jobs.md §8.3).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import secrets
import string
import sys
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from tablekeeper.core import errors, safety
from tablekeeper.core.paimon import layout, manifests
from tablekeeper.core.paimon.table import Table
from tablekeeper.core.storage import FileIO, join
from tablekeeper.core.storage import secrets as storage_secrets
from tablekeeper.core.storage import stores as storage_stores

__all__ = [
    "OPERATIONS",
    "Operation",
    "JobRequest",
    "parse_args",
    "argument_parser",
    "run_name",
    "OwnerReference",
    "SparkResources",
    "package_root",
    "build_pyfiles_zip",
    "spark_submit_argv",
    "local_spark_home",
    "local_submit_env",
    "default_spark_submit",
    "job_manifest",
    "spark_application_manifest",
    "RESULT_SCHEMA_VERSION",
    "RESULT_KIND",
    "RunResult",
    "write_result",
    "read_result",
    "is_secret_option",
    "DEFAULT_SPARK_THRESHOLD",
    "THRESHOLD_ENV",
    "estimate_plan_size",
]

Operation = Literal["expire", "expire-changelog", "clean-orphans"]
OPERATIONS: tuple[Operation, ...] = ("expire", "expire-changelog", "clean-orphans")
_ACTION_CODES: Mapping[str, str] = {"expire": "exp", "expire-changelog": "ecl", "clean-orphans": "orp"}

SPARK_APPLICATION_API = "sparkoperator.k8s.io/v1beta2"
RUN_LABEL = "tablekeeper.io/run"
TABLE_LABEL = "tablekeeper.io/table"
TYPE_LABEL = "tablekeeper.io/type"
DEADLINE_ANNOTATION = "tablekeeper.io/active-deadline-seconds"
#: Default location of the driver entry point inside a job image.
IMAGE_MAIN_FILE = "/opt/tablekeeper/tablekeeper/spark/__main__.py"
#: Keys of ``credentials_secret`` handed to executor pods as environment variables.
_CREDENTIAL_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
_RUN_TYPES: Mapping[str, str] = {"expire": "ExpireSnapshots", "expire-changelog": "ExpireSnapshots",
                                 "clean-orphans": "RemoveOrphanFiles"}


#: Estimated live data files above which ``auto`` picks Spark (measured by ``bench/spark.py``;
#: see ``tablekeeper.spark.engine``). The operator and ``tablekeeper.spark.engine`` share it.
DEFAULT_SPARK_THRESHOLD = 500_000
THRESHOLD_ENV = "TABLEKEEPER_SPARK_THRESHOLD"


def estimate_plan_size(table: Table) -> int:
    """Live data files of the latest snapshot of main (manifest-list counters: added - deleted)
    plus its manifests: what a full read of one root costs. Orphan cleanup reads at least that
    (and lists as many files); expiration's protection sets read it per retained branch. Two
    small manifest-list reads; the engine choice of ``auto`` (CLI) and ``Auto`` (operator)."""
    main = table.on_branch(layout.MAIN)
    latest = main.latest_snapshot()
    if latest is None:
        return 0
    manifest_dir = main.shared_dir(layout.MANIFEST_DIR)
    total = 0
    for name in (latest.base_manifest_list, latest.delta_manifest_list):
        if not name:
            continue
        for meta in manifests.read_manifest_list(main.file_io, join(manifest_dir, name)):
            total += meta.num_added_files - meta.num_deleted_files + 1
    return max(total, 0)


# -- the request -------------------------------------------------------------------------------
@dataclass(frozen=True)
class JobRequest:
    """One maintenance run. ``options`` are storage options in Paimon syntax (``s3.endpoint``...);
    on Kubernetes, credentials come from the pod environment, never from here."""

    operation: Operation
    warehouse: str
    table: str
    branch: str = layout.MAIN
    options: Mapping[str, str] = field(default_factory=dict)
    dry_run: bool = False
    older_than: str | None = None
    force: bool = False
    now_ms: int | None = None
    retain_min: int | None = None
    retain_max: int | None = None
    time_retained: str | None = None
    expire_limit: int | None = None
    parallelism: int | None = None
    batch_size: int = safety.DELETE_BATCH_DEFAULT
    run_name: str | None = None
    result: str | None = None
    #: ``expire`` only: afterwards also expire the decoupled (long-lived) changelog in the same
    #: job, as the operator's ``ExpireSnapshots`` runs do in process (ExpireSnapshots +
    #: ExpireChangelog); the artifact sums both steps (``details["changelog"]`` has the second's).
    with_changelog: bool = False
    #: Changelog retention (``changelog.num-retained.*``, ``changelog.time-retained``); None = the
    #: table's options. Given, they also decide whether the changelog is decoupled for ``expire``.
    changelog_retain_min: int | None = None
    changelog_retain_max: int | None = None
    changelog_time_retained: str | None = None
    #: ``expire`` / ``expire-changelog``: run up to this many batches (``--max-deletes`` snapshots
    #: or changelogs each) while the previous one expired something, as the operator's in-process
    #: runs do; a dry run plans one.
    batches: int = 1

    def __post_init__(self) -> None:
        if self.operation not in OPERATIONS:
            raise errors.InvalidInputError(f"unknown operation {self.operation!r}",
                                           fix=f"use one of {', '.join(OPERATIONS)}")
        if not 1 <= self.batch_size <= safety.DELETE_BATCH_MAX:
            raise errors.InvalidInputError(f"batch size {self.batch_size} is outside 1..{safety.DELETE_BATCH_MAX}",
                                           fix=f"e.g. {safety.DELETE_BATCH_DEFAULT}")
        if self.parallelism is not None and self.parallelism < 1:
            raise errors.InvalidInputError("parallelism must be >= 1", fix="omit it for Spark's default")
        if self.batches < 1:
            raise errors.InvalidInputError(f"batches must be >= 1, got {self.batches}", fix="omit it for one batch")
        if self.operation == "clean-orphans" and self.branch != layout.MAIN:
            raise errors.InvalidInputError("orphan cleanup always covers the whole table (every branch)",
                                           fix="drop --branch")
        if self.with_changelog and self.operation != "expire":
            raise errors.InvalidInputError("--with-changelog goes with --operation expire",
                                           fix="use --operation expire-changelog for the changelog alone")
        changelog = (self.changelog_retain_min, self.changelog_retain_max, self.changelog_time_retained)
        if self.operation == "clean-orphans" and any(v is not None for v in changelog):
            raise errors.InvalidInputError("changelog retention is for expire and expire-changelog",
                                           fix="drop the --changelog-* options")

    def to_args(self) -> list[str]:
        """The command line of ``python -m tablekeeper.spark`` for this request."""
        args = ["--operation", self.operation, "--warehouse", self.warehouse, "--table", self.table]
        if self.branch != layout.MAIN:
            args += ["--branch", self.branch]
        for key, value in sorted(self.options.items()):
            args += ["--option", f"{key}={value}"]
        if self.dry_run:
            args.append("--dry-run")
        if self.older_than is not None:
            args += ["--older-than", self.older_than]
        if self.force:
            args.append("--force")
        if self.with_changelog:
            args.append("--with-changelog")
        valued: tuple[tuple[str, object], ...] = (
            ("--now", self.now_ms), ("--retain-min", self.retain_min), ("--retain-max", self.retain_max),
            ("--time-retained", self.time_retained), ("--max-deletes", self.expire_limit),
            ("--parallelism", self.parallelism), ("--run-name", self.run_name), ("--result", self.result),
            ("--changelog-retain-min", self.changelog_retain_min),
            ("--changelog-retain-max", self.changelog_retain_max),
            ("--changelog-time-retained", self.changelog_time_retained))
        for flag, val in valued:
            if val is not None:
                args += [flag, str(val)]
        if self.batch_size != safety.DELETE_BATCH_DEFAULT:
            args += ["--batch-size", str(self.batch_size)]
        if self.batches != 1:
            args += ["--batches", str(self.batches)]
        return args

    def redacted_options(self) -> dict[str, str]:
        """Options safe to record (artifact, logs): secret values masked."""
        return {k: ("***" if is_secret_option(k) else v) for k, v in self.options.items()}


_SECRET_WORDS = ("secret", "password", "token", "access-key", "access.key", "accesskey", "credential")


def is_secret_option(key: str) -> bool:
    """Whether an option carries a credential (never put into manifests or artifacts)."""
    low = key.lower()
    return any(word in low for word in _SECRET_WORDS) or storage_secrets.is_secret_option(key)


def argument_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tablekeeper.spark",
        description="Run tablekeeper maintenance distributed on Spark and write a JSON result artifact.")
    p.add_argument("--operation", required=True, choices=OPERATIONS)
    p.add_argument("--warehouse", required=True, metavar="URI", help="Warehouse URI (local path or s3://...).")
    p.add_argument("--table", required=True, metavar="DB.TABLE")
    p.add_argument("--branch", default=layout.MAIN, help="Branch to expire (expire, expire-changelog).")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="Storage option, e.g. s3.endpoint=http://127.0.0.1:9000 (repeatable).")
    p.add_argument("--dry-run", action="store_true", help="Plan and report only; delete nothing.")
    p.add_argument("--older-than", help="clean-orphans: an age ('2 d') or a time (ISO/epoch ms); default 1 day.")
    p.add_argument("--force", action="store_true", help="clean-orphans: allow thresholds under 1 hour ago.")
    p.add_argument("--now", type=int, help=argparse.SUPPRESS)
    p.add_argument("--retain-min", type=int)
    p.add_argument("--retain-max", type=int)
    p.add_argument("--time-retained")
    p.add_argument("--max-deletes", type=int, dest="expire_limit")
    p.add_argument("--with-changelog", action="store_true",
                   help="expire: then expire the decoupled changelog too (one artifact for both).")
    p.add_argument("--changelog-retain-min", type=int)
    p.add_argument("--changelog-retain-max", type=int)
    p.add_argument("--changelog-time-retained")
    p.add_argument("--batches", type=int, default=1,
                   help="expire/expire-changelog: up to N batches while the previous one expired something.")
    p.add_argument("--parallelism", type=int, help="Partitions of every I/O stage (default: Spark's parallelism).")
    p.add_argument("--batch-size", type=int, default=safety.DELETE_BATCH_DEFAULT,
                   help=f"Keys per bulk delete (<= {safety.DELETE_BATCH_MAX}).")
    p.add_argument("--run-name", help="Name of the run (recorded in the artifact).")
    p.add_argument("--result", metavar="PATH", help="Where to write the JSON result (local path or s3://...).")
    p.add_argument("--master", help="Spark master when not started by spark-submit (default local[*]).")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Extra Spark configuration.")
    return p


def _pairs(values: Sequence[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in values:
        if "=" not in pair:
            raise errors.InvalidInputError(f"{what} {pair!r} is not KEY=VALUE", fix="write e.g. s3.region=eu-west-1")
        key, value = pair.split("=", 1)
        out[key.strip()] = value.strip()
    return out


def parse_args(argv: Sequence[str]) -> tuple[JobRequest, dict[str, Any]]:
    """(request, launcher settings {"master", "conf"}) from a command line."""
    ns = argument_parser().parse_args(list(argv))
    request = JobRequest(
        operation=ns.operation, warehouse=ns.warehouse, table=ns.table, branch=ns.branch,
        options=_pairs(ns.option, "--option"), dry_run=ns.dry_run, older_than=ns.older_than, force=ns.force,
        now_ms=ns.now, retain_min=ns.retain_min, retain_max=ns.retain_max, time_retained=ns.time_retained,
        expire_limit=ns.expire_limit, parallelism=ns.parallelism, batch_size=ns.batch_size,
        run_name=ns.run_name, result=ns.result, with_changelog=ns.with_changelog,
        changelog_retain_min=ns.changelog_retain_min, changelog_retain_max=ns.changelog_retain_max,
        changelog_time_retained=ns.changelog_time_retained, batches=ns.batches)
    return request, {"master": ns.master, "conf": _pairs(ns.conf, "--conf")}


# -- names -------------------------------------------------------------------------------------
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_ALPHABET = string.ascii_lowercase + string.digits


def run_name(table_identity: str, operation: str, *, suffix: str | None = None) -> str:
    """``tk-<table-hash8>-<action3>-<rand4>``, e.g. ``tk-3f9a1c2e-orp-x7k2`` (20 characters).

    Unique per call (never reuse a name: delete + re-create races with a terminating driver,
    spark-operator #1566) and far below ``SPARK_NAME_MAX`` (names over 63 characters break
    labels and services; Spark derives longer pod and service names from it)."""
    if operation not in _ACTION_CODES:
        raise errors.InvalidInputError(f"unknown operation {operation!r}", fix=f"use one of {', '.join(OPERATIONS)}")
    digest = hashlib.sha256(table_identity.encode("utf-8")).hexdigest()[:8]
    rand = suffix if suffix is not None else "".join(secrets.choice(_ALPHABET) for _ in range(4))
    name = f"tk-{digest}-{_ACTION_CODES[operation]}-{rand}"
    _check_name(name)
    return name


def _check_name(name: str) -> None:
    if len(name) > safety.SPARK_NAME_MAX or not _DNS_LABEL.match(name):
        raise errors.InvalidInputError(
            f"{name!r} is not a DNS-1123 label of at most {safety.SPARK_NAME_MAX} characters",
            fix="use run_name() to generate one")


# -- local spark-submit ------------------------------------------------------------------------
def package_root() -> Path:
    """The directory holding the ``tablekeeper`` package."""
    return Path(__file__).resolve().parents[2]


def build_pyfiles_zip(dest_dir: str | os.PathLike[str]) -> str:
    """Zip the pure-Python ``tablekeeper`` package for ``--py-files`` / ``spark.submit.pyFiles``
    (executors import it from their ``userFiles-*`` copy). Third-party dependencies must already
    be on the executors' interpreter (spark-jobs.md §6.1)."""
    src = package_root() / "tablekeeper"
    target = Path(dest_dir) / "tablekeeper-pyfiles.zip"
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(src.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            zf.write(path, path.relative_to(src.parent).as_posix())
    return str(target)


def _main_file() -> str:
    return str(Path(__file__).resolve().with_name("__main__.py"))


def local_spark_home() -> str | None:
    """The Spark distribution bundled with the pip-installed pyspark (located, not imported)."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(next(iter(spec.submodule_search_locations))).resolve())


def local_submit_env(python: str | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for a local spark-submit process: ``SPARK_HOME`` of the bundled distribution
    (pip's ``spark-submit`` wrapper otherwise looks for it with whatever ``python`` is first on
    PATH) and ``PYSPARK_PYTHON``."""
    env = dict(os.environ if base is None else base)
    home = local_spark_home()
    if home and "SPARK_HOME" not in env:
        env["SPARK_HOME"] = home
    env.setdefault("PYSPARK_PYTHON", python or sys.executable)
    return env


def default_spark_submit() -> str:
    home = os.environ.get("SPARK_HOME") or local_spark_home()
    candidate = Path(home) / "bin" / "spark-submit" if home else None
    return str(candidate) if candidate is not None and candidate.exists() else "spark-submit"


def spark_submit_argv(request: JobRequest, *, spark_submit: str = "spark-submit", master: str = "local[*]",
                      py_files: Sequence[str] = (), python: str | None = None,
                      conf: Mapping[str, str] | None = None, app_name: str | None = None,
                      main_file: str | None = None) -> list[str]:
    """argv of a local ``spark-submit`` process running this request (client mode).

    ``python`` becomes ``spark.pyspark.python`` (default: this interpreter), so executors use
    the interpreter that has fastavro, fsspec and pyarrow (spark-jobs.md §6.1)."""
    settings: dict[str, str] = {
        "spark.pyspark.python": python or sys.executable,
        "spark.pyspark.driver.python": python or sys.executable,
        "spark.ui.showConsoleProgress": "false",
    }
    settings.update(conf or {})
    argv = [spark_submit, "--master", master, "--name", app_name or request.run_name or "tablekeeper"]
    for key, value in sorted(settings.items()):
        argv += ["--conf", f"{key}={value}"]
    if py_files:
        argv += ["--py-files", ",".join(py_files)]
    argv.append(main_file or _main_file())
    return argv + request.to_args()


# -- Kubernetes --------------------------------------------------------------------------------
@dataclass(frozen=True)
class OwnerReference:
    """The ``PaimonMaintenanceRun`` that owns (and garbage-collects) the launched object."""

    name: str
    uid: str
    api_version: str = "tablekeeper.io/v1alpha1"
    kind: str = "PaimonMaintenanceRun"

    def as_dict(self) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": self.kind, "name": self.name, "uid": self.uid,
                "controller": True, "blockOwnerDeletion": True}


@dataclass(frozen=True)
class SparkResources:
    cores: int = 1
    memory: str = "2g"
    instances: int = 2  #: executors only


def _check_k8s_request(request: JobRequest) -> None:
    secret = sorted(k for k in request.options if is_secret_option(k))
    if secret:
        raise errors.InvalidInputError(
            f"storage options {secret} carry credentials and would be visible in the manifest",
            fix="put credentials into a Secret (credentials_secret=...) or use pod identity (IRSA, workload identity)")


def _labels(name: str, request: JobRequest, extra: Mapping[str, str] | None) -> dict[str, str]:
    table_label = re.sub(r"[^A-Za-z0-9_.-]", "-", request.table)[:63].strip("-_.") or "table"
    return {RUN_LABEL: name, TABLE_LABEL: table_label, TYPE_LABEL: _RUN_TYPES[request.operation],
            "app.kubernetes.io/managed-by": "tablekeeper", **(extra or {})}


def _metadata(name: str, namespace: str, owner: OwnerReference, labels: Mapping[str, str],
              annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels),
                            "ownerReferences": [owner.as_dict()]}
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def job_manifest(request: JobRequest, *, name: str, namespace: str, owner: OwnerReference, image: str,
                 service_account: str, active_deadline_seconds: int, ttl_seconds_after_finished: int,
                 executor: SparkResources | None = None, driver: SparkResources | None = None,
                 spark_conf: Mapping[str, str] | None = None, credentials_secret: str | None = None,
                 credentials_keys: Sequence[str] | None = None, spark_submit: str = "/opt/spark/bin/spark-submit", main_file: str = IMAGE_MAIN_FILE,
                 python: str = "/usr/bin/python3", backoff_limit: int = 0,
                 labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ``batch/v1`` Job whose pod is the Spark driver (client mode), executors as pods.

    The Job's exit code is the run's result; retries belong to the run CR (``backoffLimit`` 0
    by default); ``activeDeadlineSeconds`` and ``ttlSecondsAfterFinished`` are enforced by
    Kubernetes. The pod's own name and IP reach Spark through the downward API."""
    _check_name(name)
    _check_k8s_request(request)
    if active_deadline_seconds < 1 or ttl_seconds_after_finished < 0:
        raise errors.InvalidInputError("active_deadline_seconds must be >= 1 and the TTL >= 0", fix="e.g. 7200 / 604800")
    executor = executor or SparkResources()
    driver = driver or SparkResources(instances=1)
    all_labels = _labels(name, request, labels)
    conf: dict[str, str] = {
        "spark.kubernetes.driver.pod.name": "$(TK_POD_NAME)",
        "spark.driver.host": "$(TK_POD_IP)",
        "spark.driver.bindAddress": "0.0.0.0",
        "spark.driver.port": "7078",
        "spark.blockManager.port": "7079",
        "spark.kubernetes.namespace": "$(TK_POD_NAMESPACE)",
        "spark.kubernetes.container.image": image,
        "spark.kubernetes.authenticate.driver.serviceAccountName": service_account,
        "spark.kubernetes.executor.podNamePrefix": name,
        f"spark.kubernetes.executor.label.{RUN_LABEL}": name,
        "spark.executor.instances": str(executor.instances),
        "spark.executor.cores": str(executor.cores),
        "spark.executor.memory": executor.memory,
        "spark.driver.memory": driver.memory,
        "spark.pyspark.python": python,
        "spark.sql.shuffle.partitions": str(max(8, 4 * executor.instances * executor.cores)),
    }
    if credentials_secret:
        keys = credentials_keys if credentials_keys is not None else storage_stores.executor_credential_env(
            request.warehouse) or _CREDENTIAL_KEYS
        for key in keys:  # executors are created by Spark, not from this pod spec
            conf[f"spark.kubernetes.executor.secretKeyRef.{key}"] = f"{credentials_secret}:{key}"
    conf.update(spark_conf or {})
    command = [spark_submit, "--master", "k8s://https://kubernetes.default.svc", "--deploy-mode", "client",
               "--name", name]
    for key, value in sorted(conf.items()):
        command += ["--conf", f"{key}={value}"]
    command += [main_file, *request.to_args()]
    env: list[dict[str, Any]] = [
        {"name": "TK_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "TK_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "TK_POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "PYSPARK_PYTHON", "value": python},
    ]
    container: dict[str, Any] = {
        "name": "driver", "image": image, "command": command, "env": env,
        "resources": {"requests": {"cpu": str(driver.cores), "memory": _pod_memory(driver.memory)},
                      "limits": {"memory": _pod_memory(driver.memory)}},
    }
    if credentials_secret:
        container["envFrom"] = [{"secretRef": {"name": credentials_secret}}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(name, namespace, owner, all_labels),
        "spec": {
            "backoffLimit": backoff_limit,
            "activeDeadlineSeconds": active_deadline_seconds,
            "ttlSecondsAfterFinished": ttl_seconds_after_finished,
            "template": {
                "metadata": {"labels": all_labels},
                "spec": {"restartPolicy": "Never", "serviceAccountName": service_account,
                         "containers": [container]},
            },
        },
    }


def _pod_memory(spark_memory: str) -> str:
    """Pod memory for a Spark ``-Xmx`` value plus Spark's default 10% (>= 384 MiB) overhead."""
    match = re.fullmatch(r"(\d+)([kmgt])?b?", spark_memory.strip().lower())
    if not match:
        raise errors.InvalidInputError(f"memory {spark_memory!r} is not in Spark syntax", fix="e.g. 2g or 512m")
    factor = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024, None: 1 / (1024 * 1024)}[match.group(2)]
    mib = int(match.group(1)) * factor
    return f"{int(mib + max(384, mib * 0.1))}Mi"


def spark_application_manifest(request: JobRequest, *, name: str, namespace: str, owner: OwnerReference,
                               image: str, spark_version: str, service_account: str,
                               active_deadline_seconds: int, ttl_seconds_after_finished: int,
                               executor: SparkResources | None = None, driver: SparkResources | None = None,
                               spark_conf: Mapping[str, str] | None = None, credentials_secret: str | None = None,
                               main_file: str = IMAGE_MAIN_FILE, python: str = "/usr/bin/python3",
                               labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ``SparkApplication`` (Kubeflow Spark Operator, ``sparkoperator.k8s.io/v1beta2``).

    ``restartPolicy: Never`` explicitly (retries live in the run CR; default-spec races #826,
    stuck ``PENDING_RERUN`` #1191); ``timeToLiveSeconds`` garbage-collects the CR. The
    SparkApplication has no deadline field: ``activeDeadlineSeconds`` is recorded in the
    ``tablekeeper.io/active-deadline-seconds`` annotation and enforced by the operator (apps
    hang in ``SUBMITTED`` on ImagePullBackOff, #2667)."""
    _check_name(name)
    _check_k8s_request(request)
    if active_deadline_seconds < 1 or ttl_seconds_after_finished < 0:
        raise errors.InvalidInputError("active_deadline_seconds must be >= 1 and the TTL >= 0", fix="e.g. 7200 / 604800")
    executor = executor or SparkResources()
    driver = driver or SparkResources(instances=1)
    all_labels = _labels(name, request, labels)
    conf = {
        "spark.pyspark.python": python,
        "spark.sql.shuffle.partitions": str(max(8, 4 * executor.instances * executor.cores)),
        "spark.kubernetes.executor.podNamePrefix": name,
    }
    conf.update(spark_conf or {})
    pod_extra: dict[str, Any] = {}
    if credentials_secret:
        pod_extra["envFrom"] = [{"secretRef": {"name": credentials_secret}}]
    main = main_file if "://" in main_file else f"local://{main_file}"
    return {
        "apiVersion": SPARK_APPLICATION_API,
        "kind": "SparkApplication",
        "metadata": _metadata(name, namespace, owner, all_labels,
                              {DEADLINE_ANNOTATION: str(active_deadline_seconds)}),
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": image,
            "mainApplicationFile": main,
            "arguments": request.to_args(),
            "sparkVersion": spark_version,
            "sparkConf": conf,
            "restartPolicy": {"type": "Never"},
            "timeToLiveSeconds": ttl_seconds_after_finished,
            "driver": {"cores": driver.cores, "memory": driver.memory, "serviceAccount": service_account,
                       "labels": all_labels, "env": [{"name": "PYSPARK_PYTHON", "value": python}], **pod_extra},
            "executor": {"instances": executor.instances, "cores": executor.cores, "memory": executor.memory,
                         "labels": all_labels, "env": [{"name": "PYSPARK_PYTHON", "value": python}], **pod_extra},
        },
    }


# -- result artifact ---------------------------------------------------------------------------
RESULT_SCHEMA_VERSION = 1
RESULT_KIND = "TablekeeperRunResult"
_STATUSES = ("Succeeded", "Failed")


def _int_map(value: Any, where: str) -> dict[str, int]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, int) for k, v in value.items()):
        raise errors.FormatError(f"result artifact: {where} must map names to integers", fix="rerun the job")
    return dict(value)


@dataclass
class RunResult:
    """The JSON result artifact of one run (identical shape for the Spark and in-process engines).

    ``planned_*`` are the plan's counts per file kind (dry run and real run report the same);
    ``deleted``/``missing`` what the executor did (missing = already gone, e.g. a retried task
    or an earlier crashed run); ``failed_count``/``failure_sample`` deletions that failed (best
    effort: never fatal); ``errors`` fatal errors (the run changed nothing after them);
    ``sample`` up to ``safety.STATUS_SAMPLE_MAX`` planned paths."""

    operation: str
    table: str
    branch: str
    dry_run: bool
    engine: str
    status: str = "Succeeded"
    run_name: str | None = None
    warehouse: str = ""
    started_at: str = ""
    finished_at: str = ""
    planned_files: dict[str, int] = field(default_factory=dict)
    planned_bytes: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    deleted_bytes: dict[str, int] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    failed_count: int = 0
    failure_sample: list[dict[str, str]] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    removed_dirs: int = 0
    sample: list[str] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def total_planned(self) -> int:
        return sum(self.planned_files.values())

    @property
    def total_deleted(self) -> int:
        return sum(self.deleted.values())

    def fail(self, error: BaseException) -> None:
        self.status = "Failed"
        fix = getattr(error, "fix", None)
        entry = {"type": type(error).__name__, "message": str(getattr(error, "message", error))[:2000]}
        if fix:
            entry["fix"] = str(fix)
        self.errors.append(entry)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schemaVersion": RESULT_SCHEMA_VERSION,
            "kind": RESULT_KIND,
            "runName": self.run_name,
            "operation": self.operation,
            "table": self.table,
            "branch": self.branch,
            "warehouse": self.warehouse,
            "dryRun": self.dry_run,
            "engine": self.engine,
            "status": self.status,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "planned": {"files": dict(self.planned_files), "bytes": dict(self.planned_bytes),
                        "totalFiles": self.total_planned, "totalBytes": sum(self.planned_bytes.values())},
            "executed": {"deleted": dict(self.deleted), "deletedBytes": dict(self.deleted_bytes),
                         "missing": dict(self.missing), "totalDeleted": self.total_deleted,
                         "totalDeletedBytes": sum(self.deleted_bytes.values()),
                         "written": list(self.written), "removedDirs": self.removed_dirs},
            "failures": {"count": self.failed_count, "sample": list(self.failure_sample[:safety.STATUS_SAMPLE_MAX])},
            "sample": list(self.sample[:safety.STATUS_SAMPLE_MAX]),
            "errors": list(self.errors),
            "timings": dict(self.timings),
            "details": dict(self.details),
            "notes": list(self.notes),
            "versions": dict(self.versions),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False, default=str)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunResult:
        """Parse and validate an artifact.

        Raises:
            FormatError: not a tablekeeper result, an unknown schema version or a bad field.
        """
        if not isinstance(data, Mapping) or data.get("kind") != RESULT_KIND:
            raise errors.FormatError("not a tablekeeper result artifact", fix="check the --result location")
        if data.get("schemaVersion") != RESULT_SCHEMA_VERSION:
            raise errors.FormatError(f"result artifact schema version {data.get('schemaVersion')!r} is not "
                                     f"{RESULT_SCHEMA_VERSION}", fix="use the tablekeeper version that wrote it")
        try:
            planned, executed, failures = data["planned"], data["executed"], data["failures"]
            status = data["status"]
            if status not in _STATUSES:
                raise errors.FormatError(f"result artifact: unknown status {status!r}", fix="rerun the job")
            return cls(
                operation=str(data["operation"]), table=str(data["table"]), branch=str(data["branch"]),
                dry_run=bool(data["dryRun"]), engine=str(data["engine"]), status=status,
                run_name=data.get("runName"), warehouse=str(data.get("warehouse", "")),
                started_at=str(data.get("startedAt", "")), finished_at=str(data.get("finishedAt", "")),
                planned_files=_int_map(planned["files"], "planned.files"),
                planned_bytes=_int_map(planned["bytes"], "planned.bytes"),
                deleted=_int_map(executed["deleted"], "executed.deleted"),
                deleted_bytes=_int_map(executed["deletedBytes"], "executed.deletedBytes"),
                missing=_int_map(executed["missing"], "executed.missing"),
                failed_count=int(failures["count"]),
                failure_sample=[dict(x) for x in failures["sample"]],
                written=[str(x) for x in executed.get("written", [])],
                removed_dirs=int(executed.get("removedDirs", 0)),
                sample=[str(x) for x in data.get("sample", [])],
                errors=[dict(x) for x in data.get("errors", [])],
                timings={str(k): float(v) for k, v in dict(data.get("timings", {})).items()},
                details=dict(data.get("details", {})),
                notes=[str(x) for x in data.get("notes", [])],
                versions={str(k): str(v) for k, v in dict(data.get("versions", {})).items()},
            )
        except errors.FormatError:
            raise
        except (KeyError, TypeError, ValueError) as e:
            raise errors.FormatError(f"result artifact is missing or has a malformed field: {e}",
                                     fix="rerun the job") from e


def write_result(uri: str, result: RunResult, options: Mapping[str, str] | None = None) -> None:
    """Write the artifact to a local path or a FileIO URI (replaced if present). Keep it outside
    every table directory: unknown files inside a Paimon table confuse other tools."""
    io = FileIO.for_uri(uri, options)
    path = io.normalize(uri)
    if io.is_local:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    io.overwrite(path, result.to_json() + "\n")


def read_result(uri: str, options: Mapping[str, str] | None = None) -> RunResult:
    """Read and validate an artifact written by ``write_result``.

    Raises:
        FileNotFoundError: no artifact there (the job did not get far enough to write one).
        FormatError: the file is not a valid artifact.
    """
    io = FileIO.for_uri(uri, options)
    raw = io.read_bytes(io.normalize(uri))
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise errors.FormatError(f"result artifact at {uri} is not JSON: {e}", fix="rerun the job") from e
    return RunResult.from_dict(cast(Mapping[str, Any], data))
