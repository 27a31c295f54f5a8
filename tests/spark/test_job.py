"""The Spark engine against the in-process engine, on real pypaimon tables, with local[2].

For the same table and policy both engines must leave identical tables (every file and
directory name) and report identical planned and executed counts. Tables are built once per
module and copied per test (``copy_tree`` keeps mtimes, so orphan ages are the same in both
copies).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core import errors
from tablekeeper.core.reclaim.expire import commit
from tablekeeper.spark import __main__ as spark_main
from tablekeeper.spark import dispatch, job, job_request, result_artifact
from tests.maintenance.helpers import (
    IDENT,
    append_table,
    build_mixed_with_orphans,
    copy_tree,
    handle,
    now_ms,
    pk_table,
    rows,
    spark_request,
    table_root,
    truncate,
    write,
)
from tests.support.paimon import dir_listing, snapshot_views

pytestmark = pytest.mark.spark

DAY_MS = 86_400_000
#: Decoupled changelog lifecycle (tests/maintenance/test_expire.py uses the same options).
DECOUPLED = {"snapshot.num-retained.min": "1", "changelog.num-retained.min": "2", "snapshot.time-retained": "0 ms"}
#: Two tasks per I/O stage: enough to exercise partitioning, cheap on two cores.
PARALLELISM = 2


def request(wh: str, operation: job_request.Operation, **kw: Any) -> job_request.JobRequest:
    """Retention flags (``retain_min=1``...) resolved over the table's options, as the CLI does."""
    kw.setdefault("parallelism", PARALLELISM)
    request: job_request.JobRequest = spark_request(wh, operation, IDENT, **kw)
    return request


def names(root: str) -> set[str]:
    """Every file and directory below the warehouse, by relative name."""
    return set(dir_listing(root))


def assert_same_outcome(local: result_artifact.RunResult, spark: result_artifact.RunResult) -> None:
    assert spark.engine == "spark" and local.engine == "local"
    assert spark.planned_files == local.planned_files
    assert spark.planned_bytes == local.planned_bytes
    assert spark.deleted == local.deleted
    assert spark.deleted_bytes == local.deleted_bytes
    assert spark.failed_count == local.failed_count == 0
    assert [w.replace(spark.warehouse, "") for w in spark.written] == \
        [w.replace(local.warehouse, "") for w in local.written]
    assert spark.removed_dirs == local.removed_dirs


# -- tables ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mixed_with_orphans(tmp_path_factory: pytest.TempPathFactory) -> str:
    """build_mixed (two branches, tags, overwrites) plus planted orphans (build_mixed_with_orphans)."""
    wh = str(tmp_path_factory.mktemp("mixed") / "wh")
    build_mixed_with_orphans(wh)
    return wh


@pytest.fixture
def two_copies(mixed_with_orphans: str, tmp_path: Path) -> tuple[str, str]:
    return copy_tree(mixed_with_orphans, tmp_path / "local"), copy_tree(mixed_with_orphans, tmp_path / "spark")


# -- tests ----------------------------------------------------------------------------------------
def test_work_runs_in_python_workers_not_the_driver(spark: Any) -> None:
    pids = job.worker_pids(spark)
    assert pids and os.getpid() not in pids


def test_clean_orphans_dry_run_then_real_run_match_in_process(spark: Any, two_copies: tuple[str, str]) -> None:
    local_wh, spark_wh = two_copies
    at = now_ms() + 2 * DAY_MS  # every planted file is older than 1 day by then, except the young one
    young = f"{table_root(spark_wh)}/dt=b/bucket-0/data-young.parquet"
    os.utime(young, ((at - 3_600_000) / 1000,) * 2)
    os.utime(young.replace(spark_wh, local_wh), ((at - 3_600_000) / 1000,) * 2)
    before = names(spark_wh)

    dry = job.run(spark, request(spark_wh, "clean-orphans", now_ms=at, dry_run=True))
    assert names(spark_wh) == before  # dry run deletes nothing
    local = dispatch.run_local(request(local_wh, "clean-orphans", now_ms=at))
    assert dry.planned_files == local.planned_files == {"data": 2, "manifest": 1, "other": 1}
    assert dry.planned_bytes == local.planned_bytes
    assert dry.deleted == {} and 0 < len(dry.sample) <= 20

    real = job.run(spark, request(spark_wh, "clean-orphans", now_ms=at))
    assert_same_outcome(local, real)
    assert real.planned_files == dry.planned_files
    assert names(spark_wh) == names(local_wh)
    after = names(spark_wh)
    assert "db.db/orders/dt=zz/" not in after and "db.db/orders/dt=b/bucket-0/data-young.parquet" in after
    assert real.details["bucket_dirs"] == local.details["bucket_dirs"]

    again = job.run(spark, request(spark_wh, "clean-orphans", now_ms=at))
    assert again.planned_files == {} and names(spark_wh) == after


