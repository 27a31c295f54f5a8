"""Where the trash of a table lives and what its records say.

``<table>/.tablekeeper/trash/``:

- ``<run id>/run.json``: the run (:class:`RunRecord`), written before its first move;
- ``<run id>/moves/<n>-<uuid>.json``: one batch of moves, written before any file of it moves:
  ``{"files": [[relative path, kind, size], ...]}``; where the store keeps versions (S3 with
  versioning Enabled) each entry has a fourth item, the version id the delete left noncurrent,
  and the file is not copied under ``files/`` (an entry of three items: a copy there);
- ``<run id>/files/<relative path>``: the files themselves, under the path they had in the table;
- ``<run id>/undone``: written once an undo put every file back;
- ``purged/<run id>.json``: a purged run's record (its files are gone; an undo says so).

Run ids sort by time: ``<UTC yyyymmddThhmmssmmmZ>-<operation>-<6 hex>``."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from tablekeeper.core.pycompat import StrEnum
from tablekeeper.core.safety import concurrency
from tablekeeper.core.storage import FileIO, join

__all__ = ["TRASH_DIR", "RunRecord", "RunState", "MovedFile", "trash_root", "run_dir", "files_dir", "moves_dir",
           "undone_marker", "purged_record", "read_run", "read_moves", "list_runs", "state_of"]

TRASH_DIR = "trash"
RUN_FILE = "run.json"
MOVES_DIR = "moves"
FILES_DIR = "files"
UNDONE = "undone"
PURGED_DIR = "purged"


class RunState(StrEnum):
    KEPT = "kept"          # within its window: can be undone
    EXPIRED = "expired"    # past its window, not purged yet: can still be undone
    UNDONE = "undone"      # every file is back
    PURGED = "purged"      # its files are gone for good


@dataclass(frozen=True)
class RunRecord:
    """One destructive run whose files went to the trash."""

    run_id: str
    operation: str
    table: str
    branch: str
    created_ms: int
    keep_until_ms: int
    #: the decisions' summaries (``Plan.summary()`` of each plan executed, without paths)
    summary: tuple[dict[str, Any], ...] = field(default=())

    def as_json(self) -> str:
        return json.dumps({**asdict(self), "summary": list(self.summary)}, default=str)

    @staticmethod
    def from_json(text: str | bytes) -> RunRecord:
        raw = json.loads(text)
        return RunRecord(raw["run_id"], raw["operation"], raw["table"], raw.get("branch", "main"),
                         int(raw["created_ms"]), int(raw["keep_until_ms"]), tuple(raw.get("summary") or ()))


@dataclass(frozen=True)
class MovedFile:
    """One file of a run: its path relative to the table, kind (its restore stage) and size;
    ``version``: the store's version id of the file that the run's delete left noncurrent (the
    file is then no copy under ``files/``), None where the run copied it there."""

    relative: str
    kind: str
    size: int | None
    version: str | None = None


def trash_root(table_root: str) -> str:
    return join(table_root, concurrency.LEASE_DIR, TRASH_DIR)


def run_dir(table_root: str, run_id: str) -> str:
    return join(trash_root(table_root), run_id)


def files_dir(table_root: str, run_id: str) -> str:
    return join(run_dir(table_root, run_id), FILES_DIR)


def moves_dir(table_root: str, run_id: str) -> str:
    return join(run_dir(table_root, run_id), MOVES_DIR)


def undone_marker(table_root: str, run_id: str) -> str:
    return join(run_dir(table_root, run_id), UNDONE)


def purged_record(table_root: str, run_id: str) -> str:
    return join(trash_root(table_root), PURGED_DIR, f"{run_id}.json")


def read_run(io: FileIO, table_root: str, run_id: str) -> RunRecord | None:
    """The run's record; None when the trash holds no such run (never existed, or purged)."""
    try:
        return RunRecord.from_json(io.read_bytes(join(run_dir(table_root, run_id), RUN_FILE)))
    except FileNotFoundError:
        return None


def read_moves(io: FileIO, table_root: str, run_id: str) -> list[MovedFile]:
    """Every file the run recorded, de-duplicated by path (a rerun after a crash records again)."""
    seen: dict[str, MovedFile] = {}
    for status in sorted(io.list_dir(moves_dir(table_root, run_id)), key=lambda s: s.name):
        if status.is_dir or not status.name.endswith(".json"):
            continue
        for entry in json.loads(io.read_bytes(status.path))["files"]:
            rel, kind, size = entry[:3]
            version = str(entry[3]) if len(entry) > 3 and entry[3] is not None else None
            seen.setdefault(rel, MovedFile(rel, kind, None if size is None else int(size), version))
    return list(seen.values())


@dataclass(frozen=True)
class TrashUsage:
    """What a table's trash holds: its runs that can still be undone, their files and bytes."""

    runs: int
    files: int
    bytes: int


def usage(io: FileIO, table_root: str, now_ms: int) -> TrashUsage:
    """The trash's runs that can still be undone (within their window, not undone) and what they
    hold, from their move records (a size a record lacks counts 0)."""
    kept = [r for r in list_runs(io, table_root) if state_of(io, table_root, r, now_ms) is RunState.KEPT]
    moved = [m for r in kept for m in read_moves(io, table_root, r.run_id)]
    return TrashUsage(len(kept), len(moved), sum(m.size or 0 for m in moved))


def state_of(io: FileIO, table_root: str, record: RunRecord, now_ms: int) -> RunState:
    if io.file_exists(undone_marker(table_root, record.run_id)):
        return RunState.UNDONE
    return RunState.KEPT if now_ms < record.keep_until_ms else RunState.EXPIRED


def list_runs(io: FileIO, table_root: str) -> list[RunRecord]:
    """The runs in the trash (purged ones excluded), oldest first."""
    runs: list[RunRecord] = []
    for status in io.list_dir(trash_root(table_root)):
        if not status.is_dir or status.name == PURGED_DIR:
            continue
        record = read_run(io, table_root, status.name)
        if record is not None:
            runs.append(record)
    return sorted(runs, key=lambda r: (r.created_ms, r.run_id))
