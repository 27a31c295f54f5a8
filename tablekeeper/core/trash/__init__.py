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

from tablekeeper.core.trash.layout import (
    TRASH_DIR,
    RunRecord,
    RunState,
    list_runs,
    read_run,
    state_of,
    trash_root,
)
from tablekeeper.core.trash.moves import TrashRun, active, keeping, move_batch, move_files
from tablekeeper.core.trash.purge import PurgeResult, purge
from tablekeeper.core.trash.restore import UndoResult, undo
from tablekeeper.core.trash.window import KEEP_OPTION, keep_window

__all__ = ["TRASH_DIR", "RunRecord", "RunState", "list_runs", "read_run", "state_of", "trash_root", "TrashRun", "active",
           "keeping", "move_batch", "move_files", "PurgeResult", "purge", "UndoResult", "undo", "KEEP_OPTION",
           "keep_window"]
