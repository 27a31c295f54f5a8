"""The storage contract tablekeeper relies on, met on local disk, S3, OSS, HDFS, GCS and Azure. The
only place in tablekeeper that imports storage SDKs.

Paths are plain strings: absolute local paths without a scheme, or ``scheme://authority/key``.
Every backend's "not found" is mapped to ``FileNotFoundError``; mtimes are UTC epoch ms.

Modules: :mod:`.fileio` (:class:`FileIO`: the contract, and the layers every store shares),
:mod:`.backends` (one implementation per store: local, S3 and OSS, GCS, Azure, HDFS),
:mod:`.views` (one decision's answers), :mod:`.read_cache` (immutable files kept, reads ahead),
:mod:`.calls` (the path of every request), :mod:`.requests` (counted and paced), :mod:`.retry`
(transient failures and backoff), :mod:`.stores` (schemes and Paimon option names -> fsspec
arguments), :mod:`.secrets` (which options are credentials, masking), :mod:`.segmented` (the
flat listing of a large S3/OSS prefix in segments listed at once), :mod:`.native_unlink` (local
batch deletes, in the optional C module ``_fs_native`` when it was built).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tablekeeper.core.storage.fileio import DeleteOutcome, DeleteResult, FileIO, FileStatus, ListedEntry
from tablekeeper.core.storage.paths import basename, join, parent
from tablekeeper.core.storage.stores import s3_kwargs

__all__ = [
    "FileStatus",
    "ListedEntry",
    "DeleteOutcome",
    "DeleteResult",
    "FileIO",
    "join",
    "parent",
    "basename",
    "storage_options_from_paimon",
]


def storage_options_from_paimon(options: Mapping[str, str]) -> dict[str, Any]:
    """Translate Paimon/pypaimon S3 option names (``s3.endpoint``, ``fs.s3a.access-key``,
    ``fs.s3.accessKeyId`` ...) into s3fs keyword arguments."""
    return s3_kwargs(options)
