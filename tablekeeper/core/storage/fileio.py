"""The storage contract tablekeeper relies on, met by every store (docs/storage-internals.md):

- create-if-absent writes (``write_new``) that never overwrite a concurrent writer's file;
- listings that carry sizes and modification times;
- deletes of regular files with one outcome per file: deleted, missing (told apart from deleted)
  or failed; directories are never deleted as files;
- every request retried while it fails transiently (:mod:`.retry`); a bulk delete retries only
  the keys that failed, and reports the rest exactly when the budget runs out, so a rerun finishes.

Capabilities differ per store and are decided here: local files get create-if-absent through
``os.link``; S3 and OSS a conditional PUT (``If-None-Match: *``) and DeleteObjects (1000 keys a
request); GCS an ``ifGenerationMatch=0`` upload; Azure an upload with ``If-None-Match: *``; HDFS
a WebHDFS ``CREATE`` with ``overwrite=false`` (the NameNode refuses an existing file) and a
native ``RENAME``. GCS, Azure and HDFS delete one file per request, in parallel.
"""

from __future__ import annotations

import enum
import functools
import os
import re
import stat as stat_module
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Concatenate, NamedTuple, ParamSpec, TypeVar, cast

from tablekeeper.core import errors, safety
from tablekeeper.core.storage import native_unlink
from tablekeeper.core.storage.paths import basename, parent
from tablekeeper.core.storage.requests import Pacer, RequestKind, RequestLayer, pacing_from_options
from tablekeeper.core.storage.stores import SCHEMES, Connection, Store, connect, split_scheme

if TYPE_CHECKING:  # fsspec (with asyncio and importlib.metadata) is imported for remote stores only
    import fsspec

    from tablekeeper.core.storage import retry as retries
    from tablekeeper.core.storage import segmented

__all__ = ["FileStatus", "ListedEntry", "DeleteOutcome", "DeleteResult", "FileIO", "PARALLEL_DELETES"]

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")


def _changes_view(method: Callable[Concatenate[FileIO, P], R]) -> Callable[Concatenate[FileIO, P], R]:
    """A write, rename or delete: the answers of an active :meth:`FileIO.one_view` may be stale
    once it starts (and again once it is done: an existence check inside it was answered before)."""
    @functools.wraps(method)
    def changing(self: FileIO, /, *args: P.args, **kwargs: P.kwargs) -> R:
        # a write or delete of one path (the lease's heartbeat, a hint) forgets only the answers
        # about that path and its ancestors' listings; anything else forgets the whole view
        paths = None if method.__name__ in ("rename", "delete_tree") else \
            [a for a in args[:2] if isinstance(a, str)] or None  # (a directory's whole tree: everything)
        self._view_changed(paths)
        try:
            return method(self, *args, **kwargs)
        finally:
            self._view_changed(paths)

    return changing

def _local_raws(paths: list[str], raw: Callable[[str], str]) -> list[str]:
    """``[raw(p) for p in paths]`` for local paths, checked in one pass over the joined batch
    instead of a call per path (~0.5 us each over an expiration's 100k files): a local path is
    its own raw path unless it starts with ``file:`` or holds ``://`` (``stores.split_scheme``);
    NUL, which no path can hold, keeps the joined paths apart."""
    joined = "\0" + "\0".join(paths)
    if "://" in joined or "\0file:" in joined:
        return [raw(p) for p in paths]
    return paths


#: Concurrent single-file deletes on stores without a bulk delete (GCS, Azure, HDFS).
PARALLEL_DELETES = 16
#: Sub-requests per GCS batch request (Google's limit is 100; gcsfs uses 20 for its own ``rm``).
GCS_BATCH_MAX = 100


@dataclass(frozen=True)
class FileStatus:
    """A file or directory as the store reports it: size and modification time (UTC epoch ms)."""

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
    """The outcome of deleting one path: deleted, missing (already gone) or failed, with the error."""

    path: str
    outcome: DeleteOutcome
    error: str | None = None


