"""One small filesystem abstraction over fsspec: local paths / ``file://`` and ``s3://`` (other
schemes by fsspec's registry). The only place in tablekeeper that imports storage SDKs.

Paths are plain strings: absolute local paths without a scheme, or ``scheme://bucket/key``.
Every backend's "not found" is mapped to ``FileNotFoundError``; mtimes are UTC epoch ms.
"""

from __future__ import annotations

import enum
import os
import stat as stat_module
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

import fsspec

from tablekeeper.core import errors, safety

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


@dataclass(frozen=True)
class FileStatus:
    path: str
    size: int
    mtime_ms: int
    is_dir: bool = False

    @property
    def name(self) -> str:
        return basename(self.path)


class ListedEntry(NamedTuple):
    """A directory entry as listed. Object stores return size and mtime with the listing; a
    local directory does not (``readdir`` gives names and types only), and a stat per entry
    costs more than the listing itself, so ``status`` is None there until :meth:`FileIO.status_of`
    asks for it — callers that filter by name first stat only what survives. (A tuple: listings
    hold hundreds of thousands of these.)"""

    path: str
    name: str
    is_dir: bool
    status: FileStatus | None = None


class DeleteOutcome(enum.StrEnum):
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
                value = value.replace(tzinfo=UTC)
            return int(value.timestamp() * 1000)
        if isinstance(value, (int, float)):
            return int(value * 1000) if value < 1e11 else int(value)
    return 0


def _is_marker(info: Mapping[str, Any]) -> bool:
    """An object-store "directory marker": an empty object whose key ends with ``/``.
    pyarrow (and so pypaimon) creates one for every ``mkdirs``; it is not a file."""
    return info.get("type") != "directory" and str(info.get("name", "")).endswith("/")


def _is_precondition_failure(error: BaseException) -> bool:
    text = str(error)
    return "PreconditionFailed" in text or "(412)" in text or "At least one of the pre" in text


