"""Streaming reader for Paimon's Avro manifest lists, manifests and index manifests.

Every file is decoded with its own embedded writer schema and fields are picked by name,
with defaults for fields a writer did not have: Java and pypaimon name nested records
differently and write different field sets (paimon-semantics.md §1.8), so one fixed reader
schema cannot serve both. Full reads return every field; the planning projection
(``read_manifest_refs``) only what file identity, paths and deletion planning need;
``merge_live`` / ``read_snapshot_live_files`` apply Java's ``FileEntry.mergeEntries``.
Missing files raise ``FileNotFoundError``; anything unreadable raises ``FormatError``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "ADD": "records",
    "DELETE": "records",
    "DataFileMeta": "records",
    "DeletionVectorRange": "records",
    "FILE_SOURCE_APPEND": "records",
    "FILE_SOURCE_COMPACT": "records",
    "FileIdentifier": "records",
    "FileRef": "records",
    "Framed": "avro_container",
    "GlobalIndexMeta": "records",
    "IndexManifestEntry": "records",
    "MAGIC": "avro_container",
    "ManifestEntry": "records",
    "ManifestFileMeta": "records",
    "SimpleStats": "records",
    "decompress": "avro_container",
    "entry_identifier": "merge",
    "frame": "avro_container",
    "gc_paused": "decoding",
    "merge_entries": "merge",
    "merge_kinds": "merge",
    "merge_live": "merge",
    "merge_step": "merge",
    "read_index_manifest": "readers",
    "read_list_block_names": "readers",
    "read_list_blocks": "readers",
    "read_manifest": "readers",
    "read_manifest_list": "readers",
    "read_manifest_payload": "readers",
    "read_manifest_refs": "readers",
    "read_snapshot_live_files": "merge",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.paimon.manifests.avro_container import MAGIC as MAGIC
    from tablekeeper.core.paimon.manifests.avro_container import Framed as Framed
    from tablekeeper.core.paimon.manifests.avro_container import decompress as decompress
    from tablekeeper.core.paimon.manifests.avro_container import frame as frame
    from tablekeeper.core.paimon.manifests.decoding import gc_paused as gc_paused
    from tablekeeper.core.paimon.manifests.merge import entry_identifier as entry_identifier
    from tablekeeper.core.paimon.manifests.merge import merge_entries as merge_entries
    from tablekeeper.core.paimon.manifests.merge import merge_kinds as merge_kinds
    from tablekeeper.core.paimon.manifests.merge import merge_live as merge_live
    from tablekeeper.core.paimon.manifests.merge import merge_step as merge_step
    from tablekeeper.core.paimon.manifests.merge import read_snapshot_live_files as read_snapshot_live_files
    from tablekeeper.core.paimon.manifests.readers import read_index_manifest as read_index_manifest
    from tablekeeper.core.paimon.manifests.readers import read_list_block_names as read_list_block_names
    from tablekeeper.core.paimon.manifests.readers import read_list_blocks as read_list_blocks
    from tablekeeper.core.paimon.manifests.readers import read_manifest as read_manifest
    from tablekeeper.core.paimon.manifests.readers import read_manifest_list as read_manifest_list
    from tablekeeper.core.paimon.manifests.readers import read_manifest_payload as read_manifest_payload
    from tablekeeper.core.paimon.manifests.readers import read_manifest_refs as read_manifest_refs
    from tablekeeper.core.paimon.manifests.records import ADD as ADD
    from tablekeeper.core.paimon.manifests.records import DELETE as DELETE
    from tablekeeper.core.paimon.manifests.records import FILE_SOURCE_APPEND as FILE_SOURCE_APPEND
    from tablekeeper.core.paimon.manifests.records import FILE_SOURCE_COMPACT as FILE_SOURCE_COMPACT
    from tablekeeper.core.paimon.manifests.records import DataFileMeta as DataFileMeta
    from tablekeeper.core.paimon.manifests.records import DeletionVectorRange as DeletionVectorRange
    from tablekeeper.core.paimon.manifests.records import FileIdentifier as FileIdentifier
    from tablekeeper.core.paimon.manifests.records import FileRef as FileRef
    from tablekeeper.core.paimon.manifests.records import GlobalIndexMeta as GlobalIndexMeta
    from tablekeeper.core.paimon.manifests.records import IndexManifestEntry as IndexManifestEntry
    from tablekeeper.core.paimon.manifests.records import ManifestEntry as ManifestEntry
    from tablekeeper.core.paimon.manifests.records import ManifestFileMeta as ManifestFileMeta
    from tablekeeper.core.paimon.manifests.records import SimpleStats as SimpleStats
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
