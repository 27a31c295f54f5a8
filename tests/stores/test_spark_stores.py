"""The Spark engine on every non-S3 store (S3: ``tests/spark/test_s3.py``): one ``expire`` and
one ``clean-orphans`` through the CLI with ``--engine spark`` on the shared ``local[2]`` session.

Executors build tablekeeper's FileIO from the storage options in the job spec (the same store
code as the in-process engine). The pypaimon-written table is uploaded twice; the in-process
engine maintains one copy, Spark the other: both must report the same counts, leave the same
files, and read the same in pypaimon afterwards.

An earlier version of this test failed on HDFS (its first store) and was dropped: it read the
Spark engine's JSON as the in-process one (``result.deleted``), but the CLI prints Spark's counts
under ``executed.deleted`` (``dispatch.describe``), so it compared ``{}`` with ``{"data": 1}``.
The engine itself was right; :func:`_deleted` reads both shapes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.maintenance.helpers import IDENT, now_ms
from tests.stores.conftest import STORES, StoreUnderTest
from tests.stores.test_scenario import DAY_MS, _cli, _download, _upload, _views
from tests.stores.test_scenario import template as template  # noqa: F401  (the shared module fixture)

pytestmark = [pytest.mark.spark]

SPARK_STORES = ("oss", "hdfs", "azure", "gcs")


def _deleted(payload: dict[str, Any]) -> dict[str, int]:
    """Files deleted per kind, from the CLI's JSON of either engine (Spark: ``executed``)."""
    if "executed" in payload:  # Spark: dispatch.describe
        return dict(payload["executed"].get("deleted") or {})
    return dict(payload["result"].get("deleted") or {})  # in process: plan summary + execution result


def _left(store: StoreUnderTest, rel: str) -> list[str]:
    """Files under warehouse ``rel``, relative to it."""
    store.fs.invalidate_cache()
    base = store.raw(rel)
    strip = base if base.startswith("/") else base.lstrip("/")
    return sorted(os.path.relpath(k if k.startswith("/") or not base.startswith("/") else "/" + k, strip)
                  for k in store.fs.find(base) if not k.endswith("/"))


@pytest.mark.timeout(900)
@pytest.mark.parametrize("store", [p for p in STORES if getattr(p, "values", ("local",))[0] in SPARK_STORES],
                         indirect=True)
def test_spark_engine_matches_in_process(store: StoreUnderTest, template: str, tmp_path: Path, spark: Any,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    local_wh, spark_wh = _upload(store, template, "local"), _upload(store, template, "spark")
    at = str(now_ms() + 2 * DAY_MS)
    results = {}
    for wh, engine in ((local_wh, "local"), (spark_wh, "spark")):
        results[engine] = (
            _cli(capsys, store, wh, "clean-orphans", IDENT, "--now", at, "--engine", engine),
            _cli(capsys, store, wh, "expire", IDENT, "--retain-min", "1", "--time-retained", "0 ms",
                 "--now", str(now_ms() + 1000), "--engine", engine),
        )
    assert _deleted(results["spark"][0]) == _deleted(results["local"][0]) == {"data": 1}
    assert _deleted(results["spark"][1]) == _deleted(results["local"][1])
    assert _deleted(results["local"][1]).get("snapshot", 0) == 4
    assert _left(store, "spark") == _left(store, "local")
    assert _views(_download(store, "spark", tmp_path / "s")) == _views(_download(store, "local", tmp_path / "l"))
