"""A catalog on every store (docs/storage.md, "PaimonCatalog per store") on the API server
emulator with the real operator.

- End to end on Azure (Azurite): the credential (a connection string) lives only in the catalog's
  Secret; the catalog reaches ``Ready``/``Connected``, the table ``Reconciled``, and a
  ``SparkJob`` run's Job carries the Secret's key *names* (``--env-option``, executor
  ``secretKeyRef``, driver ``envFrom``) and no secret value; the launched arguments, run with the
  Secret mounted as environment variables (as the pod has it), delete the orphan on Azurite and
  the run succeeds from the artifact.
- GCS (fake-gcs-server): a ``gs://`` catalog reaches ``Ready`` against the emulator.
- HDFS, OSS, GCS and Azure by rendered options: the request and both manifests built from a
  catalog's options plus its Secret carry the non-secret options as arguments and the secret
  ones only by name.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core.policy.specs.run import PaimonMaintenanceRunSpec
from tablekeeper.core.storage.connections import connect
from tablekeeper.operator.runs import spark as sparkruns
from tablekeeper.spark import dispatch, job_request, result_artifact
from tests.operator.conftest import Harness, obj
from tests.operator.test_spark_runs import (
    JOBS,
    job_arguments,
    manual_run,
    set_status,
    spark_config,
    spark_harness,  # noqa: F401  (fixture)
    the_launched,
    wait_phase,
)
from tests.support import stores as storesupport
from tests.support.k8s import eventually

pytestmark = [pytest.mark.k8s, pytest.mark.storage]


def _upload(fs: Any, src: Path, dst: str) -> None:
    for dirpath, _dirs, files in os.walk(src):
        for name in files:
            full = Path(dirpath) / name
            fs.pipe_file(f"{dst}/{full.relative_to(src)}", full.read_bytes())


def _strings(manifest: Any) -> list[str]:
    """Every string in a manifest (keys and values), to look for leaked secrets."""
    if isinstance(manifest, dict):
        return [s for k, v in manifest.items() for s in [str(k), *_strings(v)]]
    if isinstance(manifest, list):
        return [s for v in manifest for s in _strings(v)]
    return [str(manifest)]


@pytest.mark.azure
async def test_azure_catalog_with_a_secret_runs_a_spark_job_that_reads_it_from_the_environment(
        spark_harness: Harness, warehouse: Path, azurite_server: int,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    import adlfs

    h = spark_harness
    connection_string = storesupport.azure_connection_string(azurite_server)
    fs = adlfs.AzureBlobFileSystem(connection_string=connection_string, skip_instance_cache=True)
    container = f"op{uuid.uuid4().hex[:8]}"
    fs.mkdir(container)
    orphan = warehouse / "sales.db" / "orders" / "dt=2026-01-01" / "bucket-0" / "data-orphan.parquet"
    orphan.write_bytes(b"x" * 10)
    _upload(fs, warehouse, f"{container}/wh")
    uri = f"abfs://{container}@{storesupport.AZURITE_ACCOUNT}.dfs.core.windows.net/wh"
    key = "fs.azure.connection-string"

    await h.start(spark_config())
    await h.apply(obj("PaimonCatalog", "lake", {"warehouse": uri, "writerTimeZone": "UTC",
                                                "credentialsSecretRef": {"name": "lake-azure"}}))
    await h.wait_condition("PaimonCatalog", "lake", status="False")  # the Secret is not there yet
    h.add_secret("sales", "lake-azure", {key: connection_string})
    await h.wait_condition("PaimonCatalog", "lake", reason="Connected")
    await h.apply(obj("PaimonTable", "orders", {
        "catalogRef": {"kind": "PaimonCatalog", "name": "lake"}, "database": "sales", "table": "orders",
        "retention": {"orphanFiles": {"state": "Enabled", "olderThan": "1 d"}}}))
    await h.wait_condition("PaimonTable", "orders", reason="Reconciled")

    await manual_run(h, "clean", "RemoveOrphanFiles", "SparkJob", parameters={"dryRun": False},
                     activeDeadlineSeconds=900)
    job = await the_launched(h, JOBS)
    assert connection_string not in " ".join(_strings(job))  # nowhere in the manifest
    assert storesupport.AZURITE_KEY not in " ".join(_strings(job))
    [container_spec] = job["spec"]["template"]["spec"]["containers"]
    assert container_spec["envFrom"] == [{"secretRef": {"name": "lake-azure"}}]
    command = container_spec["command"]
    assert f"spark.kubernetes.executor.secretKeyRef.{key}=lake-azure:{key}" in command
    arguments = job_arguments(job)
    request, _ = job_request.parse_args(arguments)
    assert request.env_options == (key,) and key not in request.options
    await wait_phase(h, "clean", "Running")

    # the driver pod: the Secret's keys are environment variables of the same names; it runs two
    # days later (Azurite stamps the uploaded orphan with the upload time)
    monkeypatch.setenv(key, connection_string)
    later = dataclasses.replace(request, now_ms=int(time.time() * 1000) + 2 * 86_400_000)
    result = await asyncio.to_thread(dispatch.run_local, later)
    assert request.result
    result_artifact.write_result(request.result, result, request.storage_options())
    assert result.deleted == {"data": 1}
    fs.invalidate_cache()
    assert not fs.exists(f"{container}/wh/sales.db/orders/dt=2026-01-01/bucket-0/data-orphan.parquet")
    await set_status(h, JOBS, job, {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1})
    status = await wait_phase(h, "clean", "Succeeded")
    assert status["result"]["deletedFiles"] == 1
    assert connection_string not in str(h.status("PaimonMaintenanceRun", "clean"))


@pytest.mark.gcs
async def test_gcs_catalog_reaches_ready_against_the_emulator(harness: Harness, warehouse: Path,
                                                              gcs_server: str) -> None:
    import gcsfs

    fs = gcsfs.GCSFileSystem(endpoint_url=gcs_server, token="anon", project="test", skip_instance_cache=True)
    bucket = f"op{uuid.uuid4().hex[:8]}"
    fs.mkdir(bucket)
    _upload(fs, warehouse, f"{bucket}/wh")
    await harness.start()
    await harness.apply(obj("PaimonCatalog", "lake", {"warehouse": f"gs://{bucket}/wh", "writerTimeZone": "UTC",
                                                      "options": storesupport.gcs_options(gcs_server)}))
    await harness.wait_condition("PaimonCatalog", "lake", reason="Connected")
    await harness.apply(obj("PaimonTable", "orders", {
        "catalogRef": {"kind": "PaimonCatalog", "name": "lake"}, "database": "sales", "table": "orders"}))
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")
    await eventually(lambda: (harness.status("PaimonTable", "orders").get("table") or {}).get("latestSnapshotId") == 6)


#: Per store: a warehouse, the catalog's (non-secret) options, its Secret, and what the store's
#: fsspec client must be built with (docs/storage.md, "PaimonCatalog per store").
CATALOGS: list[tuple[str, str, dict[str, str], dict[str, str], dict[str, Any]]] = [
    ("hdfs", "hdfs://namenode.hadoop:8020/warehouse",
     {"dfs.namenode.http-address": "namenode.hadoop:9870", "hadoop.user.name": "paimon"},
     {"dfs.webhdfs.delegation-token": "HDFS-TOKEN-SECRET"},
     {"host": "namenode.hadoop", "port": 9870, "token": "HDFS-TOKEN-SECRET"}),
    ("oss", "oss://lake/warehouse", {"fs.oss.endpoint": "oss-cn-hangzhou.aliyuncs.com"},
     {"fs.oss.accessKeyId": "OSS-ID-SECRET", "fs.oss.accessKeySecret": "OSS-KEY-SECRET"},
     {"key": "OSS-ID-SECRET", "secret": "OSS-KEY-SECRET"}),
    ("gcs", "gs://lake/warehouse", {"fs.gs.project.id": "my-project"},
     {"fs.gs.auth.service.account.email": "tk@my-project.iam.gserviceaccount.com",
      "fs.gs.auth.service.account.private.key": "GCS-PRIVATE-KEY-SECRET",
      "fs.gs.auth.service.account.private.key.id": "GCS-KEY-ID-SECRET"},
     {"project": "my-project", "token": {
         "type": "service_account", "client_email": "tk@my-project.iam.gserviceaccount.com",
         "private_key": "GCS-PRIVATE-KEY-SECRET", "private_key_id": "GCS-KEY-ID-SECRET",
         "token_uri": "https://oauth2.googleapis.com/token", "project_id": "my-project"}}),
    ("azure", "abfss://lake@acct.dfs.core.windows.net/warehouse", {},
     {"fs.azure.account.key.acct.dfs.core.windows.net": "AZURE-KEY-SECRET"},
     {"account_name": "acct", "account_key": "AZURE-KEY-SECRET"}),
]


@pytest.mark.parametrize(("store", "warehouse_uri", "options", "secret", "expected"), CATALOGS,
                         ids=[c[0] for c in CATALOGS])
def test_spark_manifests_carry_store_settings_and_secret_names_only(
        store: str, warehouse_uri: str, options: dict[str, str], secret: dict[str, str],
        expected: dict[str, Any]) -> None:
    merged = {**options, **secret}  # what Runtime.catalog_options gives: the Secret over the options
    kwargs = connect(warehouse_uri, merged).kwargs
    assert {name: kwargs.get(name) for name in expected} == expected  # the client gets the Secret's credentials
    spec = PaimonMaintenanceRunSpec.model_validate({"tableRef": {"name": "orders"}, "type": "RemoveOrphanFiles"})
    request = sparkruns.launch_request(spec, warehouse_uri, "sales.orders", merged, dry_run=False,
                                       result=f"{warehouse_uri}/.tablekeeper/r.json", secret_keys=tuple(secret))
    assert request is not None
    assert dict(request.options) == options and request.env_options == tuple(sorted(secret))
    for engine in ("SparkJob", "SparkOperator"):
        manifest = sparkruns.launch_manifest(
            request, engine=engine, name="tk-run", namespace="sales", owner_name="clean", owner_uid="u-1",
            image="img", service_account="tk-spark", active_deadline_seconds=900, credentials_secret="lake-creds")
        text = " ".join(_strings(manifest))
        assert not any(value in text for value in secret.values()), engine  # no secret value anywhere
        args = request.to_args()
        for name, value in options.items():
            assert f"{name}={value}" in args
        for name in secret:
            assert args[args.index(name) - 1] == "--env-option"
        if engine == "SparkJob":
            conf = manifest["spec"]["template"]["spec"]["containers"][0]["command"]
            for name in secret:  # every executor gets each Secret key as an environment variable
                assert f"spark.kubernetes.executor.secretKeyRef.{name}=lake-creds:{name}" in conf
        else:
            assert manifest["spec"]["executor"]["envFrom"] == [{"secretRef": {"name": "lake-creds"}}]
            assert manifest["spec"]["driver"]["envFrom"] == [{"secretRef": {"name": "lake-creds"}}]
    # the pod side: the mounted values rebuild the same client
    assert job_request.env_option_values(tuple(secret)) == {}
    os.environ.update(secret)
    try:
        assert request.storage_options() == merged
    finally:
        for name in secret:
            os.environ.pop(name, None)