def test_expire_main_then_branch_match_in_process(spark: Any, two_copies: tuple[str, str]) -> None:
    local_wh, spark_wh = two_copies
    at = now_ms() + 1000
    for branch in ("main", "b1"):
        kw: dict[str, Any] = {"branch": branch, "retain_min": 1, "time_retained": "0 ms", "now_ms": at}
        local = dispatch.run_local(request(local_wh, "expire", **kw))
        remote = job.run(spark, request(spark_wh, "expire", **kw))
        assert_same_outcome(local, remote)
        assert remote.details["expired_snapshots"] == local.details["expired_snapshots"] > 0
        if branch == "main":
            assert remote.deleted.get("data", 0) > 0  # b1's expired files are all still used by main
        assert names(spark_wh) == names(local_wh)


@pytest.mark.parametrize("batches, expected, ran", [(1, 2, 1), (2, 4, 2), (10, 6, 4)])
def test_expire_batches_match_in_process(spark: Any, two_copies: tuple[str, str], batches: int,
                                         expected: int, ran: int) -> None:
    """``batches``: up to N ``--max-deletes`` batches, each on the table the previous one left,
    until one expires nothing (main has 7 snapshots; retain_min 1 leaves one: with 10 allowed,
    three batches of 2 expire and the fourth finds nothing)."""
    local_wh, spark_wh = two_copies
    before = snapshot_views(spark_wh, IDENT)
    kw: dict[str, Any] = {"retain_min": 1, "time_retained": "0 ms", "now_ms": now_ms() + 1000, "expire_limit": 2,
                          "batches": batches}
    local = dispatch.run_local(request(local_wh, "expire", **kw))
    remote = job.run(spark, request(spark_wh, "expire", **kw))
    assert_same_outcome(local, remote)
    assert remote.planned_files["snapshot"] == local.planned_files["snapshot"] == expected
    assert remote.details.get("batches", 1) == local.details.get("batches", 1) == ran
    assert handle(spark_wh).snapshot_ids() == handle(local_wh).snapshot_ids()
    assert names(spark_wh) == names(local_wh)
    after = snapshot_views(spark_wh, IDENT)  # every retained snapshot, tag and branch reads as before
    assert after == {k: v for k, v in before.items() if k in after}
    assert set(before) - set(after) == {f"main@snapshot-{i}" for i in range(1, expected + 1)}
    assert snapshot_views(local_wh, IDENT) == after


def test_decoupled_expire_and_changelog_expiry_match_in_process(spark: Any, tmp_path: Path) -> None:
    template = str(tmp_path / "template")
    t = append_table(template, options=DECOUPLED)
    for i in range(6):
        write(t, rows("a", 10 * i))
    local_wh, spark_wh = copy_tree(template, tmp_path / "local"), copy_tree(template, tmp_path / "spark")
    at = now_ms() + 1000
    local = dispatch.run_local(request(local_wh, "expire", now_ms=at))
    remote = job.run(spark, request(spark_wh, "expire", now_ms=at))
    assert_same_outcome(local, remote)
    assert any("/changelog/changelog-" in w for w in remote.written)
    assert handle(spark_wh).changelog_ids() == handle(local_wh).changelog_ids() == [1, 2, 3, 4, 5]
    assert names(spark_wh) == names(local_wh)

    local = dispatch.run_local(request(local_wh, "expire-changelog", now_ms=at))
    auto = dispatch.run(request(spark_wh, "expire-changelog", now_ms=at), engine="auto", threshold=0, spark=spark)
    assert auto.engine == "spark" and auto.details["sparkThreshold"] == 0
    assert_same_outcome(local, auto)
    assert handle(spark_wh).changelog_ids() == [5]
    assert names(spark_wh) == names(local_wh)


def test_changelog_producer_input_decoupled_expiry_matches_in_process(spark: Any, tmp_path: Path) -> None:
    """Changelog files live on in changelog-N (changelog manifests only): snapshot expiration
    keeps them, changelog expiration deletes the expired ones and their manifests."""
    template = str(tmp_path / "template")
    t = pk_table(template, options={"changelog-producer": "input", "snapshot.num-retained.min": "1",
                                    "changelog.num-retained.min": "3", "snapshot.time-retained": "0 ms"})
    for i in range(5):
        write(t, rows("a", i))
    local_wh, spark_wh = copy_tree(template, tmp_path / "local"), copy_tree(template, tmp_path / "spark")
    at = now_ms() + 1000
    for operation in ("expire", "expire-changelog"):
        local = dispatch.run_local(request(local_wh, operation, now_ms=at))
        remote = job.run(spark, request(spark_wh, operation, now_ms=at))
        assert_same_outcome(local, remote)
        assert names(spark_wh) == names(local_wh)
    assert handle(spark_wh).changelog_ids() == [3, 4]
    assert remote.deleted.get("changelog", 0) > 0 and remote.deleted.get("changelog-meta") == 2


