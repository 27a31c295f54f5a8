"""The one place that picks the class serving a store; a module is imported only when its store
is used (a local command never imports fsspec)."""

from __future__ import annotations

from tablekeeper.core.storage.backends.base import StoreIO
from tablekeeper.core.storage.stores import Store

__all__ = ["implementation"]


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
