"""``--engine spark`` on the streaming histories (tests/javapaimon/streaming.py), judged by Java
Paimon as ``test_streaming.py`` judges the in-process engine: the PySpark job evaluates core's
decisions, so the references Paimon lets dangle (a tag's changelog manifest list, a branch's copy
of its fork snapshot, a snapshot whose list the branch's expiry deleted) are ignored and named
there too, and the JSON bytes are the sizes of the files that went. Two runs, on the newest Paimon only (Spark runs
are the slow part of this tier; the job reads files, whatever version wrote them, and
``test_spark_engine.py`` runs Spark on both versions)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.javapaimon import judge
from tests.javapaimon import streaming as S
from tests.javapaimon.test_operations import _same_as_java, _snapshot_ids
from tests.javapaimon.test_streaming import _plant, _run, _twin
from tests.support import javapaimon as J

pytestmark = [pytest.mark.javapaimon, pytest.mark.spark, pytest.mark.newest_paimon, pytest.mark.timeout(1200)]


def test_expire_on_spark(spark: Any, java: J.JavaPaimon, swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """live.metrics past its tagged COMPACT snapshot 6, whose changelog list the branch's own
    expiry deleted (tag v1, its copy in branch exp)."""
    latest = java.table_call("latest_snapshot", swh, S.METRICS)
    java.table_call("reset_consumer", swh, S.METRICS, consumer="reader-1", next_snapshot=latest)
    _twin(swh)
    docs: list[dict[str, Any]] = []
    before, after = judge.judged(java, swh, S.METRICS, lambda: docs.append(_run(
        capsys, swh, "expire", "-w", swh, S.METRICS, "--retain-min", "1", "--retain-max", "2", "--time-retained",
        "1 s", "--engine", "spark", "--parallelism", "2")))
    ids = _snapshot_ids(before)
    judge.unchanged_except(before, after, removed=[f"main@snapshot-{i}" for i in ids[:-1]])
    doc = docs[0]
    assert doc["engine"] == "spark" and doc["status"] == "Succeeded"
    named = judge.ignored_named(doc)
    assert ("tag", "main", "v1", "changelog manifest list") in named
    assert ("branch tag", "exp", "v1", "changelog manifest list") in named
    _same_as_java(java, swh, S.METRICS, after, "expire_snapshots", retain_max=2, retain_min=1, older_than_ms=1000)
    judge.java_still_works(java, swh, S.METRICS, after)


def test_clean_orphans_on_spark(spark: Any, java: J.JavaPaimon, swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    planted = _plant(swh, S.ORDERS)
    docs: list[dict[str, Any]] = []
    before, after = judge.judged(java, swh, S.ORDERS, lambda: docs.append(_run(
        capsys, swh, "clean-orphans", "-w", swh, S.ORDERS, "--older-than", "1 d", "--engine", "spark",
        "--parallelism", "2")))
    judge.unchanged_except(before, after)
    assert not any(p.exists() for p in planted)
    doc = docs[0]
    assert doc["result"]["deleted"] == {"data": 1, "changelog": 1, "manifest": 2}
    named = judge.ignored_named(doc)
    assert ("tag", "main", "release-2", "changelog manifest list") in named
    assert ("changelog", "hotfix", "12", "changelog manifest list") in named
    assert judge.java_deleted_nothing_we_kept(java, swh, S.ORDERS, J.now_ms() - 86_400_000) == []
    judge.java_still_works(java, swh, S.ORDERS, after)
