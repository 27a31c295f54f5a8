"""pypaimon's commit path on every store: a pypaimon ``FileIO`` over tablekeeper's own storage
layer, so a partition drop commits on HDFS, OSS, GCS and Azure as it does on local disk and S3.

pypaimon 2.1.0 builds its file IO from the warehouse URI (``FileIO.get``): HDFS only through
libhdfs or ``hdfs-native``, OSS through pyarrow's S3 client with virtual-hosted addressing, GCS
through pyarrow's GCS client (which takes no ``fs.gs.*`` options and, against an emulator,
retries towards Google until it hangs), and nothing at all for ``abfs://``/``wasb://``. Its
``PyArrowFileIO`` however does every operation through one ``pyarrow.fs.FileSystem`` and
``to_filesystem_path``; pyarrow wraps any fsspec filesystem as one (``PyFileSystem`` +
``FSSpecHandler``). So :class:`StoreFileIO` is a ``PyArrowFileIO`` whose filesystem is the fsspec
client tablekeeper already built from the Paimon options (same credentials, endpoint, path
mapping), and whose one commit primitive, ``try_to_write_atomic`` (the snapshot file and
LATEST hint), is tablekeeper's create-if-absent (``FileIO.write_new``): the store refuses the
write when a concurrent writer's snapshot exists, which is the atomicity Paimon's commit
relies on (pypaimon's own temp-file + rename is not atomic on object stores).
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
from pypaimon.catalog.catalog_context import CatalogContext
from pypaimon.catalog.catalog_environment import CatalogEnvironment
from pypaimon.catalog.filesystem_catalog import FileSystemCatalog
from pypaimon.common.options import Options
from pypaimon.common.uri_reader import UriReaderFactory
from pypaimon.filesystem.pyarrow_file_io import PyArrowFileIO

from tablekeeper.core.storage import FileIO, Store

__all__ = ["StoreFileIO", "store_catalog"]

#: Names of Paimon's metadata files (never directories).
_PAIMON_FILE = re.compile(r"^(?:snapshot-\d+|changelog-\d+|schema-\d+|tag-.+|LATEST|EARLIEST|"
                          r"(?:manifest|manifest-list|index-manifest)-[0-9a-f-]+-\d+)$")

#: Hint files: overwritten in place by every Paimon writer, and read by pypaimon right after it
#: asks whether they exist. (Snapshot files are asked about without a read too: the next
#: snapshot's absence, Java's findLatest; a HEAD stays the cheapest answer there.)
_HINTS = ("LATEST", "EARLIEST")

#: Paimon's metadata directories (never files).
_PAIMON_DIRS = ("schema", "snapshot", "tag", "branch", "changelog", "consumer", "manifest", "index", "statistics")

#: Stores without real directories (a "directory" is a key prefix).
_NO_DIRECTORIES = (Store.S3, Store.OSS, Store.GCS, Store.AZURE)


class StoreFileIO(PyArrowFileIO):  # type: ignore[misc]  # pypaimon is untyped
    """pypaimon's ``PyArrowFileIO`` over tablekeeper's ``FileIO`` (module docstring)."""

    def __init__(self, io: FileIO, options: dict[str, str]) -> None:
        # PyArrowFileIO.__init__ picks pyarrow's own client by scheme (the thing replaced here),
        # so its state is set explicitly instead; every other method is inherited unchanged.
        self.properties = Options(dict(options))
        self.logger = logging.getLogger(__name__)
        self._pyarrow_gte_8 = True
        self._pyarrow_gte_16 = True
        self._oss_bucket_in_endpoint = False
        self.uri_reader_factory = UriReaderFactory(self.properties)
        self._is_oss = False
        self._oss_bucket = None
        self._use_jindo = False
        self._legacy_bucket_checked = False
        self._legacy_bucket_error = None
        self._legacy_bucket_lock = threading.Lock()
        self.tk_io = io
        self.filesystem = pafs.PyFileSystem(pafs.FSSpecHandler(io.fs))

    def to_filesystem_path(self, path: str) -> str:
        """The fsspec client's path for a URI of this store (tablekeeper's mapping)."""
        return str(self.tk_io.connection.to_raw(path)) if "://" in path else path

    def new_input_stream(self, path: str) -> Any:
        """The whole file in one GET (pyarrow's ``open_input_file`` over fsspec sends a HEAD
        first); a manifest read again in the same run comes from tablekeeper's immutable-name
        cache (``FileIO.immutable_reads``): pypaimon reads each manifest of a partition drop
        about three times."""
        return pa.BufferReader(self.tk_io.read_bytes(path))

    def new_output_stream(self, path: str) -> Any:
        """On object stores straight to the key: pypaimon's parent-directory check and
        ``mkdirs`` (a HEAD, a LIST and a marker object per written file) mean nothing where
        there are no directories. HDFS and local disk keep pypaimon's behaviour."""
        if self.tk_io.store in _NO_DIRECTORIES:
            return self.filesystem.open_output_stream(self.to_filesystem_path(path))
        return super().new_output_stream(path)

    def exists(self, path: str) -> bool:
        """A Paimon file (snapshot, hint, schema, manifest, tag) in one HEAD on S3/OSS
        (``FileIO.file_exists``); a hint, which pypaimon reads right after asking, inside the
        commit's view by that read instead (no HEAD first). A metadata directory (``schema``,
        ``snapshot``, ...): one bounded LIST
        (``FileIO.dir_exists``), and the schema directory, which pypaimon lists next, by that
        listing (``FileIO.list_dir``, kept in the view). Other stores: ``FileIO.exists``."""
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if _PAIMON_FILE.match(name):
            return self.tk_io.file_exists(path, will_read=name in _HINTS)
        if self.tk_io.store in _NO_DIRECTORIES and self.tk_io.bulk_deletes and name in _PAIMON_DIRS:
            if name == "schema":
                return bool(self.tk_io.list_dir(path))
            return self.tk_io.dir_exists(path)
        return self.tk_io.exists(path)

    def list_status(self, path: str) -> list[Any]:
        """tablekeeper's listing (one LIST a page; within a :meth:`FileIO.one_view`, once):
        pypaimon lists the schema directory about ten times in one partition drop."""
        return [pafs.FileInfo(self.to_filesystem_path(s.path),
                              pafs.FileType.Directory if s.is_dir else pafs.FileType.File,
                              mtime_ns=None if s.is_dir else s.mtime_ms * 1_000_000,
                              size=None if s.is_dir else s.size)
                for s in self.tk_io.list_dir(path)]

    def try_to_write_atomic(self, path: str, content: str) -> bool:
        """Create-if-absent: False when the file (a concurrent commit's snapshot) exists. The
        LATEST and EARLIEST hints are overwritten at once: pypaimon overwrites them when the
        create-if-absent fails (it always does once the table has a hint), so the existence
        check before it would be a request for nothing."""
        if path.rstrip("/").rsplit("/", 1)[-1] in _HINTS:
            self.tk_io.overwrite(path, content)
            return True
        try:
            self.tk_io.write_new(path, content)
        except FileExistsError:
            return False
        return True

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("StoreFileIO holds a live client; build one per process")


