"""Executor-side functions of expiration on Spark (``expire.decide_expire`` /
``decide_expire_changelog``, evaluated by :mod:`tablekeeper.spark.expire.plan`): core's per-file
rules applied where the rows are — a root's metadata by ``core.root_metadata``, deletions within
one delta by ``expire_decisions.effective_deletions``, live files by ``manifests.merge_kinds`` in
manifest order — and the locations of the planned files (the rules of
``PartitionPathResolver.file_paths`` / ``index_file_path``). No rule is stated here; the shape of
every function is that of :mod:`tablekeeper.spark.executor`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from tablekeeper.spark.deletes.executor import DELETE_FIELDS
from tablekeeper.spark.executor import Fields, Rows, classify, file_io, join, map_manifest_files, map_rows, stage_of

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from tablekeeper.core.storage import FileIO

__all__ = [
    "ENTRY_FIELDS", "RESOLVE_FIELDS", "EXPAND_FIELDS", "EXPANDED_FIELDS", "KEYED_FIELDS", "MERGED_FIELDS",
    "read_entries", "index_key", "expand_roots", "effective_deletions", "merge_live", "local_form", "expand_paths",
]

ENTRY_FIELDS: Fields = (("manifest_name", "string"), ("kind", "int"), ("partition", "binary"), ("bucket", "int"),
                        ("level", "int"), ("file_name", "string"), ("ident_x", "string"),
                        ("extra_files", "array<string>"), ("external_path", "string"), ("file_size", "long"),
                        ("entry_pos", "int"), ("error_kind", "string"), ("error", "string"))
RESOLVE_FIELDS: Fields = (("what", "string"), ("kind", "string"), ("file_name", "string"),
                          ("extra_files", "array<string>"), ("external_path", "string"), ("bucket_dir", "string"),
                          ("size", "long"), ("index_type", "string"))
EXPAND_FIELDS: Fields = (("rid", "int"), ("base", "string"), ("delta", "string"), ("changelog", "string"),
                         ("base_size", "long"), ("delta_size", "long"), ("changelog_size", "long"),
                         ("index_manifest", "string"), ("statistics", "string"), ("entry_roles", "string"),
                         ("meta_lists", "string"), ("meta_extra", "boolean"))
EXPANDED_FIELDS: Fields = (("rid", "int"), ("what", "string"), ("list_role", "string"), ("name", "string"),
                           ("path", "string"), ("kind", "string"), ("size", "long"), ("stage", "int"),
                           ("partition", "binary"), ("bucket", "int"), ("index_type", "string"),
                           ("external_path", "string"), ("pos", "int"), ("error_kind", "string"),
                           ("error", "string"))
KEYED_FIELDS: Fields = (("rid", "int"), ("partition", "binary"), ("bucket", "int"), ("file_name", "string"))
MERGED_FIELDS: Fields = (("rid", "int"), ("partition", "binary"), ("bucket", "int"), ("file_name", "string"),
                         ("error", "string"))

#: Index types Paimon keeps per bucket (in the bucket directory with index-file-in-data-file-dir).
_BUCKET_INDEX_TYPES = frozenset({"HASH", "DELETION_VECTORS"})


# -- manifests -------------------------------------------------------------------------------------
def _ident_x(extra: Sequence[str], external: str | None, embedded: bytes | None) -> str:
    """The part of Java's FileEntry.Identifier beyond (partition, bucket, level, name)."""
    digest = hashlib.sha1(embedded).hexdigest() if embedded else None
    return json.dumps([list(extra), external, digest], separators=(",", ":"))


