"""Moving a run's files into the trash, as the executors would have deleted them.

A command opens a window with :func:`keeping`; every executor that finds :func:`active` returns
a run moves its batches with :func:`move_batch` instead of deleting them: the batch's record
first (create-if-absent), then the files: local disk and HDFS one rename each (a directory made
once per batch), object stores one server-side copy each and then the sources in the run's own
delete request; where the store keeps versions (:meth:`FileIO.keeps_versions`: S3 with
versioning Enabled) no copy: one HEAD per file for its version id, the record (with the
versions), then the same delete request, which leaves each file as a noncurrent version. A file
already gone counts as missing, as a delete would. A crash leaves every
file at its place or in the trash (or, mid copy-then-delete, at both); the rerun plans again and
moves what is left into a run of its own, and undoing both runs, newest first, puts every file
back once (an equal copy at the place only has its trash copy dropped)."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

from tablekeeper.core.safety.trash import layout
from tablekeeper.core.safety.trash.context import ACTIVE, active
from tablekeeper.core.safety.trash.run import TrashRun
from tablekeeper.core.storage import DeleteOutcome, DeleteResult, FileIO, join, parent

__all__ = ["keeping", "resumed", "move_batch", "move_files", "same_file"]


@contextmanager
def resumed(io: FileIO, spec: Mapping[str, Any]) -> Iterator[TrashRun]:
    """Within the block, the trash run ``spec`` (:meth:`TrashRun.spec`, opened by another process:
    the CLI that started a Spark job) is the active one."""
    run = TrashRun(io, spec["table_root"], spec["run_id"], spec["operation"], spec["branch"],
                   int(spec["created_ms"]), int(spec["keep_until_ms"]))
    token = ACTIVE.set(run)
    try:
        yield run
    finally:
        ACTIVE.reset(token)


def _run_id(operation: str, now_ms: int) -> str:
    stamp = datetime.fromtimestamp(now_ms / 1000, tz=timezone.utc).strftime("%Y%m%dT%H%M%S") + f"{now_ms % 1000:03d}Z"
    return f"{stamp}-{operation.replace(' ', '-')}-{secrets.token_hex(3)}"


@contextmanager
def keeping(io: FileIO, table_root: str, operation: str, window: timedelta | None, *, branch: str = "main",
            now_ms: int | None = None, table: str = "") -> Iterator[TrashRun | None]:
    """Within the block, every executed plan of the table moves its files into one trash run
    kept for ``window`` (None: nothing changes, files are deleted)."""
    if window is None:
        yield None
        return
    now = int(time.time() * 1000) if now_ms is None else now_ms
    run = TrashRun(io, table_root, _run_id(operation, now), operation, branch, now,
                   now + int(window.total_seconds() * 1000), table=table or table_root)
    token = ACTIVE.set(run)
    try:
        yield run
    finally:
        ACTIVE.reset(token)


def same_file(io: FileIO, a: str, b: str) -> bool:
    """Whether files ``a`` and ``b`` both exist and hold the same bytes (sizes first)."""
    try:
        if io.stat(a).size != io.stat(b).size:
            return False
        return io.read_bytes(a) == io.read_bytes(b)
    except FileNotFoundError:
        return False


def move_batch(run: TrashRun, files: list[tuple[str, str, int | None]]) -> list[DeleteResult]:
    """Move ``files`` (path, kind, size) into the run's trash: their record first, then each
    file. One result per file, in order, as a delete would report it (moved = DELETED)."""
    if not files:
        return []
    io = run.io
    entries = [(run.relative(p), kind, size) for p, kind, size in files]
    if not run.started:
        run.record()
    if io.keeps_versions(run.root):
        return _delete_keeping_versions(run, files, [rel for rel, _, _ in entries])
    _write_moves(run, entries)
    target = layout.files_dir(run.root, run.run_id)
    moves = [(path, join(target, rel), size) for (path, _kind, size), (rel, _, _) in zip(files, entries, strict=True)]
    if io.moves_by_copy:
        return _copy_then_delete(run, moves)
    out: list[DeleteResult] = []
    for directory in sorted({parent(dst) for _, dst, _ in moves}):  # once per directory, not per file
        io.mkdirs(directory)
    for path, dst, size in moves:
        try:
            io.rename(path, dst)
        except FileNotFoundError:
            out.append(DeleteResult(path, DeleteOutcome.MISSING))
            continue
        except FileExistsError:
            if not io.file_exists(path):  # moved by an earlier attempt already
                out.append(DeleteResult(path, DeleteOutcome.MISSING))
                continue
            if not same_file(io, path, dst):  # an earlier attempt's copy is there: the source goes
                out.append(DeleteResult(path, DeleteOutcome.FAILED, f"{dst} holds other bytes"))
                continue
            io.delete_files([path])
        except OSError as e:
            out.append(DeleteResult(path, DeleteOutcome.FAILED, str(e)))
            continue
        run.moved += 1
        run.moved_bytes += size or 0
        out.append(DeleteResult(path, DeleteOutcome.DELETED))
    return out


def _write_moves(run: TrashRun, entries: list[tuple[Any, ...]]) -> None:
    """The batch's record, create-if-absent under a fresh name, before anything of it moves."""
    name = f"{int(time.time() * 1000):013d}-{secrets.token_hex(4)}.json"
    run.io.write_new(join(layout.moves_dir(run.root, run.run_id), name), json.dumps({"files": entries}))


