"""The trash of a table: what a destructive run removes is kept for a window and can be put back.

What this package decides, and nowhere else:

- **where** a run's files go: ``<table>/.tablekeeper/trash/<run id>/files/<path relative to
  the table>`` (the ``.tablekeeper/`` area is never a candidate of orphan cleanup nor table
  content), with the run's record (``run.json``: operation, table, when, until when, the
  decision's summary) and one record per batch of moves (``moves/*.json``: which files, their
  kinds and sizes) written *before* anything of that batch moves;
- **how** a file moves (:meth:`FileIO.move_file`): local disk and HDFS one rename, object stores
  a server-side copy then a delete; where the store keeps versions (:meth:`FileIO.keeps_versions`:
  S3 with versioning Enabled) no copy, the version id recorded and the file deleted;
- **when** a window is open: :func:`keeping` opens one for a command, and every plan executed
  inside it (``core/plans/execution.py``, the Spark delete stage, branch drop) moves instead of
  deleting, whatever planned it;
- **how** a run is undone (:func:`undo`): every file back to its place, referenced files before
  the files naming them, a place holding different bytes refused before anything moves, then the
  EARLIEST hints made to name the oldest snapshot that exists; runs are undone newest first;
- **when** a run is purged (:func:`purge`): after its window, or older than asked.
"""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"active": "context", "KEEP_OPTION": "context", "list_runs": "layout", "state_of": "layout",
    "trash_root": "layout", "usage": "layout", "TrashUsage": "layout", "keeping": "moves", "move_batch": "moves",
    "move_files": "moves", "resumed": "moves", "TrashRun": "run", "purge": "purging", "undo": "restore",
    "keep_window": "window", "policy_window": "window"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .context import active as active, KEEP_OPTION as KEEP_OPTION
    from .layout import (list_runs as list_runs, state_of as state_of, trash_root as trash_root,
        TrashUsage as TrashUsage, usage as usage)
    from .moves import (keeping as keeping, move_batch as move_batch, move_files as move_files, resumed as resumed)
    from .run import TrashRun as TrashRun
    from .purging import purge as purge
    from .restore import undo as undo
    from .window import keep_window as keep_window, policy_window as policy_window
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
