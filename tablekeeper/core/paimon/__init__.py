"""Paimon's on-disk formats and the table handle: the layout of a table's directories, the JSON
metadata files (:mod:`.metadata`), manifests (:mod:`.manifests`), partition paths, table
options as ``ALTER TABLE ... SET`` writes them, and the pypaimon adapters (:mod:`.pypaimon`, the
only modules that import pypaimon).

It decides how Paimon's files are read and written, byte for byte as Paimon does; what may be
deleted is decided above it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "CHANGELOG_DIR": "layout",
    "CHANGELOG_PREFIX": "layout",
    "CONSUMER_DIR": "layout",
    "EARLIEST": "metadata",
    "INDEX_DIR": "layout",
    "LATEST": "metadata",
    "MAIN": "layout",
    "MANIFEST_DIR": "layout",
    "SCHEMA_DIR": "layout",
    "SCHEMA_PREFIX": "layout",
    "SNAPSHOT_DIR": "layout",
    "SNAPSHOT_PREFIX": "layout",
    "STATISTICS_DIR": "layout",
    "Snapshot": "metadata",
    "TAG_DIR": "layout",
    "Table": "table",
    "Tag": "metadata",
    "alter_options": "table_options",
    "branch_root": "layout",
    "decode_hint": "metadata",
    "diff_options": "table_options",
    "encode_hint": "metadata",
    "open_table": "table",
    "open_table_path": "table",
    "options_hash": "table_options",
    "parse_versioned_name": "layout",
    "table_path": "table",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.paimon.layout import CHANGELOG_DIR as CHANGELOG_DIR
    from tablekeeper.core.paimon.layout import CHANGELOG_PREFIX as CHANGELOG_PREFIX
    from tablekeeper.core.paimon.layout import CONSUMER_DIR as CONSUMER_DIR
    from tablekeeper.core.paimon.layout import INDEX_DIR as INDEX_DIR
    from tablekeeper.core.paimon.layout import MAIN as MAIN
    from tablekeeper.core.paimon.layout import MANIFEST_DIR as MANIFEST_DIR
    from tablekeeper.core.paimon.layout import SCHEMA_DIR as SCHEMA_DIR
    from tablekeeper.core.paimon.layout import SCHEMA_PREFIX as SCHEMA_PREFIX
    from tablekeeper.core.paimon.layout import SNAPSHOT_DIR as SNAPSHOT_DIR
    from tablekeeper.core.paimon.layout import SNAPSHOT_PREFIX as SNAPSHOT_PREFIX
    from tablekeeper.core.paimon.layout import STATISTICS_DIR as STATISTICS_DIR
    from tablekeeper.core.paimon.layout import TAG_DIR as TAG_DIR
    from tablekeeper.core.paimon.layout import branch_root as branch_root
    from tablekeeper.core.paimon.layout import parse_versioned_name as parse_versioned_name
    from tablekeeper.core.paimon.metadata import EARLIEST as EARLIEST
    from tablekeeper.core.paimon.metadata import LATEST as LATEST
    from tablekeeper.core.paimon.metadata import Snapshot as Snapshot
    from tablekeeper.core.paimon.metadata import Tag as Tag
    from tablekeeper.core.paimon.metadata import decode_hint as decode_hint
    from tablekeeper.core.paimon.metadata import encode_hint as encode_hint
    from tablekeeper.core.paimon.table import Table as Table
    from tablekeeper.core.paimon.table import open_table as open_table
    from tablekeeper.core.paimon.table import open_table_path as open_table_path
    from tablekeeper.core.paimon.table import table_path as table_path
    from tablekeeper.core.paimon.table_options import alter_options as alter_options
    from tablekeeper.core.paimon.table_options import diff_options as diff_options
    from tablekeeper.core.paimon.table_options import options_hash as options_hash
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
