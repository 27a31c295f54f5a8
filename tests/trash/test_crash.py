"""Crash at every move of a trash run and of its undo, then rerun: nothing lost, nothing
duplicated. A crash comes either between two moves or inside one, after the copy and before the
source is removed (how an object store's copy-then-delete is interrupted)."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core.paimon.table import Table
from tablekeeper.core.plans import execution
from tablekeeper.core.reclaim.expire import commit, planning, retention
from tablekeeper.core.reclaim.orphans import planning as orphans
from tablekeeper.core.refs import tag_deletion
from tablekeeper.core.safety import trash
from tablekeeper.core.storage import FileIO
from tests.maintenance.helpers import Crash, backdate_tree, copy_tree, handle, plant, table_root, views

NOW = 4_102_444_800_000  # 2100-01-01: every planted file is old enough


def _orphans(t: Table) -> None:
    config = orphans.OrphanConfig(orphans.resolve_older_than(NOW, older_than_age=timedelta(hours=1)))
    result = execution.execute(orphans.plan_orphan_clean(t, config), t.file_io, batch_size=1)
    assert not result.failed


def _tag_delete(t: Table) -> None:
    try:
        tag_deletion.delete_tag(t, "t3", force=True,
                                run=lambda p: execution.execute(p, t.file_io, batch_size=1))
    except Exception as e:  # a rerun after the tag file went: nothing left to delete
        if "t3" not in str(e):
            raise


def _expire(t: Table) -> None:
    config = planning.expire_config(retention.from_options(t.options(), retention.RetentionFlags(
        retain_min=1, time_retained=timedelta(0))), t.options())
    _, result = commit.run_expire(t, config, NOW, lambda p: execution.execute(p, t.file_io, batch_size=1))
    assert not result.failed


SCENARIOS: dict[str, Callable[[Table], None]] = {"clean-orphans": _orphans, "tag delete": _tag_delete,
                                                 "expire": _expire}


def _table_files(wh: str) -> dict[str, int]:
    root = table_root(wh)
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if not rel.startswith(".tablekeeper") and not rel.endswith("EARLIEST"):
                out[rel] = os.path.getsize(os.path.join(dirpath, name))
    return out


def _left_in_trash(wh: str) -> list[str]:
    trash_dir = os.path.join(table_root(wh), ".tablekeeper", "trash")
    return [os.path.join(d, f) for d, _, fs in os.walk(trash_dir) for f in fs if f"{os.sep}files{os.sep}" in d + os.sep]


def _crashing(io: Any, at: int, inside: bool) -> None:
    """Make the ``at``-th move of ``io`` (a run's rename, an undo's move) crash, before it or
    after its copy."""
    count = [0]

    def crashing(real: Callable[[str, str], None]) -> Callable[[str, str], None]:
        def move(src: str, dst: str) -> None:
            count[0] += 1
            if count[0] == at:
                if inside and os.path.exists(src) and not os.path.exists(dst):
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    with open(src, "rb") as f, open(dst, "wb") as g:
                        g.write(f.read())
                raise Crash(f"crash at move {at}")
            real(src, dst)
        return move

    io.move_file = crashing(io.move_file)
    io.rename = crashing(io.rename)


def _points(moves: int) -> list[int]:
    """Every move of a short run; of a long one (expire) the first, the last and three between."""
    if moves <= 8:
        return list(range(1, moves + 1))
    return sorted({1, 2, moves // 3, 2 * moves // 3, moves})


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> str:
    from tests.maintenance.helpers import build_mixed

    wh = str(tmp_path_factory.mktemp("crash") / "wh")
    build_mixed(wh)
    root = table_root(wh)
    for part in ("dt=a", "dt=b"):
        plant(os.path.join(root, part, "bucket-0", "data-orphan-1.parquet"), b"one")
        plant(os.path.join(root, part, "bucket-0", "data-orphan-2.parquet"), b"two")
    backdate_tree(root, 3 * 86400)
    return wh


def _count_moves(template: str, tmp: Path, scenario: str) -> int:
    wh = copy_tree(template, tmp / "count")
    t = handle(wh)
    with trash.keeping(t.file_io, t.root, scenario, timedelta(days=1)) as run:
        SCENARIOS[scenario](t)
    assert run is not None
    return run.moved


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_crash_at_every_move_then_a_rerun_loses_and_duplicates_nothing(
        scenario: str, template: str, tmp_path: Path) -> None:
    before, files = views(template), _table_files(template)
    moves = _count_moves(template, tmp_path, scenario)
    assert moves >= 1
    for at in _points(moves):
        for inside in (False, True):
            wh = copy_tree(template, tmp_path / f"run-{at}-{inside}")
            t = handle(wh)
            _crashing(t.file_io, at, inside)
            with trash.keeping(t.file_io, t.root, scenario, timedelta(days=1)), pytest.raises(Crash):
                SCENARIOS[scenario](t)
            again = handle(wh)  # the rerun: planned again, in a window of its own
            with trash.keeping(again.file_io, again.root, scenario, timedelta(days=1)):
                SCENARIOS[scenario](again)
            runs = trash.list_runs(again.file_io, again.root)
            assert len(runs) == 2
            for record in reversed(runs):
                trash.undo(again.file_io, again.root, record.run_id)
            assert _table_files(wh) == files, (at, inside)
            assert _left_in_trash(wh) == [], (at, inside)
            assert views(wh) == before, (at, inside)


def _undo_crashes_then_reruns(wh: str, scenario: str, crash: Callable[[Any], None]) -> int:
    """Run ``scenario`` with a window, undo it on a FileIO that ``crash`` makes fail part way, then
    undo again: every moved file counts as restored or already back. Returns the files moved."""
    t = handle(wh)
    with trash.keeping(t.file_io, t.root, scenario, timedelta(days=1)) as run:
        SCENARIOS[scenario](t)
    assert run is not None
    crashing = handle(wh)
    crash(crashing.file_io)
    with pytest.raises(Crash):
        trash.undo(crashing.file_io, crashing.root, run.run_id)
    again = handle(wh)
    done = trash.undo(again.file_io, again.root, run.run_id)
    assert done.restored + done.already_back == run.moved
    return run.moved


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_crash_at_every_move_of_an_undo_then_a_rerun_restores_everything(
        scenario: str, template: str, tmp_path: Path) -> None:
    before, files = views(template), _table_files(template)
    moves = _count_moves(template, tmp_path, scenario)
    for at in _points(moves):
        for inside in (False, True):
            wh = copy_tree(template, tmp_path / f"undo-{at}-{inside}")
            _undo_crashes_then_reruns(wh, scenario, lambda io, at=at, inside=inside: _crashing(io, at, inside))
            assert _table_files(wh) == files, (at, inside)
            assert _left_in_trash(wh) == [], (at, inside)
            assert views(wh) == before, (at, inside)


def _crashing_copies(io: Any, at: int | str, inside: bool) -> None:
    """Make the ``at``-th ``copy_file`` of ``io`` crash (before it, or ``inside``: after it), or with
    ``at="deletes"`` the undo's delete of the trash copies."""
    count = [0]
    real_copy, real_delete = io.copy_file, io.delete_files

    def copy(src: str, dst: str) -> None:
        count[0] += 1
        if count[0] == at:
            if inside:
                real_copy(src, dst)
            raise Crash(f"crash at copy {at}")
        real_copy(src, dst)

    def delete(paths: Any, **kw: Any) -> Any:
        if at == "deletes":
            raise Crash("crash before the trash copies are deleted")
        return real_delete(paths, **kw)

    io.copy_file, io.delete_files = copy, delete


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_crash_in_an_object_store_undo_then_a_rerun_restores_everything(
        scenario: str, template: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Object stores undo by one copy per file, then delete the trash copies together: a crash
    before or after any copy, or before the deletes, then a rerun: every file back once, the trash
    empty. Local disk with FileIO's object-store path switched on (the same copy_file and
    delete_files calls an object store makes; tests/stores runs the path on the real stores)."""
    monkeypatch.setattr(FileIO, "moves_by_copy", property(lambda self: True))
    before, files = views(template), _table_files(template)
    moves = _count_moves(template, tmp_path, scenario)
    points: list[tuple[int | str, bool]] = [(at, inside) for at in _points(moves) for inside in (False, True)]
    for at, inside in [*points, ("deletes", False)]:
        wh = copy_tree(template, tmp_path / f"copy-undo-{at}-{inside}")
        moved = _undo_crashes_then_reruns(wh, scenario,
                                          lambda io, at=at, inside=inside: _crashing_copies(io, at, inside))
        assert moved == moves
        assert _table_files(wh) == files, (at, inside)
        assert _left_in_trash(wh) == [], (at, inside)
        assert views(wh) == before, (at, inside)
