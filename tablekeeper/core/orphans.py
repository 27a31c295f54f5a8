"""Orphan file cleanup (paimon-semantics.md §5) as a pure planner.

Order matters (Paimon #3075): candidates are listed *first* — ``manifest/``, ``index/``,
``statistics/``, the partition/bucket data directories (also under ``data-file.path-directory``
and ``data-file.external-paths``) and stray temp files in every branch's snapshot/changelog
directory — then the used set is built from every snapshot, tag and long-lived changelog of
every branch (ADD and DELETE entries, extra files, index files, statistics). A file written
after the listing can therefore never be deleted. Only regular files older than ``older_than``
are candidates; directories, metadata JSON, hints and anything outside the known directories
are never touched.

Cost: every distinct manifest list block, manifest and index manifest is decoded and walked
once, however many roots share it. Walking each root in full cost roots x history: a root of a
table that never merges manifests (pypaimon) reaches every manifest ever written, and the
snapshots of any table share most of their manifests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from itertools import chain

from tablekeeper.core import errors, plans, safety
from tablekeeper.core.name_scan import NameScanner
from tablekeeper.core.paimon import layout, manifests
from tablekeeper.core.paimon.snapshot import Snapshot
from tablekeeper.core.paimon.table import Table
from tablekeeper.core.reachability import Reachability, gc_paused
from tablekeeper.core.storage import ListedEntry, join

__all__ = ["OrphanConfig", "CandidateListing", "resolve_older_than", "list_candidates", "plan_orphan_clean"]

_KEPT_NAMES = {"EARLIEST", "LATEST"}


@dataclass(frozen=True)
class OrphanConfig:
    older_than_ms: int
    clean_empty_directories: bool = True


def resolve_older_than(now_ms: int, *, older_than_ms: int | None = None, older_than_age: timedelta | None = None,
                       force: bool = False) -> int:
    """The deletion threshold: default ``now - 1 day``; it must lie in the past, and closer
    than ``ORPHAN_AGE_FLOOR`` (1 h) to now only with ``force`` (in-flight writes).

    Raises:
        UnsafePolicyError: threshold in the future, or too recent without force.
    """
    if older_than_ms is not None and older_than_age is not None:
        raise errors.InvalidInputError("give older-than as a time or as an age, not both", fix="drop one")
    if older_than_age is not None:
        older_than_ms = now_ms - int(older_than_age.total_seconds() * 1000)
    if older_than_ms is None:
        older_than_ms = now_ms - int(safety.DEFAULT_ORPHAN_MIN_AGE.total_seconds() * 1000)
    if older_than_ms >= now_ms:
        raise errors.UnsafePolicyError("older-than must be in the past (Paimon #4779)",
                                       fix="use the default (1 day ago) or an earlier time")
    if now_ms - older_than_ms < safety.ORPHAN_AGE_FLOOR.total_seconds() * 1000 and not force:
        raise errors.UnsafePolicyError(
            f"older-than is less than {safety.ORPHAN_AGE_FLOOR} ago: files of running writers could be deleted",
            fix="use an older threshold, or --force if no writer is running")
    return older_than_ms


def _data_roots(table: Table) -> list[str]:
    options = table.options()
    roots = [join(table.root, options["data-file.path-directory"])
             if options.get("data-file.path-directory") else table.root]
    for raw in (options.get("data-file.external-paths") or "").split(","):
        if raw.strip():
            roots.append(table.file_io.normalize(raw.strip()))
    return roots


def _bucket_dirs(table: Table, root: str, depth: int) -> list[str]:
    """Walk exactly ``depth`` partition levels (names with '='), then ``bucket-*``."""
    level = [root]
    for _ in range(depth):
        nxt: list[str] = []
        for d in level:
            nxt.extend(e.path for e in table.file_io.scan_dir(d) if e.is_dir and "=" in e.name)
        level = nxt
    out: list[str] = []
    for d in level:
        out.extend(e.path for e in table.file_io.scan_dir(d) if e.is_dir and e.name.startswith("bucket-"))
    return out


def _old_enough(entry: ListedEntry, older_than_ms: int) -> bool:
    """False only when the listing already proved the file too young (object stores)."""
    return entry.status is None or entry.status.mtime_ms < older_than_ms


@dataclass(frozen=True)
class CandidateListing:
    """What orphan cleanup may delete, listed before any root is read."""

    #: candidates with their listing entry (metadata directories; data files on object stores)
    files: list[ListedEntry]
    #: local bucket directories and the names in them (sub-directories too: a directory is
    #: never deleted, the planner stats every name that turns out unreferenced)
    local_data: list[tuple[str, list[str]]]
    #: names of the files in data (bucket) directories: only manifests reference these
    data_names: frozenset[str]
    bucket_dirs: list[str]

    def unreferenced(self, used: set[str]) -> Iterator[ListedEntry]:
        """The candidates whose name is not in ``used``."""
        yield from (e for e in self.files if e.name not in used)
        for directory, names in self.local_data:
            for name in names:
                if name not in used:
                    yield ListedEntry(join(directory, name), name, False)


def list_candidates(table: Table, older_than_ms: int) -> CandidateListing:
    """Candidate files and the bucket directories seen.

    Where the listing carries mtimes (object stores) files younger than the threshold are
    dropped here; local directories are listed by name only, and the planner stats only the few
    files that turn out unreferenced — a stat per listed file cost as much as the rest of
    planning."""
    io = table.file_io
    main = table.on_branch(layout.MAIN)
    files: list[ListedEntry] = []
    for kind in (layout.MANIFEST_DIR, layout.INDEX_DIR, layout.STATISTICS_DIR):
        files.extend(e for e in io.scan_dir(main.shared_dir(kind)) if not e.is_dir)
    depth = len(main.schema().partition_keys)
    buckets: list[str] = []
    local_data: list[tuple[str, list[str]]] = []
    for root in _data_roots(main):
        for bucket in _bucket_dirs(main, root, depth):
            buckets.append(bucket)
            if io.is_local:
                local_data.append((bucket, io.list_names(bucket)))
            else:
                files.extend(e for e in io.scan_dir(bucket) if not e.is_dir)
    for branch in main.all_branches():
        for kind, prefix in ((layout.SNAPSHOT_DIR, layout.SNAPSHOT_PREFIX),
                             (layout.CHANGELOG_DIR, layout.CHANGELOG_PREFIX)):
            for e in io.scan_dir(branch.dir(kind)):
                if not e.is_dir and not e.name.startswith(prefix) and e.name not in _KEPT_NAMES:
                    files.append(e)  # leftover temp files of crashed commits
    files = [e for e in files if _old_enough(e, older_than_ms)]
    bucket_set = set(buckets)
    data_names = frozenset(chain((e.name for e in files if e.path.rsplit("/", 1)[0] in bucket_set),
                                 chain.from_iterable(names for _d, names in local_data)))
    return CandidateListing(files, local_data, data_names, buckets)


def _roots(table: Table) -> list[tuple[Table, str, Snapshot, bool]]:
    """Every snapshot, tag and long-lived changelog of every branch, with the path that proves
    the root still exists and whether it is a changelog-N."""
    out: list[tuple[Table, str, Snapshot, bool]] = []
    for branch in table.all_branches():
        if not branch.schema_ids():
            raise errors.IncompleteProtectionSetError(
                f"branch {branch.branch!r} has no schema: its files cannot be attributed",
                fix="check that branch manually (Paimon aborts here too), then drop or repair it")
        for sid in branch.snapshot_ids():
            try:
                out.append((branch, branch.snapshot_path(sid), branch.snapshot(sid), False))
            except errors.SnapshotNotFoundError:
                continue
        for name in branch.tag_names():
            try:
                out.append((branch, branch.tag_path(name), branch.tag(name).snapshot, False))
            except errors.TagNotFoundError:
                continue
        for cid in branch.changelog_ids():
            try:
                out.append((branch, branch.changelog_path(cid), branch.changelog(cid), True))
            except FileNotFoundError:
                continue
    return out


def plan_orphan_clean(table: Table, config: OrphanConfig, *,
                      after_listing: Callable[[], None] | None = None) -> plans.Plan:
    """Plan orphan cleanup of the whole table (all branches share data and manifests).

    ``after_listing`` is a test hook run between candidate listing and used-set building.

    Raises:
        IncompleteProtectionSetError: a branch without schema, or an unreadable manifest under
        a root that still exists.
    """
    with gc_paused():
        return _plan_orphan_clean(table, config, after_listing)


def _plan_orphan_clean(table: Table, config: OrphanConfig, after_listing: Callable[[], None] | None) -> plans.Plan:
    main = table.on_branch(layout.MAIN)
    listing = list_candidates(main, config.older_than_ms)
    if after_listing is not None:
        after_listing()
    names = set(listing.data_names).union(e.name for e in listing.files)
    used: set[str] = set()
    reach = Reachability(main)
    # manifests reference data and changelog files only: the bucket directories' names
    data_names = listing.data_names
    options = main.options()
    # the defaults too: files written before a prefix option changed keep their names
    scanner = NameScanner(data_names, (options.get("data-file.prefix", "data-"),
                                       options.get("changelog-file.prefix", "changelog-"), "data-", "changelog-"))

    def mark(name: str | None) -> None:
        if name and name in names:
            used.add(name)

    # Immutable metadata is walked once, whichever root reaches it first: a list, a list
    # block, a manifest or an index manifest is recorded only after all of it was marked, so
    # a read error part-way leaves it to be walked (and to fail) again for the next root.
    done_lists: set[str] = set()
    done_blocks: set[int] = set()
    done_manifests: set[str] = set()
    done_index: set[str] = set()
    for branch, root_path, snap, is_changelog in _roots(main):
        try:
            for list_name in snap.manifest_lists:
                mark(list_name)
                if list_name in done_lists:
                    continue
                try:
                    blocks = reach.manifest_list_blocks(list_name)
                except FileNotFoundError:
                    # a changelog-N of producer != none keeps only its changelog manifests:
                    # Paimon's expiration deleted its base/delta lists on purpose
                    if is_changelog and snap.changelog_manifest_list and list_name != snap.changelog_manifest_list:
                        continue
                    raise
                for block_id, block in blocks:
                    if block_id in done_blocks:
                        continue
                    for meta in block:
                        mark(meta.file_name)
                        for extra in meta.extra_files:
                            mark(extra)
                        if meta.file_name in done_manifests:
                            continue
                        # read, not cached: each manifest is walked once, so a cache only costs memory
                        _mark_manifest(main, join(reach.manifest_dir, meta.file_name), scanner, names, used)
                        done_manifests.add(meta.file_name)
                    done_blocks.add(block_id)
                done_lists.add(list_name)
            if snap.index_manifest:
                mark(snap.index_manifest)
                if snap.index_manifest not in done_index:
                    for entry in reach.index_entries(snap.index_manifest):
                        mark(entry.file_name)
                    done_index.add(snap.index_manifest)
            mark(snap.statistics)
        except FileNotFoundError as e:
            if not branch.file_io.exists(root_path):
                continue  # the root itself vanished (concurrent expiry): nothing to protect
            raise errors.IncompleteProtectionSetError(
                f"{root_path} references a missing file: {e}",
                fix="repair the table (e.g. Paimon's remove_unexisting_files) before cleaning orphans") from e
        except errors.FormatError as e:
            raise errors.IncompleteProtectionSetError(f"cannot read metadata of {root_path}: {e}",
                                                      fix="repair the damaged file") from e
    used |= data_names - scanner.missing()  # seen in a scanned manifest (decoded ones marked theirs above)
    kind_of = {main.shared_dir(layout.MANIFEST_DIR): plans.FileKind.MANIFEST,
               main.shared_dir(layout.INDEX_DIR): plans.FileKind.INDEX,
               main.shared_dir(layout.STATISTICS_DIR): plans.FileKind.STATISTICS}
    files = []
    unreferenced = 0
    for listed in listing.unreferenced(used):
        unreferenced += 1
        s = main.file_io.status_of(listed)  # a stat only now, for the few unreferenced local files
        if s is None or s.is_dir or s.mtime_ms >= config.older_than_ms:
            continue  # vanished, replaced by a directory, or written after the threshold
        parent_dir = s.path.rsplit("/", 1)[0]
        kind = kind_of.get(parent_dir, plans.FileKind.OTHER if "/snapshot/" in s.path or "/changelog/" in s.path
                           else plans.FileKind.DATA)
        files.append(plans.PlannedFile(s.path, kind, s.size, "referenced by no snapshot, tag or changelog"))
    n_listed = len(listing.files) + sum(len(n) for _d, n in listing.local_data)
    steps: list[plans.Step] = list(plans.Plan.ordered_deletes(files))
    if config.clean_empty_directories and files:
        touched = sorted({f.path.rsplit("/", 1)[0] for f in files if f.kind == plans.FileKind.DATA})
        if touched:
            steps.append(plans.RemoveEmptyDirsStep(tuple(touched), depth=len(main.schema().partition_keys)))
    return plans.Plan("clean-orphans", main.identifier, tuple(steps),
                      (f"{n_listed} candidate file(s) listed, {unreferenced} unreferenced, "
                       f"{len(files)} of them older than the threshold",),
                      (("older_than_ms", config.older_than_ms), ("candidates", n_listed),
                       ("unreferenced", unreferenced),
                       ("bucket_dirs", len(listing.bucket_dirs))))


def _mark_manifest(table: Table, path: str, scanner: NameScanner, names: set[str], used: set[str]) -> None:
    """Mark what one manifest references: by a byte scan of its blocks when the scanner can
    (see :mod:`tablekeeper.core.name_scan`), else by decoding its entries."""
    payload = manifests.read_manifest_payload(table.file_io, path) if scanner.usable else None
    if payload is None:
        _mark_refs(manifests.read_manifest_refs(table.file_io, path), names, used)
        return
    for block in payload:
        scanner.feed(block)


def _mark_refs(refs: list[manifests.FileRef], names: set[str], used: set[str]) -> None:
    """Mark the data files (and their extra files) of one manifest's entries, ADD and DELETE."""
    add = used.add
    for ref in refs:
        if ref.file_name and ref.file_name in names:
            add(ref.file_name)
        if ref.external_path:
            name = ref.external_path.rsplit("/", 1)[-1]
            if name and name in names:
                add(name)
        for extra in ref.extra_files:
            if extra and extra in names:
                add(extra)
