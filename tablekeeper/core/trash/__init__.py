"""The trash of a table: what a destructive run removes is kept for a window and can be put back.

What this package decides, and nowhere else:

- **where** a run's files go: ``<table>/.tablekeeper/trash/<run id>/files/<path relative to
  the table>`` (the ``.tablekeeper/`` area is never a candidate of orphan cleanup nor table
  content), with the run's record (``run.json``: operation, table, when, until when, the
  decision's summary) and one record per batch of moves (``moves/*.json``: which files, their
  kinds and sizes) written *before* anything of that batch moves;
- **how** a file moves (:meth:`FileIO.move_file`): local disk and HDFS one rename, object stores
  a server-side copy then a delete;
- **when** a window is open: :func:`keeping` opens one for a command, and every plan executed
  inside it (``core/execution.py``, the Spark delete stage, branch drop) moves instead of
  deleting, whatever planned it;
- **how** a run is undone (:func:`undo`): every file back to its place, referenced files before
  the files naming them, a place holding different bytes refused before anything moves, then the
  EARLIEST hints made to name the oldest snapshot that exists; runs are undone newest first;
- **when** a run is purged (:func:`purge`): after its window, or older than asked.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tablekeeper.core.trash.context import KEEP_OPTION, active

if TYPE_CHECKING:
    from tablekeeper.core.trash.layout import (
        TRASH_DIR,
        RunRecord,
        RunState,
        list_runs,
        read_run,
        state_of,
        trash_root,
    )
    from tablekeeper.core.trash.moves import TrashRun, keeping, move_batch, move_files, resumed
    from tablekeeper.core.trash.purging import PurgeResult, purge
    from tablekeeper.core.trash.restore import UndoResult, undo
    from tablekeeper.core.trash.window import keep_window

__all__ = ["TRASH_DIR", "RunRecord", "RunState", "list_runs", "read_run", "state_of", "trash_root", "TrashRun",
           "active", "keeping", "resumed", "move_batch", "move_files", "PurgeResult", "purge", "UndoResult", "undo",
           "KEEP_OPTION", "keep_window"]

#: Where each public name lives: loaded on first use, so that every plan's execution can ask
#: :func:`active` without loading the trash's code (start-up of a local command).
_HOMES = {
    **dict.fromkeys(("TRASH_DIR", "RunRecord", "RunState", "list_runs", "read_run", "state_of", "trash_root"),
                    "layout"),
    **dict.fromkeys(("TrashRun", "keeping", "resumed", "move_batch", "move_files"), "moves"),
    **dict.fromkeys(("PurgeResult", "purge"), "purging"),
    **dict.fromkeys(("UndoResult", "undo"), "restore"),
    **dict.fromkeys(("keep_window",), "window"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
