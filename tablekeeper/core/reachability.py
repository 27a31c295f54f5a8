"""What a retained root (snapshot, tag, changelog) reaches: its live data files (merged
ADD - DELETE of base + delta), its manifest lists and manifests, its index manifest and index
files, its statistics file. Manifests are immutable, so reads are cached by file name across
roots of every branch (they share one manifest/ directory).

Any read error under an existing root propagates: planners turn it into
IncompleteProtectionSetError (fail closed)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from tablekeeper.core.paimon import layout, manifests, pypaimon_adapter
from tablekeeper.core.paimon.snapshot import Snapshot
from tablekeeper.core.paimon.table import Table
from tablekeeper.core.storage import join

__all__ = ["DataKey", "MetaFile", "Reachability"]

#: Java's skip key for data files: (partition bytes, bucket, file name).
DataKey = tuple[bytes, int, str]


@dataclass(frozen=True)
class MetaFile:
    """A metadata file a root references, by kind ('manifest', 'index', 'statistics')."""

    kind: str
    path: str
    size: int | None = None


class Reachability:
    """Cached metadata reads of one table (all branches share manifests, index, data)."""

    def __init__(self, table: Table) -> None:
        self.table = table.on_branch(layout.MAIN)
        self.file_io = table.file_io
        self.manifest_dir = table.shared_dir(layout.MANIFEST_DIR)
        self._lists: dict[str, list[manifests.ManifestFileMeta]] = {}
        self._refs: dict[str, list[manifests.FileRef]] = {}
        self._index: dict[str, list[manifests.IndexManifestEntry]] = {}
        self._lock = threading.Lock()
        self._paths = pypaimon_adapter.PartitionPathResolver(self.table)

    # -- cached reads -------------------------------------------------------------------
    def manifest_list(self, name: str) -> list[manifests.ManifestFileMeta]:
        cached = self._lists.get(name)
        if cached is None:
            cached = manifests.read_manifest_list(self.file_io, join(self.manifest_dir, name))
            with self._lock:
                self._lists[name] = cached
        return cached

    def manifest_refs(self, name: str) -> list[manifests.FileRef]:
        cached = self._refs.get(name)
        if cached is None:
            cached = manifests.read_manifest_refs(self.file_io, join(self.manifest_dir, name))
            with self._lock:
                self._refs[name] = cached
        return cached

    def index_entries(self, name: str) -> list[manifests.IndexManifestEntry]:
        cached = self._index.get(name)
        if cached is None:
            cached = manifests.read_index_manifest(self.file_io, join(self.manifest_dir, name))
            with self._lock:
                self._index[name] = cached
        return cached

    # -- per root -----------------------------------------------------------------------
    def refs_of_list(self, list_name: str | None) -> list[manifests.FileRef]:
        if not list_name:
            return []
        out: list[manifests.FileRef] = []
        for meta in self.manifest_list(list_name):
            out.extend(self.manifest_refs(meta.file_name))
        return out

    def live_files(self, snapshot: Snapshot) -> dict[DataKey, manifests.FileRef]:
        """Merged live data files of a snapshot (ADD - DELETE over base + delta)."""
        refs = self.refs_of_list(snapshot.base_manifest_list) + self.refs_of_list(snapshot.delta_manifest_list)
        return {(r.partition, r.bucket, r.file_name): r for r in manifests.merge_live(refs)}

    def delta_refs(self, snapshot: Snapshot) -> list[manifests.FileRef]:
        return self.refs_of_list(snapshot.delta_manifest_list)

    def changelog_refs(self, snapshot: Snapshot) -> list[manifests.FileRef]:
        return self.refs_of_list(snapshot.changelog_manifest_list)

    def meta_files(self, snapshot: Snapshot, *, include_changelog: bool = True,
                   tolerant: bool = False) -> set[MetaFile]:
        """Manifest lists, manifests, index manifest + index files, statistics of a root.

        ``tolerant`` is for roots being deleted: a list or index manifest that is already gone
        (an interrupted earlier run deletes manifests before lists, index files before the
        index manifest) contributes only its own name. Never use it for protecting roots."""
        out: set[MetaFile] = set()
        lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
        if include_changelog:
            lists.append(snapshot.changelog_manifest_list)
        list_sizes = {snapshot.base_manifest_list: snapshot.fields.get("baseManifestListSize"),
                      snapshot.delta_manifest_list: snapshot.fields.get("deltaManifestListSize"),
                      snapshot.changelog_manifest_list: snapshot.fields.get("changelogManifestListSize")}
        for list_name in lists:
            if not list_name:
                continue
            out.add(MetaFile("manifest", join(self.manifest_dir, list_name), list_sizes.get(list_name)))
            try:
                metas = self.manifest_list(list_name)
            except FileNotFoundError:
                if not tolerant:
                    raise
                continue
            for meta in metas:
                out.add(MetaFile("manifest", join(self.manifest_dir, meta.file_name), meta.file_size))
                for extra in meta.extra_files:
                    out.add(MetaFile("manifest", join(self.manifest_dir, extra)))
        if snapshot.index_manifest:
            out.add(MetaFile("manifest", join(self.manifest_dir, snapshot.index_manifest)))
            try:
                entries = self.index_entries(snapshot.index_manifest)
            except FileNotFoundError:
                if not tolerant:
                    raise
                entries = []
            for entry in entries:
                if entry.kind == 0:
                    out.add(MetaFile("index", self.index_path(entry), entry.file_size))
        if snapshot.statistics:
            out.add(MetaFile("statistics", join(self.table.shared_dir(layout.STATISTICS_DIR),
                                                snapshot.statistics)))
        return out

    # -- long-lived changelog roots -----------------------------------------------------
    def changelog_root_data(self, log: Snapshot) -> set[DataKey]:
        """Data a retained ``changelog-N`` reads: the files its changelog manifests add
        (producer != none), or else the files its delta adds (producer ``none``: the changelog
        is the delta). Exactly one of the two, so reruns plan the same as clean runs."""
        refs = self.changelog_refs(log) if log.changelog_manifest_list else self.delta_refs(log)
        return {(r.partition, r.bucket, r.file_name) for r in refs if r.kind == manifests.ADD}

    def changelog_root_meta(self, log: Snapshot) -> set[str]:
        """Metadata a retained ``changelog-N`` reads: with a changelog manifest list (producer
        != none) that list and its manifests; otherwise (producer ``none``) its base and delta
        lists, which Paimon keeps for such changelogs. Plus index manifest and statistics."""
        out: set[str] = set()
        if log.changelog_manifest_list:
            out.add(join(self.manifest_dir, log.changelog_manifest_list))
            out.update(join(self.manifest_dir, m.file_name) for m in self.manifest_list(log.changelog_manifest_list))
            core = log.with_fields(baseManifestList=None, deltaManifestList=None, changelogManifestList=None)
            out.update(m.path for m in self.meta_files(core, tolerant=True))
        else:
            out.update(m.path for m in self.meta_files(log))
        return out

    # -- paths --------------------------------------------------------------------------
    def data_paths(self, ref: manifests.FileRef) -> list[str]:
        """The data file and its extra files (file-index ``.index`` files)."""
        return self._paths.file_paths(ref)

    def index_path(self, entry: manifests.IndexManifestEntry) -> str:
        return self._paths.index_file_path(entry)

    def union_live(self, snapshots: Iterable[Snapshot]) -> set[DataKey]:
        out: set[DataKey] = set()
        for s in snapshots:
            out.update(self.live_files(s))
        return out

    def union_meta(self, snapshots: Iterable[Snapshot]) -> set[str]:
        out: set[str] = set()
        for s in snapshots:
            out.update(m.path for m in self.meta_files(s))
        return out
