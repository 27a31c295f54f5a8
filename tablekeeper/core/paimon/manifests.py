"""Streaming reader for Paimon's Avro manifest lists, manifests and index manifests.

Every file is decoded with its own embedded writer schema and fields are picked by name, with
defaults for fields a writer did not have: Java and pypaimon name nested records differently and
write different field sets (paimon-semantics.md §1.8), so one fixed reader schema cannot serve
both. Three kinds of reads:

- full reads (``read_manifest_list``, ``read_manifest``, ``read_index_manifest``) return every
  field, with stats as raw BinaryRow bytes (decoding them needs the table schema and is left to
  callers that care);
- a planning projection (``read_manifest_refs``) returns only what file identity, paths and
  deletion planning need; stats, keys and sequence numbers are skipped inside fastavro's
  compiled code and never become Python objects;
- ``merge_live`` / ``read_snapshot_live_files`` apply Java's ``FileEntry.mergeEntries``.

Missing files raise ``FileNotFoundError``; anything unreadable raises ``FormatError``.
"""

from __future__ import annotations

from tablekeeper.core.paimon.manifest_merge import (
    entry_identifier,
    merge_entries,
    merge_kinds,
    merge_live,
    merge_step,
    read_snapshot_live_files,
)
from tablekeeper.core.paimon.manifest_readers import (
    read_index_manifest,
    read_list_block_names,
    read_list_blocks,
    read_manifest,
    read_manifest_list,
    read_manifest_payload,
    read_manifest_refs,
)
from tablekeeper.core.paimon.manifest_records import (
    ADD,
    DELETE,
    FILE_SOURCE_APPEND,
    FILE_SOURCE_COMPACT,
    DataFileMeta,
    DeletionVectorRange,
    FileIdentifier,
    FileRef,
    GlobalIndexMeta,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)

__all__ = [
    "ADD",
    "DELETE",
    "FILE_SOURCE_APPEND",
    "FILE_SOURCE_COMPACT",
    "SimpleStats",
    "ManifestFileMeta",
    "DataFileMeta",
    "ManifestEntry",
    "FileRef",
    "read_manifest_payload",
    "DeletionVectorRange",
    "GlobalIndexMeta",
    "IndexManifestEntry",
    "FileIdentifier",
    "read_manifest_list",
    "read_list_block_names",
    "read_list_blocks",
    "read_manifest",
    "read_manifest_refs",
    "read_index_manifest",
    "entry_identifier",
    "merge_entries",
    "merge_step",
    "merge_kinds",
    "merge_live",
    "read_snapshot_live_files",
]