def _delete_keeping_versions(run: TrashRun, files: list[tuple[str, str, int | None]],
                             relatives: list[str]) -> list[DeleteResult]:
    """A store that keeps versions: each file's current version id (one HEAD: a file gone is
    missing and not recorded), the record with the versions, then the sources in the same
    delete request a plain run makes. No copy: the delete leaves each file's version noncurrent,
    and undo copies it back from there. A crash before the delete leaves the files at their
    place (undo counts a file whose current version is the recorded one as back, purge never
    deletes it); the rerun plans again."""
    io = run.io
    out: dict[str, DeleteResult] = {}
    recorded: list[tuple[str, str, int | None, str]] = []
    sizes: dict[str, int] = {}
    for (path, kind, size), rel in zip(files, relatives, strict=True):
        try:
            version, head_size = io.version_of(path)
        except FileNotFoundError:
            out[path] = DeleteResult(path, DeleteOutcome.MISSING)
            continue
        except OSError as e:
            out[path] = DeleteResult(path, DeleteOutcome.FAILED, str(e))
            continue
        sizes[path] = head_size if size is None else size
        recorded.append((rel, kind, sizes[path], version))
    if recorded:
        _write_moves(run, recorded)
    for r in io.delete_files(list(sizes), tell_missing=False):
        if r.outcome is DeleteOutcome.FAILED:
            out[r.path] = r
            continue
        run.moved += 1
        run.moved_bytes += sizes[r.path]
        out[r.path] = DeleteResult(r.path, DeleteOutcome.DELETED)
    return [out[p] for p, _, _ in files]


def _copy_then_delete(run: TrashRun, moves: list[tuple[str, str, int | None]]) -> list[DeleteResult]:
    """Object stores: one server-side copy per file into the run's fresh directory (no check
    first: nobody else writes there), then the sources in one delete request per batch (S3/OSS
    DeleteObjects) — the floor of a move: a COPY per file plus the delete a plain run makes."""
    io = run.io
    copied: list[tuple[str, int | None]] = []
    out: dict[str, DeleteResult] = {}
    for path, dst, size in moves:
        try:
            io.copy_file(path, dst)
        except FileNotFoundError:
            out[path] = DeleteResult(path, DeleteOutcome.MISSING)
            continue
        except OSError as e:  # (some stores answer a missing source otherwise)
            gone = not io.file_exists(path)
            out[path] = DeleteResult(path, DeleteOutcome.MISSING) if gone else \
                DeleteResult(path, DeleteOutcome.FAILED, str(e))
            continue
        copied.append((path, size))
    sizes = dict(copied)
    for r in io.delete_files([p for p, _ in copied], tell_missing=False):
        if r.outcome is DeleteOutcome.FAILED:
            out[r.path] = DeleteResult(r.path, DeleteOutcome.FAILED,
                                       f"copied to the trash, but the source could not be deleted: {r.error}")
            continue
        run.moved += 1
        run.moved_bytes += sizes.get(r.path) or 0
        out[r.path] = DeleteResult(r.path, DeleteOutcome.DELETED)
    return [out[p] for p, _, _ in moves]


def move_files(io: FileIO, paths: list[str], kind: str) -> list[DeleteResult]:
    """Delete ``paths`` (of one ``kind``), or move them into the active trash run: for the few
    callers that delete outside a plan (branch drop)."""
    run = active()
    if run is None:
        return io.delete_files(paths)
    return move_batch(run, [(p, kind, None) for p in paths])
