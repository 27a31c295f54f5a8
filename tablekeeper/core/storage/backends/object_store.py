"""What object stores share (S3 and OSS, GCS, Azure): keys in buckets, no real directories.

- A "directory" is a prefix; an empty object ``dir/`` (a marker pyarrow and pypaimon write for
  ``mkdirs``) is no file, and a prefix holding only its marker is an empty directory.
- Create-if-absent is an existence check, then a conditional upload the store refuses when the
  key exists (fsspec's ``mode="create"``: S3 ``If-None-Match: *``, plus OSS's own header, see
  :mod:`..oss_headers`; GCS ``ifGenerationMatch=0``; Azure ``If-None-Match: *``).
- There is no rename: a file is copied with create-if-absent and the source deleted.
- A prefix is listed at once (:meth:`ObjectStoreIO.flat_listing`): ``ceil(objects / page)``
  pages instead of one listing per directory, the orphan scan's floor.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from tablekeeper.core import errors, values
from tablekeeper.core.storage.backends.fsspec_io import FsspecIO, is_marker
from tablekeeper.core.storage.entries import DeleteOutcome, DeleteResult, FileStatus
from tablekeeper.core.storage.layers import RequestKind
from tablekeeper.core.storage.paths import basename, parent

__all__ = ["ObjectStoreIO", "is_precondition_failure"]


def is_precondition_failure(error: BaseException) -> bool:
    """Whether a conditional upload was refused because the key exists."""
    text = str(error)
    return ("PreconditionFailed" in text or "(412)" in text or "At least one of the pre" in text
            or "FileAlreadyExists" in text  # OSS x-oss-forbid-overwrite: 409
            or "conditionNotMet" in text or "412" in text.split(":", 1)[0])


class ObjectStoreIO(FsspecIO):
    """An object store (module docstring)."""

    lists_flat: ClassVar[bool] = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: (raw root, directory -> entries) while :meth:`flat_listing` serves listings below root
        self._flat: tuple[str, dict[str, dict[str, FileStatus]]] | None = None

    # -- listing ---------------------------------------------------------------------------
    def _find_all(self, raw_root: str, segments_max: int | None, page_keys: int | None) -> dict[str, dict[str, Any]]:
        """Every object below ``raw_root``, as ``fs.find(detail=True)`` answers."""
        found: dict[str, dict[str, Any]] = self._call(
            lambda: self.fs.find(raw_root, detail=True, withdirs=False), RequestKind.LIST)
        return found

    @contextmanager
    def flat_listing(self, root: str, *, segments_max: int | None = None,
                     page_keys: int | None = None) -> Iterator[None]:
        if self._flat is not None:
            yield
            return
        raw_root = self.raw(root).rstrip("/")
        try:
            found = self._find_all(raw_root, segments_max, page_keys)
        except FileNotFoundError:
            found = {}
        top = raw_root.lstrip("/")
        children: dict[str, dict[str, FileStatus]] = defaultdict(dict)
        for info in found.values():
            if info.get("type") == "directory":
                continue
            name = str(info["name"]).rstrip("/").lstrip("/")
            if not name.startswith(top + "/"):
                continue
            if is_marker(info):
                children.setdefault(name, {})
            else:
                children[parent(name)][basename(name)] = self.status_from(info)
            child = parent(name) if not is_marker(info) else name
            while child != top and len(child) > len(top):
                up = parent(child)
                entry = children[up]
                if basename(child) in entry:
                    break
                entry[basename(child)] = FileStatus(self.uri(child), 0, 0, True)
                child = up
        self._flat = (top, dict(children))
        try:
            yield
        finally:
            self._flat = None

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
        listed = self._listed(self.raw(path).rstrip("/"))
        if listed is not None:
            return listed
        return super().list_dir(path)

    def keys_under(self, path: str) -> list[str]:
        """Every object below ``path``, directory markers included."""
        raw = self.raw(path).rstrip("/")
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
                out.append(self.uri(name))
        return out

    def _keys_telling_empty(self, path: str) -> list[str]:
        """Keys below ``path``, enough of them to tell "only its marker" (here: all)."""
        return self.keys_under(path)

    # -- writing ---------------------------------------------------------------------------
    def write_new(self, path: str, payload: bytes) -> None:
        """An existence check, then the conditional upload (module docstring): the store refuses
        it when the key exists, so two racing writers cannot both win. The pre-check keeps
        stores that silently ignore the condition (some S3-compatible servers) from overwriting
        a file that existed before the call; only a race inside that window remains unprotected
        on such stores. A store that rejects the condition outright fails the write (fail
        closed). A retried upload that finds the key present reports ``FileExistsError`` too."""
        raw = self.raw(path)
        if self.exists(path):  # a file, or a directory (prefix) of that name
            raise FileExistsError(path)
        try:
            self._call(lambda: self.fs.pipe_file(raw, payload, mode="create"), RequestKind.PUT)
        except FileExistsError:
            raise FileExistsError(path) from None
        except Exception as e:  # botocore PreconditionFailed surfaces as OSError/ClientError
            if is_precondition_failure(e):
                raise FileExistsError(path) from e
            raise
        finally:
            self.invalidate(raw)

    def rename(self, src: str, dst: str) -> None:
        """A file: copied with create-if-absent, then the source deleted (not atomic: a crash in
        between leaves both); a directory prefix: copied key by key (``mv``) after the check."""
        if self.exists(dst):
            raise FileExistsError(dst)
        status = self.stat(src)
        if status.is_dir:
            self._call(lambda: self.fs.mv(self.raw(src), self.raw(dst), recursive=True), RequestKind.COPY)
            self.invalidate(self.raw(src))
            self.invalidate(self.raw(dst))
            return
        self.write_new(dst, self.read_bytes(src))
        result = self.delete_batch([src])[0]
        if result.outcome == DeleteOutcome.FAILED:
            raise errors.StorageError(f"renamed {src} to {dst} but could not delete the source: {result.error}",
                                      fix="delete the source file by hand")

    def copy_file(self, src: str, dst: str) -> None:
        """One server-side copy (GCS rewrite, Azure copy from URL: the bytes never leave the
        store); ``dst`` is replaced if it exists. File to file (``cp_file``): fsspec's generic
        ``copy`` first asks whether ``dst`` is a directory, a LIST per file."""
        raw_src, raw_dst = self.raw(src), self.raw(dst)
        try:
            self._call(lambda: self.fs.cp_file(raw_src, raw_dst), RequestKind.COPY)
        except FileNotFoundError:
            raise FileNotFoundError(src) from None
        finally:
            self.invalidate(raw_dst)

    def move_file(self, src: str, dst: str) -> None:
        """A check of ``dst`` (one HEAD), :meth:`copy_file`, then the source deleted: not atomic
        (a crash between copy and delete leaves both; the trash's rerun tells them equal)."""
        if self.file_exists(dst):
            raise FileExistsError(dst)
        self.copy_file(src, dst)
        result = self.delete_batch([src])[0]
        self.invalidate(self.raw(src))
        if result.outcome == DeleteOutcome.FAILED:
            raise errors.StorageError(f"copied {src} to {dst} but could not delete the source: {result.error}",
                                      fix="rerun the same command: it finishes the move")

    def mkdirs(self, path: str) -> None:
        """Nothing: a prefix exists once a key below it does."""

    # -- deleting --------------------------------------------------------------------------
    def delete_empty_dir(self, path: str) -> bool:
        """A prefix holding nothing but its own marker counts as an empty directory and the
        marker is deleted; a prefix with any other object is left alone."""
        marker = self.raw(path).rstrip("/") + "/"
        keys = self._keys_telling_empty(path)
        if [self.raw(k).lstrip("/") for k in keys] != [marker.lstrip("/")]:
            return False
        return self.delete_batch(keys)[0].outcome == DeleteOutcome.DELETED

    def delete_tree(self, path: str) -> None:
        """Every key below the prefix, directory markers included."""
        keys = self.keys_under(path)
        failed: list[DeleteResult] = []
        for start in range(0, len(keys), values.DELETE_BATCH_MAX):
            batch = keys[start:start + values.DELETE_BATCH_MAX]
            failed.extend(r for r in self.delete_batch(batch) if r.outcome == DeleteOutcome.FAILED)
        if failed:
            raise errors.StorageError(f"could not delete {failed[0].path}: {failed[0].error}",
                                      fix="check permissions and retry")
