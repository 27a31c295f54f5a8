"""HDFS over WebHDFS (fsspec's client). Directories are real, and the NameNode decides:

- create-if-absent is a two-step ``CREATE`` with ``overwrite=false`` (the NameNode refuses an
  existing file atomically);
- a rename is the NameNode's atomic ``RENAME``;
- a delete is a ``DELETE`` with ``recursive=false`` (a directory is never removed as a file), one
  a file, in parallel; an empty directory is removed the same way (refused when not empty).
"""

from __future__ import annotations

from typing import Any

from tablekeeper.core.storage.backends.fsspec_io import FsspecIO
from tablekeeper.core.storage.layers import RequestKind

__all__ = ["HdfsIO"]


class HdfsIO(FsspecIO):
    """HDFS (module docstring)."""

    has_buckets = False

    def write_new(self, path: str, payload: bytes) -> None:
        raw = self.raw(path)
        self._call(lambda: self._create(path, raw, payload), RequestKind.PUT)

    def _create(self, path: str, raw: str, payload: bytes) -> None:
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

    def rename(self, src: str, dst: str) -> None:
        """After a check: HDFS moves a source *into* an existing directory."""
        if self.exists(dst):
            raise FileExistsError(dst)
        fs: Any = self.fs
        raw_src, raw_dst = self.raw(src), self.raw(dst)
        done = self._call(lambda: fs._call("RENAME", "put", raw_src, destination=raw_dst).json(), RequestKind.COPY)
        if not done.get("boolean"):
            if self.exists(dst):
                raise FileExistsError(dst)
            raise FileNotFoundError(src)

    def mkdirs(self, path: str) -> None:
        raw = self.raw(path)
        self._call(lambda: self.fs.makedirs(raw, exist_ok=True), RequestKind.PUT)

    def remove(self, raw: str) -> bool:
        self.calls.note(RequestKind.DELETE)
        fs: Any = self.fs
        return bool(fs._call("DELETE", method="delete", path=raw, recursive="false").json().get("boolean"))

    def delete_empty_dir(self, path: str) -> bool:
        """A non-recursive DELETE of a directory, which the NameNode refuses when it is not empty."""
        if not self.is_dir(path):
            return False
        try:
            return self.remove(self.raw(path))
        except Exception:
            return False

    def delete_tree(self, path: str) -> None:
        raw = self.raw(path)
        self._call(lambda: self.fs.rm(raw, recursive=True), RequestKind.DELETE)
