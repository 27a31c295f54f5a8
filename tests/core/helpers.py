"""Shared helpers for the tests of tablekeeper.core (tags, branches, bad input).

Everything here works on real pypaimon-written tables. The "oracle" functions compute reachable
files with pypaimon's own ManifestListManager/ManifestFileManager, independently of
tablekeeper's Avro reader, so a planner's result can be checked against a second opinion.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from tests.support.paimon import append_table, catalog, dir_listing, overwrite, rows, write

IDENT = "db.orders"


def table_root(warehouse: str | os.PathLike[str], identifier: str = IDENT) -> Path:
    db, name = identifier.split(".")
    return Path(warehouse) / f"{db}.db" / name


def expire_snapshots(root: str | os.PathLike[str], upto: int, branch: str | None = None) -> None:
    """What an expiration that kept every data file would leave: ``snapshot-1..upto`` gone,
    ``EARLIEST`` rewritten (no trailing newline, as Java)."""
    base = Path(root) if branch is None else Path(root) / "branch" / f"branch-{branch}"
    snap_dir = base / "snapshot"
    for sid in range(1, upto + 1):
        (snap_dir / f"snapshot-{sid}").unlink(missing_ok=True)
    (snap_dir / "EARLIEST").write_text(str(upto + 1))


def data_files(root: str | os.PathLike[str]) -> set[str]:
    """Relative paths of every data file (parquet/orc/avro in bucket directories)."""
    out = set()
    for dirpath, _dirs, files in os.walk(root):
        if "bucket-" not in os.path.basename(dirpath):
            continue
        for f in files:
            out.add(os.path.relpath(os.path.join(dirpath, f), root))
    return out


def files_only(listing: dict[str, tuple[int, int]]) -> dict[str, int]:
    """dir_listing without directories and mtimes: {relative file path: size}."""
    return {k: v[0] for k, v in listing.items() if not k.endswith("/")}


def content_listing(root: str | os.PathLike[str]) -> dict[str, int]:
    return files_only(dir_listing(root))


def removed(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    return set(before) - set(after)


def copy_warehouse(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> str:
    shutil.copytree(src, dst, copy_function=shutil.copy2)
    return str(dst)


def without(views: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in views.items() if k not in keys}


def views_except(warehouse: str, identifier: str, skip: set[str]) -> dict[str, Any]:
    """``snapshot_views`` without reading the views named in ``skip`` (e.g. a tag that a
    crashed deletion left half-deleted and therefore unreadable)."""
    from tablekeeper.core.paimon.table import open_table
    from tests.support.paimon import read_rows, table_at

    views: dict[str, Any] = {}
    handle = open_table(warehouse, identifier)
    for branch in ["main", *handle.branch_names()]:
        t = table_at(warehouse, identifier, branch)
        h = handle.on_branch(branch)
        wanted: list[tuple[str, dict[str, str] | None]] = []
        if h.latest_snapshot_id() is not None:
            wanted.append((f"{branch}@latest", None))
        wanted += [(f"{branch}@snapshot-{sid}", {"scan.snapshot-id": str(sid)}) for sid in h.snapshot_ids()]
        wanted += [(f"{branch}@tag-{n}", {"scan.tag-name": n}) for n in h.tag_names()]
        for key, opts in wanted:
            if key not in skip:
                views[key] = read_rows(t, opts)
    return views


# -- the pypaimon oracle --------------------------------------------------------------------

def _py_tables(warehouse: str, identifier: str) -> dict[str, Any]:
    cat = catalog(warehouse)
    main = cat.get_table(identifier)
    out = {"main": main}
    for b in main.branch_manager().branches():
        out[b] = cat.get_table(f"{identifier}$branch_{b}")
    return out


def py_roots(warehouse: str, identifier: str, *, exclude: tuple[str, str] | None = None
             ) -> list[tuple[str, Any]]:
    """Every snapshot and tag of every branch, read by pypaimon: [(label, pypaimon Snapshot)].
    ``exclude`` = (branch, tag name) leaves one tag out."""
    out = []
    for branch, t in _py_tables(warehouse, identifier).items():
        for snap in t.snapshot_manager().list_snapshots():
            out.append((f"{branch}@snapshot-{snap.id}", snap))
        tm = t.tag_manager()
        tag_dir = tm.tag_directory()
        if not os.path.isdir(tag_dir):
            continue
        for name in tm.list_tags():
            if exclude == (branch, name):
                continue
            out.append((f"{branch}@tag-{name}", tm.get(name).trim_to_snapshot()))
    return out


def py_tag_snapshot(warehouse: str, identifier: str, tag: str, branch: str = "main") -> Any:
    t = _py_tables(warehouse, identifier)[branch]
    return t.tag_manager().get(tag).trim_to_snapshot()


def py_live_data(warehouse: str, identifier: str, snapshot: Any) -> set[str]:
    """Merged live data file names (ADD - DELETE over base + delta), via pypaimon."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    t = catalog(warehouse).get_table(identifier)
    metas = ManifestListManager(t).read_all(snapshot)
    return {e.file.file_name for e in ManifestFileManager(t).read_entries_parallel(metas)}


def py_meta_files(warehouse: str, identifier: str, snapshot: Any) -> set[str]:
    """Manifest lists, manifests and the index manifest a snapshot names, via pypaimon."""
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    t = catalog(warehouse).get_table(identifier)
    mlm = ManifestListManager(t)
    out = {n for n in (snapshot.base_manifest_list, snapshot.delta_manifest_list,
                       snapshot.changelog_manifest_list, snapshot.index_manifest) if n}
    metas = mlm.read_all(snapshot) + mlm.read_changelog(snapshot)
    out.update(m.file_name for m in metas)
    return out


def expected_tag_cleanup(warehouse: str, identifier: str, tag: str) -> tuple[set[str], set[str]]:
    """(data file names, manifest file names) that only ``tag`` reaches: its merged live files
    minus the live files of every other root, its metadata minus every other root's."""
    snap = py_tag_snapshot(warehouse, identifier, tag)
    others = [s for _label, s in py_roots(warehouse, identifier, exclude=("main", tag))]
    keep_data: set[str] = set()
    keep_meta: set[str] = set()
    for s in others:
        keep_data |= py_live_data(warehouse, identifier, s)
        keep_meta |= py_meta_files(warehouse, identifier, s)
    return (py_live_data(warehouse, identifier, snap) - keep_data,
            py_meta_files(warehouse, identifier, snap) - keep_meta)


__all__ = [
    "IDENT", "table_root", "overwrite", "rows", "append_table", "expire_snapshots", "data_files",
    "files_only", "content_listing", "removed", "copy_warehouse", "without", "py_roots",
    "py_tag_snapshot", "py_live_data", "py_meta_files", "expected_tag_cleanup", "write", "views_except",
]
