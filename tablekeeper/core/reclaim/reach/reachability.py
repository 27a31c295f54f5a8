"""What a retained root (snapshot, tag, changelog) reaches: its live data files (merged
ADD - DELETE of base + delta), its manifest lists and manifests, its index manifest and index
files, its statistics file, read through the table's cached manifest reads
(:mod:`.manifest_cache`, shared by the roots of every branch).

Any read error under an existing root propagates: planners turn it into
IncompleteProtectionSetError (fail closed). Unions over many roots (``union_meta``,
``meta_files(union=...)``) visit each distinct manifest-list block once."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tablekeeper.core import paimon
from tablekeeper.core.paimon import Snapshot, Table, manifests
from tablekeeper.core.reclaim.reach.manifest_cache import ManifestCache, MissingFile
from tablekeeper.core.reclaim.reach.roles import ListRole, changelog_reads
from tablekeeper.core.storage import join

if TYPE_CHECKING:  # imported where used: a local orphan cleanup never forks, reads root metadata or paths
    from tablekeeper.core.paimon import pypaimon

__all__ = ["DataKey", "MetaFile", "MetaUnion", "MissingFile", "Missing", "Reachability"]

#: Java's skip key for data files: (partition bytes, bucket, file name).
DataKey = tuple[bytes, int, str]


#: Told of a file a root names by a reference that may dangle and that is gone:
#: (the root's list role, or ListRole.INDEX; the missing file; the list naming it, if a manifest).
Missing = Callable[[ListRole, str, "str | None"], None]


@dataclass(frozen=True)
class MetaFile:
    """A metadata file a root references, by kind ('manifest', 'index', 'statistics')."""

    kind: str
    path: str
    size: int | None = None


@dataclass
class MetaUnion:
    """What a union of roots' metadata files has already reported: list blocks (by id) and
    index manifests (by name). Both are immutable, so their files need reporting only once."""

    blocks: set[int] = field(default_factory=set)
    index_manifests: set[str] = field(default_factory=set)


class Reachability(ManifestCache):
    """What the roots of one table reach, over its cached manifest reads (all branches share
    manifests, index, data)."""

    def __init__(self, table: Table) -> None:
        super().__init__(table.file_io, table.shared_dir(paimon.MANIFEST_DIR))
        self.table = table.on_branch(paimon.MAIN)
        self._producer: str | None = None  # changelog-producer of main, read on first use
        self._live: dict[tuple[str | None, str | None], dict[DataKey, manifests.FileRef]] = {}
        self._resolver: pypaimon.PartitionPathResolver | None = None

    def sharing_reads(self, table: Table) -> Reachability:
        """A Reachability of ``table`` (the same table seen again, e.g. with unpublished
        snapshots standing in) that shares this one's caches of *immutable* files: manifest
        lists, their blocks, manifests, index manifests and the live sets merged from a pair of
        lists. Roots (snapshot, tag, changelog files) are not cached: they are read again, so a
        root that appeared or changed meanwhile is walked, and only its new manifests are read.

        Why this is safe: Paimon never rewrites a manifest or list under the same (UUID) name, so
        a cached read is what a fresh read returns while the file exists; if the file was
        deleted meanwhile the cached read answers where a fresh one would fail, which can only
        add protection (a protecting root's files stay kept) or candidates that are already
        gone (reported missing), never remove a protection."""
        other = Reachability.__new__(Reachability)
        other.__dict__.update(self.__dict__)
        other.table = table.on_branch(paimon.MAIN)
        other._producer = None
        return other

    # -- per root -----------------------------------------------------------------------
    def refs_of_list(self, list_name: str | None, role: ListRole | None = None, *,
                     missing: Missing | None = None) -> list[manifests.FileRef]:
        """The entries of every manifest the list names. ``missing``: the list may dangle (for
        the root it is read for): a missing list or manifest is told to it and left out, the
        entries of the manifests that exist still count; else a missing file raises
        :class:`MissingFile` (with ``role`` and the list)."""
        if not list_name:
            return []
        try:
            metas = self.manifest_list(list_name)
        except MissingFile as e:
            if missing is None or role is None:
                e.role = role
                raise
            missing(role, list_name, None)
            return []
        out: list[manifests.FileRef] = []
        for meta in metas:
            try:
                out.extend(self.manifest_refs(meta.file_name))
            except MissingFile as e:
                if missing is None or role is None:
                    e.role, e.list_name = role, list_name
                    raise
                missing(role, meta.file_name, list_name)
        return out

    def live_files(self, snapshot: Snapshot) -> dict[DataKey, manifests.FileRef]:
        """Merged live data files of a snapshot (ADD - DELETE over base + delta). Cached by the
        pair of list names (immutable files): tags and roots sharing both lists merge once."""
        key = (snapshot.base_manifest_list, snapshot.delta_manifest_list)
        cached = self._live.get(key)
        if cached is None:
            refs = (self.refs_of_list(snapshot.base_manifest_list, ListRole.BASE)
                    + self.refs_of_list(snapshot.delta_manifest_list, ListRole.DELTA))
            cached = {(r.partition, r.bucket, r.file_name): r for r in manifests.merge_live(refs)}
            with self._lock:
                self._live[key] = cached
        return cached

    def delta_refs(self, snapshot: Snapshot) -> list[manifests.FileRef]:
        return self.refs_of_list(snapshot.delta_manifest_list, ListRole.DELTA)

    def changelog_refs(self, snapshot: Snapshot, *, missing: Missing | None = None) -> list[manifests.FileRef]:
        """The changelog entries of ``snapshot`` (``missing``: the list may dangle, see
        :meth:`refs_of_list`)."""
        return self.refs_of_list(snapshot.changelog_manifest_list, ListRole.CHANGELOG, missing=missing)

    def _warm_paths(self) -> None:
        """Build the path resolver now (errors swallowed: the first real use raises them)."""
        try:
            _ = self._paths
        except Exception:
            pass

    def meta_files(self, snapshot: Snapshot, *, include_changelog: bool = True,
                   tolerant: bool = False, union: MetaUnion | None = None,
                   dangling: frozenset[ListRole] = frozenset(), missing: Missing | None = None) -> set[MetaFile]:
        """Manifest lists, manifests, index manifest + index files, statistics of a root.

        ``union`` (many roots in a row): leave out the files of list blocks and index manifests
        ``union`` already reported for an earlier root, and record this root's. The list and
        index-manifest names themselves are always reported. Recording happens only after every
        read succeeded, so a read error leaves ``union`` unchanged.

        ``tolerant`` is for roots being deleted: a list or index manifest that is already gone
        (an interrupted earlier run deletes manifests before lists, index files before the
        index manifest; or Paimon deleted it by design) contributes nothing. Never use it for
        protecting roots.
        ``dangling`` (with ``missing``) is for protecting roots: the lists (``ListRole.INDEX``:
        the index manifest) Paimon lets dangle for this root; one that is gone is told to
        ``missing`` and contributes its own name. Any other missing file raises
        :class:`MissingFile`."""
        from tablekeeper.core.reclaim.reach import root_metadata

        out: set[MetaFile] = set()
        roles = [ListRole.BASE, ListRole.DELTA] + ([ListRole.CHANGELOG] if include_changelog else [])
        new_blocks: list[int] = []
        for role, list_name in root_metadata.lists_of(snapshot, roles):
            ref = root_metadata.list_file(self.manifest_dir, snapshot, role, list_name)
            try:
                blocks = self.manifest_list_blocks(list_name)
                out.add(MetaFile(ref.kind, ref.path, ref.size))  # (a list already gone is not reported)
            except MissingFile as e:
                if tolerant:
                    continue
                if missing is not None and role in dangling:
                    missing(role, list_name, None)
                    continue
                e.role = role
                raise
            for block_id, metas in blocks:
                if union is not None:
                    if block_id in union.blocks:
                        continue  # reported for an earlier root of the union
                    new_blocks.append(block_id)
                out.update(MetaFile(m.kind, m.path, m.size) for m in root_metadata.list_contents(self.manifest_dir,
                                                                                                 metas))
        new_index: str | None = None
        index_manifest = root_metadata.index_manifest_file(self.manifest_dir, snapshot)
        if index_manifest is not None and snapshot.index_manifest:
            entries: list[manifests.IndexManifestEntry] = []
            present = True
            if union is None or snapshot.index_manifest not in union.index_manifests:
                try:
                    entries = self.index_entries(snapshot.index_manifest)
                    new_index = snapshot.index_manifest
                except MissingFile:
                    present = False
                    if tolerant:
                        pass
                    elif missing is not None and ListRole.INDEX in dangling:
                        missing(ListRole.INDEX, snapshot.index_manifest, None)
                    else:
                        raise
            if present:  # (an index manifest already gone is not reported)
                out.add(MetaFile(index_manifest.kind, index_manifest.path, index_manifest.size))
            for entry in root_metadata.added_index_entries(entries):
                out.add(MetaFile("index", self.index_path(entry), entry.file_size))
        statistics = root_metadata.statistics_file(self.table.shared_dir(paimon.STATISTICS_DIR), snapshot)
        if statistics is not None:
            out.add(MetaFile(statistics.kind, statistics.path, statistics.size))
        if union is not None:
            union.blocks.update(new_blocks)
            if new_index is not None:
                union.index_manifests.add(new_index)
        return out

    # -- long-lived changelog roots -----------------------------------------------------
    def changelog_root_data(self, log: Snapshot, *, dangling: frozenset[ListRole] = frozenset(),
                            missing: Missing | None = None) -> set[DataKey]:
        """Data a retained ``changelog-N`` reads: the files its changelog manifests add
        (producer != none), or else the files its delta adds (producer ``none``: the changelog
        is the delta). Exactly one of the two, so reruns plan the same as clean runs.
        ``dangling``/``missing``: as for :meth:`meta_files`."""
        role = self.changelog_role(log)
        if role == "empty":
            return set()
        list_role = ListRole.CHANGELOG if role == "changelog" else ListRole.DELTA
        name = log.changelog_manifest_list if role == "changelog" else log.delta_manifest_list
        refs = self.refs_of_list(name, list_role, missing=missing if list_role in dangling else None)
        return {(r.partition, r.bucket, r.file_name) for r in refs if r.kind == manifests.ADD}

    def changelog_role(self, log: Snapshot) -> str:
        """What a retained ``changelog-N`` is read through: ``changelog`` (its changelog list),
        ``delta`` (producer ``none``: the changelog is the delta, and Paimon keeps the base and
        delta lists of such changelogs) or ``empty``: the other producers write a changelog
        list only where they produced a changelog (lookup and full-compaction: on compaction),
        so a changelog-N without one reads nothing, and Java Paimon's expiration deletes its
        base and delta lists (seen on Java-written lookup tables, issue 13)."""
        if log.changelog_manifest_list:
            return "changelog"
        return "delta" if changelog_reads(log, self.changelog_producer()) else "empty"

    def changelog_producer(self) -> str:
        """Main's ``changelog-producer`` (read once)."""
        if self._producer is None:
            self._producer = self.table.options().get("changelog-producer", "none").strip().lower()
        return self._producer

    def changelog_root_meta(self, log: Snapshot, *, dangling: frozenset[ListRole] = frozenset(),
                            missing: Missing | None = None) -> set[str]:
        """Metadata a retained ``changelog-N`` reads: with a changelog manifest list (producer
        != none) that list and its manifests; otherwise (producer ``none``) its base and delta
        lists, which Paimon keeps for such changelogs. Plus index manifest and statistics.
        ``dangling``/``missing``: as for :meth:`meta_files`; without ``missing`` a missing
        index manifest is tolerated."""
        out: set[str] = set()
        role = self.changelog_role(log)
        core = log.with_fields(baseManifestList=None, deltaManifestList=None, changelogManifestList=None)
        if role == "empty":
            out.update(m.path for m in self._core_meta(core, dangling, missing))
        elif role == "changelog" and log.changelog_manifest_list:
            out.add(join(self.manifest_dir, log.changelog_manifest_list))
            try:
                metas = self.manifest_list(log.changelog_manifest_list)
            except MissingFile as e:
                if missing is None or ListRole.CHANGELOG not in dangling:
                    e.role = ListRole.CHANGELOG
                    raise
                missing(ListRole.CHANGELOG, log.changelog_manifest_list, None)
                metas = []
            out.update(join(self.manifest_dir, m.file_name) for m in metas)
            out.update(m.path for m in self._core_meta(core, dangling, missing))
        else:
            out.update(m.path for m in self.meta_files(log, dangling=dangling, missing=missing))
        return out

    def _core_meta(self, core: Snapshot, dangling: frozenset[ListRole], missing: Missing | None) -> set[MetaFile]:
        """A changelog-N's index manifest and statistics (``core``: without its lists)."""
        if missing is None:
            return self.meta_files(core, tolerant=True)
        return self.meta_files(core, dangling=dangling, missing=missing)

    # -- paths --------------------------------------------------------------------------
    @property
    def _paths(self) -> pypaimon.PartitionPathResolver:
        """Built on first use: orphan cleanup reads names only and never needs it."""
        if self._resolver is None:
            from tablekeeper.core.paimon import pypaimon

            resolver = pypaimon.PartitionPathResolver(self.table)
            with self._lock:
                if self._resolver is None:
                    self._resolver = resolver
        return self._resolver

    def data_paths(self, ref: manifests.FileRef) -> list[str]:
        """The data file and its extra files (file-index ``.index`` files)."""
        return self._paths.file_paths(ref)

    def data_paths_of(self) -> Callable[[manifests.FileRef], list[str]]:
        """:meth:`data_paths` as one bound function, for loops over ~100k files; the resolver
        (pypaimon) is built when it is first called, as there."""
        resolved: list[Callable[[manifests.FileRef], list[str]]] = []

        def paths(ref: manifests.FileRef) -> list[str]:
            if not resolved:
                resolved.append(self._paths.file_paths)
            return resolved[0](ref)

        return paths

    def path_functions(self) -> tuple[Callable[[manifests.FileRef], str | None],
                                      Callable[[manifests.FileRef], list[str]]]:
        """The resolver's ``sole_path`` and ``file_paths`` (building it now: call this when a
        path is first needed)."""
        return self._paths.sole_path, self._paths.file_paths

    def index_path(self, entry: manifests.IndexManifestEntry) -> str:
        return self._paths.index_file_path(entry)

    def union_live(self, snapshots: Iterable[Snapshot]) -> set[DataKey]:
        out: set[DataKey] = set()
        for s in snapshots:
            out.update(self.live_files(s))
        return out

    def union_meta(self, snapshots: Iterable[Snapshot]) -> set[str]:
        """Paths of every metadata file any of ``snapshots`` reaches (each shared list block
        and index manifest visited once)."""
        out: set[str] = set()
        union = MetaUnion()
        for s in snapshots:
            out.update(m.path for m in self.meta_files(s, union=union))
        return out
