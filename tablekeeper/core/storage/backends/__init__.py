"""One implementation of the storage contract per store, each in its own module:

- :mod:`.local` (``os``), and on fsspec (:mod:`.fsspec_io`, with :mod:`.remote_deletes`):
- :mod:`.object_store` (prefixes, markers, conditional uploads, flat listings), under it
  :mod:`.s3` (S3 and OSS; :mod:`.segmented` listings, :mod:`.oss_headers`), :mod:`.gcs`,
  :mod:`.azure`;
- :mod:`.hdfs` (WebHDFS, real directories).

:mod:`.by_store` is the one place that picks the class for a store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "StoreIO": "base",
    "implementation": "by_store",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.storage.backends.base import StoreIO as StoreIO
    from tablekeeper.core.storage.backends.by_store import implementation as implementation
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
