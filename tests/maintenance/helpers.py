"""Helpers for the maintenance suite (expiration, orphans, partitions, crash, property).

Everything works on real pypaimon-written tables. The integrity oracle reads the table through
pypaimon's own manifest readers (``ManifestListManager`` / ``ManifestFileManager`` /
``IndexManifestFile`` / ``ChangelogManager``), independently of tablekeeper's fastavro reader,
so "every file a retained root needs still exists" is a second opinion, not a self-check.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tablekeeper.core.paimon.table import Table, open_table
from tablekeeper.core.plans import execution, plan
from tablekeeper.core.storage import FileIO
from tablekeeper.spark import job_request
from tests.support.paimon import (
    ORDERS_SCHEMA,
    append_table,
    catalog,
    create_table,
    dir_listing,
    overwrite,
    read_rows,
    rows,
    snapshot_views,
    table_at,
    write,
)

IDENT = "db.orders"
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


def now_ms() -> int:
    return int(time.time() * 1000)


def table_root(warehouse: str | os.PathLike[str], identifier: str = IDENT) -> str:
    db, name = identifier.split(".")
    return f"{str(warehouse).rstrip('/')}/{db}.db/{name}"


def truncate(table: Any, partitions: list[dict[str, Any]]) -> None:
    c = table.new_batch_write_builder().new_commit()
    try:
        c.truncate_partitions(partitions)
    finally:
        c.close()


def pk_table(warehouse: str, identifier: str = IDENT, *, options: Mapping[str, str] | None = None,
             catalog_options: Mapping[str, str] | None = None) -> Any:
    cat = catalog(warehouse, catalog_options)
    return create_table(cat, identifier, ORDERS_SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                        options={"bucket": "1", **(options or {})})


def reload(warehouse: str, identifier: str = IDENT, branch: str = "main",
           catalog_options: Mapping[str, str] | None = None) -> Any:
    return table_at(warehouse, identifier, branch, catalog_options)


def handle(warehouse: str, identifier: str = IDENT, branch: str = "main",
           options: Mapping[str, str] | None = None, file_io: FileIO | None = None) -> Table:
    return open_table(warehouse, identifier, branch=branch, options=options, file_io=file_io)


def run(plan: plan.Plan, table: Table, **kwargs: Any) -> execution.ExecutionResult:
    kwargs.setdefault("parallelism", 2)
    result = execution.execute(plan, table.file_io, **kwargs)
    assert not result.failed, result.failed
    return result


def files_of(listing: Mapping[str, Any]) -> set[str]:
    return {k for k in listing if not k.endswith("/")}


def file_set(root: str | os.PathLike[str]) -> set[str]:
    """Relative paths of every regular file below ``root`` (local)."""
    return files_of(dir_listing(root))


def backdate_tree(root: str | os.PathLike[str], age_s: float) -> None:
    """Set the mtime of every file below ``root`` to ``age_s`` seconds ago."""
    when = time.time() - age_s
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(dirpath, name), (when, when))


def plant(path: str | os.PathLike[str], data: bytes = b"junk", age_s: float | None = 3 * 86400) -> str:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    if age_s is not None:
        when = time.time() - age_s
        os.utime(p, (when, when))
    return str(p)


def views(warehouse: str, identifier: str = IDENT, options: Mapping[str, str] | None = None) -> dict[str, Any]:
    return snapshot_views(warehouse, identifier, options)


def assert_views_kept(before: Mapping[str, Any], after: Mapping[str, Any], *, gone: Iterable[str] = ()) -> None:
    """Every view in ``after`` reads exactly as before; views missing from ``after`` are exactly
    ``gone`` (expired snapshots)."""
    for key, value in after.items():
        assert key in before, f"new view {key} appeared"
        assert value == before[key], f"view {key} changed"
    assert set(before) - set(after) == set(gone), (sorted(set(before) - set(after)), sorted(gone))


def write_consumer(table: Table, consumer_id: str, next_snapshot: int) -> None:
    table.file_io.overwrite(f"{table.dir('consumer')}/consumer-{consumer_id}",
                            f'{{\n  "nextSnapshot" : {next_snapshot}\n}}')


# -- the pypaimon oracle --------------------------------------------------------------------

@dataclass(frozen=True)
class Root:
    label: str
    kind: str  # snapshot | tag | changelog
    branch: str
    snapshot: Any  # a pypaimon Snapshot (or Changelog)


def _local(path: str) -> str:
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


def py_tables(warehouse: str, identifier: str = IDENT,
              options: Mapping[str, str] | None = None) -> dict[str, Any]:
    cat = catalog(warehouse, options)
    main = cat.get_table(identifier)
    out = {"main": main}
    for b in sorted(main.branch_manager().branches()):
        out[b] = cat.get_table(f"{identifier}$branch_{b}")
    return out


def py_roots(warehouse: str, identifier: str = IDENT, options: Mapping[str, str] | None = None) -> list[Root]:
    """Every snapshot, tag and long-lived changelog of every branch, read by pypaimon."""
    from pypaimon.changelog.changelog_manager import ChangelogManager
    from pypaimon.tag.tag_manager import TagManager

    out: list[Root] = []
    tables = py_tables(warehouse, identifier, options)
    main = tables["main"]
    for branch, t in tables.items():
        for snap in t.snapshot_manager().list_snapshots():
            out.append(Root(f"{branch}@snapshot-{snap.id}", "snapshot", branch, snap))
        tm = TagManager(main.file_io, main.table_path, branch)
        # pypaimon's list_tags() chokes on stray files (pitfall P3): list regular tag-* files here
        for status in main.file_io.list_status(tm.tag_directory()):
            base = getattr(status, "base_name", None) or str(getattr(status, "path", status)).rstrip("/").rsplit("/", 1)[-1]
            if not base.startswith("tag-") or _is_dir(status):
                continue
            name = base[len("tag-"):]
            out.append(Root(f"{branch}@tag-{name}", "tag", branch, tm.get(name).trim_to_snapshot()))
        cm = ChangelogManager(main.file_io, main.table_path, branch)
        for log in cm.safely_get_all_changelogs():
            out.append(Root(f"{branch}@changelog-{log.id}", "changelog", branch, log))
    return out


def _is_dir(status: Any) -> bool:
    import pyarrow.fs as pafs

    kind = getattr(status, "type", None)
    if kind is not None and (kind == pafs.FileType.Directory or "dir" in str(kind).lower()):
        return True
    return bool(getattr(status, "is_dir", False))


def _entries(t: Any, metas: list[Any]) -> list[Any]:
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager

    mfm = ManifestFileManager(t)
    out = []
    for m in metas:
        out.extend(mfm.read(m.file_name, drop_stats=True, file_size=m.file_size))
    return out


def _data_paths(t: Any, e: Any) -> list[str]:
    from pypaimon.utils.file_store_path_factory import canonical_data_file_path

    if e.file.external_path:
        base = _local(e.file.external_path)
        directory = base.rsplit("/", 1)[0]
    else:
        base = _local(canonical_data_file_path(t, tuple(e.partition.values), e.bucket, e.file.file_name))
        directory = base.rsplit("/", 1)[0]
    return [base, *(f"{directory}/{x}" for x in (e.file.extra_files or []))]


def _merged_live(entries: list[Any]) -> list[Any]:
    live: dict[tuple[Any, ...], Any] = {}
    for e in entries:
        key = (tuple(e.partition.values), e.bucket, e.file.file_name)
        if e.kind == 0:
            live[key] = e
        else:
            live.pop(key, None)
    return list(live.values())


def root_requirements(t: Any, root: Root, cache: dict[str, Any] | None = None) -> tuple[set[str], set[str]]:
    """(files needed to read ``root``, every file ``root`` references) as absolute paths.

    Needed: its manifest lists and manifests, its merged live data files (+ extra files), live
    index files, statistics; for a long-lived changelog: its changelog manifest list and the
    changelog files it ADDs, or (producer none) its delta list and the data files the delta ADDs.
    Referenced additionally: DELETE entries and every manifest list it names.
    Missing manifests count as needed-and-missing (their names are returned)."""
    from pypaimon.manifest.index_manifest_file import IndexManifestFile
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    s = root.snapshot
    mdir = _local(f"{t.table_path.rstrip('/')}/manifest")
    mlm = ManifestListManager(t)
    memo: dict[str, Any] = cache if cache is not None else {}

    def read_list(name: str) -> list[Any]:
        key = "list:" + name
        if key not in memo:
            memo[key] = mlm.read(name)  # manifests are immutable: cache by name
        return memo[key]

    def read_entries(metas: list[Any]) -> list[Any]:
        out: list[Any] = []
        for m in metas:
            key = "manifest:" + m.file_name
            if key not in memo:
                memo[key] = _entries(t, [m])
            out.extend(memo[key])
        return out

    def read_index(name: str) -> list[Any]:
        key = "index:" + name
        if key not in memo:
            memo[key] = IndexManifestFile(t).read(name)
        return memo[key]
    needed: set[str] = set()
    referenced: set[str] = set()

    def lists_and_entries(list_name: str | None) -> list[Any]:
        if not list_name:
            return []
        needed.add(f"{mdir}/{list_name}")
        try:
            metas = read_list(list_name)
        except Exception:
            return []
        for m in metas:
            needed.add(f"{mdir}/{m.file_name}")
        try:
            return read_entries(metas)
        except Exception:
            return []

    if root.kind == "changelog":
        producer = str(t.table_schema.options.get("changelog-producer", "none")).lower()
        if s.changelog_manifest_list:
            entries = lists_and_entries(s.changelog_manifest_list)
        elif producer == "none":
            entries = lists_and_entries(s.delta_manifest_list)
        else:  # e.g. an OVERWRITE commit of a producer-input table: streaming reads skip it
            entries = []
        for e in entries:
            paths = _data_paths(t, e)
            referenced.update(paths)
            if e.kind == 0:
                needed.update(paths)
        referenced |= needed
        return needed, referenced

    base = lists_and_entries(s.base_manifest_list)
    delta = lists_and_entries(s.delta_manifest_list)
    for e in base + delta:
        referenced.update(_data_paths(t, e))
    for e in _merged_live(base + delta):
        needed.update(_data_paths(t, e))
    for e in lists_and_entries(s.changelog_manifest_list):
        referenced.update(_data_paths(t, e))
    if s.index_manifest:
        needed.add(f"{mdir}/{s.index_manifest}")
        factory = t.path_factory()
        for e in read_index(s.index_manifest):
            p = _local(factory.bucket_index_path(tuple(e.partition.values), e.bucket, e.index_file, t.file_io))
            referenced.add(p)
            if e.kind == 0:
                needed.add(p)
    stats = getattr(s, "statistics", None)
    if stats:
        needed.add(_local(f"{t.table_path.rstrip('/')}/statistics/{stats}"))
    referenced |= needed
    return needed, referenced


def missing_required(warehouse: str, identifier: str = IDENT,
                     options: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """{root label: [missing needed files]} over every retained root of every branch."""
    tables = py_tables(warehouse, identifier, options)
    main = tables["main"]
    out: dict[str, list[str]] = {}
    for root in py_roots(warehouse, identifier, options):
        needed, _ = root_requirements(main, root)
        missing = sorted(p for p in needed if not main.file_io.exists(p))
        if missing:
            out[root.label] = missing
    return out


def assert_roots_intact(warehouse: str, identifier: str = IDENT, options: Mapping[str, str] | None = None) -> None:
    missing = missing_required(warehouse, identifier, options)
    assert not missing, f"files needed by retained roots are gone: {missing}"


def referenced_paths(warehouse: str, identifier: str = IDENT,
                     options: Mapping[str, str] | None = None) -> set[str]:
    """Every file any retained root of any branch references (ADD and DELETE entries)."""
    return _over_roots(warehouse, identifier, options, referenced=True)


def needed_paths(warehouse: str, identifier: str = IDENT, options: Mapping[str, str] | None = None) -> set[str]:
    """Every file any retained root of any branch needs to be read."""
    return _over_roots(warehouse, identifier, options, referenced=False)


def _over_roots(warehouse: str, identifier: str, options: Mapping[str, str] | None, *, referenced: bool) -> set[str]:
    main = py_tables(warehouse, identifier, options)["main"]
    out: set[str] = set()
    for root in py_roots(warehouse, identifier, options):
        needed, refs = root_requirements(main, root)
        out |= refs if referenced else needed
    return out


def managed_files(root: str) -> set[str]:
    """Absolute paths of files in manifest/, index/, statistics/ and bucket directories (local)."""
    out = set()
    for dirpath, _dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        first = rel.split(os.sep)[0]
        if first in ("manifest", "index", "statistics") or os.path.basename(dirpath).startswith("bucket-"):
            if first == "branch":
                continue
            out.update(os.path.join(dirpath, f) for f in files)
    return out


def read_changelog_rows(warehouse: str, identifier: str, changelog_id: int, branch: str = "main") -> list[Any]:
    """Read a long-lived ``changelog-N`` end to end with pypaimon's readers: its manifest list,
    manifests, and every data/changelog file it ADDs (parquet), as sorted rows."""
    import pyarrow.parquet as pq
    from pypaimon.changelog.changelog_manager import ChangelogManager

    t = py_tables(warehouse, identifier)[branch]
    main = py_tables(warehouse, identifier)["main"]
    log = ChangelogManager(main.file_io, main.table_path, branch).long_lived_changelog(changelog_id)
    root = Root(f"changelog-{changelog_id}", "changelog", branch, log)
    needed, _ = root_requirements(main, root)
    out: list[Any] = []
    for p in sorted(needed):
        if "/manifest/" in p:
            assert os.path.exists(p), p
            continue
        for r in pq.ParquetFile(p).read().to_pylist():
            out.append(tuple(sorted((k, v) for k, v in r.items() if not k.startswith("_"))))
    del t
    return sorted(out, key=repr)


def read_view(warehouse: str, identifier: str, branch: str = "main",
              options: Mapping[str, str] | None = None) -> list[Any]:
    return read_rows(reload(warehouse, identifier, branch), options)


def fault_after(k: int) -> tuple[Callable[[list[str]], None], list[int]]:
    """A fault injector raising on the (k+1)-th operation (each call = one batch)."""
    calls = [0]

    def fault(_paths: list[str]) -> None:
        if calls[0] >= k:
            raise Crash(f"injected crash after {k} operation(s)")
        calls[0] += 1

    return fault, calls


class Crash(RuntimeError):
    pass




def check_retained(warehouse: str, before: Mapping[str, Any], *, gone: Iterable[str] = (),
                   identifier: str = IDENT, options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """After an operation: every retained view reads as before (only ``gone`` disappeared) and
    every file a retained root needs exists. Returns the new views."""
    after = views(warehouse, identifier, options)
    assert_views_kept(before, after, gone=gone)
    assert_roots_intact(warehouse, identifier, options)
    return after


def parquet_ids(path: str) -> frozenset[int]:
    import pyarrow.parquet as pq

    return frozenset(int(v) for v in pq.ParquetFile(path).read(columns=["id"]).column("id").to_pylist())


def data_files_by_ids(root: str) -> dict[frozenset[int], str]:
    """{ids stored in the file: absolute path} of every parquet data file below ``root``."""
    out: dict[frozenset[int], str] = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            if f.endswith(".parquet") and f.startswith("data-"):
                p = os.path.join(dirpath, f)
                out[parquet_ids(p)] = p
    return out


def ids(start: int, n: int = 2) -> frozenset[int]:
    return frozenset(range(start, start + n))


def build_mixed(warehouse: str, options: Mapping[str, str] | None = None) -> None:
    """The shared history of the expiration/crash/orphan tests (an append table partitioned by dt):

    main: 1 +a0  2 +b10  3 ow(a) -a0 +a20  [tag t3]  4 ow(a) -a20 +a30
          5 ow(b) -b10 +b60  6 +a70  7 ow(a) -a30 -a70 +a80
    b1 (from t3): 4 +c40  5 ow(b) -b10 +b50 [tag bt]  6 ow(c) -c40 +c90

    (``a0`` = the data file holding ids 0 and 1, ...). ``options`` are catalog (storage) options."""
    t = append_table(warehouse, catalog_options=options)
    write(t, rows("a", 0))
    write(t, rows("b", 10))
    overwrite(t, rows("a", 20), {"dt": "a"})
    t.create_tag("t3")
    overwrite(t, rows("a", 30), {"dt": "a"})
    t.branch_manager().create_branch("b1", tag_name="t3")
    b = reload(warehouse, branch="b1", catalog_options=options)
    write(b, rows("c", 40))
    overwrite(b, rows("b", 50), {"dt": "b"})
    b.create_tag("bt")
    overwrite(b, rows("c", 90), {"dt": "c"})
    overwrite(t, rows("b", 60), {"dt": "b"})
    write(t, rows("a", 70))
    overwrite(t, rows("a", 80), {"dt": "a"})


def copy_tree(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> str:
    import shutil

    shutil.copytree(src, dst, copy_function=shutil.copy2)
    return str(dst)


def read_views(warehouse: str, keys: Iterable[str], identifier: str = IDENT,
               options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Read only the given views (keys as ``snapshot_views`` names them); an unreadable view
    maps to the exception's class name."""
    out: dict[str, Any] = {}
    cat = catalog(warehouse, options)
    tables: dict[str, Any] = {}
    for key in keys:
        branch, what = key.split("@", 1)
        if branch not in tables:
            tables[branch] = cat.get_table(identifier if branch == "main" else f"{identifier}$branch_{branch}")
        if what == "latest":
            scan = None
        elif what.startswith("snapshot-"):
            scan = {"scan.snapshot-id": what[len("snapshot-"):]}
        else:
            scan = {"scan.tag-name": what[len("tag-"):]}
        try:
            out[key] = read_rows(tables[branch], scan)
        except Exception as e:  # noqa: BLE001 - reported, compared by the caller
            out[key] = f"unreadable: {type(e).__name__}"
    return out


