"""The storage contract (:class:`FileIO`), met on local disk, S3, OSS, HDFS, GCS and Azure: one
backend per store, the layers they share, which store a URI names and how Paimon's options
reach it. The only place that imports storage SDKs. It decides how a file is read, listed,
written and deleted, and what that costs; Paimon's layout is ``paimon``'s."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"storage_options_from_paimon": "connections", "DeleteOutcome": "entries", "DeleteResult": "entries",
    "FileStatus": "entries", "ListedEntry": "entries", "FileIO": "fileio", "pacing_from_options": "layers",
    "PACING_OPTION": "layers", "plus": "layers", "process_snapshot": "layers", "RequestKind": "layers",
    "since": "layers", "MAX_THREADS": "native_unlink", "NATIVE_THREADS": "native_unlink",
    "native_usable": "native_unlink", "basename": "paths", "join": "paths", "parent": "paths",
    "is_secret_option": "secrets", "executor_credential_env": "stores", "split_scheme": "stores", "Store": "stores",
    "store_of": "stores"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .connections import storage_options_from_paimon as storage_options_from_paimon
    from .entries import (DeleteOutcome as DeleteOutcome, DeleteResult as DeleteResult, FileStatus as FileStatus,
        ListedEntry as ListedEntry)
    from .fileio import FileIO as FileIO
    from .layers import (pacing_from_options as pacing_from_options, PACING_OPTION as PACING_OPTION, plus as plus,
        process_snapshot as process_snapshot, RequestKind as RequestKind, since as since)
    from .native_unlink import (MAX_THREADS as MAX_THREADS, NATIVE_THREADS as NATIVE_THREADS,
        native_usable as native_usable)
    from .paths import basename as basename, join as join, parent as parent
    from .secrets import is_secret_option as is_secret_option
    from .stores import (executor_credential_env as executor_credential_env, split_scheme as split_scheme,
        Store as Store, store_of as store_of)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
