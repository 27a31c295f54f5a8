"""Fail closed on metadata from a newer Paimon before a branch command changes anything.

Branch commands move or delete metadata files without reading them all (a drop removes a
directory, a fast-forward replaces main's newest snapshots). A snapshot, tag or schema in a
format this version does not know (issue 13: unknown ``version``) may mean something these
moves would break, so every one of them is parsed first: parsing checks the format version
(``Snapshot.from_json``, ``TableSchema.from_json``) and raises ``FormatError`` naming the file.
"""

from __future__ import annotations

from collections.abc import Iterable

from tablekeeper.core import errors, paimon
from tablekeeper.core.paimon import Table

__all__ = ["check_formats", "check_latest"]


def check_formats(table: Table, branches: Iterable[str]) -> None:
    """Parse every snapshot, tag and schema of main and of ``branches``.

    Returns the schema ids it listed (so a caller reads the latest schema's options without
    listing again).

    Raises:
        FormatError: a file of an unknown format version (nothing was changed).
    """
    main = table.on_branch(paimon.MAIN)
    for name in dict.fromkeys([paimon.MAIN, *branches]):
        t = main.on_branch(name)
        for sid in t.snapshot_ids():
            t.snapshot(sid)
        for sid in t.schema_ids():
            t.schema(sid)
        t.tags()


def check_latest(table: Table) -> list[int]:
    """The cheap guard every destructive command runs first: the latest snapshot and every
    schema of ``table``'s branch parse (a newer writer shows there first; the files a command
    reads later are checked as they are read).

    Raises:
        FormatError: a file of an unknown format version (nothing was changed).
    """
    latest = table.latest_snapshot_id()
    if latest is not None:
        try:
            table.snapshot(latest)
        except errors.SnapshotNotFoundError:
            pass  # expired meanwhile: the command reads what is there
    ids = list(table.schema_ids())
    for sid in ids:
        table.schema(sid)
    return ids
