"""Local disk, through ``os`` directly.

Create-if-absent is a temp file and ``os.link`` (atomic: the link fails when the name exists);
a rename of a file is ``os.link`` and an unlink, so an existing target is refused atomically;
deletes are one ``unlink`` a file, which never removes a directory, batched in native code
(:mod:`..native_unlink`). Local calls are never retried, and the fsspec filesystem is made only
when a caller asks for it (pyarrow's handler in the pypaimon bridge), so a command on a local
table never imports fsspec, asyncio or their dependencies (~0.1 s a process)."""

from __future__ import annotations

import os
import stat as stat_module
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, ClassVar

from tablekeeper.core.storage import native_unlink
from tablekeeper.core.storage.backends.base import StoreIO
from tablekeeper.core.storage.entries import DeleteOutcome, DeleteResult, FileStatus, ListedEntry
from tablekeeper.core.storage.layers import RequestKind

if TYPE_CHECKING:
    import fsspec

__all__ = ["LocalIO"]


def _local_raws(paths: list[str], raw: Callable[[str], str]) -> list[str]:
    """``[raw(p) for p in paths]`` for local paths, checked in one pass over the joined batch
    instead of a call per path (~0.5 us each over an expiration's 100k files): a local path is
    its own raw path unless it starts with ``file:`` or holds ``://`` (``stores.split_scheme``);
    NUL, which no path can hold, keeps the joined paths apart."""
    joined = "\0" + "\0".join(paths)
    if "://" in joined or "\0file:" in joined:
        return [raw(p) for p in paths]
    return paths


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


def _refused(path: str, raw: str, e: OSError) -> DeleteResult:
    if os.path.isdir(raw) and not os.path.islink(raw):
        return DeleteResult(path, DeleteOutcome.FAILED, "is a directory: never deleted")
    return DeleteResult(path, DeleteOutcome.FAILED, f"{type(e).__name__}: {e}")


