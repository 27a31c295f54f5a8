"""Paimon's Avro manifest lists, manifests and index manifests, read by each file's own writer
schema (fastavro's reader the judge, generated and native decoders for the hot paths),
and Java's live merge of their entries. Missing files raise FileNotFoundError,
unreadable ones FormatError; what an entry means to a root is ``reach``'s."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"decompress": "avro_container", "frame": "avro_container", "Framed": "avro_container",
    "MAGIC": "avro_container", "gc_paused": "decoding", "entry_identifier": "merge", "merge_entries": "merge",
    "merge_kinds": "merge", "merge_live": "merge", "merge_step": "merge", "read_snapshot_live_files": "merge",
    "read_index_manifest": "readers", "read_list_block_names": "readers", "read_list_blocks": "readers",
    "read_manifest": "readers", "read_manifest_list": "readers", "read_manifest_payload": "readers",
    "read_manifest_refs": "readers", "ADD": "records", "DataFileMeta": "records", "DELETE": "records",
    "DeletionVectorRange": "records", "FILE_SOURCE_APPEND": "records", "FILE_SOURCE_COMPACT": "records",
    "FileIdentifier": "records", "FileRef": "records", "GlobalIndexMeta": "records", "IndexManifestEntry": "records",
    "ManifestEntry": "records", "ManifestFileMeta": "records", "SimpleStats": "records"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .avro_container import decompress as decompress, frame as frame, Framed as Framed, MAGIC as MAGIC
    from .decoding import gc_paused as gc_paused
    from .merge import (entry_identifier as entry_identifier, merge_entries as merge_entries,
        merge_kinds as merge_kinds, merge_live as merge_live, merge_step as merge_step,
        read_snapshot_live_files as read_snapshot_live_files)
    from .readers import (read_index_manifest as read_index_manifest, read_list_block_names as read_list_block_names,
        read_list_blocks as read_list_blocks, read_manifest as read_manifest,
        read_manifest_list as read_manifest_list, read_manifest_payload as read_manifest_payload,
        read_manifest_refs as read_manifest_refs)
    from .records import (ADD as ADD, DataFileMeta as DataFileMeta, DELETE as DELETE,
        DeletionVectorRange as DeletionVectorRange, FILE_SOURCE_APPEND as FILE_SOURCE_APPEND,
        FILE_SOURCE_COMPACT as FILE_SOURCE_COMPACT, FileIdentifier as FileIdentifier, FileRef as FileRef,
        GlobalIndexMeta as GlobalIndexMeta, IndexManifestEntry as IndexManifestEntry, ManifestEntry as ManifestEntry,
        ManifestFileMeta as ManifestFileMeta, SimpleStats as SimpleStats)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
