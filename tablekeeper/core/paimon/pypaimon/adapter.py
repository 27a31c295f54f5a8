"""The only module that imports pypaimon (an import-linter contract enforces it).

pypaimon 2.1.0 renders partition directories exactly as Java does (Hive escaping, type-aware
value strings, legacy date/timestamp names, ``partition.default-name``, ``data-file.path-
directory``) and stays the reference for them. Its internals are not public API, so they are used
here only, behind a small typed surface, and pinned by the compatibility tests in ``tests/compat``.

pypaimon is imported only when it is needed, not with this module: it pulls in pyarrow, numpy and
requests (about half a second). The common partition types (strings, integers, booleans, dates)
are rendered by :mod:`.partition_paths` without it; that renderer declines everything it is not
sure of (then pypaimon renders), and ``tests/unit/test_partition_paths.py`` compares it with
pypaimon's path factory over generated values and on Java-written tables, so the rules have one
reference and a checked copy rather than two places to drift. A CLI command that never resolves
a data path (orphan cleanup, tag and branch commands, ``--help``), and an expiration of a table
with common partition types, never import pypaimon.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tablekeeper.core import errors
from tablekeeper.core.paimon import manifests, partition_paths
from tablekeeper.core.paimon.layout import INDEX_DIR
from tablekeeper.core.paimon.metadata import TableSchema
from tablekeeper.core.paimon.table import Table, open_table_path
from tablekeeper.core.storage import FileIO, join, parent

__all__ = ["PartitionPathResolver", "data_file_path", "index_file_path"]

#: Index types Java/pypaimon keep per bucket (in the bucket directory with
#: ``index-file-in-data-file-dir``); every other type is a global index under ``index/``.
_BUCKET_INDEX_TYPES = frozenset({"HASH", "DELETION_VECTORS"})


def _local_form(path: str) -> str:
    """``file:/x`` and ``file:///x`` -> ``/x`` (what our FileIO lists); other URIs unchanged."""
    if path.startswith("file://"):
        rest = path[len("file://"):]
        return rest if rest.startswith("/") else "/" + rest.split("/", 1)[-1]
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


