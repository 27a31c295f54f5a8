"""Tags: create (latest / snapshot id / timestamp, optional time-retained), delete with data
cleanup, rename, replace, list (the ``$tags`` columns).

Semantics follow Java's TagManager/TagDeletion (paimon-semantics.md §3) with tablekeeper's
stronger rules: a tag is never moved silently (TagConflictError), fork-point tags are protected,
and tag deletion protects the files of every other branch and changelog (fail closed)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from tablekeeper.core import errors, paimon, plans, values
from tablekeeper.core.paimon import Snapshot, Table, Tag
from tablekeeper.core.refs import forks

if TYPE_CHECKING:  # reads manifests: imported by the tag cleanup only (``tag list`` and ``create`` start faster)
    from tablekeeper.core.reclaim import reach
    from tablekeeper.core.reclaim.reach import DataKey, ListRole, Missing

    #: A root and what it is.
    _Named = tuple[reach.RootName, Snapshot]

__all__ = [
    "TagRow", "TagResult", "list_tags", "resolve_snapshot", "create_tag", "plan_delete_tag", "plan_tag_cleanup",
    "rename_tag", "replace_tag", "protected_fork_tags",
]


@dataclass(frozen=True)
class TagRow:
    """One row of Paimon's ``$tags`` system table."""

    tag_name: str
    snapshot_id: int
    schema_id: int
    commit_time: datetime
    record_count: int | None
    create_time: datetime | None
    time_retained: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "tag_name": self.tag_name,
            "snapshot_id": self.snapshot_id,
            "schema_id": self.schema_id,
            "commit_time": self.commit_time.isoformat(timespec="milliseconds"),
            "record_count": self.record_count,
            "create_time": self.create_time.isoformat() if self.create_time else None,
            "time_retained": self.time_retained,
        }


@dataclass(frozen=True)
class TagResult:
    action: str  # created | unchanged | deleted | renamed | replaced | would-*
    tag: str
    snapshot_id: int | None = None
    plan: plans.Plan | None = None


def _iso_duration(value: timedelta | None) -> str | None:
    """As Java prints a Duration (``PT24H``), which is what ``$tags.time_retained`` shows."""
    if value is None:
        return None
    total = int(value.total_seconds())
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    out = "PT"
    if hours:
        out += f"{hours}H"
    if minutes:
        out += f"{minutes}M"
    if seconds or out == "PT":
        out += f"{seconds}S"
    return out


def list_tags(table: Table) -> list[TagRow]:
    rows = []
    for tag in table.tags():
        snap = tag.snapshot
        rows.append(TagRow(
            tag_name=tag.name,
            snapshot_id=snap.id,
            schema_id=snap.schema_id,
            commit_time=datetime.fromtimestamp(snap.time_millis / 1000, tz=timezone.utc),
            record_count=snap.total_record_count,
            create_time=tag.create_time,
            time_retained=_iso_duration(tag.time_retained),
        ))
    return sorted(rows, key=lambda r: r.tag_name)


def resolve_snapshot(table: Table, *, snapshot_id: int | None = None,
                     timestamp_ms: int | None = None) -> Snapshot:
    """The snapshot a new tag points at.

    - neither given: the latest snapshot;
    - ``snapshot_id``: ``snapshot-<id>``, or a tag pinning that expired snapshot (as Java);
    - ``timestamp_ms``: the latest snapshot committed at or before it (tags pinning expired
      snapshots count too).

    Raises:
        InvalidInputError: both given. SnapshotNotFoundError: nothing matches.
    """
    if snapshot_id is not None and timestamp_ms is not None:
        raise errors.InvalidInputError("give a snapshot id or a timestamp, not both",
                                       fix="drop --snapshot or --timestamp")
    if snapshot_id is not None:
        if snapshot_id < 1:
            raise errors.InvalidInputError(f"snapshot id must be >= 1, got {snapshot_id}",
                                           fix="give an existing snapshot id")
        if table.snapshot_exists(snapshot_id):
            return table.snapshot(snapshot_id)
        for tag in table.tags():
            if tag.snapshot_id == snapshot_id:
                return tag.snapshot
        raise errors.SnapshotNotFoundError(
            f"snapshot {snapshot_id} does not exist on branch {table.branch!r} of {table.identifier}",
            fix=f"pick one of the snapshots shown by 'tablekeeper show {table.identifier}'")
    if timestamp_ms is not None:
        best: Snapshot | None = None
        candidates = [*table.snapshots(), *(t.snapshot for t in table.tags())]
        for snap in candidates:
            if snap.time_millis <= timestamp_ms and (best is None or snap.id > best.id):
                best = snap
        if best is None:
            raise errors.SnapshotNotFoundError(
                f"no snapshot of {table.identifier} was committed at or before {timestamp_ms} ms",
                fix="pick a later timestamp")
        return best
    latest = table.latest_snapshot()
    if latest is None:
        raise errors.SnapshotNotFoundError(f"{table.identifier} (branch {table.branch!r}) has no snapshot",
                                           fix="commit data before tagging")
    return latest


