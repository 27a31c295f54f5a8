"""How a CLI process ends (issue 13, point 7): the console script skips the interpreter's
teardown (``os._exit`` after ``cli/process_exit.py``'s steps), so these check, on real processes
with piped, block-buffered output, that nothing observable is lost: exit codes, every byte of
stdout and stderr, atexit handlers, non-daemon threads, the table's lease."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import paimon as P

TABLEKEEPER = str(Path(sys.executable).parent / "tablekeeper")


def _env() -> dict[str, str]:
    """No PYTHONUNBUFFERED (set on the dev VMs): stdout into a pipe is block-buffered, so output
    is complete only if the exit path flushes it."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TABLEKEEPER_") and k != "PYTHONUNBUFFERED"}


def _run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, env=_env(), timeout=120, check=False, **kwargs)


def test_console_script_is_the_fast_exit_entry() -> None:
    """The installed ``tablekeeper`` script calls ``entry`` (pyproject's [project.scripts])."""
    assert "from tablekeeper.cli.main import entry" in Path(TABLEKEEPER).read_text()


def test_help_output_complete_and_code_zero() -> None:
    done = _run([TABLEKEEPER, "--help"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: tablekeeper") and "clean-orphans" in done.stdout
    assert done.stdout.rstrip().splitlines()[-1].split()[0] == "undo"  # the last command, nothing cut
    assert done.stderr == ""


def test_bad_input_exits_2_with_error_and_fix_on_stderr() -> None:
    done = _run([TABLEKEEPER, "expire", "db.orders"])
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("error: no warehouse given for table 'db.orders'")
    assert "fix: pass --warehouse URI" in done.stderr


def test_click_exit_code_is_kept() -> None:
    """A usage error (click's code path, not ours) keeps code 2 and its message."""
    done = _run([TABLEKEEPER, "expire"])
    assert done.returncode == 2
    assert "Missing argument 'TABLE'" in done.stderr


#: Registers an atexit handler and starts a non-daemon thread that is still running when the
#: command is done (it waits for the exit path's module), then runs the console entry.
_PROBE = """
import atexit, sys, threading, time
atexit.register(lambda: print("atexit ran", file=sys.stderr))
def late():
    while "tablekeeper.cli.process_exit" not in sys.modules:
        time.sleep(0.01)
    time.sleep(0.2)
    print("thread finished", flush=False)
threading.Thread(target=late, daemon=False).start()
sys.argv = ["tablekeeper", *sys.argv[1:]]
from tablekeeper.cli.main import entry
entry()
"""


def test_atexit_handlers_and_threads_finish_before_the_process_ends() -> None:
    done = _run([sys.executable, "-c", _PROBE, "--help"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: tablekeeper")
    assert done.stdout.rstrip().endswith("thread finished")  # joined, then its buffered line flushed
    assert done.stderr == "atexit ran\n"


def test_atexit_runs_after_an_error_too() -> None:
    done = _run([sys.executable, "-c", _PROBE, "expire", "db.orders"])
    assert done.returncode == 2
    assert done.stderr.startswith("error: no warehouse given") and done.stderr.endswith("atexit ran\n")
    assert done.stdout == "thread finished\n"


def test_a_failed_flush_exits_120_like_the_interpreter(tmp_path: Path) -> None:
    """Output that cannot be written (a full device) is not a silent success."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    code = ("import sys; sys.stdout.write('x' * 100)\n"
            "from tablekeeper.cli.process_exit import exit_now\nexit_now(0)")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-c", code], stdout=full, stderr=subprocess.PIPE, env=_env(),
                              timeout=60, check=False)
    assert done.returncode == 120
    again = _run([sys.executable, "-c", code.replace("exit_now(0)", "exit_now(3)")])
    assert again.returncode == 3 and again.stdout == "x" * 100  # other codes and the output stay


def test_clean_orphans_process_output_complete_and_lease_released(tmp_path: Path) -> None:
    """A real command through the console script: JSON on stdout parses whole, the orphan is
    gone, the lease is released (nothing left under .tablekeeper), pypaimon reads as before."""
    warehouse = tmp_path / "wh"
    P.build_history(str(warehouse), commits=3)
    table = warehouse / "db.db" / "orders"
    orphan = P.plant_orphan(table, "data-00000000-0000-0000-0000-000000000000-0.parquet", b"orphan")
    views = P.snapshot_views(str(warehouse), "db.orders")
    done = _run([TABLEKEEPER, "clean-orphans", "-w", str(warehouse), "db.orders", "-o", "json"])
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["result"]["deleted"] == {"data": 1}
    assert not orphan.exists()
    assert not (table / ".tablekeeper").exists()
    assert P.snapshot_views(str(warehouse), "db.orders") == views