def _mtime_ms(info: Mapping[str, Any]) -> int:
    for key in ("LastModified", "last_modified", "modificationTime", "mtime", "updated", "modified", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
        if isinstance(value, datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=UTC)
            return int(value.timestamp() * 1000)
        if isinstance(value, (int, float)):
            return int(value * 1000) if value < 1e11 else int(value)
    return 0


def redact_text(text: str, options: Mapping[str, object]) -> str:
    """:func:`.secrets.redact_text`, imported when an error is reported (start-up)."""
    from tablekeeper.core.storage import secrets

    return secrets.redact_text(text, options)


def _is_marker(info: Mapping[str, Any]) -> bool:
    """An object-store "directory marker": an empty object whose key ends with ``/``.
    pyarrow (and so pypaimon) creates one for every ``mkdirs``; it is not a file."""
    return info.get("type") != "directory" and str(info.get("name", "")).endswith("/")


def _is_precondition_failure(error: BaseException) -> bool:
    text = str(error)
    return ("PreconditionFailed" in text or "(412)" in text or "At least one of the pre" in text
            or "FileAlreadyExists" in text  # OSS x-oss-forbid-overwrite: 409
            or "conditionNotMet" in text or "412" in text.split(":", 1)[0])


_CREDENTIAL_FAILURES = ("NoCredentialsError", "PartialCredentialsError", "ClientAuthenticationError",
                        "DefaultCredentialsError", "CredentialUnavailableError", "RefreshError")
_CREDENTIAL_WORDS = ("unable to locate credentials", "invalidaccesskeyid", "signaturedoesnotmatch",
                     "authenticationfailed", "no credentials", "could not automatically determine credentials")


def _is_credentials_failure(error: BaseException) -> bool:
    current: BaseException | None = error
    for _ in range(6):
        if current is None:
            return False
        text = f"{type(current).__name__}: {current}".lower()
        if type(current).__name__ in _CREDENTIAL_FAILURES or any(w in text for w in _CREDENTIAL_WORDS):
            return True
        current = current.__cause__ or current.__context__
    return False


def _write_temp_beside(raw: str, payload: bytes) -> str:
    """Write ``payload`` to a new hidden temp file in the directory of local path ``raw``
    (created if needed) and return the temp file's path, for an atomic link or replace."""
    directory, name = os.path.split(raw)
    os.makedirs(directory, exist_ok=True)
    import uuid  # lazily: with platform, ~7 ms of every start-up

    tmp = os.path.join(directory, f".{name}.{uuid.uuid4()}.tmp")
    with open(tmp, "wb") as f:
        f.write(payload)
    return tmp


#: Paimon metadata files named by a random UUID: written once, never rewritten under that name
#: (manifests, manifest lists, index manifests), so bytes read once are the bytes forever.
_IMMUTABLE_NAME = re.compile(r"^(?:(?:manifest|manifest-list|index-manifest)-"
                             r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+|schema-\d+)$")


def _default_connection(scheme: str) -> Connection:
    """Path mapping for a FileIO built from a bare fsspec filesystem (tests, wrappers)."""
    store = SCHEMES.get(scheme, Store.S3)
    if store is Store.LOCAL:
        return Connection(Store.LOCAL, "file", "file", {}, lambda p: split_scheme(p)[1], lambda raw: raw)
    return Connection(store, scheme, scheme, {}, lambda p: split_scheme(p)[1],
                      lambda raw: f"{scheme}://{raw.lstrip('/')}")


class FileIO:
    """Filesystem operations tablekeeper needs, over one fsspec filesystem (module docstring).

    Local files are served by ``os`` directly: their fsspec filesystem is made only when some
    caller asks for :attr:`fs` (pyarrow's handler in the pypaimon bridge), so a command on a
    local table never imports fsspec, asyncio or their dependencies (~0.1 s a process)."""

    def __init__(self, scheme: str, fs: fsspec.AbstractFileSystem | None, connection: Connection | None = None,
                 retry: retries.RetryPolicy | None = None, requests: RequestLayer | None = None,
                 http_counted: bool = False) -> None:
        self.scheme = scheme
        self._fs = fs
        self.connection = connection or _default_connection(scheme)
        self.store = self.connection.store
        #: None: ``retry.DEFAULT_POLICY``, imported on first use (local files never retry: start-up)
        self._retry = retry
        #: every request this FileIO makes, by kind (:mod:`.requests`); counted at the HTTP level
        #: when ``http_counted`` (s3fs with the ``before-send`` hook), else per call here
        self.requests = requests or RequestLayer()
        self._http_counted = http_counted
        #: (raw root, directory -> entries) while :meth:`flat_listing` serves listings below root
        self._flat: tuple[str, dict[str, dict[str, FileStatus]]] | None = None
        #: bytes of UUID-named metadata files while :meth:`immutable_reads` is active
        self._kept: dict[str, bytes] | None = None
        self._kept_budget = 0
        #: bytes fetched ahead by :meth:`read_ahead`, handed out (once) by :meth:`read_bytes`
        self._ahead: dict[str, bytes] = {}
        self._kept_lock = threading.Lock()
        #: the open :meth:`one_view` of each thread: ("get" | "list" | "exists" | "is_dir", path) -> answer
        self._views = threading.local()

    @property
    def retry(self) -> retries.RetryPolicy:
        """The retry policy of this FileIO's requests (:mod:`.retry`)."""
        if self._retry is None:
            from tablekeeper.core.storage import retry as retries

            self._retry = retries.DEFAULT_POLICY
        return self._retry

    @retry.setter
    def retry(self, policy: retries.RetryPolicy) -> None:
        self._retry = policy

    @property
    def _view(self) -> dict[tuple[str, str], Any] | None:
        """This thread's open view. Per thread, because one FileIO serves many threads in the
        operator (an opener per warehouse): another thread's verify re-check must read the
        table as it is now, never answers a decision on another thread cached."""
        view: dict[tuple[str, str], Any] | None = getattr(self._views, "view", None)
        return view

    @_view.setter
    def _view(self, view: dict[tuple[str, str], Any] | None) -> None:
        self._views.view = view

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The fsspec filesystem; for local files made on first use (class docstring)."""
        if self._fs is None:
            if not self.is_local:
                raise errors.InvalidInputError(f"no filesystem configured for {self.scheme}://",
                                               fix="build the FileIO with FileIO.for_uri")
            import fsspec

            self._fs = fsspec.filesystem("file")
        return self._fs

    # -- construction ------------------------------------------------------------------
    @classmethod
    def for_uri(cls, uri: str, options: Mapping[str, Any] | None = None,
                retry: retries.RetryPolicy | None = None) -> FileIO:
        """A FileIO for the store behind ``uri``. ``options`` are Paimon-style option names
        (``s3.endpoint``, ``fs.oss.endpoint``, ``fs.azure.account.key.<account>...`` ...) or raw
        fsspec keyword arguments (keys without dots). Bad input (an unknown scheme, missing
        credentials or endpoint) raises ``InvalidInputError`` naming the option to set."""
        connection = connect(uri, options)
        rate = pacing_from_options(options)
        layer = RequestLayer(Pacer(rate) if rate else None)
        if connection.store is Store.LOCAL:
            return cls("file", None, connection, retry, layer)
        kwargs = dict(connection.kwargs)
        if connection.store is Store.OSS:  # create-if-absent as OSS documents it (oss_headers)
            from tablekeeper.core.storage.oss_headers import oss_session

            kwargs.setdefault("session", oss_session())
        if connection.protocol == "s3":
            # tablekeeper's retry layer owns retries (one budget, per-key bulk-delete retries)
            config = dict(kwargs.get("config_kwargs") or {})
            config.setdefault("retries", {"max_attempts": 1, "mode": "standard"})
            kwargs["config_kwargs"] = config
            if "session" not in kwargs:
                from aiobotocore.session import AioSession

                kwargs["session"] = AioSession()
            # count (and pace) every HTTP request, pages and retries included (OSS: on its session)
            kwargs["session"].register("before-send.s3", layer.botocore_hook())
        import fsspec

        try:
            fs = fsspec.filesystem(connection.protocol, **kwargs)
        except ImportError as e:
            raise errors.InvalidInputError(f"{connection.scheme}:// needs an optional package: {e}",
                                           fix="pip install 'tablekeeper[stores]'") from e
        except (ValueError, TypeError) as e:
            raise errors.InvalidInputError(f"cannot configure {connection.scheme}:// storage: "
                                           f"{redact_text(str(e), options or {})}",
                                           fix="check the storage options (docs/storage.md)") from e
        if connection.protocol == "s3" and hasattr(fs, "retries"):
            fs.retries = 1
        return cls(connection.scheme, fs, connection, retry, layer, http_counted="session" in kwargs)

    @property
    def is_local(self) -> bool:
        return self.store is Store.LOCAL

    def normalize(self, uri: str) -> str:
        """Canonical form of a path for this store: no ``file:`` prefix locally."""
        scheme, rest = split_scheme(uri)
        if scheme == "file":
            return os.path.abspath(rest) if rest else rest
        return f"{scheme}://{rest}"

    def _raw(self, path: str) -> str:
        return self.connection.to_raw(path)

    def _uri(self, raw: str) -> str:
        return self.connection.to_uri(raw)

    def _note(self, kind: RequestKind) -> None:
        """Count (and pace) one request of ``kind`` made by a call here; a no-op where the
        requests are counted at the HTTP level."""
        if not self._http_counted:
            self.requests.note(kind)

    def _call(self, fn: Callable[[], T], kind: RequestKind = RequestKind.OTHER) -> T:
        """One store request, retried while it fails transiently (:mod:`.retry`); every attempt
        is counted as ``kind`` (unless counted at the HTTP level). Missing or rejected credentials
        are bad input naming the options to set."""
        from tablekeeper.core.storage import retry as retries

        def attempt() -> T:
            self._note(kind)
            return fn()

        try:
            return retries.call(attempt, policy=self.retry, endpoint=self.connection.endpoint,
                                endpoint_option=self.connection.endpoint_option)
        except errors.TablekeeperError:
            raise
        except Exception as e:
            if _is_credentials_failure(e):
                raise errors.InvalidInputError(
                    f"{self.connection.store.value} storage found no usable credentials: "
                    f"{redact_text(type(e).__name__ + ': ' + str(e), self.connection.kwargs)[:200]}",
                    fix=f"set {self.connection.credentials_option}") from e
            raise

    # -- reading -----------------------------------------------------------------------
    def _status(self, info: Mapping[str, Any]) -> FileStatus:
        return FileStatus(
            path=self._uri(str(info["name"]).rstrip("/")),
            size=int(info.get("size") or 0),
            mtime_ms=_mtime_ms(info),
            is_dir=info.get("type") == "directory",
        )

    @property
    def lists_flat(self) -> bool:
        """Whether :meth:`flat_listing` lists a prefix at once here (object stores; not local
        disk or HDFS, whose directories are real and listed one by one)."""
        return not self.is_local and self.store is not Store.HDFS

    @contextmanager
    def flat_listing(self, root: str, *, segments_max: int | None = None,
                     page_keys: int | None = None) -> Iterator[None]:
        """Within the block, listings of directories below ``root`` are answered from one flat
        listing of the prefix made on entry (S3, OSS, GCS, Azure: ``ceil(objects / 1000)`` LIST
        pages instead of one listing per directory, the orphan scan's floor). Other stores list
        as usual. The entries are as old as the block: callers use it for one scan (orphan
        candidates are listed before the roots are read, so a stale entry is only too young or
        gone, and both are checked again before deleting). S3/OSS list a large prefix in up to
        ``segments_max`` segments at once (:mod:`.segmented`; default ``SEGMENTS_MAX``); ``page_keys``:
        keys per page (default ``PAGE_KEYS``)."""
        if not self.lists_flat or self._flat is not None:
            yield
            return
        raw_root = self._raw(root).rstrip("/")
        try:
            if self.bulk_deletes:
                found = self._segmented_find(raw_root, segments_max, page_keys)
            else:
                found = self._call(lambda: self.fs.find(raw_root, detail=True, withdirs=False), RequestKind.LIST)
        except FileNotFoundError:
            found = {}
        children: dict[str, dict[str, FileStatus]] = defaultdict(dict)
        for info in found.values():
            if info.get("type") == "directory":
                continue
            name = str(info["name"]).rstrip("/").lstrip("/")
            if not name.startswith(raw_root.lstrip("/") + "/"):
                continue
            if _is_marker(info):
                children.setdefault(name, {})
            else:
                children[parent(name)][basename(name)] = self._status(info)
            child = parent(name) if not _is_marker(info) else name
            while child != raw_root.lstrip("/") and len(child) > len(raw_root.lstrip("/")):
                up = parent(child)
                entry = children[up]
                if basename(child) in entry:
                    break
                entry[basename(child)] = FileStatus(self._uri(child), 0, 0, True)
                child = up
        self._flat = (raw_root.lstrip("/"), dict(children))
        try:
            yield
        finally:
            self._flat = None

    def _segmented_find(self, raw_root: str, segments_max: int | None, page_keys: int | None
                        ) -> dict[str, dict[str, Any]]:
        """Every object below ``raw_root`` (S3/OSS), as ``fs.find(detail=True)`` answers, listed
        by :func:`.segmented.list_prefix`: each page one request, retried and counted."""
        from tablekeeper.core.storage import segmented  # object stores only (start-up)

        bucket, _, key = raw_root.lstrip("/").partition("/")
        fs: Any = self.fs

        def send(request: segmented.PageRequest) -> segmented.ListPage:
            kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": request.prefix, "MaxKeys": request.max_keys}
            if request.token:
                kwargs["ContinuationToken"] = request.token
            elif request.start_after:
                kwargs["StartAfter"] = request.start_after
            if request.delimiter:
                kwargs["Delimiter"] = request.delimiter
            page: segmented.ListPage = self._call(lambda: fs.call_s3("list_objects_v2", **kwargs), RequestKind.LIST)
            return page

        found: dict[str, dict[str, Any]] = {}
        for item in segmented.list_prefix(
                send, f"{key}/" if key else "",
                page_keys=segmented.PAGE_KEYS if page_keys is None else page_keys,
                segments_max=segmented.SEGMENTS_MAX if segments_max is None else segments_max):
            name = f"{bucket}/{item['Key']}"
            found[name] = {"name": name, "size": item.get("Size", 0), "LastModified": item.get("LastModified"),
                           "type": "file"}
        return found

    def _listed(self, raw: str) -> list[FileStatus] | None:
        """The entries of ``raw`` from the current flat listing, None outside of one."""
        flat = self._flat
        if flat is None:
            return None
        key = raw.strip("/")
        if key != flat[0] and not key.startswith(flat[0] + "/"):
            return None
        return list(flat[1].get(key, {}).values())

    def list_dir(self, path: str) -> list[FileStatus]:
        """Entries of one directory (files and sub-directories); [] when it does not exist."""
        if self._view is not None:
            return list(self._viewed("list", path.rstrip("/"), lambda: self._list_dir(path)))
        return self._list_dir(path)

    def _list_dir(self, path: str) -> list[FileStatus]:
        if self.is_local:
            self._note(RequestKind.LIST)
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
        raw = self._raw(path).rstrip("/")
        listed = self._listed(raw)
        if listed is not None:
            return listed
        fs: Any = self.fs
        try:
            if self.bulk_deletes:
                # S3/OSS: s3fs's ls lists the parent as well when a directory is empty or absent
                # (to find a file of that name): a second LIST per absent branch/, changelog/,
                # consumer/ directory. A directory is listed by its own prefix only.
                from fsspec.asyn import sync

                infos = self._call(lambda: sync(fs.loop, fs._lsdir, raw), RequestKind.LIST)
            else:
                infos = self._call(lambda: fs.ls(raw, detail=True), RequestKind.LIST)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [self._status(i) for i in infos
                if not _is_marker(i) and str(i["name"]).rstrip("/") not in (raw, raw.lstrip("/"))]

    def scan_dir(self, path: str) -> list[ListedEntry]:
        """Entries of one directory without a stat per local entry; [] when it does not exist."""
        if self.is_local:
            self._note(RequestKind.LIST)
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
        self._note(RequestKind.LIST)
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
                self._note(RequestKind.HEAD)
                st = os.lstat(self._raw(entry.path))
                return FileStatus(entry.path, st.st_size, st.st_mtime_ns // 1_000_000, stat_module.S_ISDIR(st.st_mode))
            return self.stat(entry.path)
        except FileNotFoundError:
            return None

    def statuses_of(self, entries: Iterable[ListedEntry]) -> list[FileStatus | None]:
        """:meth:`status_of` of each entry, in order. Local files without a pacer: one ``lstat``
        each and the requests counted at once (orphan cleanup stats every unreferenced file,
        thousands at a time; the per-call bookkeeping cost as much as the ``lstat``)."""
        entries = list(entries)
        if not self.is_local or self.requests.pacer is not None:
            return [self.status_of(e) for e in entries]
        out: list[FileStatus | None] = []
        lstat, to_raw, is_dir = os.lstat, self._raw, stat_module.S_ISDIR
        asked = 0
        try:
            for entry in entries:
                if entry.status is not None:
                    out.append(entry.status)
                    continue
                asked += 1
                try:  # as list_dir: the entry itself, never a symlink's target
                    st = lstat(to_raw(entry.path))
                except FileNotFoundError:
                    out.append(None)
                    continue
                out.append(FileStatus(entry.path, st.st_size, st.st_mtime_ns // 1_000_000, is_dir(st.st_mode)))
        finally:
            self.requests.counts.add(RequestKind.HEAD, asked)
        return out

    def walk_files(self, path: str) -> Iterator[FileStatus]:
        """Every regular file below ``path``, recursively."""
        if self.is_local:
            root = self._raw(path)
            for dirpath, _dirs, files in os.walk(root):
                self._note(RequestKind.LIST)
                for name in files:
                    full = os.path.join(dirpath, name)
                    try:
                        st = os.lstat(full)
                    except FileNotFoundError:
                        continue
                    yield FileStatus(full, st.st_size, st.st_mtime_ns // 1_000_000, False)
            return
        raw = self._raw(path).rstrip("/")
        try:
            found = self._call(lambda: self.fs.find(raw, detail=True), RequestKind.LIST)
        except FileNotFoundError:
            return
        for info in found.values():
            if info.get("type") != "directory" and not _is_marker(info):
                yield self._status(info)

    def stat(self, path: str) -> FileStatus:
        if self.is_local:
            raw = self._raw(path)
            self._note(RequestKind.HEAD)
            st = os.stat(raw)
            return FileStatus(raw, st.st_size, st.st_mtime_ns // 1_000_000, stat_module.S_ISDIR(st.st_mode))
        raw = self._raw(path)
        try:
            info = self._call(lambda: self.fs.info(raw), RequestKind.HEAD)
        except FileNotFoundError:
            raise
        except OSError as e:  # some backends raise a plain IOError for 404
            if "not found" in str(e).lower() or "nosuchkey" in str(e).lower():
                raise FileNotFoundError(path) from e
            raise
        status = self._status(info)
        return FileStatus(self._uri(raw.rstrip("/")), status.size, status.mtime_ms, status.is_dir)

    def exists(self, path: str) -> bool:
        if self._view is not None:
            listed = self._in_listed_parent(path)
            if listed is not None:
                return listed
            with self._kept_lock:
                read = self._view.get(("get", path)) if self._view is not None else None
            if read is not None:
                return not isinstance(read, FileNotFoundError)
            return self._viewed("exists", path, lambda: self._exists(path))
        return self._exists(path)

    def file_exists(self, path: str, *, will_read: bool = False) -> bool:
        """Whether the regular file ``path`` exists (a directory of that name does not count).
        S3/OSS: one HEAD (:meth:`exists` adds a LIST of ``path/`` for every missing key, to find
        a directory prefix); other stores: :meth:`exists`.

        ``will_read``: the caller reads the file next when it exists (pypaimon asks for LATEST
        and the latest snapshot before reading them). Inside a :meth:`one_view` on S3/OSS the
        question is then answered by that read (a GET kept in the view): a request fewer when
        the file is there, the same one request (a 404) when it is not. Small metadata files
        only (snapshots, hints, schemas, tags)."""
        if not self.bulk_deletes:
            return self.exists(path)
        if self._view is not None:
            listed = self._in_listed_parent(path)
            if listed is not None:
                return listed
            with self._kept_lock:
                read = self._view.get(("get", path)) if self._view is not None else None
            if read is not None:
                return not isinstance(read, FileNotFoundError)
            if will_read:
                try:
                    self.read_bytes(path)
                except FileNotFoundError:
                    return False
                return True
            return self._viewed("file_exists", path, lambda: self._head(path))
        return self._head(path)

    def dir_exists(self, path: str) -> bool:
        """Whether anything lies below the directory ``path``. S3/OSS: one LIST of at most one
        key of ``path/`` (:meth:`exists` sends a HEAD of ``path`` first, for a file of that
        name), none when the current view listed the directory; other stores: :meth:`exists`."""
        if not self.bulk_deletes:
            return self.exists(path)
        key = path.rstrip("/")
        if self._view is not None:
            with self._kept_lock:
                listed = self._view.get(("list", key)) if self._view is not None else None
            if listed is not None:
                return bool(listed)
            return self._viewed("dir_exists", key, lambda: self._any_below(key))
        return self._any_below(key)

    def _any_below(self, path: str) -> bool:
        bucket, _, prefix = self._raw(path).lstrip("/").partition("/")
        fs: Any = self.fs
        page = self._call(lambda: fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=prefix.rstrip("/") + "/",
                                             MaxKeys=1), RequestKind.LIST)
        return bool(page.get("Contents") or page.get("CommonPrefixes"))

    def _head(self, path: str) -> bool:
        bucket, _, key = self._raw(path).lstrip("/").partition("/")
        fs: Any = self.fs
        try:
            self._call(lambda: fs.call_s3("head_object", Bucket=bucket, Key=key), RequestKind.HEAD)
        except FileNotFoundError:
            return False
        return True

    def _exists(self, path: str) -> bool:
        if self.is_local:
            self._note(RequestKind.HEAD)
            return os.path.exists(self._raw(path))
        raw = self._raw(path)
        return bool(self._call(lambda: self.fs.exists(raw), RequestKind.HEAD))

    def is_dir(self, path: str) -> bool:
        if self._view is not None:
            return self._viewed("is_dir", path, lambda: self._is_dir(path))
        return self._is_dir(path)

    def _is_dir(self, path: str) -> bool:
        if self.is_local:
            self._note(RequestKind.HEAD)
            return os.path.isdir(self._raw(path))
        raw = self._raw(path)
        return bool(self._call(lambda: self.fs.isdir(raw), RequestKind.HEAD))

    @contextmanager
    def immutable_reads(self, max_bytes: int = 512 << 20) -> Iterator[None]:
        """Within the block, a UUID-named manifest, manifest list or index manifest is fetched
        once and its bytes reused (up to ``max_bytes`` in all): an expiration plans twice (plan,
        then verify after unpublishing, core/expire_commit.py) and would otherwise GET every
        manifest twice. Only those names: they are never rewritten, so the bytes cannot be stale
        (a file deleted meanwhile still has the content every root that names it relies on).
        Schema files too: Paimon commits ``schema-N`` create-if-absent and never rewrites it.
        Snapshots, tags and hints are read afresh every time (outside :meth:`one_view`)."""
        if self._kept is not None:
            yield
            return
        self._kept, self._kept_budget = {}, max_bytes
        try:
            yield
        finally:
            self._kept = None

    @contextmanager
    def one_view(self) -> Iterator[None]:
        """Within the block, each file is read, each directory listed and each existence asked
        at most once: a repeat gets the first answer (a missing file stays missing), and an
        existence a listing of the parent already answered costs no request. For one *decision*
        (an expiration's range and roots, a tag deletion's plan): a decision looks at the table
        as at one moment anyway, so reading the same snapshot, tag, schema or hint again inside
        it buys no safety, only requests (the expiration used to GET each expiring snapshot and
        every tag four times). The phases that must see the table as it is *now* (the verify
        plans of core/expire_commit.py and core/tag_deletion.py) open a view of their own. Any
        write, rename or delete through this FileIO empties the view (answers start over)."""
        if self._view is not None:
            yield
            return
        self._view = {}
        try:
            yield
        finally:
            self._view = None

    def _viewed(self, kind: str, path: str, fetch: Callable[[], T]) -> T:
        """``fetch()`` once per (kind, path) while :meth:`one_view` is active (a
        FileNotFoundError is remembered too)."""
        view = self._view
        if view is None:
            return fetch()
        key = (kind, path)
        with self._kept_lock:
            known = key in view
            answer = view.get(key)
        if known:
            if isinstance(answer, FileNotFoundError):
                raise FileNotFoundError(*answer.args)
            return cast(T, answer)
        try:
            answer = fetch()
        except FileNotFoundError as e:
            with self._kept_lock:
                if self._view is view:
                    view[key] = e
            raise
        with self._kept_lock:
            if self._view is view:
                view[key] = answer
        return answer

    def _in_listed_parent(self, path: str) -> bool | None:
        """Whether ``path`` is an entry of its parent's listing in the current view (None: the
        parent was not listed in it)."""
        view = self._view
        if view is None:
            return None
        with self._kept_lock:
            listed = view.get(("list", parent(path)))
        if listed is None:
            return None
        name = basename(path.rstrip("/"))
        return any(basename(s.path.rstrip("/")) == name for s in listed)

    def _view_changed(self, paths: list[str] | None = None) -> None:
        """A write, rename or delete of ``paths`` (None: of anything): the current view's answers
        about them, and the listings of their ancestors, may be stale."""
        if self._view is None:
            return
        with self._kept_lock:
            view = self._view
            if view is None:
                return
            if paths is None:
                view.clear()
                return
            for path in paths:
                path = path.rstrip("/")
                for kind in ("get", "exists", "file_exists", "dir_exists", "is_dir", "list"):
                    view.pop((kind, path), None)
                up = path
                while "/" in up.rstrip("/"):
                    up = parent(up)
                    view.pop(("list", up), None)
                    view.pop(("is_dir", up), None)
                    view.pop(("exists", up), None)
                    view.pop(("dir_exists", up), None)
                    if not up or up.endswith((":/", ":")):
                        break

    def _read_quietly(self, path: str) -> bytes | None:
        """A read ahead of the caller's: None when it fails (the caller's own read raises it)."""
        try:
            return self._read_bytes(path)
        except Exception:  # noqa: BLE001 - raised again by the caller's own read
            return None

    def prefetch(self, paths: Iterable[str], *, threads: int = 16) -> None:
        """Fetch the immutable-named files among ``paths`` ``threads`` at a time into the
        :meth:`immutable_reads` cache, so reads that follow one after the other (orphan
        cleanup's walk of every root's manifest lists) find them there: the same GETs, in
        parallel. A no-op on local disk or outside :meth:`immutable_reads`; a failed fetch is
        left to the caller's own read, which raises it."""
        kept = self._kept
        if self.is_local or kept is None:
            return
        with self._kept_lock:
            todo = [p for p in dict.fromkeys(paths) if _IMMUTABLE_NAME.match(basename(p)) and p not in kept]
        if len(todo) < 2:
            return

        def fetch(path: str) -> None:
            data = self._read_quietly(path)
            if data is None:
                return
            with self._kept_lock:
                if self._kept is kept and self._kept_budget >= len(data):
                    kept[path] = data
                    self._kept_budget -= len(data)

        from concurrent.futures import ThreadPoolExecutor  # lazily: ~12 ms of start-up

        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(fetch, todo))

    def read_ahead(self, paths: list[str], *, window: int = 64, threads: int = 16) -> Iterator[str]:
        """Yield ``paths`` in order; on object stores the next ``window`` files are fetched
        concurrently first, and :meth:`read_bytes` of a yielded path returns those bytes (once):
        the same GETs, ``threads`` at a time instead of one after the other (at 20 ms a request,
        a sequential manifest scan is most of an orphan cleanup's time). A failed fetch is left
        to the caller's own read, which raises it."""
        if self.is_local or len(paths) < 2:
            yield from paths
            return

        def fetch(path: str) -> None:
            data = self._read_quietly(path)
            if data is not None:
                with self._kept_lock:
                    self._ahead[path] = data

        from concurrent.futures import ThreadPoolExecutor  # lazily: ~12 ms of start-up

        with ThreadPoolExecutor(max_workers=threads) as pool:
            try:
                for start in range(0, len(paths), window):
                    chunk = paths[start:start + window]
                    list(pool.map(fetch, chunk))
                    yield from chunk
            finally:
                with self._kept_lock:
                    for path in paths:
                        self._ahead.pop(path, None)

    def read_bytes(self, path: str) -> bytes:
        if self._ahead:
            with self._kept_lock:
                ahead = self._ahead.pop(path, None)
            if ahead is not None:
                return ahead
        kept = self._kept
        if kept is not None and _IMMUTABLE_NAME.match(basename(path)):
            with self._kept_lock:
                data = kept.get(path)
            if data is None:
                data = self._read_bytes(path)
                with self._kept_lock:
                    if self._kept_budget >= len(data):
                        kept[path] = data
                        self._kept_budget -= len(data)
            return data
        if self._view is not None:
            if self._in_listed_parent(path) is False:  # the view's listing of its directory lacks it
                raise FileNotFoundError(path)
            return self._viewed("get", path, lambda: self._read_bytes(path))
        return self._read_bytes(path)

    def _read_bytes(self, path: str) -> bytes:
        if self.is_local:
            self._note(RequestKind.GET)
            with open(self._raw(path), "rb") as f:
                return f.read()
        raw = self._raw(path)
        try:
            return bytes(self._call(lambda: self.fs.cat_file(raw), RequestKind.GET))
        except FileNotFoundError:
            raise
        except OSError as e:
            if "not found" in str(e).lower() or "nosuchkey" in str(e).lower():
                raise FileNotFoundError(path) from e
            raise

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    # -- writing -----------------------------------------------------------------------
    @_changes_view
    def write_new(self, path: str, data: bytes | str) -> None:
        """Create ``path`` atomically; ``FileExistsError`` if it is already there (the existing
        content is left alone).

        Local: temp file + ``os.link`` (atomic create-if-absent). HDFS: WebHDFS ``CREATE`` with
        ``overwrite=false``, which the NameNode refuses atomically. Object stores: an existence
        check, then a conditional upload (S3/OSS ``If-None-Match: *``, GCS
        ``ifGenerationMatch=0``, Azure ``If-None-Match: *``): the store refuses it when the key
        exists, so two racing writers cannot both win. The pre-check keeps stores that silently
        ignore the condition (some S3-compatible servers) from overwriting a file that existed
        before the call; only a race inside that window remains unprotected on such stores. A
        store that rejects the condition outright fails the write (fail closed). A retried
        upload that finds the key present reports ``FileExistsError`` too: the caller re-reads.
        """
        payload = data.encode("utf-8") if isinstance(data, str) else data
        if self.is_local:
            raw = self._raw(path)
            self._note(RequestKind.PUT)
            tmp = _write_temp_beside(raw, payload)
            try:
                os.link(tmp, raw)
            finally:
                os.unlink(tmp)
            return
        raw = self._raw(path)
        if self.store is Store.HDFS:
            self._call(lambda: self._hdfs_create(path, raw, payload), RequestKind.PUT)
            return
        if self.exists(path):  # a file, or a directory (prefix) of that name
            raise FileExistsError(path)
        try:
            self._call(lambda: self.fs.pipe_file(raw, payload, mode="create"), RequestKind.PUT)
        except FileExistsError:
            raise FileExistsError(path) from None
        except Exception as e:  # botocore PreconditionFailed surfaces as OSError/ClientError
            if _is_precondition_failure(e):
                raise FileExistsError(path) from e
            raise
        finally:
            self._invalidate(raw)

    def _hdfs_create(self, path: str, raw: str, payload: bytes) -> None:
        """WebHDFS two-step create (NameNode redirect, DataNode upload) with ``overwrite=false``."""
        fs: Any = self.fs
        try:
            redirect = fs._call("CREATE", "put", raw, redirect=False, overwrite="false")
        except RuntimeError as e:
            if "FileAlreadyExists" in str(e) or "already exists" in str(e):
                raise FileExistsError(path) from e
            raise
        location = fs._apply_proxy(redirect.headers["Location"])
        response = fs.session.put(location, data=payload, headers={"content-type": "application/octet-stream"})
        if response.status_code in (403, 409) and "AlreadyExists" in response.text:
            raise FileExistsError(path)
        if response.status_code == 403 and "AccessControl" in response.text:
            raise PermissionError(f"{path}: {response.text[:300]}")
        response.raise_for_status()

    @_changes_view
    def overwrite(self, path: str, data: bytes | str) -> None:
        """Replace ``path`` (hint files): temp + ``os.replace`` locally, a plain PUT elsewhere."""
        payload = data.encode("utf-8") if isinstance(data, str) else data
        if self.is_local:
            raw = self._raw(path)
            self._note(RequestKind.PUT)
            os.replace(_write_temp_beside(raw, payload), raw)
            return
        raw = self._raw(path)
        self._call(lambda: self.fs.pipe_file(raw, payload), RequestKind.PUT)
        self._invalidate(raw)

    def copy_new(self, src: str, dst: str) -> None:
        """Copy bytes verbatim to a path that must not exist (metadata copies keep Java's
        bytes: no re-serialisation)."""
        self.write_new(dst, self.read_bytes(src))

    @_changes_view
    def rename(self, src: str, dst: str) -> None:
        """Rename a file or a directory; ``FileExistsError`` when ``dst`` exists.

        Local files: ``os.link`` + unlink, so an existing target is refused atomically (plain
        ``os.rename`` would replace it). Local directories: checked, then ``os.rename``. HDFS:
        the NameNode's atomic ``RENAME`` (after a check: HDFS moves a source *into* an existing
        directory). Object stores have no rename: a file is copied with create-if-absent
        (``write_new``) and the source deleted afterwards (not atomic: a crash in between leaves
        both); a directory prefix is copied key by key (``mv``) after an existence check.
        """
        if self.is_local:
            raw_src, raw_dst = self._raw(src), self._raw(dst)
            self._note(RequestKind.COPY)
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
        if self.store is Store.HDFS:
            fs: Any = self.fs
            raw_src, raw_dst = self._raw(src), self._raw(dst)
            done = self._call(lambda: fs._call("RENAME", "put", raw_src, destination=raw_dst).json(), RequestKind.COPY)
            if not done.get("boolean"):
                if self.exists(dst):
                    raise FileExistsError(dst)
                raise FileNotFoundError(src)
            return
        status = self.stat(src)
        if status.is_dir:
            self._call(lambda: self.fs.mv(self._raw(src), self._raw(dst), recursive=True), RequestKind.COPY)
            self._invalidate(self._raw(src))
            self._invalidate(self._raw(dst))
            return
        self.write_new(dst, self.read_bytes(src))
        result = self._bulk_delete([src])[0]
        if result.outcome == DeleteOutcome.FAILED:
            raise errors.StorageError(f"renamed {src} to {dst} but could not delete the source: {result.error}",
                                      fix="delete the source file by hand")

    @_changes_view
    def mkdirs(self, path: str) -> None:
        if self.is_local:
            os.makedirs(self._raw(path), exist_ok=True)
        elif self.store is Store.HDFS:
            raw = self._raw(path)
            self._call(lambda: self.fs.makedirs(raw, exist_ok=True), RequestKind.PUT)

    def _invalidate(self, raw: str) -> None:
        try:
            self.fs.invalidate_cache(raw)
        except Exception:  # pragma: no cover - caches are an optimisation only
            pass

    # -- deleting ----------------------------------------------------------------------
    @_changes_view
    def delete_files(self, paths: Iterable[str], *, tell_missing: bool = True) -> list[DeleteResult]:
        """Delete regular files, never directories. One result per input path, in input
        order: deleted, already missing, or failed (with the error).

        ``tell_missing=False`` (plan execution) skips the parent listings on S3/OSS, the only
        stores that need them to tell missing from deleted: a key already gone is then reported
        deleted (DeleteObjects answers so). Nothing else changes: a DeleteObjects of ``a/b``
        never removes the objects below ``a/b/``, so no directory can be deleted as a file, and
        the listings were most of an expiration's requests (docs/storage-internals.md, "Request cost").

        Remote stores: one listing per parent directory tells missing files and directories
        apart (S3 reports absent keys as deleted), then the deletes: S3/OSS DeleteObjects in
        batches of at most ``safety.DELETE_BATCH_MAX`` keys, retrying only failed keys; other
        stores one request per file, in parallel, each retried. If a listing fails, that
        directory's files are deleted blindly and reported as the store reports them.
        """
        paths = list(paths)
        if self.is_local:
            return self._delete_local_many(paths)
        return self._delete_remote(paths, tell_missing or not self.bulk_deletes)

    @_changes_view
    def delete_files_failing(self, paths: list[str], *, tell_missing: bool = True,
                             threads: int = 1) -> list[tuple[int, DeleteResult]]:
        """:meth:`delete_files`, returning only the outcomes that are not DELETED, as
        ``(index in paths, result)`` in index order: a plan's execution deletes ~100k local files
        and needs counts, not a result object per deleted file (issue 13). Local files are
        unlinked in one batch (:mod:`.native_unlink`: native code on up to ``threads`` threads,
        each taking whole directories, when it was built); other stores answer as
        :meth:`delete_files` does (``threads`` unused: their requests are parallel already)."""
        if not self.is_local:
            results = self._delete_remote(paths, tell_missing or not self.bulk_deletes)
            return [(i, r) for i, r in enumerate(results) if r.outcome is not DeleteOutcome.DELETED]
        return self._delete_local_failing(paths, threads)

    def _delete_local_many(self, paths: list[str]) -> list[DeleteResult]:
        """``_delete_local`` for each path, with the per-file overhead cut (an expiration unlinks
        ~100k files, issue 13): see :meth:`_delete_local_failing`."""
        out = [DeleteResult(p, DeleteOutcome.DELETED) for p in paths]
        for i, r in self._delete_local_failing(paths, 1):
            out[i] = r
        return out

    def _delete_local_failing(self, paths: list[str], threads: int) -> list[tuple[int, DeleteResult]]:
        """The outcomes of ``_delete_local`` for each path that are not DELETED. Without pacing,
        the requests are counted in one step (each is still one ``unlink``, as counted) and the
        batch goes to :func:`.native_unlink.unlink_all`; paced (a test's store), one by one."""
        if self._http_counted or self.requests.pacer is not None:
            return [(i, r) for i, r in enumerate(self._delete_local(p) for p in paths)
                    if r.outcome is not DeleteOutcome.DELETED]
        self.requests.counts.add(RequestKind.DELETE, len(paths))
        raws = _local_raws(paths, self._raw)
        out: list[tuple[int, DeleteResult]] = []
        for i, e in native_unlink.unlink_all(raws, threads):
            if isinstance(e, FileNotFoundError):
                out.append((i, DeleteResult(paths[i], DeleteOutcome.MISSING)))
            else:
                out.append((i, self._refused(paths[i], raws[i], e)))
        return out

    @property
    def bulk_deletes(self) -> bool:
        """Whether this store deletes up to 1000 keys a request (S3, OSS: DeleteObjects)."""
        return not self.is_local and hasattr(self.fs, "call_s3")

    def _delete_local(self, path: str) -> DeleteResult:
        """One ``unlink``: it never removes a directory (Linux answers EISDIR, POSIX EPERM), so
        the directory check runs only when the unlink is refused, not as a stat per file."""
        raw = self._raw(path)
        self._note(RequestKind.DELETE)
        try:
            os.unlink(raw)
            return DeleteResult(path, DeleteOutcome.DELETED)
        except FileNotFoundError:
            return DeleteResult(path, DeleteOutcome.MISSING)
        except OSError as e:
            return self._refused(path, raw, e)

    @staticmethod
    def _refused(path: str, raw: str, e: OSError) -> DeleteResult:
        if os.path.isdir(raw) and not os.path.islink(raw):
            return DeleteResult(path, DeleteOutcome.FAILED, "is a directory: never deleted")
        return DeleteResult(path, DeleteOutcome.FAILED, f"{type(e).__name__}: {e}")

    def _delete_remote(self, paths: list[str], tell_missing: bool = True) -> list[DeleteResult]:
        decided: dict[str, DeleteResult] = {}
        by_dir: dict[str, list[str]] = defaultdict(list)
        buckets = self.store is not Store.HDFS
        for p in dict.fromkeys(paths):  # unique, in input order
            raw = self._raw(p).strip("/")
            if buckets and "/" not in raw:
                decided[p] = DeleteResult(p, DeleteOutcome.FAILED, "is a bucket: never deleted")
                continue
            if p.endswith("/") or not raw:
                decided[p] = DeleteResult(p, DeleteOutcome.FAILED, "is a directory: never deleted")
                continue
            by_dir[parent(p)].append(p)
        to_delete: list[str] = []
        for directory, members in by_dir.items():
            files: set[str] | None
            dirs: set[str] = set()
            if not tell_missing:
                to_delete.extend(members)
                continue
            try:
                files = set()
                for status in self.list_dir(directory):
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
        if self.store is Store.GCS and len(batch) > 1 and getattr(self.fs, "on_google", False):
            return self._gcs_batch_delete(batch)
        if not hasattr(self.fs, "call_s3"):  # no bulk delete: one request per file, in parallel
            if len(batch) == 1:
                return [self._delete_one(batch[0])]
            from concurrent.futures import ThreadPoolExecutor  # lazily: ~12 ms of start-up

            with ThreadPoolExecutor(max_workers=min(PARALLEL_DELETES, len(batch))) as pool:
                return list(pool.map(self._delete_one, batch))
        by_bucket: dict[str, dict[str, str]] = defaultdict(dict)
        for p in batch:
            bucket, _, key = self._raw(p).lstrip("/").partition("/")
            by_bucket[bucket][key] = p
        results: list[DeleteResult] = []
        for bucket, keys in by_bucket.items():
            results.extend(self._delete_objects(bucket, keys))
        return results

    def _gcs_batch_delete(self, batch: list[str]) -> list[DeleteResult]:
        """GCS: the JSON API's batch endpoint, ``GCS_BATCH_MAX`` deletes a request (gcsfs
        ``_rm_files``, which retries its own transient sub-requests). gcsfs names only the deleted
        objects, so every object the batch did not confirm goes through :meth:`_delete_one`
        (retried, and telling missing from failed): the counts stay exact. Only against Google
        (``on_google``), as gcsfs's own ``rm`` does: emulators (fake-gcs-server) answer its batch
        sub-requests with 400, which would cost a wasted request before the per-file path."""
        from fsspec.asyn import sync

        fs: Any = self.fs
        confirmed: set[str] = set()
        for start in range(0, len(batch), GCS_BATCH_MAX):
            chunk = [self._raw(p) for p in batch[start:start + GCS_BATCH_MAX]]
            try:
                answers = self._call(lambda chunk=chunk: sync(fs.loop, fs._rm_files, chunk))  # type: ignore[misc]
            except Exception:  # the batch request failed as a whole: per file below
                answers = []
            confirmed.update(a for a in answers if isinstance(a, str))
            for raw in chunk:
                self._invalidate(raw)
        results = {p: DeleteResult(p, DeleteOutcome.DELETED) for p in batch if self._raw(p) in confirmed}
        rest = [p for p in batch if p not in results]
        if rest:
            from concurrent.futures import ThreadPoolExecutor  # lazily: ~12 ms of start-up

            with ThreadPoolExecutor(max_workers=min(PARALLEL_DELETES, len(rest))) as pool:
                results.update(zip(rest, pool.map(self._delete_one, rest), strict=True))
        return [results[p] for p in batch]

    def _delete_objects(self, bucket: str, keys: Mapping[str, str]) -> list[DeleteResult]:
        """S3 DeleteObjects for ``keys`` (key -> path), retrying only keys that failed
        transiently (a failed request: all of them; ``SlowDown``/``InternalError`` per key: those
        keys). When the budget is spent the keys still pending are reported failed; keys the
        store confirmed are reported deleted, so the caller's counts are exact."""
        from tablekeeper.core.storage import retry as retries

        outcome: dict[str, DeleteResult] = {}
        pending = list(keys)
        last_error: dict[str, str] = {}
        attempt = 0
        while pending:
            try:
                self._note(RequestKind.BULK_DELETE)
                response = self.fs.call_s3(
                    "delete_objects", Bucket=bucket,
                    Delete={"Objects": [{"Key": k} for k in pending], "Quiet": False},
                )
            except Exception as e:
                message = redact_text(f"{type(e).__name__}: {e}", self.connection.kwargs)
                if not retries.is_transient(e):
                    for k in pending:
                        outcome[k] = DeleteResult(keys[k], DeleteOutcome.FAILED, message)
                    pending = []
                    break
                last_error = dict.fromkeys(pending, message)
                retry_keys = pending
            else:
                failed = {err["Key"]: (str(err.get("Code")), f"{err.get('Code')}: {err.get('Message')}")
                          for err in response.get("Errors", [])}
                retry_keys = []
                for k in pending:
                    if k not in failed:
                        outcome[k] = DeleteResult(keys[k], DeleteOutcome.DELETED)
                    elif failed[k][0] in retries.TRANSIENT_CODES:
                        retry_keys.append(k)
                        last_error[k] = failed[k][1]
                    else:
                        outcome[k] = DeleteResult(keys[k], DeleteOutcome.FAILED, failed[k][1])
            finally:
                for k in pending:
                    self._invalidate(f"{bucket}/{k}")
            pending = retry_keys
            attempt += 1
            if pending and attempt >= self.retry.attempts:
                break
            if pending:
                retries_sleep(self.retry.delay(attempt))
        for k in pending:
            outcome[k] = DeleteResult(keys[k], DeleteOutcome.FAILED,
                                      f"retry budget exhausted ({self.retry.attempts} attempts): {last_error.get(k)}")
        return [outcome[k] for k in keys]

    def _remove(self, raw: str) -> bool:
        """One single-file delete request; False when the store says the file was not there."""
        self._note(RequestKind.DELETE)
        if self.store is Store.HDFS:
            fs: Any = self.fs
            return bool(fs._call("DELETE", method="delete", path=raw, recursive="false").json().get("boolean"))
        self.fs.rm_file(raw)
        return True

    def _delete_one(self, path: str) -> DeleteResult:
        """Delete one file with retries. A file that is gone on a retry after a transient failure
        was deleted by the attempt whose answer was lost: reported deleted, not missing."""
        from tablekeeper.core.storage import retry as retries

        raw = self._raw(path)
        attempt = 0
        failed_before = False
        while True:
            try:
                removed = self._remove(raw)
                self._invalidate(raw)
                if removed or failed_before:
                    return DeleteResult(path, DeleteOutcome.DELETED)
                return DeleteResult(path, DeleteOutcome.MISSING)
            except FileNotFoundError:
                return DeleteResult(path, DeleteOutcome.DELETED if failed_before else DeleteOutcome.MISSING)
            except Exception as e:
                attempt += 1
                message = redact_text(f"{type(e).__name__}: {e}", self.connection.kwargs)
                if not retries.is_transient(e):
                    return DeleteResult(path, DeleteOutcome.FAILED, message)
                if attempt >= self.retry.attempts:
                    return DeleteResult(path, DeleteOutcome.FAILED,
                                        f"retry budget exhausted ({self.retry.attempts} attempts): {message}")
                failed_before = True
                retries_sleep(self.retry.delay(attempt))

    def _keys_under(self, path: str) -> list[str]:
        """Every object below ``path`` on an object store, directory markers included."""
        raw = self._raw(path).rstrip("/")
        try:
            found = self._call(lambda: self.fs.find(raw, detail=True), RequestKind.LIST)
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

    @_changes_view
    def delete_empty_dir(self, path: str) -> bool:
        """Remove a directory only if it is empty (non-recursive); True if removed.

        HDFS: a non-recursive DELETE of a directory, which the NameNode refuses when it is not
        empty. Object stores have no real directories: a prefix holding nothing but its own
        marker object (``dir/``, written by pyarrow/pypaimon ``mkdirs``) counts as an empty
        directory and the marker is deleted; a prefix with any other object is left alone."""
        if self.is_local:
            self._note(RequestKind.DELETE)
            try:
                os.rmdir(self._raw(path))
                return True
            except OSError:
                return False
        if self.store is Store.HDFS:
            if not self.is_dir(path):
                return False
            try:
                return self._remove(self._raw(path))
            except Exception:
                return False
        marker = self._raw(path).rstrip("/") + "/"
        if self.bulk_deletes:  # one bounded LIST page (2 keys) tells "only the marker", not a full listing
            bucket, _, prefix = marker.lstrip("/").partition("/")
            fs: Any = self.fs
            page = self._call(lambda: fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=prefix, MaxKeys=2),
                              RequestKind.LIST)
            keys = [self._uri(f"{bucket}/{item['Key']}") for item in page.get("Contents", [])]
        else:
            keys = self._keys_under(path)
        if [self._raw(k).lstrip("/") for k in keys] != [marker.lstrip("/")]:
            return False
        return self._bulk_delete(keys)[0].outcome == DeleteOutcome.DELETED

    @_changes_view
    def delete_tree(self, path: str) -> None:
        """Recursive delete of a metadata directory (branch drop). Callers restrict this to
        ``branch/branch-<name>`` paths; data directories are never deleted recursively.
        On object stores every key below the prefix goes, directory markers included."""
        if self.is_local:
            import shutil  # only here: ~5 ms of every command's start-up otherwise

            shutil.rmtree(self._raw(path), ignore_errors=False)
            return
        if self.store is Store.HDFS:
            raw = self._raw(path)
            self._call(lambda: self.fs.rm(raw, recursive=True), RequestKind.DELETE)
            return
        keys = self._keys_under(path)
        failed: list[DeleteResult] = []
        for start in range(0, len(keys), safety.DELETE_BATCH_MAX):
            batch = keys[start:start + safety.DELETE_BATCH_MAX]
            failed.extend(r for r in self._bulk_delete(batch) if r.outcome == DeleteOutcome.FAILED)
        if failed:
            raise errors.StorageError(f"could not delete {failed[0].path}: {failed[0].error}",
                                      fix="check permissions and retry")


def retries_sleep(seconds: float) -> None:
    """The pause between attempts (a function, so tests can count or skip the waits)."""
    import time

    time.sleep(seconds)
