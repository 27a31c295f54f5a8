"""What a retained root (snapshot, tag, changelog) reaches: its live data files (merged
ADD - DELETE of base + delta), its manifest lists and manifests, its index manifest and index
files, its statistics file. Manifests are immutable, so reads are cached by file name across
roots of every branch (they share one manifest/ directory).

Any read error under an existing root propagates: planners turn it into
IncompleteProtectionSetError (fail closed).

Manifest lists are also cached per Avro *block*. A writer that never merges manifests
(pypaimon 2.1) makes ``base(s) = base(s-1) + delta(s-1)``, so the lists of consecutive snapshots
share every block but the last (Java's lists share blocks between merges). A block's records are
a pure function of its bytes and the file's writer schema and codec (Avro blocks are compressed
and decoded independently), so a block whose (schema, record count, bytes) was decoded before is
not decoded again, and unions over many roots (``union_meta``, ``meta_files(union=...)``) visit
each distinct block once instead of once per list repeating it (for the expiring snapshots of
a pypaimon table: O(history) list entries instead of O(expiring x history)). A file whose
framing this module does not fully understand is handed to ``read_manifest_list`` whole: it
stays the only decoder and the only judge of damaged files (its exceptions are raised unchanged)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tablekeeper.core import paimon
from tablekeeper.core.paimon import Snapshot, Table, manifests
from tablekeeper.core.paimon.manifests import gc_paused
from tablekeeper.core.reach import roles
from tablekeeper.core.reach.roles import ListRole
from tablekeeper.core.storage import FileIO, join

if TYPE_CHECKING:  # imported where used: a local orphan cleanup never forks, reads root metadata or paths
    from tablekeeper.core.paimon import pypaimon

__all__ = ["DataKey", "MetaFile", "MetaUnion", "MissingFile", "Missing", "Reachability", "gc_paused"]

#: Threads that fetch and decode manifests ahead of a planner on object stores (latency-bound).
#: Local files are not prefetched: decoding holds the GIL and threads measured no faster.
PREFETCH_WORKERS = 4

#: Java's skip key for data files: (partition bytes, bucket, file name).
DataKey = tuple[bytes, int, str]


class MissingFile(FileNotFoundError):
    """A metadata file a read needed is missing: ``name`` (in the manifest directory) is a
    ``manifest list``, a ``manifest`` (of the list ``list_name``) or an ``index manifest``;
    ``role``: the root's list it was read through, where the reader knows it."""

    def __init__(self, name: str, what: str, role: ListRole | None = None, list_name: str | None = None) -> None:
        super().__init__(2, f"{what} {name} is missing", name)
        self.name, self.what, self.role, self.list_name = name, what, role, list_name

    def described(self) -> tuple[str, str]:
        """(what it is to its root, its name), for an error naming both."""
        from tablekeeper.core.reach import guarantees

        reference = guarantees.list_reference(self.role).value if self.role is not None else "manifest list"
        if self.what == "manifest":
            return (f"a manifest of its {reference} {self.list_name}:" if self.list_name else "a manifest", self.name)
        if self.what == "index manifest":
            return ("its index manifest", self.name)
        return (f"its {reference}", self.name)


#: Told of a file a root names by a reference that may dangle and that is gone:
#: (the root's list role, or ListRole.INDEX; the missing file; the list naming it, if a manifest).
Missing = Callable[[ListRole, str, "str | None"], None]


@dataclass(frozen=True)
class MetaFile:
    """A metadata file a root references, by kind ('manifest', 'index', 'statistics')."""

    kind: str
    path: str
    size: int | None = None


#: One block of a manifest list: (block id, its entries). Equal ids mean equal entries.
ListBlock = tuple[int, tuple[manifests.ManifestFileMeta, ...]]
#: The same, names only: (block id, ((manifest name, its extra files), ...)).
NameBlock = tuple[int, tuple[tuple[str, tuple[str, ...]], ...]]
#: Bytes of a decompressed list block that index it for :meth:`Reachability.manifest_list_names`.
_HEAD = 64

