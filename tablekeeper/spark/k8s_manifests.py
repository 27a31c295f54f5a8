"""The Kubernetes objects that run the job: a ``batch/v1`` Job running spark-submit in client mode
inside the pod, or a ``SparkApplication`` (``sparkoperator.k8s.io/v1beta2``); both carry an
ownerReference to the ``PaimonMaintenanceRun``, labels, a deadline and a TTL, and take credentials
from a Secret, never from the request."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tablekeeper.core import errors, storage
from tablekeeper.spark.job_request import JobRequest, is_secret_option
from tablekeeper.spark.run_names import check_name

__all__ = ["SPARK_APPLICATION_API", "RUN_LABEL", "TABLE_LABEL", "TYPE_LABEL", "DEADLINE_ANNOTATION", "IMAGE_SPARK_VERSION", "IMAGE_MAIN_FILE", "IMAGE_PYTHON", "IMAGE_SPARK_SUBMIT", "JobImage", "OwnerReference", "SparkResources", "executor_secret_keys", "job_manifest", "spark_application_manifest"]

SPARK_APPLICATION_API = "sparkoperator.k8s.io/v1beta2"
RUN_LABEL = "tablekeeper.io/run"
TABLE_LABEL = "tablekeeper.io/table"
TYPE_LABEL = "tablekeeper.io/type"
DEADLINE_ANNOTATION = "tablekeeper.io/active-deadline-seconds"
#: The Spark version of the job image ``docker/spark-job.Dockerfile`` builds (its ``SPARK_VERSION``).
IMAGE_SPARK_VERSION = "4.0.1"
#: Where that image has the job's main file (a link to the installed ``tablekeeper/spark/__main__.py``).
IMAGE_MAIN_FILE = "/opt/tablekeeper/job.py"
#: The image's Python (the driver's and the executors').
IMAGE_PYTHON = "/usr/bin/python3"
#: The image's spark-submit (the ``SparkJob`` engine runs it in the driver pod).
IMAGE_SPARK_SUBMIT = "/opt/spark/bin/spark-submit"
#: Keys of ``credentials_secret`` handed to executor pods as environment variables.
_CREDENTIAL_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
_RUN_TYPES: Mapping[str, str] = {"expire": "ExpireSnapshots", "expire-changelog": "ExpireSnapshots",
                                 "clean-orphans": "RemoveOrphanFiles"}


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
class JobImage:
    """Where a job image has what the launched objects run: the main file, Python and
    spark-submit. The defaults are what ``docker/spark-job.Dockerfile`` installs; another image
    gives its own (the chart's ``spark.mainFile``, ``spark.python``, ``spark.sparkSubmit``)."""

    main_file: str = IMAGE_MAIN_FILE
    python: str = IMAGE_PYTHON
    spark_submit: str = IMAGE_SPARK_SUBMIT


@dataclass(frozen=True)
class SparkResources:
    cores: int = 1
    memory: str = "2g"
    instances: int = 2  #: executors only


def _check_launch(name: str, request: JobRequest, active_deadline_seconds: int, ttl_seconds_after_finished: int) -> None:
    """What both Kubernetes launchers (Job, SparkApplication) require before building anything."""
    check_name(name)
    _check_k8s_request(request)
    if active_deadline_seconds < 1 or ttl_seconds_after_finished < 0:
        raise errors.InvalidInputError("active_deadline_seconds must be >= 1 and the TTL >= 0", fix="e.g. 7200 / 604800")


def _check_k8s_request(request: JobRequest) -> None:
    secret = sorted(k for k in request.options if is_secret_option(k))
    if secret:
        raise errors.InvalidInputError(
            f"storage options {secret} carry credentials and would be visible in the manifest",
            fix="put credentials into a Secret (credentials_secret=...) or use pod identity (IRSA, workload identity)")


def executor_secret_keys(request: JobRequest, credentials_keys: Sequence[str] | None = None) -> tuple[str, ...]:
    """The Secret keys a Spark executor pod gets as environment variables of the same name
    (``secretKeyRef``, each must exist in the Secret): ``credentials_keys`` when given; else the
    request's ``env_options`` (the catalog Secret's credential option names, which executors merge
    into the storage options); else the store SDK's own variables (``AWS_ACCESS_KEY_ID``...)."""
    if credentials_keys is not None:
        return tuple(credentials_keys)
    if request.env_options:
        return tuple(request.env_options)
    return storage.executor_credential_env(request.warehouse) or _CREDENTIAL_KEYS


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
                 credentials_keys: Sequence[str] | None = None, paths: JobImage | None = None,
                 backoff_limit: int = 0, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ``batch/v1`` Job whose pod is the Spark driver (client mode), executors as pods.

    The Job's exit code is the run's result; retries belong to the run CR (``backoffLimit`` 0
    by default); ``activeDeadlineSeconds`` and ``ttlSecondsAfterFinished`` are enforced by
    Kubernetes. The pod's own name and IP reach Spark through the downward API."""
    _check_launch(name, request, active_deadline_seconds, ttl_seconds_after_finished)
    paths = paths or JobImage()
    python = paths.python
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
        keys = executor_secret_keys(request, credentials_keys)
        for key in keys:  # executors are created by Spark, not from this pod spec
            conf[f"spark.kubernetes.executor.secretKeyRef.{key}"] = f"{credentials_secret}:{key}"
    conf.update(spark_conf or {})
    command = [paths.spark_submit, "--master", "k8s://https://kubernetes.default.svc", "--deploy-mode", "client",
               "--name", name]
    for key, value in sorted(conf.items()):
        command += ["--conf", f"{key}={value}"]
    command += [paths.main_file, *request.to_args()]
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
                               paths: JobImage | None = None,
                               labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ``SparkApplication`` (Kubeflow Spark Operator, ``sparkoperator.k8s.io/v1beta2``).

    ``restartPolicy: Never`` explicitly (retries live in the run CR; default-spec races #826,
    stuck ``PENDING_RERUN`` #1191); ``timeToLiveSeconds`` garbage-collects the CR. The
    SparkApplication has no deadline field: ``activeDeadlineSeconds`` is recorded in the
    ``tablekeeper.io/active-deadline-seconds`` annotation and enforced by the operator (apps
    hang in ``SUBMITTED`` on ImagePullBackOff, #2667)."""
    _check_launch(name, request, active_deadline_seconds, ttl_seconds_after_finished)
    paths = paths or JobImage()
    python = paths.python
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
    main = paths.main_file if "://" in paths.main_file else f"local://{paths.main_file}"
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
