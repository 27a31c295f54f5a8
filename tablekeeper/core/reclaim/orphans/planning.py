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
snapshots of any table share most of their manifests.

A storage inventory (``OrphanConfig.listing``, :mod:`tablekeeper.core.reclaim.orphans.inventory`) replaces
the listing only: :func:`listed_candidates` applies the same candidate rules to its rows, and the
roots are still read live from the store afterwards, so the used set is always newer than the
candidates (docs/inventory.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from tablekeeper.core import errors, paimon, plans, values
from tablekeeper.core.paimon import Table
from tablekeeper.core.paimon.manifests import gc_paused
from tablekeeper.core.reclaim import reach
from tablekeeper.core.reclaim.orphans import decision as decisions
from tablekeeper.core.reclaim.orphans import references
from tablekeeper.core.safety import concurrency
from tablekeeper.core.storage import ListedEntry, join

if TYPE_CHECKING:  # inventories (csv, gzip, pyarrow readers) are loaded only with --listing
    from tablekeeper.core.reclaim.orphans import inventory

__all__ = ["OrphanConfig", "CandidateListing", "resolve_older_than", "data_roots", "decide_orphan_clean",
           "list_candidates", "listing_roots", "listed_candidates", "enumerate_roots", "read_roots", "plan_orphan_clean",
           "cover_vanished_roots", "root_key", "RootKey", "MAX_ROOT_PASSES"]


@dataclass(frozen=True)
class OrphanConfig:
    """The options of one orphan cleanup: the age threshold and how candidates are found and scanned."""

    older_than_ms: int
    clean_empty_directories: bool = True
    #: processes that scan manifests while planning (local files; None: one per CPU, at most 4)
    processes: int | None = None
    #: candidates from a storage inventory instead of listing the store (``--listing``)
    listing: inventory.Listing | None = None


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
        older_than_ms = now_ms - int(values.DEFAULT_ORPHAN_MIN_AGE.total_seconds() * 1000)
    if older_than_ms >= now_ms:
        raise errors.UnsafePolicyError("older-than must be in the past (Paimon #4779)",
                                       fix="use the default (1 day ago) or an earlier time")
    if now_ms - older_than_ms < values.ORPHAN_AGE_FLOOR.total_seconds() * 1000 and not force:
        raise errors.UnsafePolicyError(
            f"older-than is less than {values.ORPHAN_AGE_FLOOR} ago: files of running writers could be deleted",
            fix="use an older threshold, or --force if no writer is running")
    return older_than_ms


def data_roots(table: Table) -> list[str]:
    """Where data files live: the table (or ``data-file.path-directory``) and every
    ``data-file.external-paths`` entry."""
    options = table.options()
    roots = [join(table.root, options["data-file.path-directory"])
             if options.get("data-file.path-directory") else table.root]
    for raw in (options.get("data-file.external-paths") or "").split(","):
        if raw.strip():
            roots.append(table.file_io.normalize(raw.strip()))
    return roots


def _bucket_dirs(table: Table, root: str, depth: int) -> list[str]:
    """Walk exactly ``depth`` partition levels, then the bucket directories."""
    level = [root]
    for _ in range(depth):
        nxt: list[str] = []
        for d in level:
            nxt.extend(e.path for e in table.file_io.scan_dir(d) if e.is_dir and decisions.is_partition_dir(e.name))
        level = nxt
    out: list[str] = []
    for d in level:
        out.extend(e.path for e in table.file_io.scan_dir(d) if e.is_dir and decisions.is_bucket_dir(e.name))
    return out


def _old_enough(entry: ListedEntry, older_than_ms: int) -> bool:
    """False only when the listing already proved the file too young (object stores)."""
    return entry.status is None or entry.status.mtime_ms < older_than_ms


@dataclass(frozen=True)
class CandidateListing:
    """What orphan cleanup may delete, listed before any root is read."""

    #: candidates in metadata directories (manifest/, index/, statistics/, snapshot temp files)
    meta_files: list[ListedEntry]
    #: candidates in bucket directories of object stores, with their listing entry
    data_files: list[ListedEntry]
    #: local bucket directories and the names in them (sub-directories too: a directory is
    #: never deleted, the planner stats every name that turns out unreferenced)
    local_data: list[tuple[str, list[str]]]
    bucket_dirs: list[str]

    @property
    def data_names(self) -> list[str]:
        """Names of the files in bucket directories: only manifests reference these."""
        return [e.name for e in self.data_files] + [n for _d, names in self.local_data for n in names]

    @property
    def count(self) -> int:
        return len(self.meta_files) + len(self.data_files) + sum(len(n) for _d, n in self.local_data)

    def unreferenced(self, used_meta: AbstractSet[str], unreferenced_data: AbstractSet[str]) -> Iterator[ListedEntry]:
        """The candidates nothing references: metadata files whose name is not in ``used_meta``,
        data files whose name is in ``unreferenced_data``."""
        yield from (e for e in self.meta_files if e.name not in used_meta)
        if not unreferenced_data:
            return
        yield from (e for e in self.data_files if e.name in unreferenced_data)
        for directory, names in self.local_data:
            for name in names:
                if name in unreferenced_data:
                    yield ListedEntry(join(directory, name), name, False)


def _emptied_dirs(listing: CandidateListing, files: list[plans.PlannedFile]) -> set[str]:
    """Bucket directories the plan may empty: those where it deletes every entry listed. Only
    they are checked for emptiness (one request each on an object store, docs/storage-internals.md
    "Request cost"); a directory still holding a listed file cannot become empty."""
    listed = Counter(e.path.rsplit("/", 1)[0] for e in listing.data_files)
    listed.update({directory: len(names) for directory, names in listing.local_data})
    deleted = Counter(d for d in (f.path.rsplit("/", 1)[0] for f in files) if d in listed)  # (bucket dirs only)
    return {d for d, n in deleted.items() if decisions.may_empty(listed.get(d, 0), n)}


def decide_orphan_clean(table: Table, config: OrphanConfig) -> decisions.OrphanCleanDecision:
    """Decide an orphan clean of the whole table (all branches share data and manifests):
    which directories hold candidates, the data roots and partition depth of the bucket walk,
    the name prefixes manifests may reference. Roots are enumerated only after the listing
    (:func:`enumerate_roots`)."""
    main = table.on_branch(paimon.MAIN)
    listings = [decisions.CandidateDir(main.shared_dir(paimon.MANIFEST_DIR), plans.FileKind.MANIFEST),
                decisions.CandidateDir(main.shared_dir(paimon.INDEX_DIR), plans.FileKind.INDEX),
                decisions.CandidateDir(main.shared_dir(paimon.STATISTICS_DIR), plans.FileKind.STATISTICS)]
    for branch in main.all_branches():  # leftover temp files of crashed commits
        listings.append(decisions.CandidateDir(branch.dir(paimon.SNAPSHOT_DIR), plans.FileKind.OTHER,
                                               temp_prefix=paimon.SNAPSHOT_PREFIX))
        listings.append(decisions.CandidateDir(branch.dir(paimon.CHANGELOG_DIR), plans.FileKind.OTHER,
                                               temp_prefix=paimon.CHANGELOG_PREFIX))
    options = main.options()
    # manifests reference data and changelog files only: the bucket directories' names; the
    # default prefixes too: files written before a prefix option changed keep their names
    prefixes = (options.get("data-file.prefix", "data-"), options.get("changelog-file.prefix", "changelog-"),
                "data-", "changelog-")
    return decisions.OrphanCleanDecision(
        main.identifier, config.older_than_ms, tuple(listings), tuple(data_roots(main)),
        len(main.schema().partition_keys), tuple(dict.fromkeys(prefixes)), config.clean_empty_directories,
        tuple(dict.fromkeys((options.get("changelog-file.prefix", "changelog-"), "changelog-"))))


def list_candidates(table: Table, decision: decisions.OrphanCleanDecision) -> CandidateListing:
    """Candidate files and the bucket directories seen.

    Where the listing carries mtimes (object stores) files younger than the threshold are
    dropped here; local directories are listed by name only, and the planner stats only the few
    files that turn out unreferenced — a stat per listed file cost as much as the rest of
    planning."""
    io = table.file_io
    main = table.on_branch(paimon.MAIN)
    meta_files: list[ListedEntry] = []
    for directory in decision.listings:
        meta_files.extend(e for e in io.scan_dir(directory.path)
                          if not e.is_dir and decisions.is_candidate_name(directory, e.name))
    buckets: list[str] = []
    data_files: list[ListedEntry] = []
    local_data: list[tuple[str, list[str]]] = []
    for root in decision.data_roots:
        for bucket in _bucket_dirs(main, root, decision.partition_depth):
            buckets.append(bucket)
            if io.is_local:
                local_data.append((bucket, io.list_names(bucket)))
            else:
                data_files.extend(e for e in io.scan_dir(bucket) if not e.is_dir)
    threshold = decision.older_than_ms
    return CandidateListing([e for e in meta_files if _old_enough(e, threshold)],
                            [e for e in data_files if _old_enough(e, threshold)], local_data, buckets)


def listing_roots(table: Table) -> tuple[str, ...]:
    """Where an inventory's rows can name candidates: the table and its data roots (the rows
    kept when an inventory is loaded)."""
    return tuple(dict.fromkeys((table.root, *data_roots(table))))


def _bucket_dir_of(decision: decisions.OrphanCleanDecision, directory: str) -> bool:
    """Whether ``directory`` is a bucket directory the listing walk would reach: below a data
    root, exactly ``partition_depth`` partition levels, then ``bucket-N``."""
    for root in decision.data_roots:
        if directory.startswith(root.rstrip("/") + "/"):
            parts = directory[len(root.rstrip("/")) + 1:].split("/")
            if (len(parts) == decision.partition_depth + 1 and decisions.is_bucket_dir(parts[-1])
                    and all(decisions.is_partition_dir(p) for p in parts[:-1])):
                return True
    return False


def listed_candidates(decision: decisions.OrphanCleanDecision, listing: inventory.Listing) -> CandidateListing:
    """The candidates among an inventory's files, by the rules :func:`list_candidates` applies
    to a live listing (the same directories, ``decisions.is_candidate_name``, the bucket
    directories of the partition walk; only files directly in them), older than the threshold
    by the inventory's last-modified. Keys absent from the inventory are never candidates."""
    by_dir = {d.path: d for d in decision.listings}
    meta_files: list[ListedEntry] = []
    data_files: list[ListedEntry] = []
    buckets: dict[str, None] = {}
    for status in listing.files:
        directory, name = status.path.rsplit("/", 1)
        if status.mtime_ms >= decision.older_than_ms:
            continue
        candidate_dir = by_dir.get(directory)
        if candidate_dir is not None:
            if decisions.is_candidate_name(candidate_dir, name):
                meta_files.append(ListedEntry(status.path, name, False, status))
        elif _bucket_dir_of(decision, directory):
            buckets[directory] = None
            data_files.append(ListedEntry(status.path, name, False, status))
    return CandidateListing(meta_files, data_files, [], list(buckets))


def enumerate_roots(table: Table) -> tuple[decisions.OrphanRoot, ...]:
    """Every snapshot, tag and long-lived changelog of every branch: what protects files from
    orphan cleanup. Enumerated after the candidates were listed.

    Raises:
        IncompleteProtectionSetError: a branch without schema (its files cannot be attributed).
    """
    out: list[decisions.OrphanRoot] = []
    for branch in table.on_branch(paimon.MAIN).all_branches():
        if not branch.schema_ids():
            raise errors.IncompleteProtectionSetError(
                f"branch {branch.branch!r} has no schema: its files cannot be attributed",
                fix="check that branch manually (Paimon aborts here too), then drop or repair it")
        out.extend(decisions.OrphanRoot(branch.snapshot_path(sid), "snapshot", branch.branch, str(sid))
                   for sid in branch.snapshot_ids())
        out.extend(decisions.OrphanRoot(branch.tag_path(name), "tag", branch.branch, name)
                   for name in branch.tag_names())
        out.extend(decisions.OrphanRoot(branch.changelog_path(cid), "changelog", branch.branch, str(cid))
                   for cid in branch.changelog_ids())
    return tuple(out)


def read_roots(table: Table, roots: tuple[decisions.OrphanRoot, ...]) -> list[references.Root]:
    """The roots' snapshots; a root that vanished since it was enumerated is left out (a
    concurrent expiration: it protects nothing)."""
    out: list[references.Root] = []
    main = table.on_branch(paimon.MAIN)
    # object stores: the root files fetched 16 at a time (read_ahead), then their manifest lists
    # (prefetch): the walk reads them one after the other, at 20 ms a request most of a cleanup
    ahead = main.file_io.read_ahead([r.path for r in roots])
    for root, _fetched in zip(roots, ahead, strict=True):
        branch = main.on_branch(root.branch)
        try:
            if root.kind == "tag":
                snap = branch.tag(root.name).snapshot
            elif root.kind == "changelog":
                snap = branch.changelog(int(root.name))
            else:
                snap = branch.snapshot(int(root.name))
        except (errors.SnapshotNotFoundError, errors.TagNotFoundError, FileNotFoundError):
            if decisions.missing_reference_aborts(branch.file_io.exists(root.path)):
                raise
            continue
        out.append((branch, root.path, snap, reach.RootName(reach.root_kind(root.kind, root.branch),
                                                                 root.branch, root.name)))
    manifest_dir = main.shared_dir(paimon.MANIFEST_DIR)
    main.file_io.prefetch(join(manifest_dir, name) for _b, _p, snap, _c in out
                          for name in (snap.base_manifest_list, snap.delta_manifest_list,
                                       snap.changelog_manifest_list, snap.index_manifest) if name)
    return out


#: Passes over roots that appeared while roots vanished, before orphan cleanup fails closed.
MAX_ROOT_PASSES = 8


#: What identifies a walked root: its path and the manifest lists it names (a tag re-created
#: under the same name is a new root).
RootKey = tuple[str, tuple[str, ...]]


def root_key(path: str, manifest_lists: Iterable[str]) -> RootKey:
    return path, tuple(sorted(manifest_lists))


def _root_key(root: references.Root) -> RootKey:
    return root_key(root[1], root[2].manifest_lists)


def cover_vanished_roots(main: Table, seen: set[RootKey], vanished: bool,
                         walk: Callable[[list[references.Root]], bool]) -> None:
    """Issue #12: roots listed, then a writer commits and an expiration removes listed snapshots
    before they are walked. The vanished snapshots protected nothing themselves any more, but
    the snapshot committed meanwhile still uses their old files. Files written after listing
    are too young to be candidates, and a new root's old files come from the root it was made
    from; so if every listed root was walked, every root made since is covered. Only when some
    root ``vanished`` unwalked are the roots listed again and the new ones (not in ``seen``)
    walked, until a pass loses none (bounded; then fail closed).

    ``walk(fresh)`` adds what the fresh roots reference to the caller's used set (in process,
    or distributed in the Spark job) and returns whether any of them vanished in turn.

    Raises:
        IncompleteProtectionSetError: roots kept vanishing for ``MAX_ROOT_PASSES`` passes.
    """
    for _ in range(MAX_ROOT_PASSES):
        if not vanished:
            return
        enumerated = enumerate_roots(main)
        readable = read_roots(main, enumerated)
        fresh = [r for r in readable if _root_key(r) not in seen]
        concurrency.point("orphans:roots-relisted")
        seen.update(_root_key(r) for r in fresh)
        vanished = walk(fresh) or len(readable) < len(enumerated)
    raise errors.IncompleteProtectionSetError(
        f"roots of {main.identifier} kept vanishing while orphan cleanup walked them ({MAX_ROOT_PASSES} passes)",
        fix="a concurrent expiration is removing snapshots faster than they can be walked: run orphan cleanup "
            "again later, or after the expiration (nothing was deleted)")


def _cover_vanished_roots(main: Table, walked: list[references.Root], refs: references.References,
                          meta_names: set[str], data_names: list[str], prefixes: tuple[str, ...],
                          processes: int | None) -> references.References:
    """:func:`cover_vanished_roots`, walking the fresh roots in process (a changelog list the
    roots walked before name counts for the fresh ones: ``guarantees.copied_lists``)."""
    used, unreferenced = set(refs.used_meta), set(refs.unreferenced_data)
    ignored = list(refs.ignored)
    named = [(r[3], r[2].changelog_manifest_list) for r in walked]

    def walk(fresh: list[references.Root]) -> bool:
        nonlocal unreferenced
        named.extend((r[3], r[2].changelog_manifest_list) for r in fresh)
        more = references.find_references(main, fresh, meta_names, data_names, prefixes, processes=processes,
                                          copied=reach.copied_lists(named))
        used.update(more.used_meta)
        unreferenced &= more.unreferenced_data
        ignored.extend(more.ignored)
        return bool(more.vanished)

    cover_vanished_roots(main, {_root_key(r) for r in walked}, bool(refs.vanished), walk)
    return references.References(frozenset(used), frozenset(unreferenced), (), tuple(dict.fromkeys(ignored)))


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
    main = table.on_branch(paimon.MAIN)
    with main.file_io.one_view():  # branches, options, schema: each read once (FileIO.one_view)
        decision = decide_orphan_clean(main, config)
    if config.listing is None:
        with main.file_io.flat_listing(main.root):  # object stores: one flat listing of the prefix
            listing = list_candidates(main, decision)
    else:  # refused before anything is read when it does not describe this table (nothing deleted)
        from tablekeeper.core.reclaim.orphans import inventory

        inventory.check_listing(config.listing, main.root, decision.older_than_ms)
        listing = listed_candidates(decision, config.listing)
    concurrency.point("orphans:listed")
    if after_listing is not None:
        after_listing()
    with main.file_io.one_view():  # opened after the candidate listing: every answer in it is younger
        enumerated = enumerate_roots(main)
        concurrency.point("orphans:roots-listed")
        roots = read_roots(main, enumerated)
    meta_names = {e.name for e in listing.meta_files}
    data_names = listing.data_names
    refs = references.find_references(main, roots, meta_names, data_names,
                                      decision.name_prefixes, processes=config.processes)
    if len(roots) < len(enumerated):  # some vanished between enumeration and reading
        refs = references.References(refs.used_meta, refs.unreferenced_data, (*refs.vanished, "(unread roots)"),
                                     refs.ignored)
    refs = _cover_vanished_roots(main, roots, refs, meta_names, data_names, decision.name_prefixes,
                                 config.processes)
    concurrency.point("orphans:walked")
    kind_of = {d.path: d.kind for d in decision.listings}
    files = []
    candidates = list(listing.unreferenced(refs.used_meta, refs.unreferenced_data))
    unreferenced = len(candidates)
    # a stat only now, for the few unreferenced local files
    for s in main.file_io.statuses_of(candidates):
        if s is None or s.is_dir or s.mtime_ms >= config.older_than_ms:
            continue  # vanished, replaced by a directory, or written after the threshold
        parent_dir, name = s.path.rsplit("/", 1)
        kind = kind_of.get(parent_dir) or decisions.bucket_file_kind(name, decision.changelog_prefixes)
        files.append(plans.PlannedFile(s.path, kind, s.size, "referenced by no snapshot, tag or changelog"))
    n_listed = listing.count
    steps: list[plans.Step] = list(plans.Plan.ordered_deletes(files))
    if config.clean_empty_directories and files:
        touched = sorted(_emptied_dirs(listing, files))
        if touched:
            steps.append(plans.RemoveEmptyDirsStep(tuple(touched), depth=len(main.schema().partition_keys)))
    return plans.Plan("clean-orphans", main.identifier, tuple(steps),
                      (f"{n_listed} candidate file(s) listed, {unreferenced} unreferenced, "
                       f"{len(files)} of them older than the threshold", *reach.notes_of(refs.ignored)),
                      (("older_than_ms", config.older_than_ms), ("candidates", n_listed),
                       ("unreferenced", unreferenced),
                       ("bucket_dirs", len(listing.bucket_dirs)),
                       ("ignored_references", reach.details_of(refs.ignored)),
                       *((("listing", config.listing.source), ("listing_taken_ms", config.listing.taken_ms))
                         if config.listing is not None else ())))