class _StoreCatalog(FileSystemCatalog):  # type: ignore[misc]  # pypaimon is untyped
    """pypaimon's filesystem catalog over :class:`StoreFileIO`. Its tables carry no catalog
    loader: pypaimon would use one to re-create a catalog (through ``FileIO.get``, which cannot
    reach these stores) to load the latest snapshot; without it they read the snapshot files."""

    def __init__(self, warehouse: str, options: dict[str, str], file_io: FileIO | None = None) -> None:
        # FileSystemCatalog.__init__ builds pypaimon's own file IO (``FileIO.get``): replaced here.
        catalog_options = Options({"warehouse": warehouse, **options})
        self.warehouse = warehouse
        self.catalog_options = catalog_options
        self.catalog_context = CatalogContext.create_from_options(catalog_options)
        self._cache_manager = None
        self.file_io = StoreFileIO(file_io or FileIO.for_uri(warehouse, options), dict(options))

    def get_table(self, identifier: Any) -> Any:
        table = super().get_table(identifier)
        table.catalog_environment = CatalogEnvironment(identifier=table.identifier, uuid=None, catalog_loader=None,
                                                       supports_version_management=False)
        return table


def store_catalog(warehouse: str, options: dict[str, str], file_io: FileIO | None = None) -> Any:
    """A pypaimon filesystem catalog on ``warehouse`` whose tables read and commit through
    :class:`StoreFileIO` (never through ``FileIO.get``, which cannot reach these stores)."""
    return _StoreCatalog(warehouse, options, file_io)
