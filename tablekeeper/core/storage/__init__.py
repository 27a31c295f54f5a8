"""The storage contract tablekeeper relies on, met on local disk, S3, OSS, HDFS, GCS and Azure. The
only place in tablekeeper that imports storage SDKs.

Paths are plain strings: absolute local paths without a scheme, or ``scheme://authority/key``.
Every backend's "not found" is mapped to ``FileNotFoundError``; mtimes are UTC epoch ms.
It decides how a file is read, listed, written and deleted, and what each costs; it knows
nothing of Paimon's layout (``paimon``).

Modules: :mod:`.fileio` (:class:`FileIO`: the contract, composed of the layers), :mod:`.layers`
(what every store shares), :mod:`.backends` (one implementation per store), :mod:`.stores`
(which store a URI names), :mod:`.connections` (Paimon's option names -> fsspec arguments),
:mod:`.secrets` (which options are credentials, masking), :mod:`.entries` and :mod:`.paths`
(what listings return, path strings), :mod:`.native_unlink` (local batch deletes, in the
optional C module ``_fs_native`` when it was built)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "DeleteOutcome": "entries",
    "DeleteResult": "entries",
    "FileIO": "fileio",
    "FileStatus": "entries",
    "ListedEntry": "entries",
    "MAX_THREADS": "native_unlink",
    "NATIVE_THREADS": "native_unlink",
    "PACING_OPTION": "layers",
    "RequestKind": "layers",
    "Store": "stores",
    "basename": "paths",
    "executor_credential_env": "stores",
    "is_secret_option": "secrets",
    "join": "paths",
    "native_usable": "native_unlink",
    "pacing_from_options": "layers",
    "parent": "paths",
    "plus": "layers",
    "process_snapshot": "layers",
    "since": "layers",
    "split_scheme": "stores",
    "storage_options_from_paimon": "connections",
    "store_of": "stores",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.storage.connections import storage_options_from_paimon as storage_options_from_paimon
    from tablekeeper.core.storage.entries import DeleteOutcome as DeleteOutcome
    from tablekeeper.core.storage.entries import DeleteResult as DeleteResult
    from tablekeeper.core.storage.entries import FileStatus as FileStatus
    from tablekeeper.core.storage.entries import ListedEntry as ListedEntry
    from tablekeeper.core.storage.fileio import FileIO as FileIO
    from tablekeeper.core.storage.layers import PACING_OPTION as PACING_OPTION
    from tablekeeper.core.storage.layers import RequestKind as RequestKind
    from tablekeeper.core.storage.layers import pacing_from_options as pacing_from_options
    from tablekeeper.core.storage.layers import plus as plus
    from tablekeeper.core.storage.layers import process_snapshot as process_snapshot
    from tablekeeper.core.storage.layers import since as since
    from tablekeeper.core.storage.native_unlink import MAX_THREADS as MAX_THREADS
    from tablekeeper.core.storage.native_unlink import NATIVE_THREADS as NATIVE_THREADS
    from tablekeeper.core.storage.native_unlink import native_usable as native_usable
    from tablekeeper.core.storage.paths import basename as basename
    from tablekeeper.core.storage.paths import join as join
    from tablekeeper.core.storage.paths import parent as parent
    from tablekeeper.core.storage.secrets import is_secret_option as is_secret_option
    from tablekeeper.core.storage.stores import Store as Store
    from tablekeeper.core.storage.stores import executor_credential_env as executor_credential_env
    from tablekeeper.core.storage.stores import split_scheme as split_scheme
    from tablekeeper.core.storage.stores import store_of as store_of
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
