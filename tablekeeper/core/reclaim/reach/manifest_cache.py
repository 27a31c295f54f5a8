"""The manifest reads of one table, cached across the roots of every branch: manifest lists (also
per Avro block), manifests, index manifests. Manifests are immutable, so a read is cached by file
name (all branches share one manifest/ directory).

Manifest lists are cached per Avro *block*. A writer that never merges manifests (pypaimon 2.1)
makes ``base(s) = base(s-1) + delta(s-1)``, so the lists of consecutive snapshots share every
block but the last (Java's lists share blocks between merges). A block's records are a pure
function of its bytes and the file's writer schema and codec (Avro blocks are compressed and
decoded independently), so a block whose (schema, record count, bytes) was decoded before is not
decoded again, and unions over many roots visit each distinct block once instead of once per list
repeating it (for the expiring snapshots of a pypaimon table: O(history) list entries instead of
O(expiring x history)). A file whose framing this module does not fully understand is handed to
``read_manifest_list`` whole: it stays the only decoder and the only judge of damaged files (its
exceptions are raised unchanged).

Reads ahead (:meth:`ManifestCache.prefetch`): a thread pool on object stores, a forked helper
decoding half of the manifests on local files (:mod:`.forked_decode`)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable

from tablekeeper.core.paimon import manifests
from tablekeeper.core.reclaim.reach.roles import ListRole
from tablekeeper.core.storage import FileIO, join

__all__ = ["ManifestCache", "MissingFile", "ListBlock", "NameBlock", "PREFETCH_WORKERS"]

#: Threads that fetch and decode manifests ahead of a planner on object stores (latency-bound).
#: Local files are not prefetched: decoding holds the GIL and threads measured no faster.
PREFETCH_WORKERS = 4

class MissingFile(FileNotFoundError):
    """A metadata file a read needed is missing: ``name`` (in the manifest directory) is a
    ``manifest list``, a ``manifest`` (of the list ``list_name``) or an ``index manifest``;
    ``role``: the root's list it was read through, where the reader knows it."""

    def __init__(self, name: str, what: str, role: ListRole | None = None, list_name: str | None = None) -> None:
        super().__init__(2, f"{what} {name} is missing", name)
        self.name, self.what, self.role, self.list_name = name, what, role, list_name

    def described(self) -> tuple[str, str]:
        """(what it is to its root, its name), for an error naming both."""
        from tablekeeper.core.reclaim.reach import guarantees

        reference = guarantees.list_reference(self.role).value if self.role is not None else "manifest list"
        if self.what == "manifest":
            return (f"a manifest of its {reference} {self.list_name}:" if self.list_name else "a manifest", self.name)
        if self.what == "index manifest":
            return ("its index manifest", self.name)
        return (f"its {reference}", self.name)


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



class ManifestCache:
    """Cached manifest reads of one table (all branches share manifests and index manifests)."""

    def __init__(self, file_io: FileIO, manifest_dir: str) -> None:
        self.file_io = file_io
        self.manifest_dir = manifest_dir
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
        self._lock = threading.Lock()

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

    @property
    def prefetches(self) -> bool:
        """Whether ``prefetch`` does anything: on object stores (a thread pool), and on local
        files where a forked helper can decode half of the manifests (:mod:`.forked_decode`;
        threads cannot: local reads are CPU-bound under the GIL)."""
        if not self.file_io.is_local:
            return True
        from tablekeeper.core.reclaim.reach import forked_decode

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
        (:func:`.forked_decode.decode_shared`), which meanwhile lets this process build the path
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

        from tablekeeper.core.reclaim.reach import forked_decode

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
        """Work of a plan's later steps, done while a forked helper decodes (see
        :class:`.reachability.Reachability`)."""