class _Preloaded(FileIO):
    """The table's store, answering ``read_bytes`` for one path from memory (bytes already
    read, or a container cut down to some of its blocks)."""

    def __init__(self, base: FileIO, path: str, data: bytes) -> None:
        super().__init__(base.scheme, base.fs, base.connection, base.retry)
        self._path, self._data = path, data

    def read_bytes(self, path: str) -> bytes:
        return self._data if path == self._path else super().read_bytes(path)


@dataclass
class MetaUnion:
    """What a union of roots' metadata files has already reported: list blocks (by id) and
    index manifests (by name). Both are immutable, so their files need reporting only once."""

    blocks: set[int] = field(default_factory=set)
    index_manifests: set[str] = field(default_factory=set)


class Reachability:
    """Cached metadata reads of one table (all branches share manifests, index, data)."""

    def __init__(self, table: Table) -> None:
        self.table = table.on_branch(paimon.MAIN)
        self._producer: str | None = None  # changelog-producer of main, read on first use
        self.file_io = table.file_io
        self.manifest_dir = table.shared_dir(paimon.MANIFEST_DIR)
        self._lists: dict[str, list[manifests.ManifestFileMeta]] = {}
        self._list_blocks: dict[str, list[ListBlock]] = {}
        self._blocks: dict[tuple[int, int, bytes], ListBlock] = {}
        self._name_blocks: dict[tuple[int, int, bytes], NameBlock] = {}
        #: decoded list blocks by (header, first bytes), to decode only the rows a block appends
        self._name_heads: dict[tuple[int, bytes], tuple[bytes, tuple[tuple[str, tuple[str, ...]], ...]]] = {}
        self._headers: dict[bytes, int] = {}
        self._block_ids = itertools.count()
        self._refs: dict[str, list[manifests.FileRef]] = {}
        self._index: dict[str, list[manifests.IndexManifestEntry]] = {}
        self._live: dict[tuple[str | None, str | None], dict[DataKey, manifests.FileRef]] = {}
        self._lock = threading.Lock()
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

    # -- cached reads -------------------------------------------------------------------
    def manifest_list(self, name: str) -> list[manifests.ManifestFileMeta]:
        cached = self._lists.get(name)
        if cached is None:
            cached = [meta for _, block in self.manifest_list_blocks(name) for meta in block]
            with self._lock:
                self._lists[name] = cached
        return cached

    def manifest_list_blocks(self, name: str) -> list[ListBlock]:
        """The entries of a manifest list, block by block (see the module docstring)."""
        cached = self._list_blocks.get(name)
        if cached is None:
            cached = self._read_list_blocks(join(self.manifest_dir, name))
            with self._lock:
                self._list_blocks[name] = cached
        return cached

    def _read_list_blocks(self, path: str) -> list[ListBlock]:
        try:
            data = self.file_io.read_bytes(path)  # permission errors propagate as before
        except FileNotFoundError as e:
            raise MissingFile(path.rsplit("/", 1)[-1], "manifest list") from e

        def whole() -> list[ListBlock]:
            entries = manifests.read_manifest_list(_Preloaded(self.file_io, path, data), path)
            return [(next(self._block_ids), tuple(entries))]

        framed = manifests.frame(data)
        if framed is None:
            return whole()
        header_end, frames = framed.header_end, framed.blocks
        keys = self._block_keys(data, framed)
        new = [i for i, key in enumerate(keys) if key not in self._blocks]
        if new:
            try:
                view = memoryview(data)
                direct = manifests.read_list_blocks(framed.schema_json, framed.codec, [
                    (view[frames[i].payload:frames[i].end - 16], frames[i].records) for i in new], path)
                if direct is not None:
                    entries = [meta for rows in direct for meta in rows]
                else:
                    subset = data[:header_end] + b"".join(data[frames[i].start:frames[i].end] for i in new)
                    entries = manifests.read_manifest_list(_Preloaded(self.file_io, path, subset), path)
            except Exception:
                return whole()  # the full read raises exactly what it always raised
            if len(entries) != sum(frames[i].records for i in new):
                return whole()
            pos = 0
            with self._lock:
                for i in new:
                    count = frames[i].records
                    self._blocks.setdefault(keys[i], (next(self._block_ids), tuple(entries[pos:pos + count])))
                    pos += count
        return [self._blocks[key] for key in keys]

    def _block_keys(self, data: bytes, framed: manifests.Framed) -> list[tuple[int, int, bytes]]:
        """Per block: (writer header id, record count, compressed payload). Equal keys decode to
        equal records."""
        with self._lock:
            header = self._headers.setdefault(data[len(manifests.MAGIC):framed.header_end - 16],
                                              len(self._headers))
        return [(header, b.records, data[b.payload:b.end - 16]) for b in framed.blocks]

    def manifest_list_names(self, name: str) -> list[NameBlock]:
        """The (manifest name, extra files) of a manifest list, block by block, as
        :meth:`manifest_list_blocks` but decoded names-only (what orphan cleanup needs). Not
        cached per list: each list is read once by its caller, blocks are shared as there.

        A block that merely extends one decoded before (pypaimon rewrites a list's last, partial
        block with the next snapshot's rows appended) has only its new rows decoded: Avro rows
        are concatenated without framing, so when a block's bytes start with a whole decoded
        block of the same writer schema, its first rows are that block's."""
        path = join(self.manifest_dir, name)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError as e:
            raise MissingFile(name, "manifest list") from e
        framed = manifests.frame(data)
        schema = framed.schema_json if framed is not None else None
        if framed is None or schema is None:
            return self._names_of(self.manifest_list_blocks(name))
        view = memoryview(data)
        out: list[NameBlock] = []
        for b, key in zip(framed.blocks, self._block_keys(data, framed), strict=True):
            header = key[0]
            cached = self._name_blocks.get(key)
            if cached is None:
                names = self._decode_names(header, schema, framed.codec, view[b.payload:b.end - 16], b.records, path)
                if names is None or len(names) != b.records:
                    return self._names_of(self.manifest_list_blocks(name))  # the full reader decides
                with self._lock:
                    cached = self._name_blocks.setdefault(key, (next(self._block_ids), names))
            out.append(cached)
        return out

    def _decode_names(self, header: int, schema: bytes, codec: str, payload: memoryview, count: int,
                      path: str) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
        data = manifests.decompress(codec, payload)
        if data is None:
            return None
        head = (header, data[:_HEAD])
        known = self._name_heads.get(head)
        names: list[tuple[str, tuple[str, ...]]] | None
        if known is not None and len(data) > len(known[0]) and len(known[1]) < count and data.startswith(known[0]):
            tail = manifests.read_list_block_names(schema, data, count - len(known[1]), path, start=len(known[0]))
            names = None if tail is None else [*known[1], *tail]
        else:
            names = manifests.read_list_block_names(schema, data, count, path)
        if names is None:
            return None
        decoded = tuple(names)
        if len(data) >= _HEAD:
            with self._lock:
                self._name_heads[head] = (data, decoded)  # the newest: the next list extends it
        return decoded

    @staticmethod
    def _names_of(blocks: list[ListBlock]) -> list[NameBlock]:
        return [(block_id, tuple((m.file_name, m.extra_files) for m in metas)) for block_id, metas in blocks]

    def manifest_refs(self, name: str) -> list[manifests.FileRef]:
        cached = self._refs.get(name)
        if cached is None:
            try:
                cached = manifests.read_manifest_refs(self.file_io, join(self.manifest_dir, name))
            except FileNotFoundError as e:
                raise MissingFile(name, "manifest") from e
            with self._lock:
                self._refs[name] = cached
        return cached

    def index_entries(self, name: str) -> list[manifests.IndexManifestEntry]:
        cached = self._index.get(name)
        if cached is None:
            try:
                cached = manifests.read_index_manifest(self.file_io, join(self.manifest_dir, name))
            except FileNotFoundError as e:
                raise MissingFile(name, "index manifest", ListRole.INDEX) from e
            with self._lock:
                self._index[name] = cached
        return cached

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

    @property
    def prefetches(self) -> bool:
        """Whether ``prefetch`` does anything: on object stores (a thread pool), and on local
        files where a forked helper can decode half of the manifests (:mod:`.forked_refs`;
        threads cannot: local reads are CPU-bound under the GIL)."""
        if not self.file_io.is_local:
            return True
        from tablekeeper.core.reach import forked_decode

        return forked_decode.usable(self.file_io)

    def prefetch(self, list_names: Iterable[str | None], *, manifests_too: bool = True,
                 workers: int = PREFETCH_WORKERS, with_paths: bool = False,
                 then_lists: Iterable[str | None] = ()) -> None:
        """Read manifest lists (and the manifests they name) into the caches with a thread pool.

        ``with_paths``: the plan will resolve data paths; on local files the path resolver
        (pypaimon's import for partition types it alone renders) is built while the forked
        helper decodes. ``then_lists``: lists whose names only are needed (read after the rest;
        on local files while the forked helper decodes).

        Purely an optimisation: every error is swallowed, so the planner's own sequential
        reads meet (and raise) it exactly where and as they always did."""
        if workers <= 1 or not self.prefetches:
            return
        names = [n for n in dict.fromkeys(list_names) if n and n not in self._list_blocks]
        if self.file_io.is_local:
            self._prefetch_forked(names, manifests_too, with_paths, then_lists)
            return

        def quietly(fn: Callable[[str], object]) -> Callable[[str], None]:
            def run(name: str) -> None:
                try:
                    fn(name)
                except Exception:
                    pass
            return run

        from concurrent.futures import ThreadPoolExecutor  # lazily: ~12 ms of start-up

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tablekeeper-prefetch") as pool:
            list(pool.map(quietly(self.manifest_list_blocks), names))
            if manifests_too:
                list(pool.map(quietly(self.manifest_refs), self._unread_manifests(names)))
            later = [n for n in dict.fromkeys(then_lists) if n and n not in self._list_blocks]
            list(pool.map(quietly(self.manifest_list_blocks), later))

    def _unread_manifests(self, list_names: Iterable[str]) -> list[str]:
        """The manifests the (already read) manifest lists ``list_names`` name and not decoded yet, once each."""
        wanted: dict[str, None] = {}
        for name in list_names:
            for _, block in self._list_blocks.get(name, ()):
                for meta in block:
                    if meta.file_name not in self._refs:
                        wanted[meta.file_name] = None
        return list(wanted)

    def _prefetch_forked(self, names: list[str], manifests_too: bool, with_paths: bool = False,
                         then_lists: Iterable[str | None] = ()) -> None:
        """Local files: the lists read here (their blocks are shared between lists, so one
        process reads them), then the manifests they name decoded here and in a forked helper
        (:func:`.forked_refs.decode_shared`), which meanwhile lets this process build the path
        resolver and read ``then_lists`` (work of the plan's later steps, done while the
        helper decodes). Errors are swallowed as in :meth:`prefetch`."""
        self._read_lists_quietly(names)
        if not manifests_too:
            self._read_lists_quietly(then_lists)
            return
        wanted = self._unread_manifests(names)
        ran: list[bool] = []

        def store(name: str, refs: list[manifests.FileRef]) -> None:
            with self._lock:
                self._refs.setdefault(name, refs)

        def meanwhile() -> None:
            ran.append(True)
            if with_paths:
                self._warm_paths()
            self._read_lists_quietly(then_lists)

        from tablekeeper.core.reach import forked_decode

        forked_decode.decode_shared(self.file_io, self.manifest_dir, wanted, self.manifest_refs, store,
                                  meanwhile=meanwhile)
        if not ran:  # no helper was used: read them now, as before
            self._read_lists_quietly(then_lists)

    def _read_lists_quietly(self, names: Iterable[str | None]) -> None:
        for name in dict.fromkeys(names):
            if name and name not in self._list_blocks:
                try:
                    self.manifest_list_blocks(name)
                except Exception:
                    pass

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
        from tablekeeper.core.reach import root_metadata

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
        return "delta" if roles.changelog_reads(log, self.changelog_producer()) else "empty"

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