class PartitionPathResolver:
    """Maps manifest entries of one table to file paths, as pypaimon and Java do.

    Built from a table handle, or from a table root plus its schema (no I/O) or storage options
    (reads the latest schema). Bucket directories are cached per (partition bytes, bucket):
    one table has few of them and planners ask for the same ones over and over.
    """

    def __init__(self, table: Table | str, *, schema: TableSchema | None = None,
                 options: Mapping[str, Any] | None = None, file_io: FileIO | None = None) -> None:
        if isinstance(table, Table):
            root = table.root
            schema = schema or table.schema()
        else:
            root = table.rstrip("/")
            if schema is None:
                schema = open_table_path(root, options=options, file_io=file_io).schema()
        self.root = root
        self.schema = schema
        self._values: dict[bytes, tuple[Any, ...]] = {}
        self._relative: dict[tuple[bytes, int], str] = {}
        self._dirs: dict[tuple[bytes, int], str] = {}
        self._factory: Any = None
        columns = {f.get("name") for f in schema.raw.get("fields") or () if isinstance(f, dict)}
        missing = [k for k in schema.partition_keys if k not in columns]
        if missing:
            raise errors.FormatError(f"partition key {missing[0]!r} of {root} is not a column",
                                     fix="check the schema file")
        self._fast = partition_paths.PartitionRenderer.of(schema)
        self._under_root = self._fast is not None and partition_paths.renders_under(root)
        if self._fast is None:
            self._build_factory()  # pypaimon renders every directory (and judges the schema now)
            self.index_file_in_data_file_dir: bool = self._index_in_data_dir
        else:
            self.index_file_in_data_file_dir = self._fast.index_in_data_dir

    def _build_factory(self) -> Any:
        """pypaimon's path factory for this schema (built once, on first need)."""
        if self._factory is not None:
            return self._factory
        from pypaimon.common.options.core_options import CoreOptions
        from pypaimon.common.options.options import Options
        from pypaimon.schema.table_schema import TableSchema as PyTableSchema
        from pypaimon.utils.file_store_path_factory import FileStorePathFactory

        root, schema = self.root, self.schema
        try:
            py_schema = PyTableSchema.from_json(json.dumps(dict(schema.raw)))
        except Exception as e:  # pypaimon wraps every parse problem in RuntimeError
            raise errors.FormatError(f"schema {schema.id} of {root} cannot be parsed by pypaimon: {e}",
                                     fix="check the schema file") from e
        by_name = {f.name: f for f in py_schema.fields}
        try:
            self._partition_fields = [by_name[k] for k in schema.partition_keys]
        except KeyError as e:
            raise errors.FormatError(f"partition key {e} of {root} is not a column",
                                     fix="check the schema file") from e
        core = CoreOptions(Options(dict(schema.options)))
        factory = FileStorePathFactory(
            root=root,
            partition_keys=list(schema.partition_keys),
            partition_types=[f.type for f in self._partition_fields],
            default_part_value=core.options.get(CoreOptions.PARTITION_DEFAULT_NAME, "__DEFAULT_PARTITION__"),
            format_identifier=core.file_format(),
            data_file_prefix="data-",
            changelog_file_prefix="changelog-",
            legacy_partition_name=core.options.get(CoreOptions.PARTITION_GENERATE_LEGACY_NAME),
            file_suffix_include_compression=False,
            file_compression=core.file_compression(),
            data_file_path_directory=core.data_file_path_directory(),
            index_file_in_data_file_dir=bool(core.index_file_in_data_file_dir()),
        )
        self._index_in_data_dir = bool(core.index_file_in_data_file_dir())
        self._factory = factory
        return factory

    def partition_values(self, partition: bytes) -> tuple[Any, ...]:
        """Python values of a serialized partition row (pypaimon's BinaryRow decoding)."""
        cached = self._values.get(partition)
        if cached is None:
            self._build_factory()
            if not self._partition_fields:
                cached = ()
            else:
                from pypaimon.table.row.generic_row import GenericRowDeserializer

                try:
                    row = GenericRowDeserializer.from_bytes(partition, self._partition_fields)
                except Exception as e:
                    raise errors.FormatError(
                        f"partition bytes {partition.hex()} do not match the partition keys "
                        f"{list(self.schema.partition_keys)} of {self.root}: {e}",
                        fix="the manifest entry is damaged or written under another schema") from e
                cached = tuple(row.values)
            self._values[partition] = cached
        return cached

    def relative_bucket_dir(self, partition: bytes, bucket: int) -> str:
        """``k1=v1/k2=v2/bucket-N`` (with ``data-file.path-directory`` in front if set)."""
        key = (partition, bucket)
        cached = self._relative.get(key)
        if cached is None:
            cached = self._fast.relative_bucket_dir(partition, bucket) if self._fast is not None else None
            if cached is None:
                cached = self.pypaimon_relative_bucket_dir(partition, bucket)
            self._relative[key] = cached
        return cached

    def pypaimon_relative_bucket_dir(self, partition: bytes, bucket: int) -> str:
        """:meth:`relative_bucket_dir` as pypaimon renders it (the reference; not cached)."""
        rel = self._build_factory().relative_bucket_path(self.partition_values(partition), bucket,
                                                         canonical_partition=True)
        return str(rel).removeprefix("./")

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        """Absolute bucket directory in the form our FileIO uses."""
        key = (partition, bucket)
        cached = self._dirs.get(key)
        if cached is None:
            relative = self._fast.relative_bucket_dir(partition, bucket) if self._under_root and self._fast else None
            cached = self.root + "/" + relative if relative is not None else self.pypaimon_bucket_dir(partition, bucket)
            self._dirs[key] = cached
        return cached

    def pypaimon_bucket_dir(self, partition: bytes, bucket: int) -> str:
        """:meth:`bucket_dir` as pypaimon renders it (the reference; not cached)."""
        absolute = self._build_factory().bucket_path(self.partition_values(partition), bucket, canonical_partition=True)
        return _local_form(str(absolute)) if not self.root.startswith("file:") else str(absolute)

    def data_file_path(self, ref: manifests.FileRef) -> str:
        """Where the data file is: its external path when set, else ``bucket dir/name``."""
        if ref.external_path:
            return _local_form(ref.external_path)
        return join(self.bucket_dir(ref.partition, ref.bucket), ref.file_name)

    def extra_file_paths(self, ref: manifests.FileRef) -> list[str]:
        """Extra files (file indexes) sit next to the data file, in its external directory if any."""
        directory = (parent(_local_form(ref.external_path)) if ref.external_path
                     else self.bucket_dir(ref.partition, ref.bucket))
        return [join(directory, name) for name in ref.extra_files]

    def file_paths(self, ref: manifests.FileRef) -> list[str]:
        """The data file followed by its extra files."""
        if not ref.external_path and not ref.extra_files:  # the common case, in one step
            directory = self._dirs.get((ref.partition, ref.bucket)) or self.bucket_dir(ref.partition, ref.bucket)
            return [join(directory, ref.file_name)]
        return [self.data_file_path(ref), *self.extra_file_paths(ref)]

    def sole_path(self, ref: manifests.FileRef) -> str | None:
        """``file_paths(ref)[0]`` when that is the only path (no external path, no extra files:
        almost every data file), else None; without building a list per file (planners ask
        this ~100k times per large expiration)."""
        if ref.external_path or ref.extra_files:
            return None
        name = ref.file_name
        directory = self._dirs.get((ref.partition, ref.bucket)) or self.bucket_dir(ref.partition, ref.bucket)
        if name and name[0] != "/" and name[-1] != "/" and directory[-1:] != "/":
            return directory + "/" + name  # what join() gives for these
        return join(directory, name)

    def index_file_path(self, entry: manifests.IndexManifestEntry) -> str:
        """Where an index file is: its external path when set; HASH and deletion-vector files in
        the bucket directory with ``index-file-in-data-file-dir``; otherwise ``<table>/index/``.

        pypaimon's extra lookup for float/double partitions (JDK ``Float.toString`` drift) is
        not replicated: such a directory is returned in its canonical spelling.
        """
        if entry.external_path:
            return _local_form(entry.external_path)
        if self.index_file_in_data_file_dir and entry.index_type in _BUCKET_INDEX_TYPES:
            return join(self.bucket_dir(entry.partition, entry.bucket), entry.file_name)
        return join(self.root, INDEX_DIR, entry.file_name)


def data_file_path(resolver: PartitionPathResolver, ref: manifests.FileRef) -> str:
    """Path of a data file (external path wins); see ``PartitionPathResolver.data_file_path``."""
    return resolver.data_file_path(ref)


def index_file_path(resolver: PartitionPathResolver, entry: manifests.IndexManifestEntry) -> str:
    """Path of an index file; see ``PartitionPathResolver.index_file_path``."""
    return resolver.index_file_path(entry)
