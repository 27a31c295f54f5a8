"""The only module that imports pypaimon internals: partition-path rendering exactly as
pypaimon/Java do (Hive escaping, type-aware value strings, ``data-file.path-directory``,
index files in data directories), cached per (partition, bucket)."""

from __future__ import annotations

import json
from typing import Any

from pypaimon.schema.table_schema import TableSchema as PyTableSchema
from pypaimon.table.row.generic_row import GenericRowDeserializer
from pypaimon.utils.file_store_path_factory import FileStorePathFactory

from tablekeeper.core.paimon import manifests
from tablekeeper.core.paimon.layout import INDEX_DIR
from tablekeeper.core.paimon.table import Table
from tablekeeper.core.storage import join, parent

__all__ = ["PartitionPathResolver"]


class PartitionPathResolver:
    """Turns manifest entries into absolute file paths under a table root."""

    def __init__(self, table: Table) -> None:
        schema = table.schema()
        py_schema = PyTableSchema.from_json(json.dumps(dict(schema.raw)))
        self.root = table.root
        opts = dict(schema.options)
        by_name = {f.name: f for f in py_schema.fields}
        self._partition_fields = [by_name[k] for k in schema.partition_keys]
        self._factory = FileStorePathFactory(
            root=self.root,
            partition_keys=list(schema.partition_keys),
            partition_types=[f.type for f in self._partition_fields],
            default_part_value=opts.get("partition.default-name", "__DEFAULT_PARTITION__"),
            format_identifier=opts.get("file.format", "parquet"),
            data_file_prefix=opts.get("data-file.prefix", "data-"),
            changelog_file_prefix=opts.get("changelog-file.prefix", "changelog-"),
            legacy_partition_name=opts.get("partition.legacy-name", "true").lower() == "true",
            file_suffix_include_compression=False,
            file_compression=opts.get("file.compression", "zstd"),
            data_file_path_directory=opts.get("data-file.path-directory"),
            index_file_in_data_file_dir=opts.get("index-file-in-data-file-dir", "false").lower() == "true",
        )
        self._dirs: dict[tuple[bytes, int], str] = {}

    def _values(self, partition: bytes) -> tuple[Any, ...]:
        if not self._partition_fields:
            return ()
        return tuple(GenericRowDeserializer.from_bytes(partition, self._partition_fields).values)

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        key = (partition, bucket)
        cached = self._dirs.get(key)
        if cached is None:
            rel = self._factory.relative_bucket_path(self._values(partition), bucket, canonical_partition=True)
            if "://" in rel or rel.startswith(("/", "file:")):
                cached = rel.replace("file:", "", 1) if rel.startswith("file:") and "://" not in rel else rel
            else:
                cached = join(self.root, rel.removeprefix("./"))
            self._dirs[key] = cached
        return cached

    def file_paths(self, ref: manifests.FileRef) -> list[str]:
        """The data file and its extra files (file-index files sit next to it)."""
        if ref.external_path:
            base = ref.external_path
            directory = parent(base)
        else:
            directory = self.bucket_dir(ref.partition, ref.bucket)
            base = join(directory, ref.file_name)
        return [base] + [join(directory, extra) for extra in ref.extra_files]

    def index_file_path(self, entry: manifests.IndexManifestEntry) -> str:
        if entry.external_path:
            return entry.external_path
        if self._factory.index_file_in_data_file_dir:
            return join(self.bucket_dir(entry.partition, entry.bucket), entry.file_name)
        return join(self.root, INDEX_DIR, entry.file_name)