class LocalIO(StoreIO):
    """Local files (module docstring)."""

    listings_carry_status: ClassVar[bool] = False
    reads_overlap: ClassVar[bool] = False

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The fsspec filesystem, made on first use (module docstring)."""
        if self._fs is None:
            import fsspec

            self._fs = fsspec.filesystem("file")
        return self._fs

    # -- reading ---------------------------------------------------------------------------
    def list_dir(self, path: str) -> list[FileStatus]:
        self.calls.note(RequestKind.LIST)
        out = []
        try:
            with os.scandir(self.raw(path)) as it:
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

    def scan_dir(self, path: str) -> list[ListedEntry]:
        """Entries without a stat each (``readdir`` answers names and types)."""
        self.calls.note(RequestKind.LIST)
        try:
            with os.scandir(self.raw(path)) as it:
                return [ListedEntry(entry.path, entry.name, entry.is_dir(follow_symlinks=False)) for entry in it]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def list_names(self, path: str) -> list[str]:
        self.calls.note(RequestKind.LIST)
        try:
            return os.listdir(self.raw(path))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def status_of(self, path: str) -> FileStatus:
        """As :meth:`list_dir`: the entry itself, never a symlink's target."""
        self.calls.note(RequestKind.HEAD)
        st = os.lstat(self.raw(path))
        return FileStatus(path, st.st_size, st.st_mtime_ns // 1_000_000, stat_module.S_ISDIR(st.st_mode))

    def statuses_of(self, entries: list[ListedEntry]) -> list[FileStatus | None]:
        """Without a pacer: one ``lstat`` each and the requests counted at once (orphan cleanup
        stats every unreferenced file, thousands at a time; the per-call bookkeeping cost as
        much as the ``lstat``)."""
        if self.calls.requests.pacer is not None:
            return super().statuses_of(entries)
        out: list[FileStatus | None] = []
        lstat, to_raw, is_dir = os.lstat, self.raw, stat_module.S_ISDIR
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
            self.calls.requests.counts.add(RequestKind.HEAD, asked)
        return out

    def walk_files(self, path: str) -> Iterator[FileStatus]:
        root = self.raw(path)
        for dirpath, _dirs, files in os.walk(root):
            self.calls.note(RequestKind.LIST)
            for name in files:
                full = os.path.join(dirpath, name)
                try:
                    st = os.lstat(full)
                except FileNotFoundError:
                    continue
                yield FileStatus(full, st.st_size, st.st_mtime_ns // 1_000_000, False)

    def stat(self, path: str) -> FileStatus:
        raw = self.raw(path)
        self.calls.note(RequestKind.HEAD)
        st = os.stat(raw)
        return FileStatus(raw, st.st_size, st.st_mtime_ns // 1_000_000, stat_module.S_ISDIR(st.st_mode))

    def exists(self, path: str) -> bool:
        self.calls.note(RequestKind.HEAD)
        return os.path.exists(self.raw(path))

    def is_dir(self, path: str) -> bool:
        self.calls.note(RequestKind.HEAD)
        return os.path.isdir(self.raw(path))

    def read_bytes(self, path: str) -> bytes:
        self.calls.note(RequestKind.GET)
        with open(self.raw(path), "rb") as f:
            return f.read()

    # -- writing ---------------------------------------------------------------------------
    def write_new(self, path: str, payload: bytes) -> None:
        raw = self.raw(path)
        self.calls.note(RequestKind.PUT)
        tmp = _write_temp_beside(raw, payload)
        try:
            os.link(tmp, raw)
        finally:
            os.unlink(tmp)

    def overwrite(self, path: str, payload: bytes) -> None:
        raw = self.raw(path)
        self.calls.note(RequestKind.PUT)
        os.replace(_write_temp_beside(raw, payload), raw)

    def rename(self, src: str, dst: str) -> None:
        """Files: ``os.link`` + unlink; directories (or no hard links): checked, then ``os.rename``."""
        raw_src, raw_dst = self.raw(src), self.raw(dst)
        self.calls.note(RequestKind.COPY)
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

    def mkdirs(self, path: str) -> None:
        os.makedirs(self.raw(path), exist_ok=True)

    # -- deleting --------------------------------------------------------------------------
    def delete_files(self, paths: list[str], tell_missing: bool) -> list[DeleteResult]:
        """One ``unlink`` each, with the per-file overhead cut (an expiration unlinks ~100k
        files): see :meth:`delete_files_failing`. A missing file is told by the unlink itself."""
        out = [DeleteResult(p, DeleteOutcome.DELETED) for p in paths]
        for i, r in self.delete_files_failing(paths, tell_missing, 1):
            out[i] = r
        return out

    def delete_files_failing(self, paths: list[str], tell_missing: bool,
                             threads: int) -> list[tuple[int, DeleteResult]]:
        """Without pacing, the requests are counted in one step (each is still one ``unlink``,
        as counted) and the batch goes to :func:`.native_unlink.unlink_all` (native code on up
        to ``threads`` threads, each taking whole directories, when it was built); paced (a
        test's store), one by one."""
        if not self.calls.counts_in_batches:
            return [(i, r) for i, r in enumerate(self._delete_one(p) for p in paths)
                    if r.outcome is not DeleteOutcome.DELETED]
        self.calls.requests.counts.add(RequestKind.DELETE, len(paths))
        raws = _local_raws(paths, self.raw)
        out: list[tuple[int, DeleteResult]] = []
        for i, e in native_unlink.unlink_all(raws, threads):
            if isinstance(e, FileNotFoundError):
                out.append((i, DeleteResult(paths[i], DeleteOutcome.MISSING)))
            else:
                out.append((i, _refused(paths[i], raws[i], e)))
        return out

    def _delete_one(self, path: str) -> DeleteResult:
        """One ``unlink``: it never removes a directory (Linux answers EISDIR, POSIX EPERM), so
        the directory check runs only when the unlink is refused, not as a stat per file."""
        raw = self.raw(path)
        self.calls.note(RequestKind.DELETE)
        try:
            os.unlink(raw)
            return DeleteResult(path, DeleteOutcome.DELETED)
        except FileNotFoundError:
            return DeleteResult(path, DeleteOutcome.MISSING)
        except OSError as e:
            return _refused(path, raw, e)

    def delete_empty_dir(self, path: str) -> bool:
        self.calls.note(RequestKind.DELETE)
        try:
            os.rmdir(self.raw(path))
            return True
        except OSError:
            return False

    def delete_tree(self, path: str) -> None:
        import shutil  # only here: ~5 ms of every command's start-up otherwise

        shutil.rmtree(self.raw(path), ignore_errors=False)
