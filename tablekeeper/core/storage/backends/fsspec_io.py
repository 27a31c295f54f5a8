"""What every remote store shares: an fsspec filesystem (s3fs, gcsfs, adlfs, WebHDFS) behind
tablekeeper's request path (:mod:`..calls`: counted, paced, retried), statuses from its
listings, "not found" as ``FileNotFoundError``, and the delete pipeline of
:mod:`.remote_deletes`. What differs per store is in its own class: object stores
(:mod:`.object_store`: prefixes, not directories; S3/OSS, GCS, Azure) and HDFS (:mod:`.hdfs`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

from tablekeeper.core import errors, pycompat
from tablekeeper.core.storage.backends import remote_deletes
from tablekeeper.core.storage.backends.base import StoreIO
from tablekeeper.core.storage.connections import Connection
from tablekeeper.core.storage.entries import DeleteResult, FileStatus
from tablekeeper.core.storage.layers import RequestKind, RequestLayer

if TYPE_CHECKING:
    import fsspec

__all__ = ["FsspecIO", "mtime_ms", "is_marker"]

T = TypeVar("T")


def mtime_ms(info: Mapping[str, Any]) -> int:
    """The modification time (UTC epoch ms) of an fsspec info, whichever key its store uses."""
    for key in ("LastModified", "last_modified", "modificationTime", "mtime", "updated", "modified", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            try:
                value = pycompat.fromisoformat(value)
            except ValueError:
                continue
        if isinstance(value, datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=timezone.utc)
            return int(value.timestamp() * 1000)
        if isinstance(value, (int, float)):
            return int(value * 1000) if value < 1e11 else int(value)
    return 0


def is_marker(info: Mapping[str, Any]) -> bool:
    """An object-store "directory marker": an empty object whose key ends with ``/``.
    pyarrow (and so pypaimon) creates one for every ``mkdirs``; it is not a file."""
    return info.get("type") != "directory" and str(info.get("name", "")).endswith("/")


class FsspecIO(StoreIO):
    """A remote store reached through its fsspec filesystem (module docstring)."""

    #: whether the store's top level are buckets (containers), which are never deleted
    has_buckets = True

    @classmethod
    def open_filesystem(cls, connection: Connection, layer: RequestLayer,
                        options: Mapping[str, Any] | None) -> tuple[fsspec.AbstractFileSystem | None, bool]:
        return cls._filesystem(connection, dict(connection.kwargs), options), False

    @staticmethod
    def _filesystem(connection: Connection, kwargs: dict[str, Any],
                    options: Mapping[str, Any] | None) -> fsspec.AbstractFileSystem:
        """``fsspec.filesystem`` for ``connection``; a missing package or rejected arguments are
        bad input naming the fix."""
        import fsspec

        try:
            return fsspec.filesystem(connection.protocol, **kwargs)
        except ImportError as e:
            raise errors.InvalidInputError(f"{connection.scheme}:// needs an optional package: {e}",
                                           fix="pip install 'tablekeeper[stores]'") from e
        except (ValueError, TypeError) as e:
            from tablekeeper.core.storage import secrets

            raise errors.InvalidInputError(f"cannot configure {connection.scheme}:// storage: "
                                           f"{secrets.redact_text(str(e), options or {})}",
                                           fix="check the storage options (docs/storage.md)") from e

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        if self._fs is None:
            raise errors.InvalidInputError(f"no filesystem configured for {self.connection.scheme}://",
                                           fix="build the FileIO with FileIO.for_uri")
        return self._fs

    def _call(self, fn: Callable[[], T], kind: RequestKind = RequestKind.OTHER) -> T:
        return self.calls.call(fn, kind)

    def _call_on(self, path: str, fn: Callable[[], T], kind: RequestKind) -> T:
        """:meth:`_call` of a request about one file: some backends raise a plain IOError for
        404, which is a ``FileNotFoundError`` of ``path`` here."""
        try:
            return self._call(fn, kind)
        except FileNotFoundError:
            raise
        except OSError as e:
            text = str(e).lower()
            if "not found" in text or "nosuchkey" in text:
                raise FileNotFoundError(path) from e
            raise

    def status_from(self, info: Mapping[str, Any]) -> FileStatus:
        """The status of an fsspec info (a listing's entry, a ``find``'s value)."""
        return FileStatus(
            path=self.uri(str(info["name"]).rstrip("/")),
            size=int(info.get("size") or 0),
            mtime_ms=mtime_ms(info),
            is_dir=info.get("type") == "directory",
        )

    def invalidate(self, raw: str) -> None:
        """Forget what the filesystem cached about ``raw`` (after a write or delete)."""
        try:
            self.fs.invalidate_cache(raw)
        except Exception:  # pragma: no cover - caches are an optimisation only
            pass

    # -- reading ---------------------------------------------------------------------------
    def _ls(self, raw: str) -> list[dict[str, Any]]:
        """One directory's fsspec infos."""
        infos: list[dict[str, Any]] = self.fs.ls(raw, detail=True)
        return infos

    def list_dir(self, path: str) -> list[FileStatus]:
        raw = self.raw(path).rstrip("/")
        try:
            infos = self._call(lambda: self._ls(raw), RequestKind.LIST)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [self.status_from(i) for i in infos
                if not is_marker(i) and str(i["name"]).rstrip("/") not in (raw, raw.lstrip("/"))]

    def walk_files(self, path: str) -> Iterator[FileStatus]:
        raw = self.raw(path).rstrip("/")
        try:
            found = self._call(lambda: self.fs.find(raw, detail=True), RequestKind.LIST)
        except FileNotFoundError:
            return
        for info in found.values():
            if info.get("type") != "directory" and not is_marker(info):
                yield self.status_from(info)

    def stat(self, path: str) -> FileStatus:
        raw = self.raw(path)
        info = self._call_on(path, lambda: self.fs.info(raw), RequestKind.HEAD)
        status = self.status_from(info)
        return FileStatus(self.uri(raw.rstrip("/")), status.size, status.mtime_ms, status.is_dir)

    def exists(self, path: str) -> bool:
        raw = self.raw(path)
        return bool(self._call(lambda: self.fs.exists(raw), RequestKind.HEAD))

    def is_dir(self, path: str) -> bool:
        raw = self.raw(path)
        return bool(self._call(lambda: self.fs.isdir(raw), RequestKind.HEAD))

    def read_bytes(self, path: str) -> bytes:
        raw = self.raw(path)
        return bytes(self._call_on(path, lambda: self.fs.cat_file(raw), RequestKind.GET))

    # -- writing ---------------------------------------------------------------------------
    def overwrite(self, path: str, payload: bytes) -> None:
        """A plain PUT."""
        raw = self.raw(path)
        self._call(lambda: self.fs.pipe_file(raw, payload), RequestKind.PUT)
        self.invalidate(raw)

    # -- deleting --------------------------------------------------------------------------
    def delete_files(self, paths: list[str], tell_missing: bool) -> list[DeleteResult]:
        """Missing files and directories told apart by a listing of each parent (the delete
        answers of these stores cannot be relied on for both), then :meth:`delete_batch`."""
        return remote_deletes.delete_files(self, paths, tell_missing=True)

    def delete_batch(self, batch: list[str]) -> list[DeleteResult]:
        """Delete exactly these keys (files or directory markers), at most 1000, any buckets:
        one request per file, in parallel (stores without a bulk delete)."""
        return remote_deletes.in_parallel(self.delete_one, batch)

    def delete_one(self, path: str) -> DeleteResult:
        """Delete one file, retried (:func:`.remote_deletes.delete_one`)."""
        return remote_deletes.delete_one(self, path)

    def remove(self, raw: str) -> bool:
        """One single-file delete request; False when the store says the file was not there."""
        self.calls.note(RequestKind.DELETE)
        self.fs.rm_file(raw)
        return True
