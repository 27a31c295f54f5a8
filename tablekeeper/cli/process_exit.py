"""Ending a CLI process without the interpreter's teardown (issue 13, point 7).

A finishing interpreter frees every object it still holds, one by one: after an expiration of
a large table that is about a million objects (~0.2 s, longer than many whole commands), and
nothing observes it. :func:`exit_now` does what the interpreter's shutdown does that *is*
observable, in the same order, then ends the process with ``os._exit``:

1. wait for non-daemon threads (``threading``'s own shutdown, which also stops idle
   ``ThreadPoolExecutor`` workers), as ``Py_FinalizeEx`` does first;
2. run the ``atexit`` handlers (``logging.shutdown`` flushes log handlers, pyspark stops its
   gateway, ``multiprocessing`` joins its children, anything a command registered);
3. flush ``sys.stdout`` and ``sys.stderr``; a flush that fails (a closed pipe) ends with
   exit code 120, as the interpreter does.

Only the console script (``tablekeeper``) ends this way: :func:`tablekeeper.cli.main.main`
returns its exit code as before (tests, embedding callers), and ``python -m
tablekeeper.cli.main`` exits normally, so ``python -m cProfile`` still writes its profile."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

__all__ = ["exit_now", "EXIT_FLUSH_FAILED"]

#: The interpreter's exit code when flushing the standard streams at exit fails.
EXIT_FLUSH_FAILED = 120


def _wait_for_threads() -> None:
    """What the interpreter does before ``atexit``: join non-daemon threads, after running the
    callbacks ``threading._register_atexit`` collected (``concurrent.futures`` wakes and joins
    its idle workers there)."""
    shutdown = getattr(threading, "_shutdown", None)
    if callable(shutdown):
        shutdown()
        return
    current = threading.current_thread()  # (an interpreter without the private hook)
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon and thread is not threading.main_thread():
            thread.join()


def _flush(stream: object) -> bool:
    flush = getattr(stream, "flush", None)
    if flush is None:
        return True
    try:
        flush()
    except (OSError, ValueError):  # a closed pipe or stream
        return False
    return True


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` once threads, ``atexit`` handlers and the standard streams
    are done, without freeing the heap (see the module docstring)."""
    _wait_for_threads()
    atexit._run_exitfuncs()
    ok = _flush(sys.stdout)
    ok = _flush(sys.stderr) and ok
    if not ok and code == 0:
        code = EXIT_FLUSH_FAILED
    os._exit(code)
