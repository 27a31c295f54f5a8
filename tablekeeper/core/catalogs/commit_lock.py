"""The catalog's commit lock as tablekeeper's storage layer takes it (``FileIO.commit_guard``).

Paimon's writers take the catalog lock (``lock.enabled``) around their snapshot commit, because on
an object store their check-then-rename is not atomic. tablekeeper's own writes are conditional
(create-if-absent), but that does not stop a locked writer's check-then-rename from overwriting
them: so every write tablekeeper makes into a table's snapshot, tag, branch or schema files
happens while it holds the same lock. The guard is reentrant within the process: a command holds
it once across a multi-file commit (fast-forward, replace-main, a partition drop), and each write
inside takes nothing more."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from tablekeeper.core import paimon

__all__ = ["TableLock", "TableCommitGuard", "COMMIT_DIRS"]

#: The table directories whose files are commits (under the table root; ``branch/`` holds each
#: branch's own snapshot, tag and schema directories).
COMMIT_DIRS = (paimon.SNAPSHOT_DIR, paimon.TAG_DIR, paimon.BRANCH_DIR, paimon.SCHEMA_DIR)


class TableLock(Protocol):
    """One catalog lock on one table (Paimon's ``CatalogLock.runWithLock``): ``acquire`` waits up
    to ``lock-acquire-timeout`` and raises CatalogError when it cannot; ``release`` gives it back."""

    def acquire(self) -> None: ...

    def release(self) -> None: ...


class TableCommitGuard:
    """``FileIO.commit_guard`` for one table: covers the table's commit files (:data:`COMMIT_DIRS`),
    holds ``lock`` (made on first use by ``make_lock``) while a covered write runs."""

    def __init__(self, table_root: str, make_lock: Callable[[], TableLock]) -> None:
        self.table_root = table_root.rstrip("/") + "/"
        self._make_lock = make_lock
        self._lock: TableLock | None = None
        self._mutex = threading.Lock()
        self._holders = 0
        #: how many times the catalog lock was acquired (shown by tests and --output json)
        self.acquisitions = 0

    def covers(self, path: str) -> bool:
        if not path.startswith(self.table_root):
            return False
        first = path[len(self.table_root):].split("/", 1)[0]
        return first in COMMIT_DIRS

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the catalog lock: acquired by the first holder in this process, released by the
        last. Reentrant across threads, so a command holding it for its whole commit never waits
        on itself when one of its threads writes a commit file."""
        with self._mutex:
            if self._holders == 0:
                if self._lock is None:
                    self._lock = self._make_lock()
                self._lock.acquire()
                self.acquisitions += 1
            self._holders += 1
        try:
            yield
        finally:
            with self._mutex:
                self._holders -= 1
                if self._holders == 0 and self._lock is not None:
                    self._lock.release()
