"""Executor-side functions of orphan cleanup on Spark (``orphans.decide_orphan_clean``, evaluated
by :mod:`tablekeeper.spark.orphans.driver`): the listing of candidate files with core's
directory predicates and candidate-name filter (``decisions.is_partition_dir``,
``is_bucket_dir``, ``is_candidate_name``), and the used set: what the roots name (with the rule of
``guarantees.RULES`` that says whether Paimon keeps each reference), the names manifests and index
manifests use. No rule is stated here; the shape of every function is that of
:mod:`tablekeeper.spark.executor`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tablekeeper.spark.executor import Fields, Rows, file_io, map_manifest_files, map_rows, stage_of

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "WALK_FIELDS", "DIR_FIELDS", "LISTING_FIELDS", "CANDIDATE_FIELDS", "ROOT_FIELDS", "ROOT_REF_FIELDS", "USED_FIELDS",
    "expand_bucket_dirs", "list_files", "read_roots", "used_names", "index_names",
]

WALK_FIELDS: Fields = (("dir", "string"), ("depth", "int"))
DIR_FIELDS: Fields = (("dir", "string"),)
LISTING_FIELDS: Fields = (("dir", "string"), ("temp_prefix", "string"), ("kind", "string"))
CANDIDATE_FIELDS: Fields = (("name", "string"), ("path", "string"), ("size", "long"), ("mtime_ms", "long"),
                            ("parent_dir", "string"), ("kind", "string"), ("stage", "int"))
ROOT_FIELDS: Fields = (("root_path", "string"), ("root_kind", "string"), ("branch", "string"))
ROOT_REF_FIELDS: Fields = (("root_path", "string"), ("what", "string"), ("name", "string"), ("role", "string"),
                           ("rule", "int"), ("error_kind", "string"), ("error", "string"))
USED_FIELDS: Fields = (("source", "string"), ("name", "string"), ("error_kind", "string"), ("error", "string"))


# -- listing ---------------------------------------------------------------------------------------
def expand_bucket_dirs(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(dir, depth) -> every bucket directory ``depth`` partition levels below ``dir`` (the walk
    of ``orphans.list_candidates``, by ``decisions.is_partition_dir`` / ``is_bucket_dir``)."""
    from tablekeeper.core.reclaim import orphans

    io = file_io(spec["storage"])

    def one(row: tuple[Any, ...], out: Rows) -> None:
        level = [row[0]]
        for _ in range(int(row[1])):
            level = [s.path for d in level for s in io.list_dir(d) if s.is_dir and orphans.is_partition_dir(s.name)]
        for d in level:
            for s in io.list_dir(d):
                if s.is_dir and orphans.is_bucket_dir(s.name):
                    out.add(s.path)

    return map_rows(batches, ("dir", "depth"), DIR_FIELDS, one)


def list_files(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(dir, temp prefix, kind) of a ``decisions.CandidateDir`` -> its candidate files
    (``decisions.is_candidate_name``) older than ``spec["older_than_ms"]``."""
    from tablekeeper.core import plans
    from tablekeeper.core.reclaim import orphans

    io = file_io(spec["storage"])
    threshold = int(spec["older_than_ms"])
    changelog_prefixes = tuple(spec.get("changelog_prefixes") or ())  # (the decision's; none for metadata dirs)

    def one(row: tuple[Any, ...], out: Rows) -> None:
        directory, temp_prefix, kind = row
        candidate_dir = orphans.CandidateDir(directory, plans.FileKind(kind), temp_prefix)
        for s in io.list_dir(directory):
            if s.is_dir or s.mtime_ms >= threshold or not orphans.is_candidate_name(candidate_dir, s.name):
                continue
            found = orphans.bucket_file_kind(s.name, changelog_prefixes).value if kind == "data" else kind
            out.add(s.name, s.path, s.size, s.mtime_ms, s.path.rsplit("/", 1)[0], found, stage_of(found, s.path))

    return map_rows(batches, ("dir", "temp_prefix", "kind"), CANDIDATE_FIELDS, one)


# -- the used set ----------------------------------------------------------------------------------
def read_roots(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(root_path, root_kind snapshot|tag|changelog, branch) -> what the root names: ``list``
    (manifest lists, with their ``role``), ``index`` (the index manifest), ``name`` (statistics),
    each with the index in ``guarantees.RULES`` of the rule that says whether Paimon keeps it
    (the driver judges a missing one by it). A root that vanished yields nothing (concurrent
    expiration: nothing to protect); an unreadable one a ``root`` error row."""
    from tablekeeper.core import errors
    from tablekeeper.core.paimon import Snapshot, Tag
    from tablekeeper.core.reclaim import orphans, reach
    from tablekeeper.core.reclaim.reach import ListRole

    io = file_io(spec["storage"])
    producer = spec.get("changelog_producer", "none")

    def rule(kind: reach.RootKind, snap: Snapshot, role: ListRole) -> int:
        found = reach.rule_for(kind, reach.list_reference(role),
                                    reads_delta=reach.reads_delta(kind, snap, producer))
        return reach.RULES.index(found)

    def one(row: tuple[Any, ...], out: Rows) -> None:
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

    return map_rows(batches, ("root_path", "root_kind", "branch"), ROOT_REF_FIELDS, one)


def used_names(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(name of a manifest) -> every file name its entries use (ADD and DELETE): data file,
    external file, extra files (orphan cleanup's used set). ``source`` is only set on error
    rows (fewer bytes through Arrow and the shuffle)."""
    from tablekeeper.core.paimon import manifests

    def emit(name: str, ref: manifests.FileRef, out: Rows) -> None:
        out.add(None, ref.file_name, None, None)
        if ref.external_path:
            out.add(None, ref.external_path.rsplit("/", 1)[-1], None, None)
        for extra in ref.extra_files:
            out.add(None, extra, None, None)

    return map_manifest_files(spec, batches, USED_FIELDS, manifests.read_manifest_refs, emit)


def index_names(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(name of an index manifest) -> the index file names it lists."""
    from tablekeeper.core.paimon import manifests

    def emit(name: str, entry: manifests.IndexManifestEntry, out: Rows) -> None:
        out.add(None, entry.file_name, None, None)

    return map_manifest_files(spec, batches, USED_FIELDS, manifests.read_index_manifest, emit)
