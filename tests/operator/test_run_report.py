"""The operator reads decisions: one run report and its one rendering, the planner's job
enablement (no Kubernetes needed)."""

from __future__ import annotations

from typing import Any

import pytest

from tablekeeper.core.policy.effective import resolution, result
from tablekeeper.core.policy.kinds import parse_spec
from tablekeeper.core.policy.specs.table import PaimonTableSpec
from tablekeeper.operator.runs import schedule as maintenance
from tablekeeper.operator.runs.report import RunReport, from_artifact
from tablekeeper.reconcile.planners import enabled_jobs
from tablekeeper.spark import result_artifact


def test_a_spark_artifact_and_an_in_process_report_render_the_same_keys() -> None:
    artifact = result_artifact.RunResult(operation="expire", table="s.o", branch="main", dry_run=False, engine="spark",
                                planned_files={"snapshot": 4, "data": 3, "changelog-meta": 2},
                                planned_bytes={"snapshot": 40, "data": 300}, deleted={"snapshot": 4, "data": 3},
                                deleted_bytes={"snapshot": 40, "data": 300}, sample=["a", "b"],
                                details={"changelog": {"expired_changelogs": 2}})
    spark = from_artifact(artifact, "ExpireSnapshots").to_status()
    assert spark == {
        "dryRun": False, "expiredSnapshots": 4, "expiredChangelogs": 2, "plannedFiles": 9, "plannedBytes": 340,
        "deletedFiles": 7, "reclaimedBytes": 340, "missingFiles": 0, "failures": 0,
        "planned": {"files": artifact.planned_files, "bytes": artifact.planned_bytes},
        "executed": {"deleted": artifact.deleted, "deletedBytes": artifact.deleted_bytes, "missing": {}},
        "sample": ["a", "b"]}
    local = RunReport(dry_run=False, expired_snapshots=4, expired_changelogs=2, deleted_files=7, reclaimed_bytes=340,
                      failures=0, sample=("expired 4 snapshot(s) in 1 batch(es)",)).to_status()
    assert set(local) <= set(spark)
    assert {k: local[k] for k in ("expiredSnapshots", "expiredChangelogs", "deletedFiles", "reclaimedBytes")} == \
        {k: spark[k] for k in ("expiredSnapshots", "expiredChangelogs", "deletedFiles", "reclaimedBytes")}
    orphans = from_artifact(result_artifact.RunResult(operation="clean-orphans", table="s.o", branch="main", dry_run=True,
                                             engine="spark", planned_files={"data": 1}), "RemoveOrphanFiles")
    assert orphans.to_status()["orphanFiles"] == 1 and "expiredSnapshots" not in orphans.to_status()
    assert RunReport(dry_run=True, planned_files=0, planned_bytes=0).to_status() == \
        {"dryRun": True, "plannedFiles": 0, "plannedBytes": 0}


def _policy(enforcement: str, retention: dict[str, Any]) -> tuple[PaimonTableSpec, result.EffectivePolicy]:
    spec = parse_spec("PaimonTable", {"database": "s", "table": "o", "enforcement": enforcement,
                                      "retention": retention}, source="t")
    assert isinstance(spec, PaimonTableSpec)
    return spec, resolution.resolve_effective_policy(result.TableContext("o", "s", spec))


_KIND = {"ExpirePartitions": "ExpirePartitions", "ExpireConsumers": "ExpireConsumers",
         "ExpireSnapshots": "ExpireSnapshots", "ExpireTags": "ExpireTags", "RemoveOrphanFiles": "CleanOrphans"}


@pytest.mark.parametrize("enforcement", ["Operator", "Both", "TableOptions"])
@pytest.mark.parametrize("retention", [
    {}, {"snapshots": {"minRetained": 2}}, {"tags": {"state": "Disabled"}},
    {"orphanFiles": {"state": "Enabled"}}, {"partitions": {"expiration": "30 d"}},
    {"snapshots": {"state": "Disabled", "minRetained": 2}}, {"consumers": {"expiration": "7 d"}},
])
def test_the_scheduler_asks_the_planners_rule(enforcement: str, retention: dict[str, Any]) -> None:
    spec, policy = _policy(enforcement, retention)
    for job in maintenance.JOBS:
        assert maintenance.enabled(job, spec, policy) is enabled_jobs.enabled(_KIND[job.run_type], enforcement, policy)
    if enforcement == "TableOptions":  # the writers do all of it
        assert not any(enabled_jobs.enabled(k, enforcement, policy) for k in enabled_jobs.KINDS)
    with pytest.raises(ValueError):
        enabled_jobs.enabled("Compact", enforcement, policy)
