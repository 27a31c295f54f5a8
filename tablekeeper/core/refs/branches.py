"""Branches: create (from tag / snapshot / empty), drop, fast-forward into main, replace main,
rename, list (the ``$branches`` columns plus the derived fork point).

Layout and semantics follow Java's FileSystemBranchManager (paimon-semantics.md §4). Metadata
is copied as bytes (never re-serialised), so Java fields and nanoseconds survive. Every
multi-file operation computes its target state from storage and skips what is already done,
so a rerun after a crash finishes the job."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from tablekeeper.core import errors, paimon, values
from tablekeeper.core.paimon import Table
from tablekeeper.core.refs import forks
from tablekeeper.core.safety import concurrency, trash
from tablekeeper.core.storage import join

__all__ = [
    "BranchRow", "BranchChange", "list_branches", "create_branch", "drop_branch", "fast_forward",
    "replace_main", "rename_branch", "fork_tag_name",
]


@dataclass(frozen=True)
class BranchRow:
    branch_name: str
    create_time: datetime
    from_tag: str | None
    fork_snapshot_id: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "branch_name": self.branch_name,
            "create_time": self.create_time.isoformat(timespec="milliseconds"),
            "from_tag": self.from_tag,
            "fork_snapshot_id": self.fork_snapshot_id,
        }


@dataclass(frozen=True)
class BranchChange:
    """What an operation did (or would do, with ``dry_run``): files written and deleted."""

    action: str
    branch: str
    written: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    #: the size of each deleted file as listed before it was deleted (None: gone already, or unknown)
    deleted_sizes: tuple[int | None, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"action": self.action, "branch": self.branch, "written": list(self.written),
                "deleted": list(self.deleted), "notes": list(self.notes)}

    def size_of(self, i: int) -> int | None:
        return self.deleted_sizes[i] if i < len(self.deleted_sizes) else None


def fork_tag_name(branch: str, snapshot_id: int) -> str:
    """The protected tag created in the source branch when branching from a snapshot id."""
    return f"fork-{branch}-{snapshot_id}"


def list_branches(table: Table) -> list[BranchRow]:
    main = table.on_branch(paimon.MAIN)
    rows = []
    for fp in forks.fork_points(main):
        path = paimon.branch_root(main.root, fp.branch)
        try:
            mtime = main.file_io.stat(path).mtime_ms
        except FileNotFoundError:
            continue
        rows.append(BranchRow(fp.branch, datetime.fromtimestamp(mtime / 1000, tz=timezone.utc),
                              fp.from_tag, fp.snapshot_id))
    return rows


def _branch_table(table: Table, name: str) -> Table:
    return Table(table.file_io, table.root, name, table.identifier)


class _Writer:
    """Collects writes/deletes; with ``dry_run`` it only records them."""

    def __init__(self, table: Table, dry_run: bool) -> None:
        self.io = table.file_io
        self.dry_run = dry_run
        self.written: list[str] = []
        self.deleted: list[str] = []
        self.sizes: list[int | None] = []

    def copy_if_absent(self, src: str, dst: str) -> None:
        """Byte copy; an existing identical target is a finished earlier step."""
        data = self.io.read_bytes(src)
        self.put_if_absent(dst, data)

    def put_if_absent(self, dst: str, data: bytes | str) -> None:
        payload = data.encode("utf-8") if isinstance(data, str) else data
        try:
            existing = None if dst in self.deleted else self.io.read_bytes(dst)
        except FileNotFoundError:
            existing = None
        if existing is not None:
            if existing != payload:
                raise errors.ConcurrentModificationError(
                    f"{dst} exists with other content", fix="inspect the branch directory; nothing was overwritten")
            return
        self.written.append(dst)
        if not self.dry_run:
            self.io.write_new(dst, payload)

    def overwrite(self, dst: str, data: str) -> None:
        self.written.append(dst)
        if not self.dry_run:
            self.io.overwrite(dst, data)

    def delete(self, paths: list[str], sizes: list[int | None] | None = None) -> None:
        """Delete files (sized by a stat first, unless ``sizes`` are known from a listing)."""
        if not paths:
            return
        from tablekeeper.core import plans

        found = sizes if sizes is not None else plans.stat_sizes(self.io, paths)
        self.deleted.extend(paths)
        self.sizes.extend(None if s is None or s < 0 else s for s in found)
        if not self.dry_run:
            failed = [r for r in self.io.delete_files(paths) if r.outcome.value == "failed"]
            if failed:
                raise errors.StorageError(f"could not delete {failed[0].path}: {failed[0].error}",
                                          fix="check permissions and rerun; the operation resumes")


def create_branch(table: Table, name: str, *, from_tag: str | None = None, from_snapshot: int | None = None,
                  dry_run: bool = False) -> BranchChange:
    """Create branch ``name`` of ``table``'s branch (usually main).

    From a tag: copies ``tag-T``, ``snapshot-<id>`` (written from the tag when the snapshot
    expired, as Java 2.0) and ``schema-0..schemaId``, and writes EARLIEST/LATEST hints (so
    pypaimon, which probes ids 1..301 without EARLIEST, can read it). From a snapshot id: first
    creates a fork tag ``fork-<branch>-<id>`` in the source (protected while the branch lives),
    then branches from it. Empty: copies every schema. Rerunning an interrupted create with the
    same arguments completes it.

    Raises:
        InvalidNameError, TagNotFoundError, SnapshotNotFoundError, AlreadyExistsError.
    """
    values.validate_branch_name(name)
    if from_tag is not None and from_snapshot is not None:
        raise errors.InvalidInputError("give --from-tag or --from-snapshot, not both", fix="drop one of them")
    target = _branch_table(table, name)
    w = _Writer(table, dry_run)
    notes: list[str] = []
    exists = table.file_io.is_dir(target.branch_path)
    if from_snapshot is not None:
        from tablekeeper.core.refs import tags as tags_mod

        from_tag = fork_tag_name(name, from_snapshot)
        if not table.tag_exists(from_tag):
            if exists:
                raise errors.AlreadyExistsError(f"branch {name!r} already exists", fix="choose another name")
            if dry_run:
                tags_mod.resolve_snapshot(table, snapshot_id=from_snapshot)
                w.written.append(table.tag_path(from_tag))
                notes.append(f"would create fork tag {from_tag!r} at snapshot {from_snapshot}")
                return BranchChange("would-create", name, tuple(w.written), (), tuple(notes))
            tags_mod.create_tag(table, from_tag, snapshot_id=from_snapshot)
            notes.append(f"created fork tag {from_tag!r} at snapshot {from_snapshot}")
    if from_tag is not None:
        io = table.file_io
        tag = table.tag(from_tag)
        snap = tag.snapshot
        # Everything this create writes, in write order: tag copy first (so a rerun recognises
        # its own unfinished branch), then snapshot, schemas, and the hints last.
        intended: dict[str, bytes] = {target.tag_path(from_tag): io.read_bytes(table.tag_path(from_tag))}
        if table.snapshot_exists(snap.id):
            intended[target.snapshot_path(snap.id)] = io.read_bytes(table.snapshot_path(snap.id))
        else:
            intended[target.snapshot_path(snap.id)] = snap.to_json().encode("utf-8")
            notes.append(f"snapshot {snap.id} expired: written from the tag")
        for sid in table.schema_ids():
            if sid <= snap.schema_id:
                intended[target.schema_path(sid)] = io.read_bytes(table.schema_path(sid))
        for hint in (paimon.EARLIEST, paimon.LATEST):
            intended[join(target.dir(paimon.SNAPSHOT_DIR), hint)] = paimon.encode_hint(snap.id).encode("utf-8")
        if exists:
            present = {st.path for st in io.walk_files(target.branch_path) if not st.name.startswith(".")}
            foreign = sorted(present - set(intended))
            differing = sorted(p for p in present & set(intended) if io.read_bytes(p) != intended[p])
            if foreign or differing:
                raise errors.AlreadyExistsError(
                    f"branch {name!r} already exists" + (" and has moved on from its fork" if foreign else ""),
                    fix="choose another name, or drop the branch first")
            if present == set(intended):
                return BranchChange("unchanged", name, (), (), ("branch already exists at this fork",))
            notes.append("completing an interrupted create")
        for path, data in intended.items():
            w.put_if_absent(path, data)
    else:
        if exists:
            raise errors.AlreadyExistsError(f"branch {name!r} already exists", fix="choose another name")
        ids = table.schema_ids()
        if not ids:
            raise errors.TableNotFoundError(f"{table.identifier} has no schema", fix="check the table")
        for sid in ids:
            w.copy_if_absent(table.schema_path(sid), target.schema_path(sid))
    return BranchChange("would-create" if dry_run else "created", name, tuple(w.written), (), tuple(notes))


def _fallback_branches(main: Table) -> set[str]:
    opts = main.options()
    return {v for k, v in opts.items() if k in ("scan.fallback-branch", "scan.primary-branch") and v}


def drop_branch(table: Table, name: str, *, dry_run: bool = False) -> BranchChange:
    """Delete ``branch/branch-<name>`` (metadata only, as Java). Its own data files become
    orphans that 'clean-orphans' reclaims; files shared with other branches stay protected.

    Raises:
        BranchNotFoundError; ProtectedObjectError when it is main's scan.fallback-branch /
        scan.primary-branch.
    """
    values.validate_branch_name(name)
    main = table.on_branch(paimon.MAIN)
    branch = main.on_branch(name)
    if name in _fallback_branches(main):
        raise errors.ProtectedObjectError(
            f"branch {name!r} is main's scan.fallback-branch/scan.primary-branch",
            fix="unset that table option first")
    concurrency.check_formats(main, [name])
    listed = sorted((s.path, s.size) for s in main.file_io.walk_files(branch.branch_path))
    if not dry_run:
        _drop_in_order(branch)
    return BranchChange("would-drop" if dry_run else "dropped", name, (), tuple(p for p, _ in listed),
                        ("data files only this branch wrote are now orphans: run clean-orphans",),
                        tuple(s for _, s in listed))


def _drop_in_order(branch: Table) -> None:
    """Unpublish first: tags, then snapshots (hints, newest snapshot first), then changelogs and
    consumers, and the schemas and the directory last. Interrupted at any point, what is left is
    a branch that still reads (fewer tags, or no snapshot: an empty branch with its schemas), so
    readers and every planner (which need a schema per branch) keep working, and a rerun of the
    drop finishes it. Each phase ends at a ``seams`` point (crash tests)."""
    io = branch.file_io
    concurrency.point("branch-drop:begin")
    # inside a trash window (core/safety/trash) each file is moved into the run's trash instead
    trash.move_files(io, [s.path for s in io.list_dir(branch.dir(paimon.TAG_DIR)) if not s.is_dir], "tag")
    concurrency.point("branch-drop:tags-deleted")
    snapshot_files = [s for s in io.list_dir(branch.dir(paimon.SNAPSHOT_DIR)) if not s.is_dir]
    hint_files = [s.path for s in snapshot_files if s.name in (paimon.EARLIEST, paimon.LATEST)]
    ordered = sorted((s for s in snapshot_files if s.path not in hint_files),
                     key=lambda s: -(paimon.parse_versioned_name(s.name, paimon.SNAPSHOT_PREFIX) or -1))
    trash.move_files(io, hint_files, "hint")
    trash.move_files(io, [s.path for s in ordered], "snapshot")
    concurrency.point("branch-drop:snapshots-deleted")
    for kind in (paimon.CHANGELOG_DIR, paimon.CONSUMER_DIR):
        trash.move_files(io, [s.path for s in io.list_dir(branch.dir(kind)) if not s.is_dir],
                         "changelog-meta" if kind == paimon.CHANGELOG_DIR else "other")
    concurrency.point("branch-drop:schemas-left")
    if trash.active() is not None:  # the schemas (and anything else left) too, before the directory goes
        trash.move_files(io, [s.path for s in io.walk_files(branch.branch_path)], "schema")
    io.delete_tree(branch.branch_path)
    concurrency.point("branch-drop:end")


def _versioned_files(t: Table, kind: str, prefix: str) -> dict[int, str]:
    out = {}
    for s in t.file_io.list_dir(t.dir(kind)):
        if s.is_dir:
            continue
        n = paimon.parse_versioned_name(s.name, prefix)
        if n is not None:
            out[n] = s.path
    return out


def fast_forward(table: Table, name: str, *, dry_run: bool = False) -> BranchChange:
    """Merge branch ``name`` into main (Java's fast_forward, §4.1), crash-safe:

    with ``e`` = the branch's earliest snapshot and ``s`` its schema id, main's snapshots >= e,
    schemas >= s and tags at snapshots >= e are replaced by the branch's (byte copies); main
    then reads exactly what the branch reads. Files identical in both are left alone, so the
    fork snapshot itself is never deleted and a rerun can still verify the fork.

    Raises:
        DivergedBranchError: the branch's earliest snapshot is no longer its fork snapshot (it
        expired its fork, or main's history at the fork differs).
    """
    values.validate_branch_name(name)
    main = table.on_branch(paimon.MAIN)
    branch = main.on_branch(name)
    concurrency.check_formats(main, [name])
    earliest = branch.earliest_snapshot_id()
    if earliest is None:
        raise errors.InvalidInputError(f"branch {name!r} has no snapshot to fast-forward to",
                                       fix="commit to the branch first")
    first = branch.snapshot(earliest)
    fp = forks.fork_point(branch)
    if fp.snapshot_id is None and (main.snapshot_ids() or main.tag_names()):
        raise errors.DivergedBranchError(
            f"branch {name!r} shares no snapshot with main; fast-forward would replace main's history",
            fix="use 'tablekeeper branch replace-main' to make the branch main")
    between = [sid for sid in main.snapshot_ids() if fp.snapshot_id is not None and fp.snapshot_id <= sid < earliest]
    if between:  # main would keep snapshots the branch's history never had, then follow the branch
        raise errors.DivergedBranchError(
            f"branch {name!r} starts at snapshot {earliest} but forked at {fp.snapshot_id}, and main still has "
            f"snapshot(s) {between[0]}..{between[-1]} in between: its fork snapshot expired, so main cannot be "
            "fast-forwarded safely",
            fix="create a fresh branch from a tag and fast-forward that one, or expire main's snapshots "
                f"before {earliest} first")
    w = _Writer(main, dry_run)
    io = main.file_io
    schema_floor = first.schema_id
    branch_snaps = _versioned_files(branch, paimon.SNAPSHOT_DIR, paimon.SNAPSHOT_PREFIX)
    main_snaps = _versioned_files(main, paimon.SNAPSHOT_DIR, paimon.SNAPSHOT_PREFIX)
    branch_schemas = _versioned_files(branch, paimon.SCHEMA_DIR, paimon.SCHEMA_PREFIX)
    main_schemas = _versioned_files(main, paimon.SCHEMA_DIR, paimon.SCHEMA_PREFIX)
    branch_tags = {t: branch.tag_path(t) for t in branch.tag_names()}

    def same(a: str, b: str) -> bool:
        try:
            return io.read_bytes(a) == io.read_bytes(b)
        except FileNotFoundError:
            return False

    stale_tags = []
    for tag in main.tags():
        if tag.snapshot_id >= earliest and not (tag.name in branch_tags and same(main.tag_path(tag.name),
                                                                                 branch_tags[tag.name])):
            stale_tags.append(main.tag_path(tag.name))
    stale_snaps = [p for sid, p in sorted(main_snaps.items(), reverse=True)
                   if sid >= earliest and not (sid in branch_snaps and same(p, branch_snaps[sid]))]
    stale_schemas = [p for sid, p in sorted(main_schemas.items(), reverse=True)
                     if sid >= schema_floor and not (sid in branch_schemas and same(p, branch_schemas[sid]))]
    # 1. remove main's diverging metadata: tags, snapshots (newest first), schemas
    w.delete(stale_tags)
    w.delete(stale_snaps)
    w.delete(stale_schemas)
    # 2. copy the branch's schemas, snapshots and tags (byte copies)
    for sid, path in sorted(branch_schemas.items()):
        if sid >= schema_floor:
            w.copy_if_absent(path, main.schema_path(sid))
    for sid, path in sorted(branch_snaps.items()):
        w.copy_if_absent(path, main.snapshot_path(sid))
    for tag_name, path in sorted(branch_tags.items()):
        w.copy_if_absent(path, main.tag_path(tag_name))
    # 3. hints: LATEST = the branch's latest; EARLIEST only if main has nothing older
    latest = max(branch_snaps) if branch_snaps else earliest
    w.overwrite(join(main.dir(paimon.SNAPSHOT_DIR), paimon.LATEST), paimon.encode_hint(latest))
    if not any(sid < earliest for sid in main_snaps):
        w.overwrite(join(main.dir(paimon.SNAPSHOT_DIR), paimon.EARLIEST), paimon.encode_hint(earliest))
    return BranchChange("would-fast-forward" if dry_run else "fast-forwarded", name,
                        tuple(w.written), tuple(w.deleted),
                        (f"main now follows branch {name!r} from snapshot {earliest}; "
                         "main's replaced files become orphans for clean-orphans",), tuple(w.sizes))


_REPLACED_DIRS = (paimon.SNAPSHOT_DIR, paimon.SCHEMA_DIR, paimon.TAG_DIR, paimon.CHANGELOG_DIR)


def _metadata_files(t: Table) -> dict[str, str]:
    """{'snapshot/snapshot-3': path, ...} of the replaced directories (regular files only)."""
    out = {}
    for kind in _REPLACED_DIRS:
        for s in t.file_io.list_dir(t.dir(kind)):
            if not s.is_dir and not s.name.startswith("."):
                out[f"{kind}/{s.name}"] = s.path
    return out


def replace_main(table: Table, name: str, *, backup: str | None = None, dry_run: bool = False) -> BranchChange:
    """Make branch ``name`` the table's main: main's snapshot/, schema/, tag/ and changelog/
    become byte copies of the branch's, so any reader that only knows the table root reads the
    branch's state. With ``backup``, main's old metadata is first kept as branch ``backup``
    (which keeps protecting its files). The source branch is removed last. Consumers of main
    are left as they are.

    Raises:
        BranchNotFoundError, InvalidNameError, AlreadyExistsError (backup exists).
    """
    values.validate_branch_name(name)
    main = table.on_branch(paimon.MAIN)
    branch = main.on_branch(name)
    concurrency.check_formats(main, [name])
    io = main.file_io
    w = _Writer(main, dry_run)
    if not branch.schema_ids():
        if io.is_dir(branch.branch_path) and not dry_run:  # an interrupted drop of the source: finish it
            io.delete_tree(branch.branch_path)
            return BranchChange("replaced-main", name, (), (branch.branch_path,), ("finished an interrupted run",))
        raise errors.InvalidInputError(f"branch {name!r} has no schema", fix="inspect the branch directory")
    source = _metadata_files(branch)
    current = _metadata_files(main)
    already_replaced = current.keys() == source.keys() and all(
        io.read_bytes(p) == io.read_bytes(source[k]) for k, p in current.items())
    if backup is not None and not already_replaced:
        values.validate_branch_name(backup)
        backup_t = _branch_table(main, backup)
        if io.is_dir(backup_t.branch_path):
            partial = _metadata_files(backup_t)  # an interrupted earlier run copies a subset
            if not all(k in current and io.read_bytes(p) == io.read_bytes(current[k]) for k, p in partial.items()):
                raise errors.AlreadyExistsError(f"backup branch {backup!r} already exists",
                                                fix="choose another --backup name")
        for key, path in sorted(current.items()):
            w.copy_if_absent(path, join(backup_t.branch_path, key))
    # replace: delete main files that differ or are absent in the branch, then copy
    stale = [p for k, p in current.items()
             if k not in source or io.read_bytes(p) != io.read_bytes(source[k])]
    order = {paimon.TAG_DIR: 0, paimon.CHANGELOG_DIR: 1, paimon.SNAPSHOT_DIR: 2, paimon.SCHEMA_DIR: 3}
    stale.sort(key=lambda p: (order.get(p.rsplit("/", 2)[-2], 9), p))
    w.delete(stale)
    for key in sorted(source, key=lambda k: (0 if k.startswith(paimon.SCHEMA_DIR) else 1, k)):
        w.copy_if_absent(source[key], join(main.root, key))
    snapshot_ids = [paimon.parse_versioned_name(k.split("/", 1)[1], paimon.SNAPSHOT_PREFIX)
                    for k in source if k.startswith(paimon.SNAPSHOT_DIR + "/")]
    present = sorted(i for i in snapshot_ids if i is not None)
    if present and f"{paimon.SNAPSHOT_DIR}/{paimon.EARLIEST}" not in source:
        w.overwrite(join(main.dir(paimon.SNAPSHOT_DIR), paimon.EARLIEST), paimon.encode_hint(present[0]))
    source_files = sorted((s.path, s.size) for s in io.walk_files(branch.branch_path))
    if not dry_run:
        io.delete_tree(branch.branch_path)
    w.deleted.extend(p for p, _ in source_files)
    w.sizes.extend(s for _, s in source_files)
    return BranchChange("would-replace-main" if dry_run else "replaced-main", name, tuple(w.written),
                        tuple(w.deleted), (f"old main kept as branch {backup!r}",) if backup else (), tuple(w.sizes))


def rename_branch(table: Table, old: str, new: str, *, dry_run: bool = False) -> BranchChange:
    """Rename a branch directory (as Java). ``main`` cannot be renamed."""
    if old == paimon.MAIN:
        raise errors.InvalidNameError("main cannot be renamed", fix="use replace-main instead")
    values.validate_branch_name(new)
    main = table.on_branch(paimon.MAIN)
    src = main.on_branch(old)
    dst = _branch_table(main, new)
    if main.file_io.is_dir(dst.branch_path):
        raise errors.AlreadyExistsError(f"branch {new!r} already exists", fix="choose another name")
    concurrency.check_formats(main, [old])
    if not dry_run:
        main.file_io.rename(src.branch_path, dst.branch_path)
    return BranchChange("would-rename" if dry_run else "renamed", new, (dst.branch_path,), (),
                        (f"branch {old!r} renamed to {new!r} (a directory rename: no file is deleted)",))
