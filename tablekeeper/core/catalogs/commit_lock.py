"""The catalog's commit lock as tablekeeper's storage layer takes it (``FileIO.commit_guard``).

Paimon's writers take the catalog lock (``lock.enabled``) around their snapshot commit, because on
an object store their check-then-rename is not atomic. tablekeeper's own writes are conditional
(create-if-absent), but that does not stop a locked writer's check-then-rename from overwriting
them: so every write tablekeeper makes into a table's snapshot, tag, branch or schema files
happens while it holds the same lock. The guard is reentrant per thread: a multi-file commit may
hold it once across all its writes, and each write inside takes nothing more."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from tablekeeper.core.paimon import layout

__all__ = ["TableLock", "TableCommitGuard", "COMMIT_DIRS"]

#: The table directories whose files are commits (under the table root; ``branch/`` holds each
#: branch's own snapshot, tag and schema directories).
COMMIT_DIRS = (layout.SNAPSHOT_DIR, layout.TAG_DIR, layout.BRANCH_DIR, layout.SCHEMA_DIR)


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
        self._local = threading.local()
        self._mutex = threading.Lock()  # one thread of this process holds the catalog lock at a time
        #: how many times the catalog lock was acquired (shown by tests and --output json)
        self.acquisitions = 0

    def covers(self, path: str) -> bool:
        if not path.startswith(self.table_root):
            return False
        first = path[len(self.table_root):].split("/", 1)[0]
        return first in COMMIT_DIRS

    @contextmanager
    def held(self) -> Iterator[None]:
        depth: int = getattr(self._local, "depth", 0)
        if depth:
            self._local.depth = depth + 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        with self._mutex:
            if self._lock is None:
                self._lock = self._make_lock()
            self._lock.acquire()
            self.acquisitions += 1
            self._local.depth = 1
            try:
                yield
            finally:
                self._local.depth = 0
                self._lock.release()
