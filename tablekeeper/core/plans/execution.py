"""The in-process executor: carries a Plan out step by step, in order, with a thread pool per
delete step, bulk deletes on object stores, a progress callback and per-file outcomes. Missing
files are tolerated (a concurrent or crashed earlier run); failures are counted, never fatal.

Hint files (``snapshot/EARLIEST`` ...) are written through ``hint_writes.write_hint``, which
re-reads the hint and the listing at write time (monotonic and true): the Spark job executes
its metadata tail here too, so it gets the same rule. ``seams.point`` marks every phase
boundary (``before:<step>``, ``mid:<step>``, ``end``) for crash and interleaving tests."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, TypeVar

from tablekeeper.core import paimon, storage, values
from tablekeeper.core.plans import plan as plans
from tablekeeper.core.safety import concurrency, trash
from tablekeeper.core.storage import DeleteOutcome, DeleteResult, FileIO, ListedEntry, basename, parent

__all__ = ["ExecutionResult", "execute", "default_parallelism", "delete_batch", "delete_batch_size", "Progress",
           "FaultInjector", "stat_sizes", "sized", "SIZE_UNKNOWN"]

#: Files a batch of a local delete step when the caller names no batch size: one native call
#: each (fewer calls, and helper threads that start once unlinks wait have work to share);
#: progress is told per batch.
LOCAL_BATCH = 8192
#: FileIO's own ``delete_files``: the executor deletes local files through
#: ``FileIO.delete_files_failing`` (no result object per deleted file) only where ``delete_files``
#: is this one, so a subclass or a test wrapping ``delete_files`` still sees every batch.
_PLAIN_DELETE_FILES = FileIO.delete_files

_T = TypeVar("_T")
_path = attrgetter("path")
_size = attrgetter("size")
#: progress(step_kind, done, total)
Progress = Callable[[str, int, int], None]
#: Called before each deletion batch with the paths; may raise to simulate a crash (tests).
FaultInjector = Callable[[list[str]], None]


@dataclass
class ExecutionResult:
    """What an execution did, per file kind and in order: deleted, missing and failed files, writes,
    removed directories (the CLI and the Spark job report it)."""

    deleted: Counter[str] = field(default_factory=Counter)
    deleted_bytes: Counter[str] = field(default_factory=Counter)
    missing: Counter[str] = field(default_factory=Counter)
    failed: list[DeleteResult] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    removed_dirs: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    #: deleted files whose size neither the plan nor a stat before the delete could tell (0 bytes counted)
    unsized: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "deleted": dict(self.deleted),
            "deleted_bytes": dict(self.deleted_bytes),
            "already_gone": dict(self.missing),
            "unsized": dict(self.unsized),
            "failed": [{"path": r.path, "error": r.error} for r in self.failed[:20]],
            "failed_count": len(self.failed),
            "written": list(self.written),
            "removed_dirs": len(self.removed_dirs),
        }


#: :func:`stat_sizes` of a file whose stat failed for another reason than its absence.
SIZE_UNKNOWN = -1


def stat_sizes(file_io: FileIO, paths: list[str]) -> list[int | None]:
    """The sizes of ``paths`` as a listing tells them (one stat each, for files a plan could not
    size from its metadata: index manifests, statistics, changelog-N files, extra files): None
    for a file that is gone, :data:`SIZE_UNKNOWN` where the stat failed."""
    try:
        statuses = file_io.statuses_of([ListedEntry(p, basename(p), False) for p in paths])
    except OSError:
        return [SIZE_UNKNOWN] * len(paths)
    return [None if st is None else (SIZE_UNKNOWN if st.is_dir else st.size) for st in statuses]


def _size_step(step: plans.DeleteStep, file_io: FileIO) -> tuple[plans.DeleteStep, int]:
    """``step`` with every file of unknown size sized by a stat (:func:`stat_sizes`), and
    without the files that stat found gone (their number is returned: already gone)."""
    unsized = [f.path for f in step.files if f.size is None]
    if not unsized:
        return step, 0
    found = dict(zip(unsized, stat_sizes(file_io, unsized), strict=True))
    kept: list[plans.PlannedFile] = []
    for f in step.files:
        if f.size is not None or f.path not in found:
            kept.append(f)
            continue
        size = found[f.path]
        if size is None:
            continue  # gone already: counted, not deleted
        kept.append(plans.PlannedFile(f.path, f.kind, None if size == SIZE_UNKNOWN else size, f.reason))
    return plans.DeleteStep(step.kind, tuple(kept)), len(step.files) - len(kept)


def sized(plan: plans.Plan, file_io: FileIO) -> plans.Plan:
    """``plan`` with the files of unknown size sized by a stat and those already gone left out
    (a note says how many): what a dry run prints, with the bytes a run would count."""
    steps: list[plans.Step] = []
    gone = 0
    for step in plan.steps:
        if isinstance(step, plans.DeleteStep):
            step, n = _size_step(step, file_io)
            gone += n
            if not step.files:
                continue
        steps.append(step)
    notes = (*plan.notes, f"{gone} planned file(s) are already gone") if gone else plan.notes
    return plans.Plan(plan.operation, plan.table, tuple(steps), notes, plan.details)


def _batches(items: list[plans.PlannedFile], size: int) -> list[list[plans.PlannedFile]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def delete_batch_size(file_io: FileIO, requested: int | None = None) -> int:
    """Keys per delete request of a plan's execution (in process and in Spark executors alike):
    ``requested`` if given, else 1000 where a DeleteObjects takes 1000 keys (fewer, fuller
    requests, docs/storage-internals.md), else 250."""
    if requested is not None:
        return requested
    return values.DELETE_BATCH_MAX if file_io.bulk_deletes else values.DELETE_BATCH_DEFAULT


def delete_batch(file_io: FileIO, paths: list[str]) -> list[DeleteResult]:
    """Delete one batch of a plan's files. S3/OSS: no parent listings first
    (``FileIO.delete_files(tell_missing=False)``: a key already gone reads as deleted); the
    listings were most of an expiration's requests."""
    if file_io.bulk_deletes:
        return file_io.delete_files(paths, tell_missing=False)
    return file_io.delete_files(paths)


