"""One implementation of the storage contract per store, each in its own module:

- :mod:`.local` (``os``), and on fsspec (:mod:`.fsspec_io`, with :mod:`.remote_deletes`):
- :mod:`.object_store` (prefixes, markers, conditional uploads, flat listings), under it
  :mod:`.s3` (S3 and OSS), :mod:`.gcs`, :mod:`.azure`;
- :mod:`.hdfs` (WebHDFS, real directories).

:func:`implementation` is the one place that picks the class for a store; a module is imported
only when its store is used (a local command never imports fsspec)."""

from __future__ import annotations

from tablekeeper.core.storage.backends.base import StoreIO
from tablekeeper.core.storage.stores import Store

__all__ = ["StoreIO", "implementation"]


def implementation(store: Store) -> type[StoreIO]:
    """The class that serves ``store``."""
    if store is Store.LOCAL:
        from tablekeeper.core.storage.backends.local import LocalIO

        return LocalIO
    if store in (Store.S3, Store.OSS):
        from tablekeeper.core.storage.backends.s3 import S3IO

        return S3IO
    if store is Store.GCS:
        from tablekeeper.core.storage.backends.gcs import GcsIO

        return GcsIO
    if store is Store.AZURE:
        from tablekeeper.core.storage.backends.azure import AzureIO

        return AzureIO
    from tablekeeper.core.storage.backends.hdfs import HdfsIO

    return HdfsIO
