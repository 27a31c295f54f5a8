"""Deleting files on a remote store: one outcome per file, never a directory, every request
retried, the same steps on every store; how a batch of keys is deleted is the store's
(:meth:`FsspecIO.delete_batch`: DeleteObjects on S3/OSS, a batch request against Google,
otherwise one request per file, :data:`PARALLEL_DELETES` at a time).

1. Paths that name a bucket or a directory (``dir/``) fail at once: never deleted.
2. Unless told not to (plan execution on S3/OSS), one listing per parent directory tells
   missing files and same-named directories (prefixes) apart; a failed listing deletes blindly
   and reports what the store says.
3. The rest in batches of at most ``safety.DELETE_BATCH_MAX`` keys.

A single-file delete that fails transiently is retried; one that is gone on a retry was deleted
by the attempt whose answer was lost, and is reported deleted, not missing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Protocol

from tablekeeper.core import values
from tablekeeper.core.storage import layers
from tablekeeper.core.storage.entries import DeleteOutcome, DeleteResult, FileStatus
from tablekeeper.core.storage.paths import basename, parent

__all__ = ["PARALLEL_DELETES", "RemoteStore", "delete_files", "in_parallel", "delete_one"]

#: Concurrent single-file deletes on stores without a bulk delete (GCS, Azure, HDFS).
PARALLEL_DELETES = 16


class RemoteStore(Protocol):
    """What the pipeline asks of a store (:class:`.fsspec_io.FsspecIO` and its subclasses)."""

    #: whether the top level are buckets (containers), never deleted
    has_buckets: bool
    calls: layers.Calls

    def raw(self, path: str) -> str: ...

    def list_dir(self, path: str) -> list[FileStatus]: ...

    def delete_batch(self, batch: list[str]) -> list[DeleteResult]:
        """Delete exactly these keys (at most ``safety.DELETE_BATCH_MAX``)."""
        ...

    def remove(self, raw: str) -> bool:
        """One single-file delete request; False when the store says the file was not there."""
        ...

    def invalidate(self, raw: str) -> None: ...


def delete_files(store: RemoteStore, paths: list[str], tell_missing: bool) -> list[DeleteResult]:
    """One result per path, in input order (module docstring)."""
    decided: dict[str, DeleteResult] = {}
    by_dir: dict[str, list[str]] = defaultdict(list)
    for p in dict.fromkeys(paths):  # unique, in input order
        raw = store.raw(p).strip("/")
        if store.has_buckets and "/" not in raw:
            decided[p] = DeleteResult(p, DeleteOutcome.FAILED, "is a bucket: never deleted")
            continue
        if p.endswith("/") or not raw:
            decided[p] = DeleteResult(p, DeleteOutcome.FAILED, "is a directory: never deleted")
            continue
        by_dir[parent(p)].append(p)
    to_delete: list[str] = []
    for directory, members in by_dir.items():
        files: set[str] | None
        dirs: set[str] = set()
        if not tell_missing:
            to_delete.extend(members)
            continue
        try:
            files = set()
            for status in store.list_dir(directory):
                (dirs if status.is_dir else files).add(status.name)
        except Exception:  # listing failed: delete blindly, report what the store says
            files = None
        for p in members:
            name = basename(p)
            if files is None or name in files:  # a file wins over a same-named prefix
                to_delete.append(p)
            elif name in dirs:
                decided[p] = DeleteResult(p, DeleteOutcome.FAILED, "is a directory: never deleted")
            else:
                decided[p] = DeleteResult(p, DeleteOutcome.MISSING)
    for start in range(0, len(to_delete), values.DELETE_BATCH_MAX):
        for result in store.delete_batch(to_delete[start:start + values.DELETE_BATCH_MAX]):
            decided[result.path] = result
    return [decided[p] for p in paths]


def in_parallel(delete: Callable[[str], DeleteResult], batch: list[str]) -> list[DeleteResult]:
    """``delete`` of each path, :data:`PARALLEL_DELETES` at a time; results in order."""
    if len(batch) <= 1:
        return [delete(p) for p in batch]
    from concurrent.futures import ThreadPoolExecutor  # lazily: ~12 ms of start-up

    with ThreadPoolExecutor(max_workers=min(PARALLEL_DELETES, len(batch))) as pool:
        return list(pool.map(delete, batch))


def delete_one(store: RemoteStore, path: str) -> DeleteResult:
    """Delete one file with retries (module docstring)."""

    raw = store.raw(path)
    policy = store.calls.retry
    attempt = 0
    failed_before = False
    while True:
        try:
            removed = store.remove(raw)
            store.invalidate(raw)
            if removed or failed_before:
                return DeleteResult(path, DeleteOutcome.DELETED)
            return DeleteResult(path, DeleteOutcome.MISSING)
        except FileNotFoundError:
            return DeleteResult(path, DeleteOutcome.DELETED if failed_before else DeleteOutcome.MISSING)
        except Exception as e:
            attempt += 1
            message = store.calls.redact(f"{type(e).__name__}: {e}")
            if not layers.is_transient(e):
                return DeleteResult(path, DeleteOutcome.FAILED, message)
            if attempt >= policy.attempts:
                return DeleteResult(path, DeleteOutcome.FAILED,
                                    f"retry budget exhausted ({policy.attempts} attempts): {message}")
            failed_before = True
            layers.retries_sleep(policy.delay(attempt))