def test_expire_removes_emptied_partition_directories_like_core(spark: Any, tmp_path: Path) -> None:
    template = str(tmp_path / "template")
    t = append_table(template, options={"snapshot.clean-empty-directories": "true"})
    write(t, rows("x", 0))
    write(t, rows("y", 10))
    truncate(t, [{"dt": "x"}])
    write(t, rows("y", 20))
    local_wh, spark_wh = copy_tree(template, tmp_path / "local"), copy_tree(template, tmp_path / "spark")
    kw: dict[str, Any] = {"retain_min": 1, "time_retained": "0 ms", "now_ms": now_ms() + 1000}
    local = dispatch.run_local(request(local_wh, "expire", **kw))
    remote = job.run(spark, request(spark_wh, "expire", **kw))
    assert_same_outcome(local, remote)
    assert remote.removed_dirs == 2 and remote.deleted_bytes["data"] > 0
    assert "db.db/orders/dt=x/" not in names(spark_wh)
    assert names(spark_wh) == names(local_wh)


def test_fail_closed_when_a_protecting_manifest_is_missing(spark: Any, two_copies: tuple[str, str]) -> None:
    _, wh = two_copies
    h = handle(wh)
    branch = h.on_branch("b1")
    main_lists = {n for s in h.snapshots() for n in s.manifest_lists}
    victim = next(n for s in branch.snapshots() for n in s.manifest_lists if n not in main_lists)
    os.unlink(os.path.join(h.root, "manifest", victim))
    before = names(wh)
    with pytest.raises(errors.IncompleteProtectionSetError):
        job.run(spark, request(wh, "expire", retain_min=1, time_retained="0 ms", now_ms=now_ms() + 1000))
    with pytest.raises(errors.IncompleteProtectionSetError):
        job.run(spark, request(wh, "clean-orphans", now_ms=now_ms() + 2 * DAY_MS))
    assert names(wh) == before


def test_a_failed_delete_task_is_retried_and_the_run_ends_correct(spark: Any, two_copies: tuple[str, str],
                                                                   tmp_path: Path) -> None:
    local_wh, spark_wh = two_copies
    kw: dict[str, Any] = {"retain_min": 1, "time_retained": "0 ms", "now_ms": now_ms() + 1000, "batch_size": 1}
    local = dispatch.run_local(request(local_wh, "expire", **kw))
    marker = tmp_path / "fault-fired"
    fault = {"after": 1, "marker": str(marker), "stage": 0}  # stage 0: data files
    remote = job.run(spark, request(spark_wh, "expire", **kw), fault=fault)
    assert marker.exists()  # the first attempt raised after one deletion
    # the retried task found the file the failed attempt deleted: missing, not failed
    assert remote.deleted.get("data", 0) + remote.missing.get("data", 0) == local.deleted["data"]
    assert remote.missing.get("data", 0) >= 1
    assert remote.failed_count == 0
    assert remote.planned_files == local.planned_files
    assert names(spark_wh) == names(local_wh)


def test_a_killed_job_leaves_metadata_intact_and_a_rerun_finishes(spark: Any, two_copies: tuple[str, str]) -> None:
    local_wh, spark_wh = two_copies
    kw: dict[str, Any] = {"retain_min": 1, "time_retained": "0 ms", "now_ms": now_ms() + 1000, "batch_size": 1}
    local = dispatch.run_local(request(local_wh, "expire", **kw))
    h = handle(spark_wh)
    snapshots = h.snapshot_ids()
    before = names(spark_wh)
    partial = result_artifact.RunResult("expire", IDENT, "main", False, "spark")
    with pytest.raises(errors.StorageError, match="rerun"):
        # no marker: every attempt dies after one deletion, so Spark's retries cannot help
        job.run(spark, request(spark_wh, "expire", **kw), fault={"after": 1, "stage": 0}, result=partial)
    lost = before - names(spark_wh)
    lost_data = {n for n in lost if "/dt=" in n}
    # the expiring snapshots were unpublished first (their JSON saved in the intent), then data
    # files went until the fault: no manifest, index or hint was touched, a rerun resumes
    assert lost_data and all("/dt=" in n or "/snapshot/snapshot-" in n for n in lost)
    assert set(h.snapshot_ids()) < set(snapshots)
    assert Path(commit.intent_path(h)).exists()
    assert partial.planned_files == local.planned_files
    rerun = job.run(spark, request(spark_wh, "expire", **kw))
    assert rerun.planned_files == local.planned_files
    assert any("resuming" in n for n in rerun.notes), rerun.notes
    assert rerun.deleted.get("data", 0) + len(lost_data) == local.deleted["data"]
    assert names(spark_wh) == names(local_wh)


