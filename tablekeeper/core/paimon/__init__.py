"""Paimon's on-disk formats and the table handle: directory layout, the JSON metadata files
(``metadata``), manifests (``manifests``), partition paths, table options as ``ALTER TABLE
... SET`` writes them, and the pypaimon adapters (``pypaimon``). It reads and writes Paimon's
files as Paimon does; what may be deleted is decided above it."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"BRANCH_DIR": "layout", "branch_root": "layout", "CHANGELOG_DIR": "layout", "CHANGELOG_PREFIX": "layout",
    "CONSUMER_DIR": "layout", "CONSUMER_PREFIX": "layout", "INDEX_DIR": "layout", "MAIN": "layout",
    "MANIFEST_DIR": "layout", "parse_versioned_name": "layout", "SCHEMA_DIR": "layout", "SCHEMA_PREFIX": "layout",
    "SNAPSHOT_DIR": "layout", "SNAPSHOT_PREFIX": "layout", "STATISTICS_DIR": "layout", "TAG_DIR": "layout",
    "Consumer": "metadata", "decode_hint": "metadata", "EARLIEST": "metadata", "encode_hint": "metadata",
    "LATEST": "metadata", "Snapshot": "metadata", "Tag": "metadata", "open_table": "table",
    "open_table_path": "table", "Table": "table", "table_path": "table", "alter_options": "table_options",
    "diff_options": "table_options", "options_hash": "table_options"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .layout import (BRANCH_DIR as BRANCH_DIR, branch_root as branch_root, CHANGELOG_DIR as CHANGELOG_DIR,
        CHANGELOG_PREFIX as CHANGELOG_PREFIX, CONSUMER_DIR as CONSUMER_DIR, CONSUMER_PREFIX as CONSUMER_PREFIX,
        INDEX_DIR as INDEX_DIR, MAIN as MAIN, MANIFEST_DIR as MANIFEST_DIR,
        parse_versioned_name as parse_versioned_name, SCHEMA_DIR as SCHEMA_DIR, SCHEMA_PREFIX as SCHEMA_PREFIX,
        SNAPSHOT_DIR as SNAPSHOT_DIR, SNAPSHOT_PREFIX as SNAPSHOT_PREFIX, STATISTICS_DIR as STATISTICS_DIR,
        TAG_DIR as TAG_DIR)
    from .metadata import (Consumer as Consumer, decode_hint as decode_hint, EARLIEST as EARLIEST,
        encode_hint as encode_hint, LATEST as LATEST, Snapshot as Snapshot, Tag as Tag)
    from .table import (open_table as open_table, open_table_path as open_table_path, Table as Table,
        table_path as table_path)
    from .table_options import (alter_options as alter_options, diff_options as diff_options,
        options_hash as options_hash)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
