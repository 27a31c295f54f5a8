"""Stress beside a live writer on the Spark engine (issue #12), local and on S3 (moto), bounded in time.

The pypaimon writer of tests/safety/test_stress.py commits appends, partition overwrites and
tags (its own model of the data) while this thread loops over ``expire`` and ``clean-orphans``
with ``--engine spark`` (the dispatcher, the table lease, one shared ``local[2]`` session), the
orphan cleanup with the default 1-day threshold (every file of the starting table is 3 days
old, so only references protect it). Afterwards every retained snapshot, tag and branch reads
through pypaimon, no needed file is missing, and the latest snapshot and every tag read exactly
what the writer's model says."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import pytest

from tablekeeper.spark import dispatch, job_request
from tests.maintenance.helpers import (
    IDENT,
    append_table,
    backdate_tree,
    handle,
    missing_required,
    read_rows,
    reload,
    spark_request,
    table_root,
    views,
)
from tests.safety.test_stress import Writer, _expected, run_beside_writer

pytestmark = pytest.mark.spark

#: Seconds the writer commits for; Spark rounds run meanwhile (a few seconds each on 2 cores).
WRITER_SECONDS = 10.0
#: The in-process stress test's retention (tests/safety/test_stress.EXPIRE), as flags.
RETAIN = {"retain_min": 3, "time_retained": "0 ms", "expire_limit": 1000}


def _maintain_once(wh: str, spark: Any, options: Mapping[str, str] | None = None) -> list[str]:
    """One round: expire, then orphan cleanup, both on Spark. Returns the runs' notes."""
    notes: list[str] = []
    for operation, extra in (("expire", RETAIN), ("clean-orphans", {})):
        request: job_request.JobRequest = spark_request(wh, operation, parallelism=2, options=dict(options or {}),
                                                        **extra)
        result = dispatch.run(request, engine="spark", spark=spark)
        assert result.engine == "spark" and result.failed_count == 0, result.failure_sample
        notes.extend(result.notes)
    return notes


def _spark_stress(wh: str, options: Mapping[str, str] | None, backdate: Callable[[], None], spark: Any) -> None:
    append_table(wh, catalog_options=options)
    writer = Writer(wh, options)
    writer.seed()
    backdate()
    rounds, refused = run_beside_writer(writer, WRITER_SECONDS, lambda _n: _maintain_once(wh, spark, options))
    assert writer.error is None, repr(writer.error)
    _maintain_once(wh, spark, options)  # once more on the final state
    assert rounds >= 1 and writer.commits >= 5, (rounds, writer.commits, refused)
    assert not missing_required(wh, IDENT, options)
    views(wh, IDENT, options)  # every snapshot, tag and branch head reads
    latest = reload(wh, catalog_options=options)
    assert read_rows(latest) == _expected(writer.model)
    for name, model in writer.tagged.items():
        assert read_rows(latest, {"scan.tag-name": name}) == _expected(model), name
    assert len(handle(wh, options=options).snapshot_ids()) == 3  # the last round expired down to the retention


@pytest.mark.timeout(1800)  # a kill mid-job breaks the shared Spark session for every later test
def test_spark_stress_local(spark: Any, tmp_path: Any) -> None:
    wh = str(tmp_path / "wh")
    _spark_stress(wh, None, lambda: backdate_tree(table_root(wh), 3 * 86400), spark)


@pytest.mark.s3
@pytest.mark.timeout(1800)
def test_spark_stress_s3(spark: Any, s3: Any, s3_bucket: str, s3_warehouse: str, s3_options: dict[str, str]) -> None:
    from tests.support.s3 import backdate

    def old() -> None:
        for key in s3.find(f"{s3_bucket}/"):
            backdate(s3_bucket, key.split("/", 1)[1], timedelta(days=3))

    _spark_stress(s3_warehouse, s3_options, old, spark)
