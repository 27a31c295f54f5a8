"""Named points between the phases of destructive operations, for crash and interleaving tests.

Executors call :func:`point` at each phase boundary (``before:delete:data``,
``mid:delete:snapshot``, ``before:write:EARLIEST``, ``tag-delete:unpublished`` ...). In
production nothing listens and a point costs one dictionary lookup. Tests listen in two ways:

- in-process, :func:`installed` registers a callback that runs at every point (it may commit
  with pypaimon, run another maintainer, or raise to simulate a crash);
- across processes, ``TABLEKEEPER_TEST_KILL_AT=<point>`` makes the process SIGKILL itself when
  it reaches that point (no cleanup, no ``finally``: a real crash), which is how the CLI is
  crash-tested in tests/safety.

Why a module and not a parameter: the same points must fire under the CLI, ``apply -f``, the
operator and the Spark driver, which reach the executor through different call chains."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Hook", "KILL_ENV", "point", "installed", "active", "guarded"]

#: ``point(name)`` callback.
Hook = Callable[[str], None]
#: Environment variable naming the point at which the process kills itself (tests only).
KILL_ENV = "TABLEKEEPER_TEST_KILL_AT"

_hooks: list[Hook] = []
_local = threading.local()


def _guards() -> list[Hook]:
    guards: list[Hook] | None = getattr(_local, "guards", None)
    if guards is None:
        guards = _local.guards = []
    return guards


def active() -> bool:
    """Whether anything listens (executors then split steps so ``mid:`` points exist)."""
    return bool(_hooks) or bool(os.environ.get(KILL_ENV))


def point(name: str) -> None:
    """Reached phase boundary ``name``: run the test hooks, or die here if asked to."""
    if os.environ.get(KILL_ENV) == name:
        import signal  # (tests only: start-up)

        os.kill(os.getpid(), signal.SIGKILL)
    for hook in list(_hooks):  # what a test injects happened before this boundary's checks
        hook(name)
    for guard in list(_guards()):
        guard(name)


@contextmanager
def installed(hook: Hook) -> Iterator[None]:
    """Run ``hook`` at every point while the context is open (tests)."""
    _hooks.append(hook)
    try:
        yield
    finally:
        _hooks.remove(hook)


@contextmanager
def guarded(check: Hook) -> Iterator[None]:
    """Run ``check`` at every point reached by this thread while the context is open (production:
    the table lease stops a run whose lease was lost). Unlike test hooks, guards do not make
    executors split their steps."""
    guards = _guards()
    guards.append(check)
    try:
        yield
    finally:
        guards.remove(check)
