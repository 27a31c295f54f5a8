"""Executor-side functions of the deletes by stage (:mod:`tablekeeper.spark.deletes.driver`):
every planned file removed in bulk batches the way core's executor removes them
(``plans.delete_batch``, sizes by ``plans.stat_sizes``), and the directories the deletes
may have emptied (``decisions.may_empty``), non-recursively. Deletions return one summary row per
(stage, kind) per partition (counts, bytes, <= 20 failure samples), never paths. No rule of core's
decisions is stated here; the shape of every function is that of :mod:`tablekeeper.spark.executor`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tablekeeper.spark.executor import Fields, Rows, file_io, map_rows, rows_of

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from tablekeeper.core.storage import DeleteResult, FileIO

__all__ = [
    "DELETE_FIELDS", "BATCHED_FIELDS", "SUMMARY_FIELDS", "REMOVED_FIELDS",
    "number_batches", "delete_files", "remove_empty_dirs", "remove_emptied_dirs", "InjectedFault",
]

#: A planned delete: what every plan of both operations is made of.
DELETE_FIELDS: Fields = (("path", "string"), ("kind", "string"), ("size", "long"), ("parent_dir", "string"),
                         ("stage", "int"))
BATCHED_FIELDS: Fields = (*DELETE_FIELDS, ("batch", "long"))
SUMMARY_FIELDS: Fields = (("stage", "int"), ("kind", "string"), ("deleted", "long"), ("missing", "long"),
                          ("failed", "long"), ("bytes", "long"), ("failure_sample", "array<string>"),
                          ("unsized", "long"))
REMOVED_FIELDS: Fields = (("removed", "long"),)

_SAMPLE_MAX = 20  # safety.STATUS_SAMPLE_MAX, without importing it at module level


class InjectedFault(RuntimeError):
    """Raised by the test-only fault hook of ``delete_files``."""


# -- deleting --------------------------------------------------------------------------------------
class _Fault:
    """Test hook: raise ``InjectedFault`` once a task attempt has issued ``after`` deletions
    (of ``stage``, if given), like a process killed mid-stage. With a ``marker`` path the fault
    fires only in the attempt that creates the marker (Spark's retry then succeeds); without
    one, in every attempt that reaches ``after`` (the job fails once retries run out)."""

    def __init__(self, spec: Mapping[str, Any] | None) -> None:
        self.after = int(spec["after"]) if spec else None
        self.marker = spec.get("marker") if spec else None
        self.stage = spec.get("stage") if spec else None
        self.deleted = 0

    def active_for(self, stage: int) -> bool:
        return self.after is not None and (self.stage is None or int(self.stage) == stage)

    def count(self, stage: int, issued: int) -> None:
        if not self.active_for(stage):
            return
        self.deleted += issued
        assert self.after is not None
        if self.deleted < self.after:
            return
        if self.marker:
            try:
                fd = os.open(str(self.marker), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.close(fd)
        raise InjectedFault(f"injected fault after {self.deleted} deletions")


def number_batches(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Delete rows of one stage with the id of the partition they are in -> the same rows with
    their batch: ``(spec["offsets"][partition] + position in the partition) // batch_size``.
    The offsets are the rows of the stage in the partitions before (counted by the driver on the
    same materialised plan), so the stage's rows are numbered 0..n-1 across all partitions and
    every batch but the last holds exactly ``batch_size`` keys."""
    offsets: Mapping[str, int] = spec["offsets"]
    size = max(1, int(spec["batch_size"]))
    position: dict[int, int] = {}

    def one(row: tuple[Any, ...], out: Rows) -> None:
        path, kind, size_, parent_dir, stage, pid = row
        n = position.get(pid, 0)
        position[pid] = n + 1
        out.add(path, kind, size_, parent_dir, stage, (int(offsets.get(str(pid), 0)) + n) // size)

    return map_rows(batches, ("path", "kind", "size", "parent_dir", "stage", "pid"), BATCHED_FIELDS, one)


def delete_files(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Delete rows with their batch (:func:`number_batches`; sorted by batch within the
    partition) -> summary rows.

    Each batch is one bulk request (one DeleteObjects on S3, through ``plans.delete_batch``
    as in process: no parent listing first), up to ``spec["delete_threads"]`` batches at once
    on object stores. Missing files count as ``missing`` where the store tells them apart (a
    retried task, or an earlier crashed run; S3 reports a key already gone as deleted);
    failures are counted and sampled, never raised: deletion is best effort (style.md §2.3)."""
    from concurrent.futures import ThreadPoolExecutor

    from tablekeeper.core import plans
    from tablekeeper.core.safety import trash
    from tablekeeper.core.storage import DeleteOutcome

    io = file_io(spec["storage"])
    batch_size = max(1, int(spec.get("batch_size") or 250))
    threads = 1 if io.is_local else max(1, int(spec.get("delete_threads") or 4))
    fault = _Fault(spec.get("fault"))
    totals: dict[tuple[int, str], list[Any]] = {}

    def tally(chunk: list[tuple[str, str, int | None, int]], results: list[DeleteResult]) -> None:
        by_path = {p: (kind, size, stage) for p, kind, size, stage in chunk}
        for r in results:
            kind, size, stage = by_path[r.path]
            t = totals.setdefault((stage, kind), [0, 0, 0, 0, [], 0])
            if r.outcome == DeleteOutcome.DELETED:
                t[0] += 1
                if size is None:
                    t[5] += 1
                else:
                    t[3] += size
            elif r.outcome == DeleteOutcome.MISSING:
                t[1] += 1
            else:
                t[2] += 1
                if len(t[4]) < _SAMPLE_MAX:
                    t[4].append(f"{r.path}: {r.error}")

    kept = trash.TrashRun.from_spec(io, spec["trash"]) if spec.get("trash") else None

    def delete(chunk: list[tuple[str, str, int | None, int]]) -> list[DeleteResult]:
        if kept is not None:  # a trash window: moved (core/safety/trash), as core's executor moves them
            return trash.move_batch(kept, [(p, kind, size) for p, kind, size, _ in chunk])
        return plans.delete_batch(io, [x[0] for x in chunk])

    def sized(chunk: list[tuple[str, str, int | None, int]]) -> list[tuple[str, str, int | None, int]]:
        """The chunk with the sizes the plan could not tell taken from a stat (core's
        ``execution.stat_sizes``), without the files that are gone (counted as missing)."""
        unsized = [x[0] for x in chunk if x[2] is None]
        if not unsized:
            return chunk
        found = dict(zip(unsized, plans.stat_sizes(io, unsized), strict=True))
        out: list[tuple[str, str, int | None, int]] = []
        for path, kind, size, stage in chunk:
            if size is None:
                got = found[path]
                if got is None:
                    totals.setdefault((stage, kind), [0, 0, 0, 0, [], 0])[1] += 1
                    continue
                size = None if got == plans.SIZE_UNKNOWN else got
            out.append((path, kind, size, stage))
        return out

    pending: list[list[tuple[str, str, int | None, int]]] = []

    def flush() -> None:
        if not pending:
            return
        stage = pending[0][0][3]
        pending[:] = [sized(group) for group in pending]
        if fault.active_for(stage):  # the test hook counts deletions one chunk at a time
            size = min(batch_size, fault.after) if fault.after else batch_size
            for group in pending:
                for chunk in (group[i:i + size] for i in range(0, len(group), size)):
                    tally(chunk, delete(chunk))
                    fault.count(stage, len(chunk))
        elif threads > 1 and len(pending) > 1:
            with ThreadPoolExecutor(max_workers=min(threads, len(pending))) as pool:
                for chunk, results in zip(pending, pool.map(delete, pending), strict=True):
                    tally(chunk, results)
        else:
            for chunk in pending:
                if chunk:
                    tally(chunk, delete(chunk))
        pending.clear()

    group: list[tuple[str, str, int | None, int]] = []
    current: int | None = None
    for path, kind, size, _parent, stage, batch in rows_of(batches, ("path", "kind", "size", "parent_dir", "stage",
                                                                    "batch")):
        if batch != current:
            if group:
                pending.append(group)
                if len(pending) >= threads:
                    flush()
            group, current = [], batch
        group.append((path, kind, None if size is None else int(size), int(stage)))
    if group:
        pending.append(group)
    flush()
    out = Rows(SUMMARY_FIELDS)
    for (stage, kind), (deleted, missing, failed, nbytes, sample, unsized_n) in sorted(totals.items()):
        out.add(stage, kind, deleted, missing, failed, nbytes, sample, unsized_n)
    if out.count:
        yield out.take()


# -- emptied directories -------------------------------------------------------------------------
def remove_empty_dirs(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(bucket dir) -> remove it if empty, then its parents up to ``spec["depth"]`` partition
    levels, bottom-up, non-recursively (``RemoveEmptyDirsStep`` semantics). One count row."""
    io = file_io(spec["storage"])
    depth = int(spec.get("depth") or 0)
    removed = sum(_remove_upwards(io, directory, depth) for (directory,) in rows_of(batches, ("dir",)))
    out = Rows(REMOVED_FIELDS)
    out.add(removed)
    yield out.take()


def remove_emptied_dirs(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(bucket dir, files listed there, files deleted there) -> as :func:`remove_empty_dirs`,
    for the directories the deletes may have emptied (``decisions.may_empty``; the others are not
    checked: a check is a request on an object store)."""
    from tablekeeper.core.reclaim import orphans

    io = file_io(spec["storage"])
    depth = int(spec.get("depth") or 0)
    removed = sum(_remove_upwards(io, directory, depth)
                  for directory, listed, deleted in rows_of(batches, ("dir", "listed", "deleted"))
                  if orphans.may_empty(int(listed or 0), int(deleted or 0)))
    out = Rows(REMOVED_FIELDS)
    out.add(removed)
    yield out.take()


def _remove_upwards(io: FileIO, directory: str, depth: int) -> int:
    removed = 0
    current = directory
    for _ in range(depth + 1):
        if not io.delete_empty_dir(current):
            break
        removed += 1
        current = current.rsplit("/", 1)[0]
    return removed