def read_entries(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(name of a manifest) -> its entries in the planning projection (kind, partition bytes,
    bucket, level, file name, identifier extras, extra files, external path)."""
    from tablekeeper.core.paimon import manifests

    def read(io: FileIO, path: str) -> Iterable[tuple[int, manifests.FileRef]]:
        return enumerate(manifests.read_manifest_refs(io, path))

    def emit(name: str, item: tuple[int, manifests.FileRef], out: Rows) -> None:
        pos, r = item
        out.add(name, int(r.kind), bytes(r.partition), int(r.bucket), int(r.level), r.file_name,
                _ident_x(r.extra_files, r.external_path, r.embedded_index), list(r.extra_files),
                r.external_path, int(r.file_size or 0), pos, None, None)

    return map_manifest_files(spec, batches, ENTRY_FIELDS, read, emit)


# -- roots -----------------------------------------------------------------------------------------
class _ListedManifest(NamedTuple):
    """A manifest-list row as ``read_lists`` returned it (what ``root_metadata.list_contents``
    and the expansion use of a ``ManifestFileMeta``)."""

    file_name: str
    file_size: int
    extra_files: tuple[str, ...]


def index_key(file_name: str, external_path: str | None, partition: bytes | None, bucket: int | None) -> str:
    """Identity of an index file before its location is resolved (compared across roots)."""
    return f"\x00index/{file_name}|{external_path or ''}|{(partition or b'').hex()}|{bucket}"


def expand_roots(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One row per root use of an expiration decision (``expire_decisions.RootUse``) -> what the
    evaluation needs from it, in one pass:

    - ``manifest`` rows (list role, manifest name, position in the list) for the lists in
      ``entry_roles`` (the manifests whose entries are read next);
    - ``meta`` rows (path, kind, size, stage): the root's metadata as
      ``core.root_metadata`` states it, for the lists in ``meta_lists`` and, with
      ``meta_extra``, the index manifest and statistics; ``index`` rows (the index files it
      keeps, located later). A list or index manifest that cannot be read contributes its own
      name only;
    - ``error`` rows for lists and index manifests that are missing or unreadable: the driver
      judges them with ``expire_decisions.judge_missing``.

    The lists are not read here: ``lists`` carries the rows :func:`read_lists` returned for the
    root's lists (each list read once per run by the driver's list cache, whichever roots share
    it); index manifests are read here.
    """
    from tablekeeper.core import errors
    from tablekeeper.core.paimon import Snapshot, manifests
    from tablekeeper.core.reclaim import reach
    from tablekeeper.core.reclaim.reach import ListRole

    io = file_io(spec["storage"])
    manifest_dir, stats_dir = spec["manifest_dir"], spec["statistics_dir"]
    blank = (None,) * 8

    def one(row: tuple[Any, ...], out: Rows) -> None:
        (rid, base, delta, changelog, base_size, delta_size, changelog_size, index_manifest, statistics,
         entry_roles, meta_lists, meta_extra, lists) = row
        snap = Snapshot({"id": 0, "baseManifestList": base, "deltaManifestList": delta, "changelogManifestList": changelog,
                            "baseManifestListSize": base_size, "deltaManifestListSize": delta_size,
                            "changelogManifestListSize": changelog_size, "indexManifest": index_manifest,
                            "statistics": statistics})
        need_entries = {ListRole(r) for r in entry_roles.split(",")} if entry_roles else set()
        meta_roles = {ListRole(r) for r in meta_lists.split(",")} if meta_lists else set()
        read: dict[ListRole, Any] = {}

        def error(role: str, name: str, e: BaseException) -> None:
            out.add(rid, "error", role, name, *blank, None, *classify(e))

        contents: dict[str, list[_ListedManifest]] = {}
        failed: dict[str, tuple[str, str]] = {}
        for item in sorted(lists or (), key=lambda x: (x["list_name"], x["pos"] or 0)):
            if item["error_kind"] is not None:
                failed[item["list_name"]] = (item["error_kind"], item["error"])
            else:
                contents.setdefault(item["list_name"], []).append(_ListedManifest(
                    item["manifest_name"], int(item["manifest_size"] or 0), tuple(item["extra_files"] or ())))
        for role, name in reach.lists_of(snap, need_entries | meta_roles):
            if name in failed:
                out.add(rid, "error", role.value, name, *blank, None, *failed[name])
                read[role] = None
            else:
                read[role] = contents.get(name, [])
        for role, _name in reach.lists_of(snap, need_entries):
            for pos, meta in enumerate(read.get(role) or ()):
                out.add(rid, "manifest", role.value, meta.file_name, *blank, pos, None, None)
        if not meta_roles and not meta_extra:
            return
        rows: list[tuple[Any, ...]] = []

        def meta_row(ref: reach.MetaRef) -> None:
            rows.append((rid, "meta", None, None, ref.path, ref.kind, ref.size, stage_of(ref.kind, ref.path), None,
                         None, None, None, None, None, None))

        for role, name in reach.lists_of(snap, meta_roles):
            if failed.get(name, ("",))[0] != "missing":  # (a list already gone is not reported)
                meta_row(reach.list_file(manifest_dir, snap, role, name))
            for ref in reach.list_contents(manifest_dir, read.get(role) or ()):
                meta_row(ref)
        index_file = reach.index_manifest_file(manifest_dir, snap) if meta_extra else None
        if index_file is not None and index_manifest:
            try:
                entries = manifests.read_index_manifest(io, index_file.path)
                meta_row(index_file)  # (an index manifest already gone is not reported)
            except (FileNotFoundError, errors.FormatError) as e:
                error(ListRole.INDEX.value, index_manifest, e)
                entries = []
            for entry in reach.added_index_entries(entries):
                key = index_key(entry.file_name, entry.external_path, entry.partition, entry.bucket)
                rows.append((rid, "index", None, entry.file_name, key, "index", int(entry.file_size),
                             stage_of("index", key), bytes(entry.partition), int(entry.bucket), entry.index_type,
                             entry.external_path, None, None, None))
        stats_file = reach.statistics_file(stats_dir, snap) if meta_extra else None
        if stats_file is not None:
            meta_row(stats_file)
        for r in rows:
            out.add(*r)

    return map_rows(batches, [*(n for n, _ in EXPAND_FIELDS), "lists"], EXPANDED_FIELDS, one)


# -- core's per-file rules -------------------------------------------------------------------------
def effective_deletions(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(rid, file key, the kinds of its entries within that root's delta) -> the keys the delta
    really deletes (``expire_decisions.effective_deletions``)."""
    from tablekeeper.core.reclaim import expire

    def one(row: tuple[Any, ...], out: Rows) -> None:
        rid, partition, bucket, file_name, kinds = row
        if expire.effective_deletions(kinds):
            out.add(rid, partition, bucket, file_name)

    return map_rows(batches, ("rid", "partition", "bucket", "file_name", "kinds"), KEYED_FIELDS, one)


def merge_live(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(rid, identifier, its entries with their positions) -> the identifier's key if it is
    live after core's merge (``manifests.merge_kinds``, entries in manifest-list order), or an
    error row if the merge finds the metadata inconsistent (an ADD of a present file)."""
    from tablekeeper.core import errors
    from tablekeeper.core.paimon import manifests

    def one(row: tuple[Any, ...], out: Rows) -> None:
        rid, partition, bucket, level, file_name, entries = row
        ordered = sorted(entries, key=lambda e: (e["list_order"], e["manifest_pos"], e["entry_pos"]))
        try:
            state = manifests.merge_kinds((e["kind"] for e in ordered), file_name, bucket, level)
        except errors.FormatError as e:
            out.add(rid, partition, bucket, file_name, e.message)
            return
        if state == manifests.ADD:
            out.add(rid, partition, bucket, file_name, None)

    return map_rows(batches, ("rid", "partition", "bucket", "level", "file_name", "entries"), MERGED_FIELDS, one)


# -- locations -------------------------------------------------------------------------------------
def local_form(path: str) -> str:
    """``file:/x`` and ``file:///x`` -> ``/x``; other URIs unchanged. The same rule as
    ``core.paimon.pypaimon_adapter`` (which cannot be imported here: it imports pypaimon)."""
    if path.startswith("file://"):
        rest = path[len("file://"):]
        return rest if rest.startswith("/") else "/" + rest.split("/", 1)[-1]
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


def expand_paths(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Planned files with resolved locations -> delete rows (path, kind, size, parent, stage).

    ``what`` ``data``: the data file (its external path, else bucket dir + name) followed by its
    extra files (next to it); ``index``: an index file (external path; the bucket directory for
    HASH/DV files with ``index-file-in-data-file-dir``; else ``<table>/index/``). Same rules as
    ``PartitionPathResolver.file_paths`` / ``index_file_path``."""
    root = spec["root"]
    in_data_dir = bool(spec.get("index_file_in_data_file_dir"))

    def emit(out: Rows, path: str, kind: str, size: int | None) -> None:
        out.add(path, kind, size, path.rsplit("/", 1)[0], stage_of(kind, path))

    def one(row: tuple[Any, ...], out: Rows) -> None:
        what, kind, name, extra, external, bucket_dir, size, index_type = row
        if what == "data":
            if external:
                path = local_form(external)
                directory = path.rsplit("/", 1)[0]
            else:
                if bucket_dir is None:
                    raise ValueError(f"no bucket directory resolved for {name}")
                directory = bucket_dir
                path = join(directory, name)
            emit(out, path, kind, None if size is None else int(size))
            for x in extra or ():  # (no size in the manifest: the delete stats it)
                emit(out, join(directory, x), kind, None)
        elif what == "index":
            if external:
                path = local_form(external)
            elif in_data_dir and index_type in _BUCKET_INDEX_TYPES:
                if bucket_dir is None:
                    raise ValueError(f"no bucket directory resolved for index file {name}")
                path = join(bucket_dir, name)
            else:
                path = join(root, "index", name)
            emit(out, path, kind, None if size is None else int(size))
        else:
            raise ValueError(f"unknown planned row kind {what!r}")

    return map_rows(batches, [n for n, _ in RESOLVE_FIELDS], DELETE_FIELDS, one)
