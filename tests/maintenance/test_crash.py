"""Crash safety (paimon-semantics.md §2.3, §9.13): for every k from 0 to the number of
operations of a plan (one deletion or one metadata write each, ``batch_size=1``), crash after k
operations, then re-plan and execute again. The result must equal an uninterrupted run: the same
file set and identical reads of every retained view. While crashed, every view the uninterrupted
run retains must already read as before (expired snapshots may not: by design their data goes
before their snapshot file, Paimon #6978)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from tablekeeper.core.paimon.table import Table
from tablekeeper.core.plans import execution
from tablekeeper.core.plans import plan as plans
from tablekeeper.core.reclaim.expire import planning
from tablekeeper.core.reclaim.orphans import planning as orphans
from tablekeeper.core.refs import tags
from tests.maintenance.helpers import (
    Crash,
    backdate_tree,
    build_mixed,
    copy_tree,
    fault_after,
    file_set,
    handle,
    missing_required,
    now_ms,
    overwrite,
    pk_table,
    plant,
    read_views,
    reload,
    rows,
    run,
    table_root,
    views,
    write,
)

# One fixed "now" for every plan of this module, far after any file the tests write (a value
# computed at import time would be older than tables written minutes later in a long run).
NOW = 4_102_444_800_000  # 2100-01-01
EXPIRE_ALL = planning.ExpireConfig(retain_min=1, time_retained=timedelta(0))


@dataclass(frozen=True)
class Scenario:
    name: str
    build: Callable[[str], None]
    planner: Callable[[Table], plans.Plan]
    branch: str = "main"


def _build_mixed(wh: str) -> None:
    build_mixed(wh)


def _build_dynamic_bucket(wh: str) -> None:
    """HASH index files and index manifests (index files go before the index manifest)."""
    t = pk_table(wh, options={"bucket": "-1"})
    for i in range(3):
        write(t, rows("a", i))
    t.create_tag("t2", snapshot_id=2)
    overwrite(t, rows("a", 10), {"dt": "a"})
    write(t, rows("b", 20))


DECOUPLED_INPUT = {"changelog-producer": "input", "snapshot.num-retained.min": "1",
                   "changelog.num-retained.min": "4", "snapshot.time-retained": "0 ms"}


def _build_decoupled(wh: str) -> None:
    """Decoupled changelog, producer input: changelog-N copies are written before the snapshot
    files go (create-only writes, so a rerun never clobbers them)."""
    t = pk_table(wh, options=DECOUPLED_INPUT)
    for i in range(4):
        write(t, rows("a", i))
    overwrite(t, rows("a", 10), {"dt": "a"})
    write(t, rows("b", 20))


def _decoupled_plan(t: Table) -> plans.Plan:
    return planning.plan_expire(t, planning.config_from_options(t.options()), NOW)


def _build_tag_cleanup(wh: str) -> None:
    """mixed + tag 'mid' at main snapshot 5, whose snapshot is then expired (metadata only
    matters: the tag is the sole owner of a30 and its manifest lists)."""
    build_mixed(wh)
    reload(wh).create_tag("mid", snapshot_id=5)
    h = handle(wh)
    run(planning.plan_expire(h, EXPIRE_ALL, NOW), h)
    assert h.snapshot_ids() == [7]


def _build_orphans(wh: str) -> None:
    build_mixed(wh)
    root = table_root(wh)
    for rel in ("manifest/manifest-0a0a-orphan-0", "manifest/manifest-list-0a0a-orphan-0",
                "index/index-0a0a-orphan-0", "statistics/stat-0a0a-orphan-0",
                "dt=a/bucket-0/data-0a0a-orphan-0.parquet", "dt=zz/bucket-0/data-0a0a-orphan-1.parquet",
                "dt=zz/bucket-1/data-0a0a-orphan-2.parquet", "snapshot/.snapshot-99.0a0a.tmp",
                "branch/branch-b1/snapshot/.snapshot-9.0a0a.tmp"):
        plant(f"{root}/{rel}")
    backdate_tree(wh, 3 * 86400)


def _tag_plan(t: Table) -> plans.Plan:
    """Delete tag 'mid' with cleanup; once the tag file is gone there is nothing left to do."""
    if not t.tag_exists("mid"):
        return plans.Plan("delete-tag", t.identifier)
    return tags.plan_delete_tag(t, "mid")


def _orphan_plan(t: Table) -> plans.Plan:
    return orphans.plan_orphan_clean(t, orphans.OrphanConfig(orphans.resolve_older_than(now_ms())))


SCENARIOS = [
    Scenario("expire-main", _build_mixed, lambda t: planning.plan_expire(t, EXPIRE_ALL, NOW)),
    Scenario("expire-branch", _build_mixed, lambda t: planning.plan_expire(t, EXPIRE_ALL, NOW), branch="b1"),
    Scenario("expire-dynamic-bucket", _build_dynamic_bucket, lambda t: planning.plan_expire(t, EXPIRE_ALL, NOW)),
    Scenario("expire-decoupled-changelog", _build_decoupled, _decoupled_plan),
    Scenario("delete-tag-with-cleanup", _build_tag_cleanup, _tag_plan),
    Scenario("clean-orphans", _build_orphans, _orphan_plan),
]


def operations(plan: plans.Plan) -> int:
    """Fault-hook calls of a batch_size=1 run: one per deleted file, one per metadata write."""
    return len(plan.files) + sum(isinstance(s, plans.WriteStep) for s in plan.steps)


def relative_files(wh: str) -> set[str]:
    return file_set(wh)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name if isinstance(s, Scenario) else None)
def test_crash_after_every_operation_then_rerun_equals_an_uninterrupted_run(scenario: Scenario,
                                                                            tmp_path: Path) -> None:
    template = str(tmp_path / "template" / "wh")
    scenario.build(template)
    template_views = views(template)

    reference = copy_tree(template, tmp_path / "reference" / "wh")
    t_ref = handle(reference, branch=scenario.branch)
    plan = scenario.planner(t_ref)
    n = operations(plan)
    assert n >= 4, plan
    result = execution.execute(plan, t_ref.file_io, batch_size=1, parallelism=1)
    assert not result.failed
    reference_files = relative_files(reference)
    reference_views = views(reference)
    assert not missing_required(reference)
    assert reference_files != relative_files(template)
    retained = {k for k in reference_views if k in template_views}

    failures: list[str] = []
    for k in range(n + 1):
        wh = copy_tree(template, tmp_path / f"crash-{k}" / "wh")
        t = handle(wh, branch=scenario.branch)
        fault, calls = fault_after(k)
        try:
            execution.execute(scenario.planner(t), t.file_io, batch_size=1, parallelism=1, fault=fault)
            crashed = False
        except Crash:
            crashed = True
        if crashed != (k < n):
            failures.append(f"k={k}: crashed={crashed}, expected {k < n} (calls={calls[0]})")
        try:
            mid_views = read_views(wh, retained)
            broken = {key for key in retained if mid_views[key] != template_views[key]}
            if broken:
                failures.append(f"k={k}: retained views unreadable while crashed: {sorted(broken)}")
            t = handle(wh, branch=scenario.branch)
            rerun = scenario.planner(t)
            result = execution.execute(rerun, t.file_io, batch_size=1, parallelism=1)
            if result.failed:
                failures.append(f"k={k}: rerun failed deletes {result.failed}")
            again = scenario.planner(handle(wh, branch=scenario.branch))
            if again.files:
                failures.append(f"k={k}: a third run still plans {[f.path for f in again.files]}")
        except Exception as e:  # the rerun must always be possible
            failures.append(f"k={k}: rerun raised {type(e).__name__}: {e}")
            shutil.rmtree(os.path.dirname(wh))
            continue
        files = relative_files(wh)
        if files != reference_files:
            failures.append(f"k={k}: extra {sorted(files - reference_files)}, "
                            f"missing {sorted(reference_files - files)}")
        if views(wh) != reference_views:
            failures.append(f"k={k}: views differ from the uninterrupted run")
        shutil.rmtree(os.path.dirname(wh))
    assert not failures, "\n".join(failures)

