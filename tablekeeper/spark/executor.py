"""Executor-side functions of the tablekeeper Spark jobs: the I/O of evaluating core's
decisions (``tablekeeper.core.orphans.decision``) — listing, manifest reads, deletes — and core's
per-file rules applied where the rows are (``decisions.is_candidate_name``,
``expire_decisions.effective_deletions``, ``manifests.merge_kinds``, ``core.root_metadata``). No rule
is stated here.

Rules (style.md §2.13, spark-jobs.md §6.4):

- no driver state: every function is ``fn(spec, batches)`` over ``Iterator[pyarrow.RecordBatch]``
  (the ``mapInArrow`` shape, which also runs on Spark Connect), bound with ``functools.partial``
  to a *plain* ``spec`` dict (strings, ints, dicts) — never a live client;
- heavy imports (pyarrow, fsspec via ``tablekeeper.core.storage``, fastavro via the manifest
  reader) happen inside functions; this module imports no pyspark, kopf, pypaimon or
  pypaimon-rust at all (a test imports it in a fresh interpreter to prove it);
- the filesystem is built per Python worker from ``spec["storage"]`` (``{"uri", "options"}``)
  and cached behind a pid check: workers are forked and reused, clients do not survive a fork;
- deletions return one summary row per (stage, kind) per partition (counts, bytes, <= 20
  failure samples), never paths;
- read errors that planning must judge (a missing file, an unreadable file) become rows with
  ``error_kind`` ``missing``/``format``; the driver decides (skip vs. fail closed). Any other
  exception fails the task, so Spark retries it, and then fails the job.

Each ``*_FIELDS`` tuple is the schema of a function's input or output; ``ddl(fields)`` is its
Spark form.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from tablekeeper.core.storage import DeleteResult, FileIO

__all__ = [
    "Fields", "ddl", "arrow_schema", "file_io", "stage_of", "local_form",
    "WALK_FIELDS", "DIR_FIELDS", "LISTING_FIELDS", "CANDIDATE_FIELDS", "ROOT_FIELDS", "ROOT_REF_FIELDS",
    "NAME_FIELDS", "LIST_FIELDS", "USED_FIELDS", "ENTRY_FIELDS", "INDEX_ENTRY_FIELDS", "RESOLVE_FIELDS",
    "DELETE_FIELDS", "BATCHED_FIELDS", "SUMMARY_FIELDS", "REMOVED_FIELDS", "EMPTIED_FIELDS", "PID_FIELDS",
    "expand_bucket_dirs", "list_files", "read_roots", "read_lists", "used_names", "index_names",
    "read_entries", "read_index_entries", "expand_roots", "expand_paths", "number_batches", "delete_files", "remove_empty_dirs",
    "remove_emptied_dirs",
    "worker_pid", "EXPAND_FIELDS", "EXPANDED_FIELDS", "KEYED_FIELDS", "MERGED_FIELDS", "index_key",
    "effective_deletions", "merge_live", "counted",
    "InjectedFault",
]

Fields = tuple[tuple[str, str], ...]
_Item = TypeVar("_Item")

WALK_FIELDS: Fields = (("dir", "string"), ("depth", "int"))
DIR_FIELDS: Fields = (("dir", "string"),)
LISTING_FIELDS: Fields = (("dir", "string"), ("temp_prefix", "string"), ("kind", "string"))
CANDIDATE_FIELDS: Fields = (("name", "string"), ("path", "string"), ("size", "long"), ("mtime_ms", "long"),
                            ("parent_dir", "string"), ("kind", "string"), ("stage", "int"))
ROOT_FIELDS: Fields = (("root_path", "string"), ("root_kind", "string"), ("branch", "string"))
ROOT_REF_FIELDS: Fields = (("root_path", "string"), ("what", "string"), ("name", "string"), ("role", "string"),
                           ("rule", "int"), ("error_kind", "string"), ("error", "string"))
NAME_FIELDS: Fields = (("name", "string"),)
LIST_FIELDS: Fields = (("list_name", "string"), ("manifest_name", "string"), ("manifest_size", "long"),
                       ("extra_files", "array<string>"), ("pos", "int"), ("error_kind", "string"), ("error", "string"))
USED_FIELDS: Fields = (("source", "string"), ("name", "string"), ("error_kind", "string"), ("error", "string"))
ENTRY_FIELDS: Fields = (("manifest_name", "string"), ("kind", "int"), ("partition", "binary"), ("bucket", "int"),
                        ("level", "int"), ("file_name", "string"), ("ident_x", "string"),
                        ("extra_files", "array<string>"), ("external_path", "string"), ("file_size", "long"),
                        ("entry_pos", "int"), ("error_kind", "string"), ("error", "string"))
INDEX_ENTRY_FIELDS: Fields = (("index_manifest", "string"), ("kind", "int"), ("partition", "binary"),
                              ("bucket", "int"), ("index_type", "string"), ("file_name", "string"),
                              ("file_size", "long"), ("external_path", "string"),
                              ("error_kind", "string"), ("error", "string"))
RESOLVE_FIELDS: Fields = (("what", "string"), ("kind", "string"), ("file_name", "string"),
                          ("extra_files", "array<string>"), ("external_path", "string"), ("bucket_dir", "string"),
                          ("size", "long"), ("index_type", "string"))
DELETE_FIELDS: Fields = (("path", "string"), ("kind", "string"), ("size", "long"), ("parent_dir", "string"),
                         ("stage", "int"))
BATCHED_FIELDS: Fields = (*DELETE_FIELDS, ("batch", "long"))
SUMMARY_FIELDS: Fields = (("stage", "int"), ("kind", "string"), ("deleted", "long"), ("missing", "long"),
                          ("failed", "long"), ("bytes", "long"), ("failure_sample", "array<string>"),
                          ("unsized", "long"))
REMOVED_FIELDS: Fields = (("removed", "long"),)
EMPTIED_FIELDS: Fields = (("dir", "string"), ("listed", "long"), ("deleted", "long"))
PID_FIELDS: Fields = (("pid", "long"),)
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

_CHUNK = 8_192
_SAMPLE_MAX = 20  # safety.STATUS_SAMPLE_MAX, without importing it at module level
#: Index types Paimon keeps per bucket (in the bucket directory with index-file-in-data-file-dir).
_BUCKET_INDEX_TYPES = frozenset({"HASH", "DELETION_VECTORS"})


class InjectedFault(RuntimeError):
    """Raised by the test-only fault hook of ``delete_files``."""


# -- schemas -----------------------------------------------------------------------------------
def ddl(fields: Fields) -> str:
    """Spark DDL of a schema, e.g. ``"dir string, depth int"``."""
    return ", ".join(f"{name} {kind}" for name, kind in fields)


_ARROW_CACHE: dict[Fields, Any] = {}


def arrow_schema(fields: Fields) -> pa.Schema:
    cached = _ARROW_CACHE.get(fields)
    if cached is None:
        import pyarrow as pa

        types = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "binary": pa.binary(),
                 "boolean": pa.bool_(), "array<string>": pa.list_(pa.string())}
        cached = pa.schema([(name, types[kind]) for name, kind in fields])
        _ARROW_CACHE[fields] = cached
    return cached


class _Rows:
    """Column buffers for one output schema, emitted in chunks of ``_CHUNK`` rows."""

    def __init__(self, fields: Fields) -> None:
        self.fields = fields
        self.cols: list[list[Any]] = [[] for _ in fields]
        self.count = 0

    def add(self, *values: Any) -> None:
        for col, value in zip(self.cols, values, strict=True):
            col.append(value)
        self.count += 1

    @property
    def full(self) -> bool:
        return self.count >= _CHUNK

    def take(self) -> pa.RecordBatch:
        import pyarrow as pa

        batch = pa.RecordBatch.from_arrays([pa.array(c, type=t.type) for c, t in
                                            zip(self.cols, arrow_schema(self.fields), strict=True)],
                                           schema=arrow_schema(self.fields))
        self.cols = [[] for _ in self.fields]
        self.count = 0
        return batch


def _rows_of(batches: Iterable[pa.RecordBatch], names: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    for batch in batches:
        cols = [batch.column(batch.schema.get_field_index(n)).to_pylist() for n in names]
        yield from zip(*cols, strict=True)


def _map(batches: Iterable[pa.RecordBatch], names: Sequence[str], out: Fields,
         fn: Callable[[tuple[Any, ...], _Rows], None]) -> Iterator[pa.RecordBatch]:
    rows = _Rows(out)
    for row in _rows_of(batches, names):
        fn(row, rows)
        if rows.full:
            yield rows.take()
    if rows.count:
        yield rows.take()


# -- per-process filesystem ----------------------------------------------------------------------
_FILE_IOS: dict[str, tuple[int, FileIO]] = {}


def file_io(storage: Mapping[str, Any]) -> FileIO:
    """The FileIO for ``storage`` (``{"uri": ..., "options": {...}}``) in this process.

    Built once per Python worker and rebuilt after a fork (pid check): s3fs sessions and
    connection pools must not be shared across processes."""
    key = json.dumps(storage, sort_keys=True)
    pid = os.getpid()
    cached = _FILE_IOS.get(key)
    if cached is None or cached[0] != pid:
        from tablekeeper.core.storage import FileIO

        options = dict(storage.get("options") or {})
        for name in storage.get("env_options") or ():  # a mounted Secret key: read here, never shipped
            if name in os.environ:
                options[name] = os.environ[name]
        cached = (pid, FileIO.for_uri(str(storage["uri"]), options))
        _FILE_IOS[key] = cached
    return cached[1]


def counted(tally: Mapping[str, Any], fn: Callable[[Mapping[str, Any], Iterator[pa.RecordBatch]],
                                                  Iterator[pa.RecordBatch]],
            spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``fn(spec, batches)``, adding the storage requests this task made (by kind) to ``tally``
    (Spark accumulators by kind, summed on the driver when the task succeeds). A Python worker
    runs one task at a time, so the difference of the process's tally
    (``requests.process_snapshot``) before and after is this task's, whatever FileIO made them."""
    from tablekeeper.core import storage

    before = storage.process_snapshot()
    try:
        yield from fn(spec, batches)
    finally:
        for kind, n in storage.since(before, storage.process_snapshot()).items():
            if kind in tally:
                tally[kind].add(n)


