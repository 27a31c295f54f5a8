"""The Spark engine on S3 (moto on loopback): executors read and delete through tablekeeper's
FileIO (s3fs), built per worker from the storage options in the job spec — no Hadoop S3A.

One pypaimon-written table is uploaded to two prefixes; the in-process engine maintains one,
Spark the other, and both must leave the same keys behind and report the same counts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.spark import __main__ as spark_main
from tablekeeper.spark import dispatch, job, job_request, result_artifact
from tests.maintenance.helpers import IDENT, build_mixed, now_ms, plant, spark_request, table_root
from tests.support.s3 import put_objects

pytestmark = [pytest.mark.spark, pytest.mark.s3]

DAY_MS = 86_400_000


@pytest.fixture(scope="module")
def local_template(tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("s3src") / "wh")
    build_mixed(wh)
    root = table_root(wh)
    plant(f"{root}/dt=a/bucket-0/data-orphan-1.parquet", b"x" * 10)
    plant(f"{root}/manifest/manifest-orphan-0", b"x" * 30)
    return wh


def upload(src: str, bucket: str, prefix: str) -> str:
    objects = {}
    for dirpath, _dirs, files in os.walk(src):
        for name in files:
            full = os.path.join(dirpath, name)
            objects[f"{prefix}/{os.path.relpath(full, src)}"] = Path(full).read_bytes()
    put_objects(bucket, objects)
    return f"s3://{bucket}/{prefix}"


def keys(s3: Any, bucket: str, prefix: str) -> set[str]:
    return {k[len(f"{bucket}/{prefix}/"):] for k in s3.find(f"{bucket}/{prefix}")}


@pytest.fixture
def s3_copies(s3: Any, s3_bucket: str, local_template: str) -> tuple[str, str]:
    return upload(local_template, s3_bucket, "local"), upload(local_template, s3_bucket, "spark")


def test_orphans_then_expire_on_s3_match_in_process(spark: Any, s3: Any, s3_bucket: str, s3_options: dict[str, str],
                                                     s3_copies: tuple[str, str]) -> None:
    local_wh, spark_wh = s3_copies
    at = now_ms() + 2 * DAY_MS
    local = dispatch.run_local(job_request.JobRequest("clean-orphans", local_wh, IDENT, options=s3_options, now_ms=at))
    result_uri = f"s3://{s3_bucket}/results/orphans.json"
    args = ["--operation", "clean-orphans", "--warehouse", spark_wh, "--table", IDENT, "--now", str(at),
            "--parallelism", "2", "--result", result_uri]
    for key, value in s3_options.items():
        args += ["--option", f"{key}={value}"]
    assert spark_main.main(args) == 0
    remote = result_artifact.read_result(result_uri, s3_options)
    assert remote.status == "Succeeded" and remote.engine == "spark"
    assert remote.planned_files == local.planned_files == {"data": 1, "manifest": 1}
    assert remote.deleted == local.deleted and remote.deleted_bytes == local.deleted_bytes == {"data": 10,
                                                                                              "manifest": 30}
    assert keys(s3, s3_bucket, "spark") == keys(s3, s3_bucket, "local")
    # credentials never reach the artifact
    assert "testing" not in s3.cat_file(f"{s3_bucket}/results/orphans.json").decode()

    kw: dict[str, Any] = {"options": s3_options, "retain_min": 1, "time_retained": "0 ms", "now_ms": now_ms() + 1000}
    local = dispatch.run_local(spark_request(local_wh, "expire", IDENT, **kw))
    remote = job.run(spark, spark_request(spark_wh, "expire", IDENT, parallelism=2, **kw))
    assert remote.planned_files == local.planned_files and remote.deleted == local.deleted
    assert remote.deleted["data"] > 0 and remote.failed_count == local.failed_count == 0
    assert keys(s3, s3_bucket, "spark") == keys(s3, s3_bucket, "local")
