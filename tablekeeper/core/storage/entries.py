"""What every store answers: file statuses, listed entries and one outcome per deleted file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from tablekeeper.core.pycompat import StrEnum
from tablekeeper.core.storage.paths import basename

__all__ = ["FileStatus", "ListedEntry", "DeleteOutcome", "DeleteResult"]


@dataclass(frozen=True)
class FileStatus:
    """A file or directory as the store reports it: size and modification time (UTC epoch ms)."""

    path: str
    size: int
    mtime_ms: int
    is_dir: bool = False

    @property
    def name(self) -> str:
        return basename(self.path)


class ListedEntry(NamedTuple):
    """A directory entry as listed. Object stores return size and mtime with the listing; a
    local directory does not (``readdir`` gives names and types only), and a stat per entry
    costs more than the listing itself, so ``status`` is None there until :meth:`FileIO.status_of`
    asks for it — callers that filter by name first stat only what survives. (A tuple: listings
    hold hundreds of thousands of these.)"""

    path: str
    name: str
    is_dir: bool
    status: FileStatus | None = None


class DeleteOutcome(StrEnum):
    DELETED = "deleted"
    MISSING = "missing"
    FAILED = "failed"


@dataclass(frozen=True)
class DeleteResult:
    """The outcome of deleting one path: deleted, missing (already gone) or failed, with the error."""

    path: str
    outcome: DeleteOutcome
    error: str | None = None