def _join(base: str, *parts: str) -> str:
    from tablekeeper.core.storage import join

    return join(base, *parts)


# -- paths and stages ----------------------------------------------------------------------------
def local_form(path: str) -> str:
    """``file:/x`` and ``file:///x`` -> ``/x``; other URIs unchanged. The same rule as
    ``core.paimon.pypaimon_adapter`` (which cannot be imported here: it imports pypaimon)."""
    if path.startswith("file://"):
        rest = path[len("file://"):]
        return rest if rest.startswith("/") else "/" + rest.split("/", 1)[-1]
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


def stage_of(kind: str, path: str) -> int:
    """Position of a file in Paimon's deletion order (``plans.stage_of``)."""
    from tablekeeper.core import plans

    return plans.stage_of(kind, path)


def _classify(error: BaseException) -> tuple[str, str]:
    return ("missing" if isinstance(error, FileNotFoundError) else "format"), f"{type(error).__name__}: {error}"


# -- listing ---------------------------------------------------------------------------------------
def expand_bucket_dirs(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(dir, depth) -> every bucket directory ``depth`` partition levels below ``dir`` (the walk
    of ``orphans.list_candidates``, by ``decisions.is_partition_dir`` / ``is_bucket_dir``)."""
    from tablekeeper.core import orphans

    io = file_io(spec["storage"])

    def one(row: tuple[Any, ...], out: _Rows) -> None:
        level = [row[0]]
        for _ in range(int(row[1])):
            level = [s.path for d in level for s in io.list_dir(d) if s.is_dir and orphans.is_partition_dir(s.name)]
        for d in level:
            for s in io.list_dir(d):
                if s.is_dir and orphans.is_bucket_dir(s.name):
                    out.add(s.path)

    return _map(batches, ("dir", "depth"), DIR_FIELDS, one)


def list_files(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(dir, temp prefix, kind) of a ``decisions.CandidateDir`` -> its candidate files
    (``decisions.is_candidate_name``) older than ``spec["older_than_ms"]``."""
    from tablekeeper.core import orphans, plans

    io = file_io(spec["storage"])
    threshold = int(spec["older_than_ms"])
    changelog_prefixes = tuple(spec.get("changelog_prefixes") or ())  # (the decision's; none for metadata dirs)

    def one(row: tuple[Any, ...], out: _Rows) -> None:
        directory, temp_prefix, kind = row
        candidate_dir = orphans.CandidateDir(directory, plans.FileKind(kind), temp_prefix)
        for s in io.list_dir(directory):
            if s.is_dir or s.mtime_ms >= threshold or not orphans.is_candidate_name(candidate_dir, s.name):
                continue
            found = orphans.bucket_file_kind(s.name, changelog_prefixes).value if kind == "data" else kind
            out.add(s.name, s.path, s.size, s.mtime_ms, s.path.rsplit("/", 1)[0], found, stage_of(found, s.path))

    return _map(batches, ("dir", "temp_prefix", "kind"), CANDIDATE_FIELDS, one)


# -- metadata reads --------------------------------------------------------------------------------
def read_roots(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(root_path, root_kind snapshot|tag|changelog, branch) -> what the root names: ``list``
    (manifest lists, with their ``role``), ``index`` (the index manifest), ``name`` (statistics),
    each with the index in ``guarantees.RULES`` of the rule that says whether Paimon keeps it
    (the driver judges a missing one by it). A root that vanished yields nothing (concurrent
    expiration: nothing to protect); an unreadable one a ``root`` error row."""
    from tablekeeper.core import errors, orphans, reach
    from tablekeeper.core.paimon import Snapshot, Tag
    from tablekeeper.core.reach import ListRole

    io = file_io(spec["storage"])
    producer = spec.get("changelog_producer", "none")

    def rule(kind: reach.RootKind, snap: Snapshot, role: ListRole) -> int:
        found = reach.rule_for(kind, reach.list_reference(role),
                                    reads_delta=reach.reads_delta(kind, snap, producer))
        return reach.RULES.index(found)

    def one(row: tuple[Any, ...], out: _Rows) -> None:
        path, kind, branch = row
        try:
            data = io.read_bytes(path)
        except FileNotFoundError:
            if orphans.missing_reference_aborts(root_exists=False):
                raise
            return  # the root vanished since it was enumerated: it protects nothing
        try:
            if kind == "tag":
                snap = Tag.from_json(path.rsplit("/", 1)[-1][len("tag-"):], data, what=path).snapshot
            else:
                snap = Snapshot.from_json(data, what=path)
        except (errors.FormatError, ValueError, KeyError, TypeError) as e:
            out.add(path, "root", path.rsplit("/", 1)[-1], None, None, "format", f"{type(e).__name__}: {e}")
            return
        root_kind = reach.root_kind(kind, branch)
        for role, name in ((ListRole.BASE, snap.base_manifest_list), (ListRole.DELTA, snap.delta_manifest_list),
                           (ListRole.CHANGELOG, snap.changelog_manifest_list)):
            if name:
                out.add(path, "list", name, role.value, rule(root_kind, snap, role), None, None)
        if snap.index_manifest:
            out.add(path, "index", snap.index_manifest, ListRole.INDEX.value, rule(root_kind, snap, ListRole.INDEX),
                    None, None)
        if snap.statistics:
            out.add(path, "name", snap.statistics, None, None, None, None)

    return _map(batches, ("root_path", "root_kind", "branch"), ROOT_REF_FIELDS, one)


def _map_manifest_files(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch], out_fields: Fields,
                        read: Callable[[FileIO, str], Iterable[_Item]],
                        emit: Callable[[str, _Item, _Rows], None]) -> Iterator[pa.RecordBatch]:
    """(name of a file in ``spec["manifest_dir"]``) -> the rows ``emit`` writes for each item
    ``read`` returns. A missing or unreadable file becomes one error row: the name, ``None`` in
    every other column, then ``error_kind`` and ``error`` (the last two columns)."""
    from tablekeeper.core import errors

    io = file_io(spec["storage"])
    manifest_dir = spec["manifest_dir"]
    blanks = (None,) * (len(out_fields) - 3)

    def one(row: tuple[Any, ...], out: _Rows) -> None:
        name = row[0]
        try:
            items = read(io, _join(manifest_dir, name))
        except (FileNotFoundError, errors.FormatError) as e:
            out.add(name, *blanks, *_classify(e))
            return
        for item in items:
            emit(name, item, out)

    return _map(batches, ("name",), out_fields, one)


def read_lists(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(list_name) -> one row per manifest of a manifest list (name, size, extra files, position
    in the list)."""
    from tablekeeper.core.paimon import manifests

    def read(io: FileIO, path: str) -> Iterable[tuple[int, manifests.ManifestFileMeta]]:
        return enumerate(manifests.read_manifest_list(io, path))

    def emit(name: str, item: tuple[int, manifests.ManifestFileMeta], out: _Rows) -> None:
        pos, meta = item
        out.add(name, meta.file_name, meta.file_size, list(meta.extra_files), pos, None, None)

    return _map_manifest_files(spec, batches, LIST_FIELDS, read, emit)


def used_names(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(name of a manifest) -> every file name its entries use (ADD and DELETE): data file,
    external file, extra files (orphan cleanup's used set). ``source`` is only set on error
    rows (fewer bytes through Arrow and the shuffle)."""
    from tablekeeper.core.paimon import manifests

    def emit(name: str, ref: manifests.FileRef, out: _Rows) -> None:
        out.add(None, ref.file_name, None, None)
        if ref.external_path:
            out.add(None, ref.external_path.rsplit("/", 1)[-1], None, None)
        for extra in ref.extra_files:
            out.add(None, extra, None, None)

    return _map_manifest_files(spec, batches, USED_FIELDS, manifests.read_manifest_refs, emit)


def index_names(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(name of an index manifest) -> the index file names it lists."""
    from tablekeeper.core.paimon import manifests

    def emit(name: str, entry: manifests.IndexManifestEntry, out: _Rows) -> None:
        out.add(None, entry.file_name, None, None)

    return _map_manifest_files(spec, batches, USED_FIELDS, manifests.read_index_manifest, emit)


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

    def emit(name: str, item: tuple[int, manifests.FileRef], out: _Rows) -> None:
        pos, r = item
        out.add(name, int(r.kind), bytes(r.partition), int(r.bucket), int(r.level), r.file_name,
                _ident_x(r.extra_files, r.external_path, r.embedded_index), list(r.extra_files),
                r.external_path, int(r.file_size or 0), pos, None, None)

    return _map_manifest_files(spec, batches, ENTRY_FIELDS, read, emit)


def read_index_entries(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(name of an index manifest) -> its entries."""
    from tablekeeper.core.paimon import manifests

    def emit(name: str, entry: manifests.IndexManifestEntry, out: _Rows) -> None:
        out.add(name, int(entry.kind), bytes(entry.partition), int(entry.bucket), entry.index_type,
                entry.file_name, int(entry.file_size), entry.external_path, None, None)

    return _map_manifest_files(spec, batches, INDEX_ENTRY_FIELDS, manifests.read_index_manifest, emit)


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
    from tablekeeper.core import errors, reach
    from tablekeeper.core.paimon import Snapshot, manifests
    from tablekeeper.core.reach import ListRole

    io = file_io(spec["storage"])
    manifest_dir, stats_dir = spec["manifest_dir"], spec["statistics_dir"]
    blank = (None,) * 8

    def one(row: tuple[Any, ...], out: _Rows) -> None:
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
            out.add(rid, "error", role, name, *blank, None, *_classify(e))

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

    return _map(batches, [*(n for n, _ in EXPAND_FIELDS), "lists"], EXPANDED_FIELDS, one)


def effective_deletions(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(rid, file key, the kinds of its entries within that root's delta) -> the keys the delta
    really deletes (``expire_decisions.effective_deletions``)."""
    from tablekeeper.core import expire

    def one(row: tuple[Any, ...], out: _Rows) -> None:
        rid, partition, bucket, file_name, kinds = row
        if expire.effective_deletions(kinds):
            out.add(rid, partition, bucket, file_name)

    return _map(batches, ("rid", "partition", "bucket", "file_name", "kinds"), KEYED_FIELDS, one)


def merge_live(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(rid, identifier, its entries with their positions) -> the identifier's key if it is
    live after core's merge (``manifests.merge_kinds``, entries in manifest-list order), or an
    error row if the merge finds the metadata inconsistent (an ADD of a present file)."""
    from tablekeeper.core import errors
    from tablekeeper.core.paimon import manifests

    def one(row: tuple[Any, ...], out: _Rows) -> None:
        rid, partition, bucket, level, file_name, entries = row
        ordered = sorted(entries, key=lambda e: (e["list_order"], e["manifest_pos"], e["entry_pos"]))
        try:
            state = manifests.merge_kinds((e["kind"] for e in ordered), file_name, bucket, level)
        except errors.FormatError as e:
            out.add(rid, partition, bucket, file_name, e.message)
            return
        if state == manifests.ADD:
            out.add(rid, partition, bucket, file_name, None)

    return _map(batches, ("rid", "partition", "bucket", "level", "file_name", "entries"), MERGED_FIELDS, one)


def expand_paths(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Planned files with resolved locations -> delete rows (path, kind, size, parent, stage).

    ``what`` ``data``: the data file (its external path, else bucket dir + name) followed by its
    extra files (next to it); ``index``: an index file (external path; the bucket directory for
    HASH/DV files with ``index-file-in-data-file-dir``; else ``<table>/index/``). Same rules as
    ``PartitionPathResolver.file_paths`` / ``index_file_path``."""
    root = spec["root"]
    in_data_dir = bool(spec.get("index_file_in_data_file_dir"))

    def emit(out: _Rows, path: str, kind: str, size: int | None) -> None:
        out.add(path, kind, size, path.rsplit("/", 1)[0], stage_of(kind, path))

    def one(row: tuple[Any, ...], out: _Rows) -> None:
        what, kind, name, extra, external, bucket_dir, size, index_type = row
        if what == "data":
            if external:
                path = local_form(external)
                directory = path.rsplit("/", 1)[0]
            else:
                if bucket_dir is None:
                    raise ValueError(f"no bucket directory resolved for {name}")
                directory = bucket_dir
                path = _join(directory, name)
            emit(out, path, kind, None if size is None else int(size))
            for x in extra or ():  # (no size in the manifest: the delete stats it)
                emit(out, _join(directory, x), kind, None)
        elif what == "index":
            if external:
                path = local_form(external)
            elif in_data_dir and index_type in _BUCKET_INDEX_TYPES:
                if bucket_dir is None:
                    raise ValueError(f"no bucket directory resolved for index file {name}")
                path = _join(bucket_dir, name)
            else:
                path = _join(root, "index", name)
            emit(out, path, kind, None if size is None else int(size))
        else:
            raise ValueError(f"unknown planned row kind {what!r}")

    return _map(batches, [n for n, _ in RESOLVE_FIELDS], DELETE_FIELDS, one)


# -- deleting --------------------------------------------------------------------------------------
class _Fault:
    """Test hook: raise ``InjectedFault`` once a task attempt has issued ``after`` deletions
    (of ``stage``, if given), like a process killed mid-stage. With a ``marker`` path the fault
    fires only in the attempt that creates the marker (Spark's retry then succeeds); without
    one, in every attempt that reaches ``after`` (the job fails once retries run out)."""

    def __init__(self, spec: Mapping[str, Any] | None) -> None:
        self.after = int(spec["after"]) if spec else None
        self.marker = spec.get("marker") if spec else None
        self.stage = spec.get("stage") if spec else None
        self.deleted = 0

    def active_for(self, stage: int) -> bool:
        return self.after is not None and (self.stage is None or int(self.stage) == stage)

    def count(self, stage: int, issued: int) -> None:
        if not self.active_for(stage):
            return
        self.deleted += issued
        assert self.after is not None
        if self.deleted < self.after:
            return
        if self.marker:
            try:
                fd = os.open(str(self.marker), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.close(fd)
        raise InjectedFault(f"injected fault after {self.deleted} deletions")


def number_batches(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Delete rows of one stage with the id of the partition they are in -> the same rows with
    their batch: ``(spec["offsets"][partition] + position in the partition) // batch_size``.
    The offsets are the rows of the stage in the partitions before (counted by the driver on the
    same materialised plan), so the stage's rows are numbered 0..n-1 across all partitions and
    every batch but the last holds exactly ``batch_size`` keys."""
    offsets: Mapping[str, int] = spec["offsets"]
    size = max(1, int(spec["batch_size"]))
    position: dict[int, int] = {}

    def one(row: tuple[Any, ...], out: _Rows) -> None:
        path, kind, size_, parent_dir, stage, pid = row
        n = position.get(pid, 0)
        position[pid] = n + 1
        out.add(path, kind, size_, parent_dir, stage, (int(offsets.get(str(pid), 0)) + n) // size)

    return _map(batches, ("path", "kind", "size", "parent_dir", "stage", "pid"), BATCHED_FIELDS, one)


def delete_files(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Delete rows with their batch (:func:`number_batches`; sorted by batch within the
    partition) -> summary rows.

    Each batch is one bulk request (one DeleteObjects on S3, through ``execution.delete_batch``
    as in process: no parent listing first), up to ``spec["delete_threads"]`` batches at once
    on object stores. Missing files count as ``missing`` where the store tells them apart (a
    retried task, or an earlier crashed run; S3 reports a key already gone as deleted);
    failures are counted and sampled, never raised: deletion is best effort (style.md §2.3)."""
    from concurrent.futures import ThreadPoolExecutor

    from tablekeeper.core import plans
    from tablekeeper.core.storage import DeleteOutcome

    io = file_io(spec["storage"])
    batch_size = max(1, int(spec.get("batch_size") or 250))
    threads = 1 if io.is_local else max(1, int(spec.get("delete_threads") or 4))
    fault = _Fault(spec.get("fault"))
    totals: dict[tuple[int, str], list[Any]] = {}

    def tally(chunk: list[tuple[str, str, int | None, int]], results: list[DeleteResult]) -> None:
        by_path = {p: (kind, size, stage) for p, kind, size, stage in chunk}
        for r in results:
            kind, size, stage = by_path[r.path]
            t = totals.setdefault((stage, kind), [0, 0, 0, 0, [], 0])
            if r.outcome == DeleteOutcome.DELETED:
                t[0] += 1
                if size is None:
                    t[5] += 1
                else:
                    t[3] += size
            elif r.outcome == DeleteOutcome.MISSING:
                t[1] += 1
            else:
                t[2] += 1
                if len(t[4]) < _SAMPLE_MAX:
                    t[4].append(f"{r.path}: {r.error}")

    def delete(chunk: list[tuple[str, str, int | None, int]]) -> list[DeleteResult]:
        return plans.delete_batch(io, [x[0] for x in chunk])

    def sized(chunk: list[tuple[str, str, int | None, int]]) -> list[tuple[str, str, int | None, int]]:
        """The chunk with the sizes the plan could not tell taken from a stat (core's
        ``execution.stat_sizes``), without the files that are gone (counted as missing)."""
        unsized = [x[0] for x in chunk if x[2] is None]
        if not unsized:
            return chunk
        found = dict(zip(unsized, plans.stat_sizes(io, unsized), strict=True))
        out: list[tuple[str, str, int | None, int]] = []
        for path, kind, size, stage in chunk:
            if size is None:
                got = found[path]
                if got is None:
                    totals.setdefault((stage, kind), [0, 0, 0, 0, [], 0])[1] += 1
                    continue
                size = None if got == plans.SIZE_UNKNOWN else got
            out.append((path, kind, size, stage))
        return out

    pending: list[list[tuple[str, str, int | None, int]]] = []

    def flush() -> None:
        if not pending:
            return
        stage = pending[0][0][3]
        pending[:] = [sized(group) for group in pending]
        if fault.active_for(stage):  # the test hook counts deletions one chunk at a time
            size = min(batch_size, fault.after) if fault.after else batch_size
            for group in pending:
                for chunk in (group[i:i + size] for i in range(0, len(group), size)):
                    tally(chunk, delete(chunk))
                    fault.count(stage, len(chunk))
        elif threads > 1 and len(pending) > 1:
            with ThreadPoolExecutor(max_workers=min(threads, len(pending))) as pool:
                for chunk, results in zip(pending, pool.map(delete, pending), strict=True):
                    tally(chunk, results)
        else:
            for chunk in pending:
                if chunk:
                    tally(chunk, delete(chunk))
        pending.clear()

    group: list[tuple[str, str, int | None, int]] = []
    current: int | None = None
    for path, kind, size, _parent, stage, batch in _rows_of(batches, ("path", "kind", "size", "parent_dir", "stage",
                                                                     "batch")):
        if batch != current:
            if group:
                pending.append(group)
                if len(pending) >= threads:
                    flush()
            group, current = [], batch
        group.append((path, kind, None if size is None else int(size), int(stage)))
    if group:
        pending.append(group)
    flush()
    out = _Rows(SUMMARY_FIELDS)
    for (stage, kind), (deleted, missing, failed, nbytes, sample, unsized_n) in sorted(totals.items()):
        out.add(stage, kind, deleted, missing, failed, nbytes, sample, unsized_n)
    if out.count:
        yield out.take()


def remove_empty_dirs(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(bucket dir) -> remove it if empty, then its parents up to ``spec["depth"]`` partition
    levels, bottom-up, non-recursively (``RemoveEmptyDirsStep`` semantics). One count row."""
    io = file_io(spec["storage"])
    depth = int(spec.get("depth") or 0)
    removed = sum(_remove_upwards(io, directory, depth) for (directory,) in _rows_of(batches, ("dir",)))
    out = _Rows(REMOVED_FIELDS)
    out.add(removed)
    yield out.take()


def remove_emptied_dirs(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(bucket dir, files listed there, files deleted there) -> as :func:`remove_empty_dirs`,
    for the directories the deletes may have emptied (``decisions.may_empty``; the others are not
    checked: a check is a request on an object store)."""
    from tablekeeper.core import orphans

    io = file_io(spec["storage"])
    depth = int(spec.get("depth") or 0)
    removed = sum(_remove_upwards(io, directory, depth)
                  for directory, listed, deleted in _rows_of(batches, ("dir", "listed", "deleted"))
                  if orphans.may_empty(int(listed or 0), int(deleted or 0)))
    out = _Rows(REMOVED_FIELDS)
    out.add(removed)
    yield out.take()


def _remove_upwards(io: FileIO, directory: str, depth: int) -> int:
    removed = 0
    current = directory
    for _ in range(depth + 1):
        if not io.delete_empty_dir(current):
            break
        removed += 1
        current = current.rsplit("/", 1)[0]
    return removed


def worker_pid(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One row with this worker's pid per partition (tests prove work left the driver)."""
    for _ in batches:
        pass
    out = _Rows(PID_FIELDS)
    out.add(os.getpid())
    yield out.take()
