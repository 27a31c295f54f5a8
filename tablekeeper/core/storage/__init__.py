"""One small filesystem abstraction over fsspec: local paths / ``file://`` and ``s3://`` (other
schemes by fsspec's registry). The only place in tablekeeper that imports storage SDKs.

Paths are plain strings: absolute local paths without a scheme, or ``scheme://bucket/key``.
Every backend's "not found" is mapped to ``FileNotFoundError``; mtimes are UTC epoch ms.
"""

from __future__ import annotations

import enum
import os
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import fsspec

from tablekeeper.core import errors, safety

__all__ = [
    "FileStatus",
    "DeleteOutcome",
    "DeleteResult",
    "FileIO",
    "join",
    "parent",
    "basename",
    "storage_options_from_paimon",
]


@dataclass(frozen=True)
class FileStatus:
    path: str
    size: int
    mtime_ms: int
    is_dir: bool = False

    @property
    def name(self) -> str:
        return basename(self.path)


class DeleteOutcome(str, enum.Enum):
    DELETED = "deleted"
    MISSING = "missing"
    FAILED = "failed"


@dataclass(frozen=True)
class DeleteResult:
    path: str
    outcome: DeleteOutcome
    error: str | None = None


def join(base: str, *parts: str) -> str:
    out = base.rstrip("/")
    for part in parts:
        if part:
            out = f"{out}/{part.strip('/')}"
    return out


def parent(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0]


def basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _split_scheme(uri: str) -> tuple[str, str]:
    if uri.startswith("file://"):
        return "file", uri[len("file://"):]
    if uri.startswith("file:"):
        return "file", uri[len("file:"):]
    if "://" in uri:
        scheme, rest = uri.split("://", 1)
        return scheme.lower(), rest
    return "file", uri


_S3_KEYS = {
    "endpoint": "endpoint",
    "access-key": "key",
    "access.key": "key",
    "accesskeyid": "key",
    "secret-key": "secret",
    "secret.key": "secret",
    "accesskeysecret": "secret",
    "session-token": "token",
    "session.token": "token",
    "security-token": "token",
    "security.token": "token",
    "securitytoken": "token",
    "region": "region",
    "path-style-access": "path_style",
    "path.style.access": "path_style",
}


def storage_options_from_paimon(options: Mapping[str, str]) -> dict[str, Any]:
    """Translate Paimon/pypaimon S3 option names (``s3.endpoint``, ``fs.s3a.access-key``,
    ``fs.s3.accessKeyId`` ...) into s3fs keyword arguments."""
    found: dict[str, str] = {}
    for key, value in options.items():
        low = key.lower()
        for prefix in ("fs.s3a.", "fs.s3.", "s3a.", "s3."):
            if low.startswith(prefix):
                suffix = low[len(prefix):]
                if suffix in _S3_KEYS:
                    found[_S3_KEYS[suffix]] = value
                break
    kwargs: dict[str, Any] = {}
    if "key" in found:
        kwargs["key"] = found["key"]
    if "secret" in found:
        kwargs["secret"] = found["secret"]
    if "token" in found:
        kwargs["token"] = found["token"]
    client: dict[str, Any] = {}
    if "endpoint" in found:
        kwargs["endpoint_url"] = found["endpoint"]
    if "region" in found and found["region"] != "us-east-1":
        client["region_name"] = found["region"]
    if client:
        kwargs["client_kwargs"] = client
    if str(found.get("path_style", "")).lower() == "true":
        kwargs["config_kwargs"] = {"s3": {"addressing_style": "path"}}
    return kwargs


def _mtime_ms(info: Mapping[str, Any]) -> int:
    for key in ("LastModified", "last_modified", "mtime", "modified", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=timezone.utc)
            return int(value.timestamp() * 1000)
        if isinstance(value, (int, float)):
            return int(value * 1000) if value < 1e11 else int(value)
    return 0


