"""One trash run: where a command's files go, and its record, written before anything moves.

:mod:`moves` opens runs and moves batches into them; :mod:`context` holds the running one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tablekeeper.core import errors
from tablekeeper.core.safety.trash import layout
from tablekeeper.core.storage import FileIO, join

__all__ = ["TrashRun"]


@dataclass
class TrashRun:
    """The trash run of one command: where its files go and what it has recorded."""

    io: FileIO
    table_root: str
    run_id: str
    operation: str
    branch: str
    created_ms: int
    keep_until_ms: int
    summaries: list[dict[str, Any]] = field(default_factory=list)
    #: how the user names the table (``db.t``), for messages; the root when not given
    table: str = ""
    started: bool = False
    moved: int = 0
    moved_bytes: int = 0

    @property
    def root(self) -> str:
        return self.table_root.rstrip("/")

    def spec(self) -> dict[str, Any]:
        """What a Spark executor needs to move a batch of this run (:meth:`from_spec`)."""
        return {"table_root": self.table_root, "run_id": self.run_id, "operation": self.operation,
                "branch": self.branch, "created_ms": self.created_ms, "keep_until_ms": self.keep_until_ms}

    @staticmethod
    def from_spec(io: FileIO, spec: Mapping[str, Any]) -> TrashRun:
        return TrashRun(io, spec["table_root"], spec["run_id"], spec["operation"], spec["branch"],
                        int(spec["created_ms"]), int(spec["keep_until_ms"]), started=True)

    def relative(self, path: str) -> str:
        """``path`` relative to the table; outside it the window cannot keep the file."""
        normalized = self.io.normalize(path)
        prefix = self.io.normalize(self.root) + "/"
        if not normalized.startswith(prefix):
            raise errors.InvalidInputError(
                f"{path} lies outside the table directory {self.root}: the trash keeps files of the table only",
                fix="run without --keep-deleted (and without trash.keep) for tables with data-file.external-paths")
        return normalized[len(prefix):]

    def record(self, summary: dict[str, Any] | None = None) -> None:
        """Write (or rewrite, with one more decision) the run record, before anything moves."""
        if summary is not None:
            self.summaries.append({k: v for k, v in summary.items() if k not in ("writes",)})
        record = layout.RunRecord(self.run_id, self.operation, self.root, self.branch, self.created_ms,
                                  self.keep_until_ms, tuple(self.summaries))
        path = join(layout.run_dir(self.root, self.run_id), layout.RUN_FILE)
        if not self.started:
            self.io.mkdirs(layout.moves_dir(self.root, self.run_id))
            self.started = True
            try:
                self.io.write_new(path, record.as_json())
                return
            except FileExistsError:  # the same run, recorded by another process of it (Spark's driver)
                earlier = layout.RunRecord.from_json(self.io.read_bytes(path))
                self.summaries[:0] = [s for s in earlier.summary if s not in self.summaries]
                record = layout.RunRecord(self.run_id, self.operation, self.root, self.branch, self.created_ms,
                                          self.keep_until_ms, tuple(self.summaries))
        self.io.overwrite(path, record.as_json())
