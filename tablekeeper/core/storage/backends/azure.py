"""Azure Blob Storage and ADLS Gen2, with adlfs.

Create-if-absent is an upload with ``If-None-Match: *`` (409 when the blob exists). adlfs exposes
no Blob Batch call (its own ``rm`` also deletes blob by blob), so deletes are one ``DELETE`` per
blob, in parallel: everything else is what every object store does."""

from __future__ import annotations

from tablekeeper.core.storage.backends.object_store import ObjectStoreIO

__all__ = ["AzureIO"]


class AzureIO(ObjectStoreIO):
    """Azure (module docstring)."""