def create_tag(table: Table, name: str, *, snapshot_id: int | None = None, timestamp_ms: int | None = None,
               time_retained: timedelta | None = None, now: datetime | None = None,
               dry_run: bool = False) -> TagResult:
    """Create ``name``; idempotent when it already points at the same snapshot.

    ``now`` is the writer-zone wall clock written as ``tagCreateTime`` (Java uses the JVM's
    ``LocalDateTime.now()``); defaults to this machine's local time.

    Raises:
        TagConflictError: the tag exists at another snapshot (tags are never moved silently).
    """
    values.validate_tag_name(name)
    if time_retained is not None and time_retained <= timedelta(0):
        raise errors.InvalidDurationError("time-retained must be positive", fix="e.g. '7 d'")
    snap = resolve_snapshot(table, snapshot_id=snapshot_id, timestamp_ms=timestamp_ms)
    if table.tag_exists(name):
        return _existing(table, name, snap)
    if dry_run:
        return TagResult("would-create", name, snap.id)
    tag = Tag(name, snap, (now or datetime.now()).replace(tzinfo=None) if time_retained else None, time_retained)
    try:
        table.file_io.write_new(table.tag_path(name), tag.to_json())
    except FileExistsError:  # a concurrent creator won: same snapshot is fine, else conflict
        return _existing(table, name, snap)
    written = table.tag(name)
    if written.snapshot.identity() != snap.identity():
        raise errors.ConcurrentModificationError(
            f"tag {name!r} changed while it was being created", fix="inspect the tag and retry")
    return TagResult("created", name, snap.id)


def _existing(table: Table, name: str, snap: Snapshot) -> TagResult:
    existing = table.tag(name)
    if existing.snapshot.identity() == snap.identity():
        return TagResult("unchanged", name, snap.id)
    raise errors.TagConflictError(
        f"tag {name!r} already exists at snapshot {existing.snapshot_id}, not {snap.id}",
        fix="choose another tag name, or 'tablekeeper tag replace' to move it on purpose")


def protected_fork_tags(table: Table) -> dict[str, list[str]]:
    """Tags on this branch that branches were created from: {tag: [branches]}."""
    return forks.fork_tags_of(table)


def _refuse_fork_tag(table: Table, name: str, verb: str, force: bool) -> None:
    users = protected_fork_tags(table).get(name)
    if users and not force:
        raise errors.ProtectedObjectError(
            f"cannot {verb} tag {name!r}: branch(es) {', '.join(users)} were created from it",
            fix=f"drop or fast-forward those branches first, or pass --force to {verb} it anyway")


def _retained_roots(table: Table, *, exclude_tag: str) -> tuple[list[_Named], list[_Named], list[_Named]]:
    """(snapshots+tags of this branch, snapshots+tags of every other branch, long-lived
    changelogs of every branch), each with its name."""
    from tablekeeper.core.reclaim import reach

    own: list[_Named] = []
    others: list[_Named] = []
    changelogs: list[_Named] = []

    def named(kind: str, branch: str, name: object, snap: Snapshot) -> _Named:
        return reach.RootName(reach.root_kind(kind, branch), branch, str(name)), snap

    for branch in table.all_branches():
        roots: list[_Named] = []
        b = branch.branch
        roots.extend(named("tag", b, t.name, t.snapshot) for t in branch.tags()
                     if not (b == table.branch and t.name == exclude_tag))
        roots.extend(named("snapshot", b, s.id, s) for s in branch.snapshots())
        for cid in branch.changelog_ids():
            try:
                changelogs.append(named("changelog", b, cid, branch.changelog(cid)))
            except FileNotFoundError:
                continue
        (own if b == table.branch else others).extend(roots)
    return own, others, changelogs


