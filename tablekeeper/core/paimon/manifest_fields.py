"""Fail closed on manifests of a newer format (issue 13): every field a manifest entry and its
data file may carry, as Java Paimon (up to 1.4) and pypaimon 2.1 write them. A field outside
these comes from a format this version cannot read safely: it may change which files an entry
references, so maintaining the table could delete what a reader still needs."""

from __future__ import annotations

from typing import Final

from tablekeeper.core import errors
from tablekeeper.core.paimon.manifest_decoding import ENTRY_TOP_REQUIRED, SchemaInfo

__all__ = ["KNOWN_ENTRY_FIELDS", "KNOWN_FILE_FIELDS", "reject_unknown_entry_fields"]

KNOWN_ENTRY_FIELDS: Final = frozenset(ENTRY_TOP_REQUIRED)
KNOWN_FILE_FIELDS: Final = frozenset({
    "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS", "_VALUE_STATS",
    "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL", "_EXTRA_FILES", "_CREATION_TIME",
    "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX", "_FILE_SOURCE", "_VALUE_STATS_COLS", "_EXTERNAL_PATH",
    "_FIRST_ROW_ID", "_WRITE_COLS", "_WRITE_COLS_SEQUENCES",
})


def reject_unknown_entry_fields(info: SchemaInfo, path: str, what: str) -> None:
    """Raises FormatError naming the file and the unknown fields of its writer schema."""
    unknown = sorted(set(info.fields) - KNOWN_ENTRY_FIELDS)
    unknown += sorted(f"_FILE.{n}" for n in set(info.file_fields or ()) - KNOWN_FILE_FIELDS)
    if unknown:
        raise errors.FormatError(
            f"{path}: unsupported {what} format (unknown field(s) {', '.join(unknown)})",
            fix="the file was written by a newer Paimon; upgrade tablekeeper before maintaining this table "
                "(nothing was changed)")