def execute(plan: plans.Plan, file_io: FileIO, *, parallelism: int | None = None,
            batch_size: int | None = None, progress: Progress | None = None,
            fault: FaultInjector | None = None) -> ExecutionResult:
    """Carry out ``plan`` in order. Each step finishes before the next begins, so a crash
    leaves a state a rerun of the same planner finishes.

    Inside a trash window (``trash.keeping``) every delete step moves its files into the run's
    trash instead (``trash.move_batch``: each batch's record before its moves), whatever planned
    them; the run's record gets the plan's summary before anything of it moves."""
    result = ExecutionResult()
    workers = max(1, parallelism or default_parallelism(file_io))
    failing: Callable[[list[str]], list[tuple[int, DeleteResult]]]
    keeping = trash.active()
    kinds: dict[str, tuple[str, int | None]] = {}
    if keeping is not None and any(isinstance(s, plans.DeleteStep) and s.files for s in plan.steps):
        keeping.record({k: v for k, v in plan.summary().items() if k != "notes"})

        def failing(paths: list[str]) -> list[tuple[int, DeleteResult]]:
            assert keeping is not None
            moved = trash.move_batch(keeping, [(p, *kinds.get(p, ("other", None))) for p in paths])
            return [(i, r) for i, r in enumerate(moved) if r.outcome != DeleteOutcome.DELETED]
    elif file_io.is_local and type(file_io).delete_files is _PLAIN_DELETE_FILES:
        # local files: one native call a batch, unlinking on `threads` threads, when it was built
        threads = 1
        if storage.native_usable():  # its threads, not the pool's
            threads = min(workers, storage.MAX_THREADS) if parallelism else storage.NATIVE_THREADS
            workers = 1
        if batch_size is None and fault is None:
            batch_size = LOCAL_BATCH

        def failing(paths: list[str]) -> list[tuple[int, DeleteResult]]:
            return file_io.delete_files_failing(paths, threads=threads)
    else:
        def failing(paths: list[str]) -> list[tuple[int, DeleteResult]]:
            return [(i, r) for i, r in enumerate(delete_batch(file_io, paths)) if r.outcome != DeleteOutcome.DELETED]
    batch_size = delete_batch_size(file_io, batch_size)
    for step in plan.steps:
        concurrency.point(f"before:{_label(step)}")
        if isinstance(step, plans.RemoveEmptyDirsStep):
            for directory in step.dirs:
                current = directory
                for _ in range(step.depth + 1):
                    if not file_io.delete_empty_dir(current):
                        break
                    result.removed_dirs.append(current)
                    current = current.rsplit("/", 1)[0]
            result.order.append("remove-empty-dirs")
            continue
        if isinstance(step, plans.WriteStep):
            if fault is not None:
                fault([step.path])
            # plans with writes only (start-up)

            target = concurrency.hint_target(step.path)
            planned = paimon.decode_hint(step.content) if target is not None else None
            if target is not None and planned is not None and not step.create_only:
                concurrency.write_hint(file_io, step.path, planned)
            elif step.create_only:
                try:
                    file_io.write_new(step.path, step.content)
                except FileExistsError:
                    pass
            else:
                file_io.overwrite(step.path, step.content)
            result.written.append(step.path)
            result.order.append(f"write:{step.path}")
            continue
        kind = step.kind.value
        step, gone = _size_step(step, file_io)  # sizes the plan could not tell, from a stat
        if keeping is not None:
            kinds = {f.path: (f.kind.value, f.size) for f in step.files}
        if gone:
            result.missing[kind] += gone
        unknown = sum(1 for f in step.files if f.size is None)
        # a file's bytes count once it is deleted; a path planned twice counts its last planned
        # size (the one rule of a per-path table), which only a step with repeated paths needs
        repeated = len(set(map(_path, step.files))) != len(step.files)
        sizes = {f.path: f.size or 0 for f in step.files} if repeated else {}
        label = _label(step)
        files = list(step.files)
        # With a test listening, the step runs in two halves with a point between them.
        halves = [files[:len(files) // 2], files[len(files) // 2:]] if concurrency.active() and len(files) > 1 \
            else [files]
        done = 0

        def run(batch: list[plans.PlannedFile]) -> tuple[list[plans.PlannedFile], list[str],
                                                        list[tuple[int, DeleteResult]]]:
            paths = list(map(_path, batch))
            if fault is not None:
                fault(paths)
            return batch, paths, failing(paths)

        for i, part in enumerate(halves):
            if i:
                concurrency.point(f"mid:{label}")
            with _pool(workers) as pool:
                for batch, paths, failures in pool.map(run, _batches(part, batch_size)):
                    # one result per path: DELETED unless listed in failures (the same counts,
                    # bytes and failure list as one result object per file gave)
                    missing = 0
                    if repeated:
                        deleted_bytes = sum(map(sizes.__getitem__, paths))
                        for j, _ in failures:
                            deleted_bytes -= sizes[paths[j]]
                    else:  # None and 0 sizes add nothing
                        deleted_bytes = sum(filter(None, map(_size, batch)))
                        for j, _ in failures:
                            deleted_bytes -= batch[j].size or 0
                    for _, r in failures:
                        if r.outcome == DeleteOutcome.MISSING:
                            missing += 1
                        else:
                            result.failed.append(r)
                    deleted = len(paths) - len(failures)
                    if deleted:  # counters gain a kind only when a file of it was deleted (or missing)
                        result.deleted[kind] += deleted
                        result.deleted_bytes[kind] += deleted_bytes
                        if unknown:
                            failed_paths = {paths[j] for j, _ in failures}
                            unsized = sum(1 for f in batch if f.size is None and f.path not in failed_paths)
                            if unsized:
                                result.unsized[kind] += unsized
                    if missing:
                        result.missing[kind] += missing
                    done += len(paths)
                    if progress is not None:
                        progress(kind, done, len(step.files))
        result.order.append(f"delete:{kind}")
    concurrency.point("end")
    return result


def default_parallelism(file_io: FileIO) -> int:
    """Delete threads when the caller names none. Local files: one. Measured on the peer table
    (issue 13, ~98k unlinks): four threads took 1.6x the wall time and 2.5x the system time of
    one (the unlinks serialise on directory and inode locks in the kernel, and the threads then
    fight over the GIL as well); remote stores wait on requests, where threads overlap them."""
    if file_io.is_local:
        return 1
    return min(8, (os.cpu_count() or 2) * 2)


def _pool(workers: int) -> Any:
    """A thread pool of ``workers``, or :class:`_Inline` for one (concurrent.futures, with
    logging, is imported only when threads are used: ~12 ms of a local command's start-up)."""
    if workers <= 1:
        return _Inline()
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=workers)


class _Inline:
    """The executor of one worker: batches run in the caller's thread, in order, as
    ``ThreadPoolExecutor.map`` would return them."""

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @staticmethod
    def map(fn: Callable[[Any], _T], items: Iterable[Any]) -> Iterator[_T]:
        return (fn(item) for item in items)


def _label(step: plans.Step) -> str:
    """The name of ``step``'s seam points: ``delete:data``,
    ``write:snapshot/EARLIEST``, ``write:changelog/changelog-7``, ``remove-empty-dirs``."""
    if isinstance(step, plans.RemoveEmptyDirsStep):
        return "remove-empty-dirs"
    if isinstance(step, plans.WriteStep):
        return f"write:{basename(parent(step.path))}/{basename(step.path)}"
    return f"delete:{step.kind.value}"
