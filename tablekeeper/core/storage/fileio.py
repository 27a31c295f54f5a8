"""The storage contract tablekeeper relies on, met by every store (docs/storage-internals.md):

- create-if-absent writes (``write_new``) that never overwrite a concurrent writer's file;
- listings that carry sizes and modification times;
- deletes of regular files with one outcome per file: deleted, missing (told apart from deleted)
  or failed; directories are never deleted as files;
- every request retried while it fails transiently (:mod:`.retry`); a bulk delete retries only
  the keys that failed, and reports the rest exactly when the budget runs out, so a rerun finishes.

:class:`FileIO` is that contract. Each store meets it in its own class (:mod:`.backends`: local
files, S3 and OSS, GCS, Azure, HDFS over WebHDFS), which says how: local files get
create-if-absent through ``os.link``; S3 and OSS a conditional PUT (``If-None-Match: *``) and
DeleteObjects (1000 keys a request); GCS an ``ifGenerationMatch=0`` upload; Azure an upload with
``If-None-Match: *``; HDFS a WebHDFS ``CREATE`` with ``overwrite=false`` (the NameNode refuses an
existing file) and a native ``RENAME``. GCS, Azure and HDFS delete one file per request, in
parallel. What every store gets alike is layered around it here, in one order:

1. bytes read ahead (:meth:`FileIO.read_ahead`) and kept immutable files
   (:meth:`FileIO.immutable_reads`): :mod:`.read_cache`;
2. the answers of one decision's view (:meth:`FileIO.one_view`): :mod:`.views`, forgotten by
   every write, rename or delete through the FileIO;
3. the store (:mod:`.backends`), whose every request goes through :mod:`.calls`: counted and
   paced (:mod:`.requests`), retried (:mod:`.retry`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from tablekeeper.core.storage.backends import StoreIO, implementation
from tablekeeper.core.storage.connections import Connection, connect
from tablekeeper.core.storage.entries import DeleteOutcome, DeleteResult, FileStatus, ListedEntry
from tablekeeper.core.storage.layers import (
    Calls,
    Pacer,
    ReadCache,
    RequestKind,
    RequestLayer,
    Views,
    pacing_from_options,
)
from tablekeeper.core.storage.stores import SCHEMES, Store, split_scheme

if TYPE_CHECKING:  # fsspec (with asyncio and importlib.metadata) is imported for remote stores only
    import fsspec

    from tablekeeper.core.storage import layers

__all__ = ["FileStatus", "ListedEntry", "DeleteOutcome", "DeleteResult", "FileIO", "CommitGuard"]

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
        self._views.changed(paths)
        try:
            return method(self, *args, **kwargs)
        finally:
            self._views.changed(paths)

    return changing


class CommitGuard(Protocol):
    """A catalog's commit lock as the store sees it (``core.catalogs`` builds one): which paths are
    commits (snapshot, tag, branch and schema files of one table) and the lock held around them.
    ``held`` is reentrant, so a multi-file commit may hold it across all its writes."""

    def covers(self, path: str) -> bool: ...

    def held(self) -> AbstractContextManager[None]: ...


def _commits(method: Callable[Concatenate[FileIO, P], R]) -> Callable[Concatenate[FileIO, P], R]:
    """A write or rename: when a catalog lock is attached (:attr:`FileIO.commit_guard`) and the
    path is one of its table's commit files, the write happens while the lock is held. This is the
    one seam every commit tablekeeper makes passes through (tags, branches, snapshots, hints)."""
    @functools.wraps(method)
    def committing(self: FileIO, /, *args: P.args, **kwargs: P.kwargs) -> R:
        guard = self.commit_guard
        if guard is not None and any(isinstance(a, str) and guard.covers(a) for a in args[:2]):
            with guard.held():
                return method(self, *args, **kwargs)
        return method(self, *args, **kwargs)

    return committing


def _default_connection(scheme: str) -> Connection:
    """Path mapping for a FileIO built from a bare fsspec filesystem (tests, wrappers)."""
    store = SCHEMES.get(scheme, Store.S3)
    if store is Store.LOCAL:
        return Connection(Store.LOCAL, "file", "file", {}, lambda p: split_scheme(p)[1], lambda raw: raw)
    return Connection(store, scheme, scheme, {}, lambda p: split_scheme(p)[1],
                      lambda raw: f"{scheme}://{raw.lstrip('/')}")


def _payload(data: bytes | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


class FileIO:
    """Filesystem operations tablekeeper needs (module docstring): one store's implementation
    (:attr:`backend`) with the shared layers around it.

    Built by :meth:`for_uri`; ``FileIO(scheme, fs)`` wraps a given fsspec filesystem (tests,
    wrappers). Subclasses (tests, instrumented stores) may override any public method; the few
    made of others keep calling them: :meth:`copy_new`, :meth:`scan_dir` where listings carry
    statuses (:meth:`list_dir`), the existence questions a store cannot answer exactly
    (:meth:`exists`) and ``file_exists(will_read=True)`` in a view (:meth:`read_bytes`)."""

    def __init__(self, scheme: str, fs: fsspec.AbstractFileSystem | None, connection: Connection | None = None,
                 retry: layers.RetryPolicy | None = None, requests: RequestLayer | None = None,
                 http_counted: bool = False) -> None:
        self.scheme = scheme
        self.connection = connection or _default_connection(scheme)
        self.store = self.connection.store
        #: every request this FileIO makes, by kind (:mod:`.requests`), retried by :mod:`.retry`
        self._calls = Calls(self.connection, requests or RequestLayer(), retry, http_counted)
        #: the store's own operations (:mod:`.backends`)
        self.backend: StoreIO = implementation(self.store)(self.connection, self._calls, fs)
        self._cache = ReadCache()
        self._views = Views()
        #: the catalog's commit lock for the table this FileIO opened (None: no catalog lock)
        self.commit_guard: CommitGuard | None = None

    @classmethod
    def for_uri(cls, uri: str, options: Mapping[str, Any] | None = None,
                retry: layers.RetryPolicy | None = None) -> FileIO:
        """A FileIO for the store behind ``uri``. ``options`` are Paimon-style option names
        (``s3.endpoint``, ``fs.oss.endpoint``, ``fs.azure.account.key.<account>...`` ...) or raw
        fsspec keyword arguments (keys without dots). Bad input (an unknown scheme, missing
        credentials or endpoint) raises ``InvalidInputError`` naming the option to set."""
        connection = connect(uri, options)
        rate = pacing_from_options(options)
        layer = RequestLayer(Pacer(rate) if rate else None)
        fs, http_counted = implementation(connection.store).open_filesystem(connection, layer, options)
        return cls(connection.scheme, fs, connection, retry, layer, http_counted=http_counted)

    # -- what the store is and can do ------------------------------------------------------
    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The fsspec filesystem; for local files made on first use (:mod:`.backends.local`)."""
        return self.backend.fs

    @property
    def requests(self) -> RequestLayer:
        """The counts (and pacer) of this FileIO's requests (:mod:`.requests`)."""
        return self._calls.requests

    @requests.setter
    def requests(self, layer: RequestLayer) -> None:
        self._calls.requests = layer

    @property
    def retry(self) -> layers.RetryPolicy:
        """The retry policy of this FileIO's requests (:mod:`.retry`)."""
        return self._calls.retry

    @retry.setter
    def retry(self, policy: layers.RetryPolicy) -> None:
        self._calls.retry = policy

    @property
    def is_local(self) -> bool:
        return self.store is Store.LOCAL

    @property
    def bulk_deletes(self) -> bool:
        """Whether this store deletes up to 1000 keys a request (S3, OSS: DeleteObjects)."""
        return self.backend.bulk_deletes

    @property
    def lists_flat(self) -> bool:
        """Whether :meth:`flat_listing` lists a prefix at once here (object stores; not local
        disk or HDFS, whose directories are real and listed one by one)."""
        return self.backend.lists_flat

    def normalize(self, uri: str) -> str:
        """Canonical form of a path for this store: no ``file:`` prefix locally."""
        scheme, rest = split_scheme(uri)
        if scheme == "file":
            return os.path.abspath(rest) if rest else rest
        return f"{scheme}://{rest}"

    def _note(self, kind: RequestKind) -> None:
        """Count (and pace) one request of ``kind`` made on this FileIO's behalf elsewhere (a
        forked helper's reads); a no-op where the requests are counted at the HTTP level."""
        self._calls.note(kind)

    # -- listing ---------------------------------------------------------------------------
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
        with self.backend.flat_listing(root, segments_max=segments_max, page_keys=page_keys):
            yield

    def list_dir(self, path: str) -> list[FileStatus]:
        """Entries of one directory (files and sub-directories); [] when it does not exist."""
        if self._views.active:
            return list(self._views.viewed("list", path.rstrip("/"), lambda: self.backend.list_dir(path)))
        return self.backend.list_dir(path)

    def scan_dir(self, path: str) -> list[ListedEntry]:
        """Entries of one directory without a stat per local entry; [] when it does not exist."""
        if self.backend.listings_carry_status:
            return [ListedEntry(s.path, s.name, s.is_dir, s) for s in self.list_dir(path)]
        return self.backend.scan_dir(path)

    def list_names(self, path: str) -> list[str]:
        """Names of the entries of one local directory (files and sub-directories alike, no
        stat; [] when it does not exist): the cheapest listing there is. Object stores: use
        :meth:`scan_dir`, whose entries carry their status."""
        return self.backend.list_names(path)

    def status_of(self, entry: ListedEntry) -> FileStatus | None:
        """The entry's status (from the listing, else one stat); None when it vanished since."""
        if entry.status is not None:
            return entry.status
        try:
            return self.backend.status_of(entry.path)
        except FileNotFoundError:
            return None

    def statuses_of(self, entries: Iterable[ListedEntry]) -> list[FileStatus | None]:
        """:meth:`status_of` of each entry, in order (local files: one ``lstat`` each, the
        requests counted at once)."""
        return self.backend.statuses_of(list(entries))

    def walk_files(self, path: str) -> Iterator[FileStatus]:
        """Every regular file below ``path``, recursively."""
        return self.backend.walk_files(path)

    def stat(self, path: str) -> FileStatus:
        return self.backend.stat(path)

    def exists(self, path: str) -> bool:
        if self._views.active:
            told = self._views.told(path)
            if told is not None:
                return told
            return self._views.viewed("exists", path, lambda: self.backend.exists(path))
        return self.backend.exists(path)

    def file_exists(self, path: str, *, will_read: bool = False) -> bool:
        """Whether the regular file ``path`` exists (a directory of that name does not count).
        S3/OSS: one HEAD (:meth:`exists` adds a LIST of ``path/`` for every missing key, to find
        a directory prefix); other stores: :meth:`exists`.

        ``will_read``: the caller reads the file next when it exists (pypaimon asks for LATEST
        and the latest snapshot before reading them). Inside a :meth:`one_view` on S3/OSS the
        question is then answered by that read (a GET kept in the view): a request fewer when
        the file is there, the same one request (a 404) when it is not. Small metadata files
        only (snapshots, hints, schemas, tags)."""
        if not self.backend.exact_existence:
            return self.exists(path)
        if self._views.active:
            told = self._views.told(path)
            if told is not None:
                return told
            if will_read:
                try:
                    self.read_bytes(path)
                except FileNotFoundError:
                    return False
                return True
            return self._views.viewed("file_exists", path, lambda: self.backend.file_exists(path))
        return self.backend.file_exists(path)

    def dir_exists(self, path: str) -> bool:
        """Whether anything lies below the directory ``path``. S3/OSS: one LIST of at most one
        key of ``path/`` (:meth:`exists` sends a HEAD of ``path`` first, for a file of that
        name), none when the current view listed the directory; other stores: :meth:`exists`."""
        if not self.backend.exact_existence:
            return self.exists(path)
        key = path.rstrip("/")
        if self._views.active:
            listed = self._views.answer("list", key)
            if listed is not None:
                return bool(listed)
            return self._views.viewed("dir_exists", key, lambda: self.backend.dir_exists(key))
        return self.backend.dir_exists(key)

    def is_dir(self, path: str) -> bool:
        if self._views.active:
            return self._views.viewed("is_dir", path, lambda: self.backend.is_dir(path))
        return self.backend.is_dir(path)

    # -- reading ---------------------------------------------------------------------------
    @contextmanager
    def immutable_reads(self, max_bytes: int = 512 << 20) -> Iterator[None]:
        """Within the block, a UUID-named manifest, manifest list or index manifest is fetched
        once and its bytes reused (up to ``max_bytes`` in all): an expiration plans twice (plan,
        then verify after unpublishing, core/reclaim/expire/commit.py) and would otherwise GET every
        manifest twice. Only those names: they are never rewritten, so the bytes cannot be stale
        (a file deleted meanwhile still has the content every root that names it relies on).
        Schema files too: Paimon commits ``schema-N`` create-if-absent and never rewrites it.
        Snapshots, tags and hints are read afresh every time (outside :meth:`one_view`)."""
        with self._cache.immutable_reads(max_bytes):
            yield

    @contextmanager
    def one_view(self) -> Iterator[None]:
        """Within the block, each file is read, each directory listed and each existence asked
        at most once: a repeat gets the first answer (a missing file stays missing), and an
        existence a listing of the parent already answered costs no request. For one *decision*
        (an expiration's range and roots, a tag deletion's plan): a decision looks at the table
        as at one moment anyway, so reading the same snapshot, tag, schema or hint again inside
        it buys no safety, only requests (the expiration used to GET each expiring snapshot and
        every tag four times). The phases that must see the table as it is *now* (the verify
        plans of core/reclaim/expire/commit.py and core/refs/tag_deletion.py) open a view of their own. Any
        write, rename or delete through this FileIO empties the view (answers start over)."""
        with self._views.open():
            yield

    def _read_quietly(self, path: str) -> bytes | None:
        """A read ahead of the caller's: None when it fails (the caller's own read raises it)."""
        try:
            return self.backend.read_bytes(path)
        except Exception:  # noqa: BLE001 - raised again by the caller's own read
            return None

    def prefetch(self, paths: Iterable[str], *, threads: int = 16) -> None:
        """Fetch the immutable-named files among ``paths`` ``threads`` at a time into the
        :meth:`immutable_reads` cache, so reads that follow one after the other (orphan
        cleanup's walk of every root's manifest lists) find them there: the same GETs, in
        parallel. A no-op on local disk or outside :meth:`immutable_reads`; a failed fetch is
        left to the caller's own read, which raises it."""
        if self.backend.reads_overlap:
            self._cache.prefetch(paths, self._read_quietly, threads)

    def read_ahead(self, paths: list[str], *, window: int = 64, threads: int = 16) -> Iterator[str]:
        """Yield ``paths`` in order; on object stores the next ``window`` files are fetched
        concurrently first, and :meth:`read_bytes` of a yielded path returns those bytes (once):
        the same GETs, ``threads`` at a time instead of one after the other (at 20 ms a request,
        a sequential manifest scan is most of an orphan cleanup's time). A failed fetch is left
        to the caller's own read, which raises it."""
        if not self.backend.reads_overlap or len(paths) < 2:
            return iter(paths)
        return self._cache.read_ahead(paths, self._read_quietly, window, threads)

    def read_bytes(self, path: str) -> bytes:
        ahead = self._cache.take_ahead(path)
        if ahead is not None:
            return ahead
        if self._cache.keeps(path):
            return self._cache.read_kept(path, self.backend.read_bytes)
        if self._views.active:
            if self._views.in_listed_parent(path) is False:  # the view's listing of its directory lacks it
                raise FileNotFoundError(path)
            return self._views.viewed("get", path, lambda: self.backend.read_bytes(path))
        return self.backend.read_bytes(path)

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    # -- writing ---------------------------------------------------------------------------
    @_commits
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
        self.backend.write_new(path, _payload(data))

    @_commits
    @_changes_view
    def overwrite(self, path: str, data: bytes | str) -> None:
        """Replace ``path`` (hint files): temp + ``os.replace`` locally, a plain PUT elsewhere."""
        self.backend.overwrite(path, _payload(data))

    def copy_new(self, src: str, dst: str) -> None:
        """Copy bytes verbatim to a path that must not exist (metadata copies keep Java's
        bytes: no re-serialisation)."""
        self.write_new(dst, self.read_bytes(src))

    @_commits
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
        self.backend.rename(src, dst)

    @_changes_view
    def move_file(self, src: str, dst: str) -> None:
        """Move a regular file to a path that must not exist (``FileExistsError``;
        ``FileNotFoundError`` when ``src`` is gone), keeping its bytes and, where the store
        keeps them, its modification time: local disk and HDFS one atomic rename (the parent
        made first); object stores a HEAD, a server-side copy and a delete (not atomic: a crash
        in between leaves both copies). What the trash moves files with (core/safety/trash)."""
        self.backend.move_file(src, dst)

    @_changes_view
    def copy_file(self, src: str, dst: str) -> None:
        """Copy a regular file to ``dst``, replacing what is there: object stores one server-side
        copy (the bytes never leave the store), elsewhere a read and a write. For fresh names only
        (the trash copies into a run directory nobody else writes)."""
        self.backend.copy_file(src, dst)

    @property
    def moves_by_copy(self) -> bool:
        """Whether a file moves by a copy and a delete here (object stores), not by a rename."""
        return self.backend.lists_flat

    # -- versions --------------------------------------------------------------------------
    def keeps_versions(self, path: str) -> bool:
        """Whether deleting ``path`` keeps its bytes as a noncurrent version that can be copied
        back: S3 with bucket versioning Enabled (one GetBucketVersioning per bucket, remembered by
        this FileIO). False on every other store (local disk, HDFS, OSS, GCS, Azure) and on S3
        buckets whose versioning is Suspended or was never enabled. The one place the trash asks
        whether to record versions instead of copying files (core/trash)."""
        return self.backend.keeps_versions(path)

    def version_of(self, path: str) -> tuple[str, int]:
        """The current version id and size of ``path`` (``FileNotFoundError``); where
        :meth:`keeps_versions` only."""
        return self.backend.version_of(path)

    def has_version(self, path: str, version_id: str) -> bool:
        """Whether the store still holds version ``version_id`` of ``path``."""
        return self.backend.has_version(path, version_id)

    def read_version(self, path: str, version_id: str) -> bytes:
        """The bytes of version ``version_id`` of ``path`` (``FileNotFoundError`` when gone)."""
        return self.backend.read_version(path, version_id)

    @_changes_view
    def copy_version(self, src: str, dst: str, version_id: str) -> None:
        """A server-side copy of version ``version_id`` of ``src`` to ``dst``, replacing what is
        there (``FileNotFoundError`` when the version is gone): how the trash puts back a file it
        kept as a version."""
        self.backend.copy_version(src, dst, version_id)

    @_changes_view
    def delete_versions(self, versions: list[tuple[str, str]]) -> list[DeleteResult]:
        """Delete these (path, version id) for good (a purge of versions the trash recorded);
        one result per pair, in order."""
        return self.backend.delete_versions(versions)

    @_changes_view
    def mkdirs(self, path: str) -> None:
        self.backend.mkdirs(path)

    # -- deleting --------------------------------------------------------------------------
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
        return self.backend.delete_files(list(paths), tell_missing)

    @_changes_view
    def delete_files_failing(self, paths: list[str], *, tell_missing: bool = True,
                             threads: int = 1) -> list[tuple[int, DeleteResult]]:
        """:meth:`delete_files`, returning only the outcomes that are not DELETED, as
        ``(index in paths, result)`` in index order: a plan's execution deletes ~100k local files
        and needs counts, not a result object per deleted file. Local files are unlinked in one
        batch (:mod:`.native_unlink`: native code on up to ``threads`` threads, each taking whole
        directories, when it was built); other stores answer as :meth:`delete_files` does
        (``threads`` unused: their requests are parallel already)."""
        return self.backend.delete_files_failing(paths, tell_missing, threads)

    @_changes_view
    def delete_empty_dir(self, path: str) -> bool:
        """Remove a directory only if it is empty (non-recursive); True if removed.

        HDFS: a non-recursive DELETE of a directory, which the NameNode refuses when it is not
        empty. Object stores have no real directories: a prefix holding nothing but its own
        marker object (``dir/``, written by pyarrow/pypaimon ``mkdirs``) counts as an empty
        directory and the marker is deleted; a prefix with any other object is left alone."""
        return self.backend.delete_empty_dir(path)

    @_changes_view
    def delete_tree(self, path: str) -> None:
        """Recursive delete of a metadata directory (branch drop). Callers restrict this to
        ``branch/branch-<name>`` paths; data directories are never deleted recursively.
        On object stores every key below the prefix goes, directory markers included."""
        self.backend.delete_tree(path)