def _write_temp_beside(raw: str, payload: bytes) -> str:
    """Write ``payload`` to a new hidden temp file in the directory of local path ``raw``
    (created if needed) and return the temp file's path, for an atomic link or replace."""
    directory, name = os.path.split(raw)
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4()}.tmp")
    with open(tmp, "wb") as f:
        f.write(payload)
    return tmp


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
        return [self._status(i) for i in infos
                if not _is_marker(i) and str(i["name"]).rstrip("/") != raw]

    def scan_dir(self, path: str) -> list[ListedEntry]:
        """Entries of one directory without a stat per local entry; [] when it does not exist."""
        if self.is_local:
            try:
                with os.scandir(self._raw(path)) as it:
                    return [ListedEntry(entry.path, entry.name, entry.is_dir(follow_symlinks=False)) for entry in it]
            except (FileNotFoundError, NotADirectoryError):
                return []
        return [ListedEntry(s.path, s.name, s.is_dir, s) for s in self.list_dir(path)]

    def list_names(self, path: str) -> list[str]:
        """Names of the entries of one local directory (files and sub-directories alike, no
        stat; [] when it does not exist): the cheapest listing there is. Object stores: use
        :meth:`scan_dir`, whose entries carry their status."""
        if not self.is_local:
            raise errors.InvalidInputError("list_names lists local directories only", fix="use scan_dir")
        try:
            return os.listdir(self._raw(path))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def status_of(self, entry: ListedEntry) -> FileStatus | None:
        """The entry's status (from the listing, else one stat); None when it vanished since."""
        if entry.status is not None:
            return entry.status
        try:
            if self.is_local:  # as list_dir: the entry itself, never a symlink's target
                st = os.lstat(self._raw(entry.path))
                return FileStatus(entry.path, st.st_size, st.st_mtime_ns // 1_000_000, stat_module.S_ISDIR(st.st_mode))
            return self.stat(entry.path)
        except FileNotFoundError:
            return None

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
            if info.get("type") != "directory" and not _is_marker(info):
                yield self._status(info)

    def stat(self, path: str) -> FileStatus:
        if self.is_local:
            raw = self._raw(path)
            st = os.stat(raw)
            return FileStatus(raw, st.st_size, st.st_mtime_ns // 1_000_000, stat_module.S_ISDIR(st.st_mode))
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
        """Create ``path`` atomically; ``FileExistsError`` if it is already there (the existing
        content is left alone).

        Local: temp file + ``os.link`` (atomic create-if-absent). Object stores: an existence
        check, then a conditional PUT with ``If-None-Match: *``. S3 (and moto >= 5) reject the
        PUT with 412 when the key exists, so two racing writers cannot both win. The
        pre-check keeps stores that silently ignore the header (some S3-compatible servers)
        from overwriting a file that existed before the call; only a race inside that window
        remains unprotected on such stores. A store that rejects the header outright fails
        the write (fail closed).
        """
        payload = data.encode("utf-8") if isinstance(data, str) else data
        if self.is_local:
            raw = self._raw(path)
            tmp = _write_temp_beside(raw, payload)
            try:
                os.link(tmp, raw)
            finally:
                os.unlink(tmp)
            return
        raw = self._raw(path)
        if self.fs.exists(raw):  # a file, or a directory (prefix) of that name
            raise FileExistsError(path)
        try:
            self.fs.pipe_file(raw, payload, mode="create")
        except FileExistsError:
            raise
        except Exception as e:  # botocore PreconditionFailed surfaces as OSError/ClientError
            if _is_precondition_failure(e):
                raise FileExistsError(path) from e
            raise
        finally:
            self._invalidate(raw)

    def overwrite(self, path: str, data: bytes | str) -> None:
        """Replace ``path`` (hint files): temp + ``os.replace`` locally, a plain PUT elsewhere."""
        payload = data.encode("utf-8") if isinstance(data, str) else data
        if self.is_local:
            raw = self._raw(path)
            os.replace(_write_temp_beside(raw, payload), raw)
            return
        self.fs.pipe_file(self._raw(path), payload)
        self._invalidate(self._raw(path))

    def copy_new(self, src: str, dst: str) -> None:
        """Copy bytes verbatim to a path that must not exist (metadata copies keep Java's
        bytes: no re-serialisation)."""
        self.write_new(dst, self.read_bytes(src))

    def rename(self, src: str, dst: str) -> None:
        """Rename a file or a directory; ``FileExistsError`` when ``dst`` exists.

        Local files: ``os.link`` + unlink, so an existing target is refused atomically (plain
        ``os.rename`` would replace it). Local directories: checked, then ``os.rename``.
        Object stores have no rename: a file is copied with create-if-absent (``write_new``)
        and the source deleted afterwards (not atomic: a crash in between leaves both);
        a directory prefix is copied key by key (``mv``) after an existence check.
        """
        if self.is_local:
            raw_src, raw_dst = self._raw(src), self._raw(dst)
            if not os.path.isdir(raw_src):
                try:
                    os.link(raw_src, raw_dst)
                except FileExistsError:
                    raise FileExistsError(dst) from None
                except FileNotFoundError:
                    raise FileNotFoundError(src) from None
                except OSError:  # no hard links on this filesystem
                    pass
                else:
                    os.unlink(raw_src)
                    return
            if os.path.lexists(raw_dst):
                raise FileExistsError(dst)
            os.rename(raw_src, raw_dst)
            return
        if self.exists(dst):
            raise FileExistsError(dst)
        status = self.stat(src)
        if status.is_dir:
            self.fs.mv(self._raw(src), self._raw(dst), recursive=True)
            self._invalidate(self._raw(src))
            self._invalidate(self._raw(dst))
            return
        self.write_new(dst, self.read_bytes(src))
        result = self._bulk_delete([src])[0]
        if result.outcome == DeleteOutcome.FAILED:
            raise errors.StorageError(f"renamed {src} to {dst} but could not delete the source: {result.error}",
                                      fix="delete the source file by hand")

    def mkdirs(self, path: str) -> None:
        if self.is_local:
            os.makedirs(self._raw(path), exist_ok=True)

    def _invalidate(self, raw: str) -> None:
        try:
            self.fs.invalidate_cache(raw)
        except Exception:  # pragma: no cover - caches are an optimisation only
            pass

    # -- deleting ----------------------------------------------------------------------
    def delete_files(self, paths: Iterable[str]) -> list[DeleteResult]:
        """Delete regular files, never directories. One result per input path, in input
        order: deleted, already missing, or failed (with the error).

        Object stores: one listing per parent directory tells missing files and directories
        apart (S3 reports absent keys as deleted), then bulk DeleteObjects in batches of at
        most ``safety.DELETE_BATCH_MAX`` keys. If a listing fails, that directory's files are
        deleted blindly and reported as S3 reports them.
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
        decided: dict[str, DeleteResult] = {}
        by_dir: dict[str, list[str]] = defaultdict(list)
        for p in dict.fromkeys(paths):  # unique, in input order
            raw = self._raw(p).strip("/")
            if "/" not in raw:
                decided[p] = DeleteResult(p, DeleteOutcome.FAILED, "is a bucket: never deleted")
                continue
            if p.endswith("/"):
                decided[p] = DeleteResult(p, DeleteOutcome.FAILED, "is a directory: never deleted")
                continue
            by_dir[parent(raw)].append(p)
        to_delete: list[str] = []
        for directory, members in by_dir.items():
            files: set[str] | None
            dirs: set[str] = set()
            try:
                files = set()
                for status in self.list_dir(self._uri(directory)):
                    (dirs if status.is_dir else files).add(status.name)
            except Exception:  # listing failed: delete blindly, report what the store says
                files = None
            for p in members:
                name = basename(p)
                if files is None or name in files:  # a file wins over a same-named prefix
                    to_delete.append(p)
                elif name in dirs:
                    decided[p] = DeleteResult(p, DeleteOutcome.FAILED, "is a directory: never deleted")
                else:
                    decided[p] = DeleteResult(p, DeleteOutcome.MISSING)
        for start in range(0, len(to_delete), safety.DELETE_BATCH_MAX):
            for result in self._bulk_delete(to_delete[start:start + safety.DELETE_BATCH_MAX]):
                decided[result.path] = result
        return [decided[p] for p in paths]

    def _bulk_delete(self, batch: list[str]) -> list[DeleteResult]:
        """Delete exactly these keys (files or directory markers), at most 1000, any buckets."""
        if not batch:
            return []
        if not hasattr(self.fs, "call_s3"):  # another object store: one delete per file
            return [self._delete_one(p) for p in batch]
        by_bucket: dict[str, dict[str, str]] = defaultdict(dict)
        for p in batch:
            bucket, _, key = self._raw(p).lstrip("/").partition("/")
            by_bucket[bucket][key] = p
        results: list[DeleteResult] = []
        for bucket, keys in by_bucket.items():
            try:
                response = self.fs.call_s3(
                    "delete_objects", Bucket=bucket,
                    Delete={"Objects": [{"Key": k} for k in keys], "Quiet": False},
                )
            except Exception as e:
                results.extend(DeleteResult(p, DeleteOutcome.FAILED, f"{type(e).__name__}: {e}")
                               for p in keys.values())
                continue
            finally:
                for key in keys:
                    self._invalidate(f"{bucket}/{key}")
            failed = {err["Key"]: f"{err.get('Code')}: {err.get('Message')}" for err in response.get("Errors", [])}
            results.extend(
                DeleteResult(p, DeleteOutcome.FAILED, failed[k]) if k in failed
                else DeleteResult(p, DeleteOutcome.DELETED)
                for k, p in keys.items()
            )
        return results

    def _delete_one(self, path: str) -> DeleteResult:
        try:
            self.fs.rm_file(self._raw(path))
            return DeleteResult(path, DeleteOutcome.DELETED)
        except FileNotFoundError:
            return DeleteResult(path, DeleteOutcome.MISSING)
        except Exception as e:
            return DeleteResult(path, DeleteOutcome.FAILED, f"{type(e).__name__}: {e}")

    def _keys_under(self, path: str) -> list[str]:
        """Every object below ``path`` on an object store, directory markers included."""
        raw = self._raw(path).rstrip("/")
        try:
            found = self.fs.find(raw, detail=True)
        except FileNotFoundError:
            return []
        out = []
        for info in found.values():
            if info.get("type") == "directory":
                continue
            name = str(info["name"])
            if name.startswith(raw + "/"):
                out.append(self._uri(name))
        return out

    def delete_empty_dir(self, path: str) -> bool:
        """Remove a directory only if it is empty (non-recursive); True if removed.

        Object stores have no real directories: a prefix holding nothing but its own marker
        object (``dir/``, written by pyarrow/pypaimon ``mkdirs``) counts as an empty directory
        and the marker is deleted; a prefix with any other object is left alone."""
        if self.is_local:
            try:
                os.rmdir(self._raw(path))
                return True
            except OSError:
                return False
        marker = self._raw(path).rstrip("/") + "/"
        keys = self._keys_under(path)
        if [self._raw(k) for k in keys] != [marker]:
            return False
        return self._bulk_delete(keys)[0].outcome == DeleteOutcome.DELETED

    def delete_tree(self, path: str) -> None:
        """Recursive delete of a metadata directory (branch drop). Callers restrict this to
        ``branch/branch-<name>`` paths; data directories are never deleted recursively.
        On object stores every key below the prefix goes, directory markers included."""
        if self.is_local:
            import shutil

            shutil.rmtree(self._raw(path), ignore_errors=False)
            return
        keys = self._keys_under(path)
        failed: list[DeleteResult] = []
        for start in range(0, len(keys), safety.DELETE_BATCH_MAX):
            batch = keys[start:start + safety.DELETE_BATCH_MAX]
            failed.extend(r for r in self._bulk_delete(batch) if r.outcome == DeleteOutcome.FAILED)
        if failed:
            raise errors.StorageError(f"could not delete {failed[0].path}: {failed[0].error}",
                                      fix="check permissions and retry")