def plan_delete_tag(table: Table, name: str, *, force: bool = False) -> plans.Plan:
    """Plan the deletion of ``name`` with Paimon's tag-deletion cleanup (§3.2), stronger:

    - the tag file is deleted last, after its now-unreferenced data, manifests, index and
      statistics files, so a rerun after a crash finishes the job;
    - if its snapshot still exists, or another tag pins the same snapshot: only the tag file;
    - data files are kept when the nearest retained roots of this branch (left neighbour tag,
      right neighbour = next tag/snapshot/changelog) or ANY root of another branch reaches them;
    - manifests, index and statistics files are kept when any other root references them;
    - any read error while building the protection set aborts (fail closed).

    Raises:
        TagNotFoundError, ProtectedObjectError (fork tag, unless ``force``),
        IncompleteProtectionSetError.
    """
    tag = table.tag(name)
    _refuse_fork_tag(table, name, "delete", force)
    tag_file = plans.PlannedFile(table.tag_path(name), plans.FileKind.TAG, tag.file_size, f"tag {name}")
    return plan_tag_cleanup(table, tag, (tag_file,))


def plan_tag_cleanup(table: Table, tag: Tag, tag_files: tuple[plans.PlannedFile, ...] = ()) -> plans.Plan:
    """The files only ``tag`` reaches, judged against the roots as they are now (``tag_files``:
    the tag file itself, when it still exists). With the tag file already removed
    (core/refs/tag_deletion.py) this is the re-check after unpublishing: a tag or branch created
    meanwhile on the same snapshot protects its files here."""
    name = tag.name
    notes: list[str] = []
    others_same = [t for t in table.tags() if t.name != name and t.snapshot_id == tag.snapshot_id]
    if table.snapshot_exists(tag.snapshot_id):
        notes.append(f"snapshot {tag.snapshot_id} still exists: only the tag file is removed "
                     "(snapshot expiration reclaims its files later)")
        return plans.Plan("delete-tag", table.identifier, plans.Plan.ordered_deletes(tag_files), tuple(notes))
    if others_same:
        notes.append(f"tag {others_same[0].name!r} pins the same snapshot: only the tag file is removed")
        return plans.Plan("delete-tag", table.identifier, plans.Plan.ordered_deletes(tag_files), tuple(notes))
    from tablekeeper.core.reclaim.reach import (
        IgnoredReference,
        MetaUnion,
        MissingFile,
        Reachability,
        RootKind,
        RootName,
        copied_lists,
        dangling_roles,
        details_of,
        missing_kept_file,
        notes_of,
        root_kind,
    )

    reach = Reachability(table)
    ignored: list[IgnoredReference] = []
    producer = reach.changelog_producer()
    try:
        try:
            candidates = reach.live_files(tag.snapshot)
        except FileNotFoundError:
            # Some of the tag's own manifests are gone: an earlier run was interrupted after its
            # data stage (data goes first), so only metadata and the tag file remain to delete.
            candidates = {}
            notes.append("resuming an interrupted deletion: the tag's data files were already handled")
        candidate_meta = reach.meta_files(tag.snapshot, include_changelog=False, tolerant=True)
        own, others, changelogs = _retained_roots(table, exclude_tag=name)
    except FileNotFoundError as e:
        raise errors.IncompleteProtectionSetError(
            f"deleting tag {name!r}: a snapshot, tag or changelog file vanished while the roots were read "
            f"({getattr(e, 'filename', None) or e})",
            fix="another process is changing the table: rerun (nothing was deleted)") from e
    deleted = RootName(root_kind("tag", table.branch), table.branch, name)
    copied = copied_lists((n, snap.changelog_manifest_list) for n, snap in [
        *own, *others, *changelogs, (deleted, tag.snapshot)])
    sid = tag.snapshot_id
    left = max((r for r in own if r[1].id < sid), key=lambda r: r[1].id, default=None)
    right = min((r for r in own if r[1].id > sid), key=lambda r: r[1].id, default=None)
    live_from = {r[0] for r in (left, right) if r is not None} | {r[0] for r in others}
    keep_data: set[DataKey] = set()
    keep_meta: set[str] = set()
    union = MetaUnion()
    for root, snap in [*own, *others, *changelogs]:
        dangling = dangling_roles(root.kind, snap, producer=producer, copied=copied)
        told = _told(root, snap, ignored, producer) if dangling else None
        try:
            # A file's life is a contiguous range of one branch's history: if any root of this
            # branch still reaches it, the nearest root on that side does (Java's skipper rule).
            if root.kind == RootKind.CHANGELOG:  # long-lived changelog-N: what a reader needs
                keep_data.update(reach.changelog_root_data(snap, dangling=dangling, missing=told))
                keep_meta.update(reach.changelog_root_meta(snap, dangling=dangling, missing=told))
                continue
            if root in live_from:
                keep_data.update(reach.live_files(snap))
            keep_meta.update(m.path for m in reach.meta_files(snap, union=union, dangling=dangling, missing=told))
        except MissingFile as e:
            raise missing_kept_file(root, *e.described(), operation=f"deleting tag {name!r}") from e
        except errors.FormatError as e:
            raise errors.IncompleteProtectionSetError(
                f"deleting tag {name!r}: cannot read the metadata of {root}: {e}", fix="repair the damaged file") from e
    candidate_paths = [(key, reach.data_paths(ref), ref.file_size) for key, ref in candidates.items()
                       if key not in keep_data]
    notes.extend(notes_of(ignored))
    files: list[plans.PlannedFile] = list(tag_files)
    for _key, paths, size in candidate_paths:  # the data file sized by its manifest; its extra files unsized
        for i, path in enumerate(paths):
            files.append(plans.PlannedFile(path, plans.FileKind.DATA, size if i == 0 else None,
                                           f"only tag {name} reached it"))
    for meta in candidate_meta:
        if meta.path in keep_meta:
            continue
        kind = {"manifest": plans.FileKind.MANIFEST, "index": plans.FileKind.INDEX}.get(
            meta.kind, plans.FileKind.STATISTICS)
        files.append(plans.PlannedFile(meta.path, kind, meta.size, f"only tag {name} referenced it"))
    return plans.Plan("delete-tag", table.identifier, plans.Plan.ordered_deletes(files), tuple(notes),
                      (("tag", name), ("snapshot_id", tag.snapshot_id),
                       ("ignored_references", details_of(ignored))))