class FileIO:
    """Filesystem operations tablekeeper needs, over one fsspec filesystem.

    Capabilities differ per store: local files get create-if-absent through ``os.link`` and
    atomic replace through ``os.replace``; object stores get conditional PUT (``If-None-Match``)
    and bulk DeleteObjects.
    """

    def __init__(self, scheme: str, fs: fsspec.AbstractFileSystem) -> None:
        self.scheme = scheme
        self.fs = fs

    # -- construction ------------------------------------------------------------------
    @classmethod
    def for_uri(cls, uri: str, options: Mapping[str, Any] | None = None) -> FileIO:
        """A FileIO for the store behind ``uri``. ``options`` are Paimon-style option names
        (``s3.endpoint`` ...) or raw fsspec keyword arguments."""
        scheme, _ = _split_scheme(uri)
        options = dict(options or {})
        if scheme == "file":
            return cls("file", fsspec.filesystem("file"))
        if scheme in ("s3", "s3a", "s3n"):
            kwargs = storage_options_from_paimon(options)
            kwargs.update({k: v for k, v in options.items() if "." not in k})
            kwargs.setdefault("skip_instance_cache", True)
            kwargs.setdefault("use_listings_cache", False)
            return cls(scheme, fsspec.filesystem("s3", **kwargs))
        return cls(scheme, fsspec.filesystem(scheme, **options))

    @property
    def is_local(self) -> bool:
        return self.scheme == "file"

    def normalize(self, uri: str) -> str:
        """Canonical form of a path for this store: no ``file:`` prefix locally."""
        scheme, rest = _split_scheme(uri)
        if scheme == "file":
            return os.path.abspath(rest) if rest else rest
        return f"{scheme}://{rest}"

    def _raw(self, path: str) -> str:
        return _split_scheme(path)[1]

    def _uri(self, raw: str) -> str:
        if self.is_local:
            return raw
        return f"{self.scheme}://{raw.lstrip('/')}"

    # -- reading -----------------------------------------------------------------------
    def _status(self, info: Mapping[str, Any]) -> FileStatus:
        return FileStatus(
            path=self._uri(str(info["name"]).rstrip("/")),
            size=int(info.get("size") or 0),
            mtime_ms=_mtime_ms(info),
            is_dir=info.get("type") == "directory",
        )

    def list_dir(self, path: str) -> list[FileStatus]:
        """Entries of one directory (files and sub-directories); [] when it does not exist."""
        if self.is_local:
            out = []
            try:
                with os.scandir(self._raw(path)) as it:
                    for entry in it:
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except FileNotFoundError:
                            continue
                        out.append(FileStatus(entry.path, st.st_size, st.st_mtime_ns // 1_000_000,
                                              entry.is_dir(follow_symlinks=False)))
            except (FileNotFoundError, NotADirectoryError):
                return []
            return out
        try:
            infos = self.fs.ls(self._raw(path), detail=True)
        except FileNotFoundError:
            return []
        raw = self._raw(path).rstrip("/")
        return [self._status(i) for i in infos if str(i["name"]).rstrip("/") != raw]

    def walk_files(self, path: str) -> Iterator[FileStatus]:
        """Every regular file below ``path``, recursively."""
        if self.is_local:
            root = self._raw(path)
            for dirpath, _dirs, files in os.walk(root):
                for name in files:
                    full = os.path.join(dirpath, name)
                    try:
                        st = os.lstat(full)
                    except FileNotFoundError:
                        continue
                    yield FileStatus(full, st.st_size, st.st_mtime_ns // 1_000_000, False)
            return
        try:
            found = self.fs.find(self._raw(path), detail=True)
        except FileNotFoundError:
            return
        for info in found.values():
            if info.get("type") != "directory":
                yield self._status(info)

    def stat(self, path: str) -> FileStatus:
        if self.is_local:
            st = os.stat(self._raw(path))
            return FileStatus(path, st.st_size, st.st_mtime_ns // 1_000_000, os.path.isdir(path))
        try:
            info = self.fs.info(self._raw(path))
        except FileNotFoundError:
            raise
        except OSError as e:  # some backends raise a plain IOError for 404
            if "not found" in str(e).lower() or "nosuchkey" in str(e).lower():
                raise FileNotFoundError(path) from e
            raise
        return self._status(info)

    def exists(self, path: str) -> bool:
        if self.is_local:
            return os.path.exists(self._raw(path))
        return bool(self.fs.exists(self._raw(path)))

    def is_dir(self, path: str) -> bool:
        if self.is_local:
            return os.path.isdir(self._raw(path))
        return bool(self.fs.isdir(self._raw(path)))

    def read_bytes(self, path: str) -> bytes:
        if self.is_local:
            with open(self._raw(path), "rb") as f:
                return f.read()
        try:
            return bytes(self.fs.cat_file(self._raw(path)))
        except FileNotFoundError:
            raise
        except OSError as e:
            if "not found" in str(e).lower() or "nosuchkey" in str(e).lower():
                raise FileNotFoundError(path) from e
            raise

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    # -- writing -----------------------------------------------------------------------
    def write_new(self, path: str, data: bytes | str) -> None:
        """Create ``path`` atomically; ``FileExistsError`` if it is already there.

        Local: temp file + ``os.link`` (atomic create-if-absent). Object stores: conditional
        PUT with ``If-None-Match: *``.
        """
        payload = data.encode("utf-8") if isinstance(data, str) else data
        if self.is_local:
            raw = self._raw(path)
            directory, name = os.path.split(raw)
            os.makedirs(directory, exist_ok=True)
            tmp = os.path.join(directory, f".{name}.{uuid.uuid4()}.tmp")
            with open(tmp, "wb") as f:
                f.write(payload)
            try:
                os.link(tmp, raw)
            finally:
                os.unlink(tmp)
            return
        try:
            self.fs.pipe_file(self._raw(path), payload, mode="create")
        except FileExistsError:
            raise
        except Exception as e:  # botocore PreconditionFailed surfaces as OSError/ClientError
            text = str(e)
            if "PreconditionFailed" in text or "412" in text or "At least one of the pre" in text:
                raise FileExistsError(path) from e
            raise

    def overwrite(self, path: str, data: bytes | str) -> None:
        """Replace ``path`` (hint files): temp + ``os.replace`` locally, a plain PUT elsewhere."""
        payload = data.encode("utf-8") if isinstance(data, str) else data
        if self.is_local:
            raw = self._raw(path)
            directory, name = os.path.split(raw)
            os.makedirs(directory, exist_ok=True)
            tmp = os.path.join(directory, f".{name}.{uuid.uuid4()}.tmp")
            with open(tmp, "wb") as f:
                f.write(payload)
            os.replace(tmp, raw)
            return
        self.fs.pipe_file(self._raw(path), payload)

    def copy_new(self, src: str, dst: str) -> None:
        """Copy bytes verbatim to a path that must not exist (metadata copies keep Java's
        bytes: no re-serialisation)."""
        self.write_new(dst, self.read_bytes(src))

    def rename(self, src: str, dst: str) -> None:
        """Rename a file or (local) directory; ``FileExistsError`` when ``dst`` exists."""
        if self.exists(dst):
            raise FileExistsError(dst)
        if self.is_local:
            os.rename(self._raw(src), self._raw(dst))
            return
        self.fs.mv(self._raw(src), self._raw(dst), recursive=True)

    def mkdirs(self, path: str) -> None:
        if self.is_local:
            os.makedirs(self._raw(path), exist_ok=True)

    # -- deleting ----------------------------------------------------------------------
    def delete_files(self, paths: Iterable[str]) -> list[DeleteResult]:
        """Delete regular files, never directories. Per-file outcome: deleted, already
        missing, or failed (with the error). Object stores use bulk DeleteObjects, after one
        listing per directory to tell missing files apart (S3 reports absent keys as deleted).
        """
        paths = list(paths)
        if self.is_local:
            return [self._delete_local(p) for p in paths]
        return self._delete_object_store(paths)

    def _delete_local(self, path: str) -> DeleteResult:
        raw = self._raw(path)
        try:
            if os.path.isdir(raw) and not os.path.islink(raw):
                return DeleteResult(path, DeleteOutcome.FAILED, "is a directory: never deleted")
            os.unlink(raw)
            return DeleteResult(path, DeleteOutcome.DELETED)
        except FileNotFoundError:
            return DeleteResult(path, DeleteOutcome.MISSING)
        except OSError as e:
            return DeleteResult(path, DeleteOutcome.FAILED, f"{type(e).__name__}: {e}")

    def _delete_object_store(self, paths: list[str]) -> list[DeleteResult]:
        results: list[DeleteResult] = []
        by_dir: dict[str, list[str]] = defaultdict(list)
        for p in paths:
            by_dir[parent(p)].append(p)
        for directory, members in by_dir.items():
            try:
                listing = {s.path: s for s in self.list_dir(directory)}
            except Exception as e:  # listing failed: delete blindly, report what S3 says
                listing = None
                _ = e
            existing: list[str] = []
            for p in members:
                if listing is not None and p not in listing:
                    results.append(DeleteResult(p, DeleteOutcome.MISSING))
                elif listing is not None and listing[p].is_dir:
                    results.append(DeleteResult(p, DeleteOutcome.FAILED, "is a directory: never deleted"))
                else:
                    existing.append(p)
            for start in range(0, len(existing), safety.DELETE_BATCH_MAX):
                results.extend(self._bulk_delete(existing[start:start + safety.DELETE_BATCH_MAX]))
        return results

    def _bulk_delete(self, batch: list[str]) -> list[DeleteResult]:
        if not batch:
            return []
        bucket = self._raw(batch[0]).split("/", 1)[0]
        keys = {self._raw(p).split("/", 1)[1]: p for p in batch}
        try:
            response = self.fs.call_s3(
                "delete_objects", Bucket=bucket,
                Delete={"Objects": [{"Key": k} for k in keys], "Quiet": False},
            )
        except Exception as e:
            return [DeleteResult(p, DeleteOutcome.FAILED, f"{type(e).__name__}: {e}") for p in batch]
        failed = {err["Key"]: f"{err.get('Code')}: {err.get('Message')}" for err in response.get("Errors", [])}
        return [
            DeleteResult(p, DeleteOutcome.FAILED, failed[k]) if k in failed else DeleteResult(p, DeleteOutcome.DELETED)
            for k, p in keys.items()
        ]

    def delete_empty_dir(self, path: str) -> bool:
        """Remove a directory only if it is empty (non-recursive). Object stores have no
        directories to remove: returns False."""
        if not self.is_local:
            return False
        try:
            os.rmdir(self._raw(path))
            return True
        except OSError:
            return False

    def delete_tree(self, path: str) -> None:
        """Recursive delete of a metadata directory (branch drop). Callers restrict this to
        ``branch/branch-<name>`` paths; data directories are never deleted recursively."""
        if self.is_local:
            import shutil

            shutil.rmtree(self._raw(path), ignore_errors=False)
            return
        files = [s.path for s in self.walk_files(path)]
        failed = [r for r in self.delete_files(files) if r.outcome == DeleteOutcome.FAILED]
        if failed:
            raise errors.StorageError(f"could not delete {failed[0].path}: {failed[0].error}",
                                      fix="check permissions and retry")