_RETENTION_FLAGS = ("retain_min", "retain_max", "time_retained", "expire_limit", "clean_empty_directories",
                    "changelog_retain_min", "changelog_retain_max", "changelog_time_retained")


def build_mixed_with_orphans(warehouse: str) -> None:
    """:func:`build_mixed` plus planted orphans: old data files in an existing bucket and in a
    partition nothing references (its directories go too), an old manifest, a crashed writer's temp
    file in snapshot/, and one young orphan that must stay (``dt=b/bucket-0/data-young.parquet``)."""
    build_mixed(warehouse)
    root = table_root(warehouse)
    plant(f"{root}/dt=a/bucket-0/data-orphan-1.parquet", b"x" * 10)
    plant(f"{root}/dt=zz/bucket-0/data-orphan-2.parquet", b"x" * 20)
    plant(f"{root}/manifest/manifest-orphan-0", b"x" * 30)
    plant(f"{root}/snapshot/.snapshot-9.tmp", b"x" * 5)
    plant(f"{root}/dt=b/bucket-0/data-young.parquet", b"y", age_s=None)


def spark_request(warehouse: str, operation: str, identifier: str = IDENT, **kw: Any) -> Any:
    """A Spark ``JobRequest``; retention flags (``retain_min=1, time_retained="0 ms"``...) are
    resolved over the table's options (``retention_settings.from_options``), as the CLI resolves
    its own flags, and carried as the request's ``retention``."""
    from tablekeeper.core.reclaim.expire import retention
    from tablekeeper.core.values import durations


    flags = {k: kw.pop(k) for k in _RETENTION_FLAGS if k in kw}
    if flags:
        flags = {k: durations.parse_duration(v) if k.endswith("time_retained") else v for k, v in flags.items()}
        table = open_table(warehouse, identifier, branch=kw.get("branch", "main"),
                           options=dict(kw.get("options") or {}))
        kw["retention"] = retention.from_options(table.options(),
                                                          retention.RetentionFlags(**flags))
    return job_request.JobRequest(operation=operation, warehouse=warehouse, table=identifier, **kw)  # type: ignore[arg-type]