def test_entry_point_writes_the_result_artifact(spark: Any, two_copies: tuple[str, str], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    local_wh, spark_wh = two_copies
    at = str(now_ms() + 1000)
    out = tmp_path / "results" / "run.json"
    retention = request(spark_wh, "expire", retain_min=2, time_retained="0 ms").retention
    assert retention is not None
    code = spark_main.main(["--operation", "expire", "--warehouse", spark_wh, "--table", IDENT, "--retention",
                            json.dumps(retention.to_dict()), "--now", at, "--parallelism", "2", "--run-name",
                            "tk-12345678-exp-abcd", "--result", str(out)])
    assert code == 0
    assert '"status": "Succeeded"' in capsys.readouterr().out
    artifact = result_artifact.read_result(str(out))
    local = dispatch.run_local(request(local_wh, "expire", retain_min=2, time_retained="0 ms", now_ms=int(at)))
    assert artifact.status == "Succeeded" and artifact.run_name == "tk-12345678-exp-abcd"
    assert artifact.planned_files == local.planned_files and artifact.deleted == local.deleted
    assert artifact.timings["totalSeconds"] > 0 and artifact.versions["spark"]
    assert artifact.spark_jobs is not None and artifact.spark_jobs > 0  # the run's jobs, counted by their group
    assert names(spark_wh) == names(local_wh)
    # a failing run still writes an artifact, with the error and exit code 1
    bad = tmp_path / "results" / "bad.json"
    code = spark_main.main(["--operation", "expire", "--warehouse", spark_wh, "--table", "db.missing",
                            "--result", str(bad)])
    assert code == 1
    failed = result_artifact.read_result(str(bad))
    assert failed.status == "Failed" and failed.errors[0]["type"] == "TableNotFoundError"


def test_cli_engine_spark_reports_the_in_process_plan(spark: Any, two_copies: tuple[str, str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from tablekeeper.cli.main import main as cli_main

    local_wh, spark_wh = two_copies
    at = str(now_ms() + 2 * DAY_MS)
    assert cli_main(["clean-orphans", "-w", local_wh, IDENT, "--now", at, "--dry-run", "-o", "json"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert cli_main(["clean-orphans", "-w", spark_wh, IDENT, "--now", at, "--dry-run", "--engine", "spark",
                     "--parallelism", "2", "-o", "json"]) == 0
    remote = json.loads(capsys.readouterr().out)
    # one shape for both engines (cli/results.py)
    assert remote["engine"] == "spark" and remote["dry_run"] is True and local["engine"] == "local"
    assert remote["files"] == local["files"] and remote["bytes"] == local["bytes"]
    assert set(local) <= set(remote), sorted(set(local) - set(remote))
    assert names(spark_wh) == names(local_wh)


def test_nothing_to_expire_is_planned_by_core_without_spark_stages(spark: Any, two_copies: tuple[str, str]) -> None:
    _, wh = two_copies
    before = names(wh)
    started = time.perf_counter()
    result = job.run(spark, request(wh, "expire", retain_min=100, now_ms=now_ms()))
    assert result.planned_files == {} and result.status == "Succeeded"
    assert result.notes and "nothing expires" in result.notes[0]
    assert result.timings["totalSeconds"] <= time.perf_counter() - started
    assert names(wh) - before == {"db.db/orders/snapshot/EARLIEST"}  # core writes a missing EARLIEST hint
    assert result.written == [f"{table_root(wh)}/snapshot/EARLIEST"]


def test_a_spark_run_takes_the_table_lease(spark: Any, two_copies: tuple[str, str]) -> None:
    """One maintainer per table (core/safety/concurrency/lease.py, issue #12): a Spark run on a table another
    tablekeeper maintains fails with TableLocked naming the holder, having changed nothing; a
    dry run needs no lease; once the holder is done, the run goes ahead."""
    import threading

    from tablekeeper.core.safety.concurrency import lease

    _local_wh, wh = two_copies
    h = handle(wh)
    holder: list[lease.Lease] = []
    other = threading.Thread(target=lambda: holder.append(lease.acquire(h.file_io, h.root, "cli expire")))
    other.start()
    other.join()
    before = names(wh)
    kw: dict[str, Any] = {"retain_min": 1, "time_retained": "0 ms", "now_ms": now_ms() + 1000}
    try:
        with pytest.raises(errors.TableLockedError, match="cli expire"):
            job.run(spark, request(wh, "expire", **kw))
        assert names(wh) == before
        assert job.run(spark, request(wh, "expire", dry_run=True, **kw)).planned_files
    finally:
        holder[0].release()
    assert job.run(spark, request(wh, "expire", **kw)).deleted
    assert lease.holder(h.file_io, h.root) is None
