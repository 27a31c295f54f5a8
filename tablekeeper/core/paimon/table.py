"""The table handle: one Paimon table on one branch, read through our FileIO.

Opened by warehouse + ``db.table`` or by table path. Branch-aware: ``main`` is the table root,
other branches live under ``branch/branch-<name>/``. Reads follow Java's rules (hint trust,
versioned-file listing); writes are create-if-absent for snapshot/tag files.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tablekeeper.core import errors, values
from tablekeeper.core.paimon import layout, metadata
from tablekeeper.core.paimon.metadata import Snapshot, TableSchema, Tag
from tablekeeper.core.storage import FileIO, join

if TYPE_CHECKING:  # read by expirations only: imported by :meth:`Table.consumers`
    from tablekeeper.core.paimon.metadata import Consumer

__all__ = ["Table", "open_table", "open_table_path", "table_path"]


def table_path(warehouse: str, identifier: str) -> str:
    """``<warehouse>/<db>.db/<table>`` for ``db.table``."""
    parts = identifier.split(".")
    if len(parts) != 2 or not all(parts) or any("/" in p or "\\" in p or ".." in p for p in parts):
        raise errors.InvalidInputError(
            f"table identifier {identifier!r} is not 'database.table'",
            fix="name the table as database.table, e.g. sales.orders",
        )
    return join(warehouse, f"{parts[0]}.db", parts[1])


def open_table(warehouse: str, identifier: str, *, branch: str = layout.MAIN,
               options: Mapping[str, Any] | None = None, file_io: FileIO | None = None) -> Table:
    """Open ``db.table`` in a filesystem-catalog warehouse.

    Raises:
        TableNotFoundError: the table directory has no schema.
        BranchNotFoundError: ``branch`` does not exist.
    """
    io = file_io or FileIO.for_uri(warehouse, options)
    return open_table_path(table_path(io.normalize(warehouse), identifier), branch=branch,
                           file_io=io, identifier=identifier)


def open_table_path(path: str, *, branch: str = layout.MAIN, options: Mapping[str, Any] | None = None,
                    file_io: FileIO | None = None, identifier: str | None = None) -> Table:
    io = file_io or FileIO.for_uri(path, options)
    root = io.normalize(path).rstrip("/")
    table = Table(io, root, layout.MAIN, identifier or _identifier_from_path(root))
    if not table.schema_ids():
        raise errors.TableNotFoundError(
            f"no Paimon table at {root} (no schema/ files)",
            fix="check the warehouse URI and the database.table name",
        )
    if branch != layout.MAIN:
        return table.on_branch(branch)
    return table


def _identifier_from_path(root: str) -> str:
    parts = root.rstrip("/").split("/")
    if len(parts) >= 2 and parts[-2].endswith(".db"):
        return f"{parts[-2][:-3]}.{parts[-1]}"
    return parts[-1]


#: Reads of a tag file that does not parse (a writer may be writing it in place).
_TAG_READ_ATTEMPTS = 4


@dataclass(frozen=True)
class Table:
    """One table on one branch: its root, branch and identifier, and the FileIO every read goes through."""

    file_io: FileIO
    root: str
    branch: str
    identifier: str

    # -- navigation ---------------------------------------------------------------------
    @property
    def branch_path(self) -> str:
        return layout.branch_root(self.root, self.branch)

    def dir(self, kind: str) -> str:
        """Per-branch metadata directory (snapshot, schema, tag, changelog, consumer)."""
        return join(self.branch_path, kind)

    def shared_dir(self, kind: str) -> str:
        """Shared directory at the table root (manifest, index, statistics)."""
        return join(self.root, kind)

    def on_branch(self, branch: str) -> Table:
        """The same table on another branch (which must exist)."""
        if branch == layout.MAIN:
            return Table(self.file_io, self.root, layout.MAIN, self.identifier)
        values.validate_branch_name(branch)
        other = Table(self.file_io, self.root, branch, self.identifier)
        if not self.file_io.is_dir(other.branch_path):
            raise errors.BranchNotFoundError(
                f"branch {branch!r} does not exist in {self.identifier}",
                fix=f"list branches with 'tablekeeper branch list {self.identifier}'",
            )
        return other

    # -- branches -----------------------------------------------------------------------
    def branch_names(self) -> list[str]:
        """Every branch directory ``branch/branch-*`` (main not included), sorted."""
        out = []
        for status in self.file_io.list_dir(join(self.root, layout.BRANCH_DIR)):
            if status.is_dir and status.name.startswith(layout.BRANCH_PREFIX):
                out.append(status.name[len(layout.BRANCH_PREFIX):])
        return sorted(out)

    def all_branches(self) -> list[Table]:
        return [self.on_branch(layout.MAIN)] + [
            Table(self.file_io, self.root, b, self.identifier) for b in self.branch_names()
        ]

    # -- snapshots ----------------------------------------------------------------------
    def _versioned(self, kind: str, prefix: str) -> list[int]:
        ids = []
        for status in self.file_io.list_dir(self.dir(kind)):
            if status.is_dir:
                continue
            number = layout.parse_versioned_name(status.name, prefix)
            if number is not None:
                ids.append(number)
        return sorted(ids)

    def snapshot_ids(self) -> list[int]:
        return self._versioned(layout.SNAPSHOT_DIR, layout.SNAPSHOT_PREFIX)

    def changelog_ids(self) -> list[int]:
        return self._versioned(layout.CHANGELOG_DIR, layout.CHANGELOG_PREFIX)

    def snapshot_path(self, snapshot_id: int) -> str:
        return join(self.dir(layout.SNAPSHOT_DIR), f"{layout.SNAPSHOT_PREFIX}{snapshot_id}")

    def changelog_path(self, snapshot_id: int) -> str:
        return join(self.dir(layout.CHANGELOG_DIR), f"{layout.CHANGELOG_PREFIX}{snapshot_id}")

    def snapshot_exists(self, snapshot_id: int) -> bool:
        return self.file_io.file_exists(self.snapshot_path(snapshot_id))

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """Read ``snapshot-<id>``. Raises SnapshotNotFoundError when absent."""
        path = self.snapshot_path(snapshot_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise errors.SnapshotNotFoundError(
                f"snapshot {snapshot_id} does not exist on branch {self.branch!r} of {self.identifier}",
                fix=f"list snapshots with 'tablekeeper show {self.identifier}'",
            ) from None
        return Snapshot.from_json(data, what=path)

    def changelog(self, snapshot_id: int) -> Snapshot:
        path = self.changelog_path(snapshot_id)
        return Snapshot.from_json(self.file_io.read_bytes(path), what=path)

    def read_hint(self, kind: str, name: str) -> int | None:
        try:
            return metadata.decode_hint(self.file_io.read_bytes(join(self.dir(kind), name)))
        except FileNotFoundError:
            return None

    def latest_snapshot_id(self) -> int | None:
        """Java's findLatest: trust LATEST only if LATEST+1 does not exist."""
        hint = self.read_hint(layout.SNAPSHOT_DIR, metadata.LATEST)
        if hint is not None and self.snapshot_exists(hint) and not self.snapshot_exists(hint + 1):
            return hint
        ids = self.snapshot_ids()
        return ids[-1] if ids else None

    def earliest_snapshot_id(self) -> int | None:
        """Java's findEarliest: trust EARLIEST only if that snapshot exists."""
        hint = self.read_hint(layout.SNAPSHOT_DIR, metadata.EARLIEST)
        if hint is not None and self.snapshot_exists(hint):
            return hint
        ids = self.snapshot_ids()
        return ids[0] if ids else None

    def latest_snapshot(self) -> Snapshot | None:
        latest = self.latest_snapshot_id()
        return None if latest is None else self.snapshot(latest)

    def snapshots(self) -> list[Snapshot]:
        """Every existing snapshot, ascending; files vanishing meanwhile are skipped."""
        out = []
        for sid in self.snapshot_ids():
            try:
                out.append(self.snapshot(sid))
            except errors.SnapshotNotFoundError:
                continue
        return out

    # -- schemas ------------------------------------------------------------------------
    def schema_ids(self) -> list[int]:
        return self._versioned(layout.SCHEMA_DIR, layout.SCHEMA_PREFIX)

    def schema_path(self, schema_id: int) -> str:
        return join(self.dir(layout.SCHEMA_DIR), f"{layout.SCHEMA_PREFIX}{schema_id}")

    def schema(self, schema_id: int | None = None) -> TableSchema:
        """The given schema, or the latest one of this branch."""
        if schema_id is None:
            ids = self.schema_ids()
            if not ids:
                raise errors.TableNotFoundError(
                    f"branch {self.branch!r} of {self.identifier} has no schema",
                    fix="the branch directory is damaged; inspect it manually",
                )
            schema_id = ids[-1]
        path = self.schema_path(schema_id)
        try:
            return TableSchema.from_json(self.file_io.read_bytes(path), what=path)
        except FileNotFoundError:
            raise errors.NotFoundError(f"schema {schema_id} not found at {path}",
                                       fix="restore the schema file") from None

    def options(self) -> dict[str, str]:
        """Options of the latest schema of this branch (what Paimon's maintenance reads)."""
        return dict(self.schema().options)

    # -- tags ---------------------------------------------------------------------------
    def tag_path(self, name: str) -> str:
        return join(self.dir(layout.TAG_DIR), f"{layout.TAG_PREFIX}{name}")

    def tag_names(self) -> list[str]:
        """Regular files named ``tag-*`` only (not ``.tag-x.crc``, not ``tag-success-file/``)."""
        out = []
        for status in self.file_io.list_dir(self.dir(layout.TAG_DIR)):
            if status.is_dir or not status.name.startswith(layout.TAG_PREFIX):
                continue
            out.append(status.name[len(layout.TAG_PREFIX):])
        return sorted(out)

    def tag(self, name: str) -> Tag:
        """Read ``tag-<name>``. Java and pypaimon write tags in place (``overwriteFileUtf8``, not
        temp + rename), so a tag being created can be read empty or cut short: an unparseable
        tag is read again a few times before it is reported (FormatError, fail closed)."""
        path = self.tag_path(name)
        for attempt in range(_TAG_READ_ATTEMPTS):
            try:
                data = self.file_io.read_bytes(path)
            except FileNotFoundError:
                raise errors.TagNotFoundError(
                    f"tag {name!r} does not exist on branch {self.branch!r} of {self.identifier}",
                    fix=f"list tags with 'tablekeeper tag list {self.identifier}'",
                ) from None
            try:
                return Tag.from_json(name, data, what=path)
            except errors.FormatError:
                if attempt + 1 == _TAG_READ_ATTEMPTS:
                    raise
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    def tag_exists(self, name: str) -> bool:
        return self.file_io.file_exists(self.tag_path(name))

    def tags(self) -> list[Tag]:
        """All tags sorted by (snapshot id, name); tags vanishing meanwhile are skipped."""
        out = []
        for name in self.tag_names():
            try:
                out.append(self.tag(name))
            except errors.TagNotFoundError:
                continue
        return sorted(out, key=lambda t: (t.snapshot_id, t.name))

    # -- consumers ----------------------------------------------------------------------
    def consumers(self) -> list[Consumer]:
        from tablekeeper.core.paimon.metadata import Consumer

        out = []
        for status in self.file_io.list_dir(self.dir(layout.CONSUMER_DIR)):
            if status.is_dir or not status.name.startswith(layout.CONSUMER_PREFIX):
                continue
            cid = status.name[len(layout.CONSUMER_PREFIX):]
            try:
                out.append(Consumer.from_json(cid, self.file_io.read_bytes(status.path), status.mtime_ms,
                                              what=status.path))
            except FileNotFoundError:
                continue
        return sorted(out, key=lambda c: c.consumer_id)
