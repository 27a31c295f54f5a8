"""One implementation of the storage contract per store: local disk (``os``), and on fsspec
the object stores (S3 and OSS, GCS, Azure) and HDFS (WebHDFS). :mod:`.by_store` picks
the class for a store, importing only its module."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"StoreIO": "base", "implementation": "by_store"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .base import StoreIO as StoreIO
    from .by_store import implementation as implementation
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
