"""Changelog expiration beside concurrent changes (issue #12): the expiring ``changelog-N`` files
are unpublished first, then the decision is made again and compared (core/reclaim/expire/commit.py), as
for snapshots. A consumer that moves back after planning gets its changelogs written back with
their files; a tag or branch created meanwhile is a root of the second decision; a crash at any
phase is finished by a rerun. Afterwards every retained snapshot, tag, branch head and kept
changelog reads through pypaimon and no file a retained root needs is missing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tablekeeper.core.plans import execution
from tablekeeper.core.reclaim.expire import commit, planning
from tablekeeper.core.refs import branches, tags
from tablekeeper.core.safety.concurrency import seams
from tests.maintenance.helpers import (
    IDENT,
    append_table,
    copy_tree,
    handle,
    missing_required,
    read_changelog_rows,
    rows,
    views,
    write,
    write_consumer,
)
from tests.safety.helpers import NOW

#: Decoupled lifecycle: snapshots expire to 1, long-lived changelogs are kept down to 2.
DECOUPLED = {"snapshot.num-retained.min": "1", "changelog.num-retained.min": "2", "snapshot.time-retained": "0 ms"}


class Crash(Exception):
    pass


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Six appends, snapshots 1..5 expired into changelog-1..5."""
    wh = str(tmp_path_factory.mktemp("decoupled") / "wh")
    t = append_table(wh, options=DECOUPLED)
    for i in range(6):
        write(t, rows("a", 10 * i))
    h = handle(wh)
    execution.execute(planning.plan_expire(h, planning.config_from_options(h.options()), NOW), h.file_io)
    assert h.changelog_ids() == [1, 2, 3, 4, 5]
    return wh


def _run(wh: str) -> tuple[list[str], execution.ExecutionResult]:
    t = handle(wh)
    made, result = commit.run_expire_changelog(t, planning.changelog_config_from_options(t.options()), NOW)
    return list(made.notes), result


def _consumer(wh: str) -> None:
    write_consumer(handle(wh), "reader", 1)


def _tag(wh: str) -> None:
    t = handle(wh)
    tags.create_tag(t, "late", snapshot_id=t.snapshot_ids()[0])


def _branch(wh: str) -> None:
    t = handle(wh)
    branches.create_branch(t, "late", from_snapshot=t.snapshot_ids()[0])


def _crash(_wh: str) -> None:
    raise Crash("injected")


CHANGES: dict[str, Callable[[str], None]] = {"consumer": _consumer, "tag": _tag, "branch": _branch, "crash": _crash}
POINTS = ("expire-changelogs:intent", "expire-changelogs:unpublished", "expire-changelogs:verified")


def _assert_intact(wh: str) -> None:
    assert not missing_required(wh), missing_required(wh)
    views(wh)
    t = handle(wh)
    for cid in t.changelog_ids():
        read_changelog_rows(wh, IDENT, cid)  # every kept changelog still reads
    assert not Path(commit.intent_path(t, "changelogs")).exists()


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_changelog_expiration_beside_a_concurrent_change(template: str, tmp_path: Path, change: str,
                                                         point: str) -> None:
    wh = copy_tree(template, tmp_path / "wh")
    fired: list[str] = []

    def hook(reached: str) -> None:
        if reached == point and not fired:
            fired.append(reached)
            CHANGES[change](wh)

    notes: list[str] = []
    try:
        with seams.installed(hook):
            notes, _result = _run(wh)
    except Crash:
        notes, _result = _run(wh)  # the rerun finishes the job
        assert any("resuming" in n for n in notes), notes
    assert fired == [point]
    ids = handle(wh).changelog_ids()
    if change == "consumer" and point != "expire-changelogs:verified":
        # the consumer at 1 needs every changelog: the unpublished ones were written back
        assert ids == [1, 2, 3, 4, 5] and any("written back" in n for n in notes), (ids, notes)
    elif change != "consumer":
        assert ids == [5], ids  # changelog.num-retained.min=2 of latest 6
    _assert_intact(wh)
