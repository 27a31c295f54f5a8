"""EARLIEST is monotonic and true (issue #12): a rerun corrects a stale hint; a plan made before a
concurrent expiration never moves the hint backwards; the hint never names a deleted snapshot
after a run. Real pypaimon tables, the real executor."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from tablekeeper.core.plans import execution
from tablekeeper.core.reclaim.expire import planning
from tablekeeper.core.safety.concurrency import hint_writes, seams
from tests.maintenance.helpers import build_mixed, handle, run, table_root, views

NOW = 4_102_444_800_000  # 2100-01-01: every snapshot is old
ALL = planning.ExpireConfig(retain_min=2, time_retained=timedelta(0), expire_limit=1000)


def _earliest(wh: str) -> str:
    return Path(table_root(wh), "snapshot", "EARLIEST").read_text()


def test_a_rerun_corrects_a_stale_earliest(tmp_path: Path) -> None:
    """The crash the issue describes: snapshot files gone, EARLIEST still names the first one."""
    wh = str(tmp_path / "wh")
    build_mixed(wh)
    table = handle(wh)
    plan = planning.plan_expire(table, ALL, NOW)
    stale = _earliest(wh) if Path(table_root(wh), "snapshot", "EARLIEST").exists() else None
    crashed = type(plan)(plan.operation, plan.table, tuple(s for s in plan.steps
                                                           if not str(getattr(s, "path", "")).endswith("EARLIEST")))
    run(crashed, table)
    assert handle(wh).snapshot_ids() == [6, 7]
    Path(table_root(wh), "snapshot", "EARLIEST").write_text(stale or "1")
    rerun = planning.plan_expire(handle(wh), ALL, NOW)
    assert [s.path for s in rerun.steps] == [f"{table_root(wh)}/snapshot/EARLIEST"], rerun.steps
    run(rerun, handle(wh))
    assert _earliest(wh) == "6"
    assert planning.plan_expire(handle(wh), ALL, NOW).is_empty


def test_a_late_plan_never_moves_earliest_backwards(tmp_path: Path) -> None:
    """Two expirations planned on the same state: the one with the smaller range writes last."""
    wh = str(tmp_path / "wh")
    build_mixed(wh)
    before = views(wh)
    small = planning.plan_expire(handle(wh), planning.ExpireConfig(retain_min=5, time_retained=timedelta(0)), NOW)
    big = planning.plan_expire(handle(wh), ALL, NOW)
    run(big, handle(wh))
    assert _earliest(wh) == "6"
    run(small, handle(wh))  # its EARLIEST (3) is planned below what is there now
    assert _earliest(wh) == "6"
    assert handle(wh).snapshot_ids() == [6, 7]
    after = views(wh)
    assert {k: v for k, v in before.items() if k in after} == after


def test_earliest_names_an_existing_snapshot_when_the_planned_one_vanished(tmp_path: Path) -> None:
    """The planned value's snapshot was expired by someone else between plan and write: the
    hint advances to the first snapshot that exists."""
    wh = str(tmp_path / "wh")
    build_mixed(wh)
    root = table_root(wh)
    path = f"{root}/snapshot/EARLIEST"
    for sid in (1, 2, 3, 4):
        Path(root, "snapshot", f"snapshot-{sid}").unlink()
    io = handle(wh).file_io
    assert hint_writes.write_hint(io, path, 3) == 5
    assert _earliest(wh) == "5"
    assert hint_writes.write_hint(io, path, 2) is None  # never backwards
    assert _earliest(wh) == "5"
    Path(path).write_text("999")  # garbage above every snapshot: replaced by the truth
    assert hint_writes.write_hint(io, path, 5) == 5


def test_the_hint_write_is_redone_when_the_snapshot_goes_during_it(tmp_path: Path) -> None:
    """An expiration racing the write itself: verified after writing, redone."""
    wh = str(tmp_path / "wh")
    build_mixed(wh)
    root = table_root(wh)
    io = handle(wh).file_io
    real_overwrite = io.overwrite
    calls = []

    def racing(path: str, data: bytes | str) -> None:
        real_overwrite(path, data)
        if not calls:
            Path(root, "snapshot", f"snapshot-{int(data)}").unlink()  # expired just after our write
        calls.append(data)

    io.overwrite = racing  # type: ignore[method-assign]
    assert hint_writes.write_hint(io, f"{root}/snapshot/EARLIEST", 1) == 2
    assert calls == ["1", "2"]
    assert _earliest(wh) == "2"


def test_latest_never_moves_backwards(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    build_mixed(wh)
    path = f"{table_root(wh)}/changelog/LATEST"
    io = handle(wh).file_io
    assert hint_writes.write_hint(io, path, 5) == 5
    assert hint_writes.write_hint(io, path, 3) is None
    assert Path(path).read_text() == "5"


def test_every_step_has_a_seam_point(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    build_mixed(wh)
    table = handle(wh)
    seen: list[str] = []
    with seams.installed(seen.append):
        execution.execute(planning.plan_expire(table, ALL, NOW), table.file_io)
    assert seen[0] == "before:delete:data" and seen[-1] == "end"
    assert {"mid:delete:manifest", "before:delete:snapshot", "mid:delete:snapshot",
            "before:write:snapshot/EARLIEST"} <= set(seen)
