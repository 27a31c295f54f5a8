"""Google Cloud Storage, with gcsfs.

Create-if-absent is an upload with ``ifGenerationMatch=0`` (412 when the object exists). Against
Google, deletes go through the JSON API's batch endpoint, :data:`GCS_BATCH_MAX` a request;
elsewhere (emulators such as fake-gcs-server, which answer gcsfs's batch sub-requests with 400)
one ``DELETE`` per object, in parallel."""

from __future__ import annotations

from typing import Any

from tablekeeper.core.storage.backends import remote_deletes
from tablekeeper.core.storage.backends.object_store import ObjectStoreIO
from tablekeeper.core.storage.entries import DeleteOutcome, DeleteResult

__all__ = ["GcsIO", "GCS_BATCH_MAX"]

#: Sub-requests per GCS batch request (Google's limit is 100; gcsfs uses 20 for its own ``rm``).
GCS_BATCH_MAX = 100


class GcsIO(ObjectStoreIO):
    """GCS (module docstring)."""

    def delete_batch(self, batch: list[str]) -> list[DeleteResult]:
        fs: Any = self.fs
        if len(batch) > 1 and fs.on_google:
            return self._batch_delete(batch)
        return super().delete_batch(batch)

    def _batch_delete(self, batch: list[str]) -> list[DeleteResult]:
        """The JSON API's batch endpoint (gcsfs ``_rm_files``, which retries its own transient
        sub-requests). gcsfs names only the deleted objects, so every object the batch did not
        confirm goes through :meth:`delete_one` (retried, and telling missing from failed): the
        counts stay exact. Only against Google (``on_google``), as gcsfs's own ``rm`` does: an
        emulator's 400 would cost a wasted request before the per-file path."""
        from fsspec.asyn import sync

        fs: Any = self.fs
        confirmed: set[str] = set()
        for start in range(0, len(batch), GCS_BATCH_MAX):
            chunk = [self.raw(p) for p in batch[start:start + GCS_BATCH_MAX]]
            try:
                answers = self._call(lambda chunk=chunk: sync(fs.loop, fs._rm_files, chunk))  # type: ignore[misc]
            except Exception:  # the batch request failed as a whole: per file below
                answers = []
            confirmed.update(a for a in answers if isinstance(a, str))
            for raw in chunk:
                self.invalidate(raw)
        results = {p: DeleteResult(p, DeleteOutcome.DELETED) for p in batch if self.raw(p) in confirmed}
        rest = [p for p in batch if p not in results]
        results.update(zip(rest, remote_deletes.in_parallel(self.delete_one, rest), strict=True))
        return [results[p] for p in batch]
