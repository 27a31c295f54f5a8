"""Deterministic interleavings for the Spark engine (issue #12): the Spark driver runs in this
process, so core's seam points (core/safety/concurrency/seams.py) fire in it and a test hook injects one
concurrent change at one phase boundary of a Spark job, as tests/safety/test_interleavings.py
does for the in-process engine. Afterwards every retained snapshot, tag and branch head reads
through pypaimon and no file a retained root needs is missing; the run says what it did about
the change (re-walked roots, files left for orphan cleanup, snapshots written back)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core.reclaim.expire import commit
from tablekeeper.core.safety.concurrency import seams
from tablekeeper.spark import job, job_request, result_artifact
from tests.maintenance.helpers import (
    handle,
    missing_required,
    now_ms,
    spark_request,
    views,
    write_consumer,
)
from tests.safety.helpers import NOW
from tests.safety.test_interleavings import (
    Crash,
    _build_old_mixed,
    _commit,
    _commit_then_expire,
    _paimon_expire,
    _tag,
    build_mixed,
    copy_tree,
)

pytestmark = pytest.mark.spark

#: Expire all but two snapshots of main (tests/safety/helpers.EXPIRE_ALL_BUT_TWO), as flags.
RETAIN = {"retain_min": 2, "retain_max": 2, "time_retained": "0 ms", "expire_limit": 1000}


def _orphans_request(wh: str) -> job_request.JobRequest:
    request: job_request.JobRequest = spark_request(wh, "clean-orphans", parallelism=2, now_ms=now_ms())
    return request


def _expire_request(wh: str) -> job_request.JobRequest:
    request: job_request.JobRequest = spark_request(wh, "expire", parallelism=2, now_ms=NOW, **RETAIN)
    return request


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = {}
    for name, build in (("orphans", _build_old_mixed), ("expire", build_mixed)):
        wh = str(tmp_path_factory.mktemp(name) / "wh")
        build(wh)
        out[name] = wh
    return out


def _run_with(spark: Any, request: job_request.JobRequest, point: str,
              inject: Callable[[], None]) -> result_artifact.RunResult:
    """Run ``request`` on Spark, injecting ``inject`` once when the driver reaches ``point``."""
    fired: list[str] = []

    def hook(reached: str) -> None:
        if reached == point and not fired:
            fired.append(reached)
            inject()

    with seams.installed(hook):
        result = job.run(spark, request)
    assert fired == [point], point
    return result


def _assert_intact(wh: str) -> None:
    assert not missing_required(wh), missing_required(wh)
    views(wh)  # every retained snapshot, tag and branch head reads through pypaimon


@pytest.mark.parametrize("change", ["commit+expire", "expire", "commit"])
def test_spark_orphan_cleanup_beside_a_commit_and_an_expiration(spark: Any, templates: dict[str, str],
                                                                 tmp_path: Path, change: str) -> None:
    """Issue #12's loss, on Spark: roots listed, then a writer commits and an expiration removes
    the listed snapshots before the executors read them. Core's loop lists the roots again and
    the job walks the new ones, so the new snapshot's old files (3 days old: candidates under
    the default threshold) stay."""
    wh = copy_tree(templates["orphans"], tmp_path / "wh")
    inject = {"commit+expire": _commit_then_expire, "expire": _paimon_expire, "commit": _commit}[change]
    result = _run_with(spark, _orphans_request(wh), "orphans:roots-listed", lambda: inject(wh))
    assert result.failed_count == 0
    if change != "commit":  # listed roots vanished unwalked: the run says it walked again
        assert any("listed again" in n for n in result.notes), result.notes
    _assert_intact(wh)


def test_spark_expire_keeps_what_a_tag_created_after_planning_needs(spark: Any, templates: dict[str, str],
                                                                     tmp_path: Path) -> None:
    """A tag on an expiring snapshot, created after the plan was made and before anything is
    deleted: the verifying decision has it as a root, so only files both decisions delete go;
    the rest is left for orphan cleanup, and the run says so."""
    wh = copy_tree(templates["expire"], tmp_path / "wh")
    result = _run_with(spark, _expire_request(wh), "expire:intent", lambda: _tag(wh))
    assert result.failed_count == 0
    assert any("left for orphan cleanup" in n for n in result.notes), result.notes
    t = handle(wh)
    assert t.tag_exists("late") and not Path(commit.intent_path(t)).exists()
    _assert_intact(wh)


def test_spark_expire_writes_back_what_a_consumer_that_moved_back_needs(spark: Any, templates: dict[str, str],
                                                                         tmp_path: Path) -> None:
    wh = copy_tree(templates["expire"], tmp_path / "wh")
    oldest = handle(wh).snapshot_ids()[0]
    result = _run_with(spark, _expire_request(wh), "expire:unpublished",
                       lambda: write_consumer(handle(wh), "reader", oldest))
    assert any("written back" in n for n in result.notes), result.notes
    assert handle(wh).snapshot_ids()[0] == oldest
    _assert_intact(wh)


@pytest.mark.parametrize("point", ["expire:unpublished", "expire:verified"])
def test_spark_expire_crash_then_rerun_finishes(spark: Any, templates: dict[str, str], tmp_path: Path,
                                                point: str) -> None:
    """A crash of the driver at a phase boundary, then a rerun on Spark: it resumes the intent
    and ends like an uninterrupted run."""
    wh = copy_tree(templates["expire"], tmp_path / "wh")

    def crash() -> None:
        raise Crash("injected")

    with pytest.raises(Crash):
        _run_with(spark, _expire_request(wh), point, crash)
    result = job.run(spark, _expire_request(wh))
    assert result.failed_count == 0
    t = handle(wh)
    assert len(t.snapshot_ids()) == 2 and not Path(commit.intent_path(t)).exists()
    assert t.read_hint("snapshot", "EARLIEST") == t.snapshot_ids()[0]
    _assert_intact(wh)
