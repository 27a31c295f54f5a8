"""SIGKILL trials (issue #12): ``tablekeeper expire``, ``tag delete`` and ``branch drop`` run as real
processes that kill themselves (``TABLEKEEPER_TEST_KILL_AT``, core/safety/concurrency/seams.py) at each phase
boundary of the operation; then the same command is rerun. The end state must equal an
uninterrupted run (the same files, EARLIEST the same and naming an existing snapshot), every
retained snapshot, tag and branch must read through pypaimon as before, and the dead process's
lease must not block the rerun.

The phase boundaries are not hard-coded: an uninterrupted in-process run records the points it
passes (``seams.installed``), and every one of them is a trial."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tablekeeper.cli.main import cli, main
from tablekeeper.core.safety.concurrency import seams
from tests.maintenance.helpers import (
    build_mixed,
    copy_tree,
    file_set,
    handle,
    missing_required,
    table_root,
    views,
)
from tests.safety.helpers import build_expired_tag

NOW = "4102444800000"  # 2100-01-01: every snapshot is old enough
EXPIRE = ["expire", "db.orders", "--retain-min", "2", "--time-retained", "0 ms", "--max-deletes", "1000",
          "--now", NOW]
TAG_DELETE = ["tag", "delete", "db.orders", "t3"]
BRANCH_DROP = ["branch", "drop", "db.orders", "b1"]


def _cli(args: list[str], wh: str) -> None:
    result = CliRunner().invoke(cli, [*args, "-w", wh])
    assert result.exit_code == 0, result.output


def _rerun(args: list[str], wh: str) -> None:
    """The same command again: it finishes an interrupted run; when the killed run had already
    finished, tag delete / branch drop answer "not found" (exit 2), which is right too (the end
    state is compared next)."""
    code = main([*args, "-w", wh])
    assert code == 0 or (code == 2 and args is not EXPIRE), code


def _killed_exec(args: list[str], wh: str, point: str) -> int:
    """``python -m tablekeeper.cli.main ARGS`` in a fresh interpreter, killing itself at ``point``."""
    env = {**os.environ, seams.KILL_ENV: point}
    proc = subprocess.run([sys.executable, "-m", "tablekeeper.cli.main", *args, "-w", wh], env=env,
                          capture_output=True, text=True, timeout=300)
    return proc.returncode


def _killed_fork(args: list[str], wh: str, point: str) -> int:
    """The same CLI entry point in a forked child (no interpreter start-up: the trials stay cheap);
    the child is just as really SIGKILLed. Returns the exit code as ``subprocess`` reports it."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 3
        try:
            os.environ[seams.KILL_ENV] = point
            with open(os.devnull, "w") as sink:
                sys.stdout = sys.stderr = sink
                code = main([*args, "-w", wh])
        finally:
            os._exit(code)
    deadline = time.monotonic() + 300  # a child stuck on a lock inherited from a thread: fail, not hang
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"the CLI child did not reach {point} in time")
        time.sleep(0.05)


def _state(wh: str) -> tuple[set[str], str | None]:
    files = {f for f in file_set(wh) if "/.tablekeeper/" not in f}
    earliest = Path(table_root(wh), "snapshot", "EARLIEST")
    return files, earliest.read_text() if earliest.exists() else None


def _points(template: str, tmp: Path, args: list[str]) -> tuple[list[str], set[str], str | None, dict[str, object]]:
    """Run ``args`` uninterrupted on a copy, recording the seam points it passes; rerun it (the
    reference end state is "run, then rerun": a rerun after a crash must converge to it)."""
    wh = copy_tree(template, tmp / "reference")
    seen: list[str] = []
    with seams.installed(seen.append):
        _cli(args, wh)
    if args is EXPIRE:
        _cli(args, wh)
    files, earliest = _state(wh)
    return seen, files, earliest, views(wh)


SCENARIOS: dict[str, tuple[Callable[[str], None], list[str]]] = {
    "expire": (build_mixed, EXPIRE),
    "tag-delete": (build_expired_tag, TAG_DELETE),
    "branch-drop": (build_mixed, BRANCH_DROP),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_sigkill_at_every_phase_then_rerun(name: str, tmp_path: Path) -> None:
    build, args = SCENARIOS[name]
    template = str(tmp_path / "template")
    build(template)
    before = views(template)
    points, ref_files, ref_earliest, ref_views = _points(template, tmp_path, args)
    assert len(points) >= 4, points
    assert {"expire": "before:write:snapshot/EARLIEST", "tag-delete": "tag-delete:unpublished",
            "branch-drop": "branch-drop:snapshots-deleted"}[name] in points, points
    for k, v in ref_views.items():
        assert v == before[k], f"uninterrupted {name} changed view {k}"
    for i, point in enumerate(points):
        wh = copy_tree(template, tmp_path / f"trial-{i}")
        # the middle point through a real interpreter start, the others forked
        killed = _killed_exec if i == len(points) // 2 else _killed_fork
        assert killed(args, wh, point) == -signal.SIGKILL, point
        _rerun(args, wh)  # finishes the job (and is not blocked by the dead process's lease)
        if args is EXPIRE:
            _rerun(args, wh)
        files, earliest = _state(wh)
        assert files == ref_files, (point, sorted(files ^ ref_files))
        assert earliest == ref_earliest, point
        if earliest is not None:
            assert Path(table_root(wh), "snapshot", f"snapshot-{earliest}").exists()
        assert views(wh) == ref_views, point
        assert not missing_required(wh), point
        if earliest is not None:
            assert handle(wh).snapshot_ids()[0] == int(earliest), point
