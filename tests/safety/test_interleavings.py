"""Deterministic interleavings (issue #12): each destructive operation runs in this process with
a test hook (core/safety/concurrency/seams.py) that injects one concurrent change at one phase boundary: a writer
commit (pypaimon), an expiration (as Paimon's own procedure would: no lease), a tag on the
oldest snapshot (or on the tag being deleted), a branch from a tag, a consumer that moved back,
or a crash (then the operation is rerun). For every pair (operation, change), at two boundaries
each (right after planning, and in the middle), the table afterwards is read by pypaimon at
every retained snapshot, tag and branch head, and no file any retained root needs is missing.

An operation may refuse (fail closed) when its inputs keep changing; it may never lose a file."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from tablekeeper.core import errors
from tablekeeper.core.plans import execution
from tablekeeper.core.reclaim.expire import commit, planning
from tablekeeper.core.reclaim.orphans import planning as orphans
from tablekeeper.core.refs import branches, tag_deletion, tags
from tablekeeper.core.safety.concurrency import seams
from tests.maintenance.helpers import (
    DAY_MS,
    backdate_tree,
    build_mixed,
    copy_tree,
    handle,
    missing_required,
    reload,
    rows,
    table_root,
    views,
    write,
    write_consumer,
)
from tests.safety.helpers import EXPIRE_ALL_BUT_TWO, NOW, build_expired_tag


class Crash(Exception):
    pass


def _expire(wh: str) -> None:
    commit.run_expire(handle(wh), EXPIRE_ALL_BUT_TWO, NOW)


def _tag_delete(wh: str) -> None:
    t = handle(wh)
    if t.tag_exists("t3") or Path(tag_deletion.intent_path(t, "t3")).exists():
        tag_deletion.delete_tag(t, "t3", force=True)


def _branch_drop(wh: str) -> None:
    t = handle(wh)
    if "b1" in t.branch_names():
        branches.drop_branch(t, "b1")


def _clean_orphans(wh: str) -> None:
    t = handle(wh)
    now = int(__import__("time").time() * 1000)
    plan = orphans.plan_orphan_clean(t, orphans.OrphanConfig(now - DAY_MS, processes=1))
    execution.execute(plan, t.file_io)


def _build_old_mixed(wh: str) -> None:
    """The mixed table with every file 3 days old: all of it is a candidate for orphan cleanup
    (the default 1-day threshold), so only the references protect it."""
    build_mixed(wh)
    backdate_tree(table_root(wh), 3 * 86400)


# operation: (builder, run, the two boundaries: right after planning, and in the middle)
OPERATIONS: dict[str, tuple[Callable[[str], None], Callable[[str], None], tuple[str, str]]] = {
    "expire": (build_mixed, _expire, ("expire:intent", "expire:unpublished")),
    "tag-delete": (build_expired_tag, _tag_delete, ("tag-delete:intent", "tag-delete:unpublished")),
    "branch-drop": (build_mixed, _branch_drop, ("branch-drop:begin", "branch-drop:snapshots-deleted")),
    "clean-orphans": (_build_old_mixed, _clean_orphans, ("orphans:roots-listed", "orphans:walked")),
}


def _commit(wh: str) -> None:
    write(reload(wh), rows("a", 900))


def _paimon_expire(wh: str) -> None:
    t = handle(wh)
    config = planning.ExpireConfig(retain_min=1, time_retained=timedelta(0), expire_limit=1000)
    execution.execute(planning.plan_expire(t, config, NOW), t.file_io)


def _commit_then_expire(wh: str) -> None:
    """Issue #12's orphan-cleanup loss: a writer commits, then an expiration keeps only the new
    snapshot, so every listed snapshot vanishes before it is walked."""
    _commit(wh)
    _paimon_expire(wh)


def _tag(wh: str) -> None:
    """A tag on the oldest snapshot there is (an expiring one), or on t3's expired snapshot."""
    t = handle(wh)
    ids = t.snapshot_ids()
    target = 3 if 3 not in ids and any(x.snapshot_id == 3 for x in t.tags()) else ids[0]
    tags.create_tag(t, "late", snapshot_id=target)


def _branch(wh: str) -> None:
    t = handle(wh)
    if t.tag_exists("t3"):
        branches.create_branch(t, "late", from_tag="t3")
    else:
        branches.create_branch(t, "late", from_snapshot=t.snapshot_ids()[0])


def _consumer(wh: str) -> None:
    t = handle(wh)
    write_consumer(t, "reader", t.snapshot_ids()[0])


def _crash(_wh: str) -> None:
    raise Crash("injected")


CHANGES: dict[str, Callable[[str], None]] = {
    "commit": _commit, "expire": _paimon_expire, "commit+expire": _commit_then_expire, "tag": _tag, "branch": _branch, "consumer": _consumer,
    "crash": _crash,
}


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = {}
    for name, (build, _run, _points) in OPERATIONS.items():
        wh = str(tmp_path_factory.mktemp(name) / "wh")
        build(wh)
        out[name] = wh
    return out


@pytest.mark.parametrize("change", sorted(CHANGES))
@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_operation_beside_a_concurrent_change(operation: str, change: str, templates: dict[str, str],
                                              tmp_path: Path) -> None:
    _build, run, points = OPERATIONS[operation]
    inject = CHANGES[change]
    for point in points:
        wh = copy_tree(templates[operation], tmp_path / point.replace(":", "_").replace("/", "_"))
        fired: list[str] = []

        def hook(reached: str, point: str = point, wh: str = wh, fired: list[str] = fired) -> None:
            if reached == point and not fired:
                fired.append(reached)
                inject(wh)

        try:
            with seams.installed(hook):
                run(wh)
        except Crash:
            run(wh)  # the rerun finishes the job
        except errors.TablekeeperError as e:  # fail closed is allowed, never loss
            assert e.fix, e
        assert fired == [point], (operation, point)
        assert not missing_required(wh), (operation, change, point, missing_required(wh))
        views(wh)  # every retained snapshot, tag and branch head reads through pypaimon