def _told(root: reach.RootName, snap: Snapshot, ignored: list[reach.IgnoredReference], producer: str
          ) -> Missing:
    from tablekeeper.core.reclaim import reach

    def told(role: ListRole, file: str, via_list: str | None) -> None:
        ignored.append(reach.ignored_reference(root, snap, role, file, via_list, producer=producer))

    return told


def rename_tag(table: Table, old: str, new: str, *, force: bool = False, dry_run: bool = False) -> TagResult:
    """Rename (a file rename, as Java). Refused for fork-point tags unless ``force``."""
    values.validate_tag_name(new)
    tag = table.tag(old)
    if table.tag_exists(new):
        raise errors.AlreadyExistsError(f"tag {new!r} already exists", fix="choose another name")
    _refuse_fork_tag(table, old, "rename", force)
    if dry_run:
        return TagResult("would-rename", new, tag.snapshot_id)
    table.file_io.copy_new(table.tag_path(old), table.tag_path(new))
    table.file_io.delete_files([table.tag_path(old)])
    return TagResult("renamed", new, tag.snapshot_id)


def replace_tag(table: Table, name: str, *, snapshot_id: int | None = None,
                time_retained: timedelta | None = None, now: datetime | None = None,
                force: bool = False, dry_run: bool = False) -> TagResult:
    """Point an existing tag at another snapshot (latest if none given). Like Java, no file
    cleanup: files only the old target pinned are reclaimed by expiration/orphan cleanup.
    Refused for fork-point tags unless ``force``."""
    old = table.tag(name)
    _refuse_fork_tag(table, name, "replace", force)
    snap = resolve_snapshot(table, snapshot_id=snapshot_id)
    retained = time_retained if time_retained is not None else old.time_retained
    if dry_run:
        return TagResult("would-replace", name, snap.id)
    tag = Tag(name, snap, (now or datetime.now()).replace(tzinfo=None) if retained else None, retained)
    table.file_io.overwrite(table.tag_path(name), tag.to_json())
    return TagResult("replaced", name, snap.id)


def is_main(table: Table) -> bool:
    return table.branch == paimon.MAIN
