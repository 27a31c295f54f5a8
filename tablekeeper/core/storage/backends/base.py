"""What one store implements: the contract of :mod:`..fileio` at the level of single requests,
without the layers every store shares (views, kept and read-ahead bytes, which
:class:`~tablekeeper.core.storage.fileio.FileIO` puts around it).

A store also declares what it can do, so that nothing above it asks which store it is:

- ``bulk_deletes``: many keys a delete request (S3, OSS: DeleteObjects, 1000 keys);
- ``lists_flat``: a prefix is listed at once, whatever its "directories" (object stores);
- ``exact_existence``: "is there a file" and "is there anything below" are one request each,
  cheaper than :meth:`StoreIO.exists`, which asks both (S3, OSS);
- ``listings_carry_status``: a listing answers size and time with each entry (everything but
  local disk, where ``readdir`` gives names only);
- ``reads_overlap``: a read mostly waits on the network, so reads in parallel pay (not local
  disk, where reading and decoding are CPU-bound);
- :meth:`StoreIO.keeps_versions`: a delete keeps the file's bytes as an older version that can be
  copied back (S3 with bucket versioning Enabled; asked of the bucket, so a method, not a flag).
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from tablekeeper.core import errors
from tablekeeper.core.storage.connections import Connection
from tablekeeper.core.storage.entries import DeleteOutcome, DeleteResult, FileStatus, ListedEntry
from tablekeeper.core.storage.layers import Calls, RequestLayer

if TYPE_CHECKING:
    import fsspec

__all__ = ["StoreIO"]


class StoreIO(abc.ABC):
    """The operations of one store. Paths are this store's URIs (or local paths); every "not
    found" is a ``FileNotFoundError``; mtimes are UTC epoch ms."""

    bulk_deletes: ClassVar[bool] = False
    lists_flat: ClassVar[bool] = False
    exact_existence: ClassVar[bool] = False
    listings_carry_status: ClassVar[bool] = True
    reads_overlap: ClassVar[bool] = True

    def __init__(self, connection: Connection, calls: Calls, fs: fsspec.AbstractFileSystem | None) -> None:
        self.connection = connection
        self.calls = calls
        self._fs = fs

    @classmethod
    def open_filesystem(cls, connection: Connection, layer: RequestLayer,
                        options: Mapping[str, Any] | None) -> tuple[fsspec.AbstractFileSystem | None, bool]:
        """The filesystem of a new FileIO for ``connection`` and whether its requests are
        counted at the HTTP level (by ``layer``'s hook)."""
        return None, False

    @property
    @abc.abstractmethod
    def fs(self) -> fsspec.AbstractFileSystem:
        """The fsspec filesystem (for pyarrow's handler in the pypaimon bridge)."""

    def raw(self, path: str) -> str:
        """``path`` in the implementation's own syntax (``bucket/key`` on object stores)."""
        return self.connection.to_raw(path)

    def uri(self, raw: str) -> str:
        """A path of the implementation back as this store's URI."""
        return self.connection.to_uri(raw)

    # -- listing ---------------------------------------------------------------------------
    @contextmanager
    def flat_listing(self, root: str, *, segments_max: int | None = None,
                     page_keys: int | None = None) -> Iterator[None]:
        """Listings below ``root`` answered from one listing of the prefix (``lists_flat``
        stores; elsewhere a no-op)."""
        yield

    @abc.abstractmethod
    def list_dir(self, path: str) -> list[FileStatus]:
        """Entries of one directory (files and sub-directories); [] when it does not exist."""

    def scan_dir(self, path: str) -> list[ListedEntry]:
        """Entries of one directory, with their status where the listing carries it."""
        return [ListedEntry(s.path, s.name, s.is_dir, s) for s in self.list_dir(path)]

    def list_names(self, path: str) -> list[str]:
        """Names of the entries of one local directory (local disk only)."""
        raise errors.InvalidInputError("list_names lists local directories only", fix="use scan_dir")

    def status_of(self, path: str) -> FileStatus:
        """The status of a listed entry itself (never a symlink's target)."""
        return self.stat(path)

    def statuses_of(self, entries: list[ListedEntry]) -> list[FileStatus | None]:
        """The status of each entry, from the listing or asked; None when it vanished since."""
        out: list[FileStatus | None] = []
        for entry in entries:
            if entry.status is not None:
                out.append(entry.status)
                continue
            try:
                out.append(self.status_of(entry.path))
            except FileNotFoundError:
                out.append(None)
        return out

    @abc.abstractmethod
    def walk_files(self, path: str) -> Iterator[FileStatus]:
        """Every regular file below ``path``, recursively."""

    @abc.abstractmethod
    def stat(self, path: str) -> FileStatus: ...

    @abc.abstractmethod
    def exists(self, path: str) -> bool: ...

    def file_exists(self, path: str) -> bool:
        """Whether a regular file ``path`` exists (``exact_existence`` stores)."""
        return self.exists(path)

    def dir_exists(self, path: str) -> bool:
        """Whether anything lies below ``path`` (``exact_existence`` stores)."""
        return self.exists(path)

    @abc.abstractmethod
    def is_dir(self, path: str) -> bool: ...

    @abc.abstractmethod
    def read_bytes(self, path: str) -> bytes: ...

    # -- writing ---------------------------------------------------------------------------
    @abc.abstractmethod
    def write_new(self, path: str, payload: bytes) -> None:
        """Create ``path``; ``FileExistsError`` if it is there (never overwritten)."""

    @abc.abstractmethod
    def overwrite(self, path: str, payload: bytes) -> None: ...

    @abc.abstractmethod
    def rename(self, src: str, dst: str) -> None:
        """Rename a file or a directory; ``FileExistsError`` when ``dst`` exists."""

    def move_file(self, src: str, dst: str) -> None:
        """Move the regular file ``src`` to ``dst``, which must not exist (``FileExistsError``;
        ``FileNotFoundError`` when ``src`` is gone): the trash's move. Here: the parent made,
        then :meth:`rename` (local disk, HDFS: one atomic rename, no copy)."""
        self.mkdirs(dst.rsplit("/", 1)[0])
        self.rename(src, dst)

    def copy_file(self, src: str, dst: str) -> None:
        """Copy a regular file's bytes to ``dst`` (replaced if it exists). Here: read and write;
        object stores copy server-side."""
        self.overwrite(dst, self.read_bytes(src))

    @abc.abstractmethod
    def mkdirs(self, path: str) -> None: ...

    # -- versions (stores that keep them: :meth:`keeps_versions`) ----------------------------
    def keeps_versions(self, path: str) -> bool:
        """Whether deleting ``path`` keeps its bytes as a noncurrent version (the trash then
        records the version instead of copying the file). Here: no."""
        return False

    def _no_versions(self) -> errors.StorageError:
        return errors.StorageError(f"{self.connection.store.value} keeps no versions of deleted files",
                                   fix="report this: versions are asked only where keeps_versions() is true")

    def version_of(self, path: str) -> tuple[str, int]:
        """The current version id and size of the file ``path`` (``FileNotFoundError``)."""
        raise self._no_versions()

    def has_version(self, path: str, version_id: str) -> bool:
        """Whether the store still holds version ``version_id`` of ``path``."""
        raise self._no_versions()

    def read_version(self, path: str, version_id: str) -> bytes:
        """The bytes of version ``version_id`` of ``path`` (``FileNotFoundError`` when gone)."""
        raise self._no_versions()

    def copy_version(self, src: str, dst: str, version_id: str) -> None:
        """A server-side copy of version ``version_id`` of ``src`` to ``dst`` (replaced if there;
        ``FileNotFoundError`` when the version is gone)."""
        raise self._no_versions()

    def delete_versions(self, versions: list[tuple[str, str]]) -> list[DeleteResult]:
        """Delete these (path, version id) for good; one result per pair, in order."""
        raise self._no_versions()

    # -- deleting --------------------------------------------------------------------------
    @abc.abstractmethod
    def delete_files(self, paths: list[str], tell_missing: bool) -> list[DeleteResult]:
        """One result per path, in order; never a directory deleted."""

    def delete_files_failing(self, paths: list[str], tell_missing: bool,
                             threads: int) -> list[tuple[int, DeleteResult]]:
        """The results of :meth:`delete_files` that are not DELETED, as (index, result)."""
        results = self.delete_files(paths, tell_missing)
        return [(i, r) for i, r in enumerate(results) if r.outcome is not DeleteOutcome.DELETED]

    @abc.abstractmethod
    def delete_empty_dir(self, path: str) -> bool: ...

    @abc.abstractmethod
    def delete_tree(self, path: str) -> None: ...

