"""The trash run of the running command (``trash.keeping`` opens it), asked by every executor."""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tablekeeper.core.safety.trash.run import TrashRun

__all__ = ["ACTIVE", "KEEP_OPTION", "active"]

#: The table option that opens a window for every destructive run on the table.
KEEP_OPTION = "trash.keep"

ACTIVE: contextvars.ContextVar[TrashRun | None] = contextvars.ContextVar("tablekeeper_trash", default=None)


def active() -> TrashRun | None:
    """The trash run of the running command, if it opened a window."""
    return ACTIVE.get()
