"""Builders and readers for real Paimon tables written by pypaimon 2.1.0 (tests and benches).

``snapshot_views`` reads every retained snapshot, tag and branch through pypaimon, so a test can
compare the whole readable state of a table before and after an operation.
"""

from __future__ import annotations

import os
import tarfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

#: Vendored from apache/paimon (Apache-2.0); origin and licence in tests/fixtures/README.md.
FIXTURE_TARBALL = Path(__file__).resolve().parents[1] / "fixtures" / "java-pk-golden.tar.gz"
JAVA_TABLES = ("test_pk_global_index_golden", "test_pk_vector_golden", "test_pk_full_text_golden")

ORDERS_SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("amount", pa.float64())])
EVENTS_SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.string())])


def catalog(warehouse: str, options: Mapping[str, str] | None = None) -> Any:
    return CatalogFactory.create({"warehouse": warehouse, **(options or {})})


def create_table(cat: Any, identifier: str, schema: pa.Schema, *, primary_keys: list[str] | None = None,
                 partition_keys: list[str] | None = None, options: Mapping[str, str] | None = None) -> Any:
    db = identifier.split(".")[0]
    cat.create_database(db, ignore_if_exists=True)
    cat.create_table(identifier, Schema.from_pyarrow_schema(
        schema, primary_keys=primary_keys, partition_keys=partition_keys, options=dict(options or {})),
        ignore_if_exists=False)
    return cat.get_table(identifier)


def write(table: Any, rows: list[dict[str, Any]], schema: pa.Schema | None = None) -> None:
    """One batch commit = one snapshot."""
    _commit(table.new_batch_write_builder(), rows, schema or table_arrow_schema(table))


def overwrite(table: Any, rows: list[dict[str, Any]], partition: Mapping[str, Any] | None,
              schema: pa.Schema = ORDERS_SCHEMA) -> None:
    """One OVERWRITE commit (of ``partition``, or of the whole table when None): the delta
    holds DELETE entries for the replaced files."""
    wb = table.new_batch_write_builder()
    _commit(wb.overwrite(dict(partition)) if partition is not None else wb.overwrite(), rows, schema)


def _commit(write_builder: Any, rows: list[dict[str, Any]], schema: pa.Schema) -> None:
    w, c = write_builder.new_write(), write_builder.new_commit()
    try:
        w.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def table_arrow_schema(table: Any) -> pa.Schema:
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)


def branch_table(cat: Any, identifier: str, branch: str) -> Any:
    return cat.get_table(f"{identifier}$branch_{branch}")


def read_rows(table: Any, options: Mapping[str, str] | None = None) -> list[tuple[Any, ...]]:
    """All rows of ``table`` (optionally time-travelled), sorted for comparison."""
    t = table.copy(dict(options)) if options else table
    rb = t.new_read_builder()
    splits = rb.new_scan().plan().splits()
    arrow = rb.new_read().to_arrow(splits)
    if arrow is None:
        return []
    rows = [tuple(sorted(r.items())) for r in arrow.to_pylist()]
    return sorted(rows, key=repr)


def table_at(warehouse: str, identifier: str, branch: str | None = None,
             options: Mapping[str, str] | None = None) -> Any:
    cat = catalog(warehouse, options)
    return cat.get_table(f"{identifier}$branch_{branch}" if branch and branch != "main" else identifier)


def snapshot_views(warehouse: str, identifier: str, options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every readable view of a table through pypaimon: latest, every existing snapshot, every
    tag, and the same for every branch. Keys like ``main@latest``, ``main@snapshot-3``,
    ``main@tag-t1``, ``b1@latest``."""
    from tablekeeper.core.paimon.table import open_table

    views: dict[str, Any] = {}
    handle = open_table(warehouse, identifier, options=options)
    for branch in ["main", *handle.branch_names()]:
        t = table_at(warehouse, identifier, branch, options)
        h = handle.on_branch(branch)
        if h.latest_snapshot_id() is not None:
            views[f"{branch}@latest"] = read_rows(t)
        for sid in h.snapshot_ids():
            views[f"{branch}@snapshot-{sid}"] = read_rows(t, {"scan.snapshot-id": str(sid)})
        for name in h.tag_names():
            views[f"{branch}@tag-{name}"] = read_rows(t, {"scan.tag-name": name})
    return views


def dir_listing(root: str | os.PathLike[str]) -> dict[str, tuple[int, int]]:
    """Names, sizes and mtimes (ns) of every file below ``root``: proof that nothing changed."""
    out: dict[str, tuple[int, int]] = {}
    for dirpath, dirs, files in os.walk(root):
        for d in dirs:
            out[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = (0, 0)
        for name in files:
            full = os.path.join(dirpath, name)
            st = os.stat(full)
            out[os.path.relpath(full, root)] = (st.st_size, st.st_mtime_ns)
    return out


def extract_java_fixture(dest: str | os.PathLike[str]) -> Path:
    """Extract the Java-written warehouse into ``dest``; returns the warehouse path."""
    with tarfile.open(FIXTURE_TARBALL) as tar:
        tar.extractall(dest, filter="data")
    return Path(dest)


def orders_rows(dt: str, start: int, n: int) -> list[dict[str, Any]]:
    return [{"dt": dt, "id": i, "amount": float(i) * 1.5} for i in range(start, start + n)]


def rows(dt: str, start: int, n: int = 2) -> list[dict[str, Any]]:
    """``n`` orders rows of partition ``dt`` with ids from ``start`` and ``amount == id``."""
    return [{"dt": dt, "id": i, "amount": float(i)} for i in range(start, start + n)]


def append_table(warehouse: str | os.PathLike[str], identifier: str = "db.orders", *,
                 options: Mapping[str, str] | None = None, catalog_options: Mapping[str, str] | None = None,
                 partitioned: bool = True) -> Any:
    """An orders append table (no bucket key), partitioned by ``dt`` unless told otherwise, so
    overwrites produce DELETE entries."""
    cat = catalog(str(warehouse), catalog_options)
    return create_table(cat, identifier, ORDERS_SCHEMA, partition_keys=["dt"] if partitioned else None,
                        options=dict(options or {}))


def build_history(warehouse: str, identifier: str = "db.orders", *, commits: int = 6,
                  primary_key: bool = True, partitioned: bool = True,
                  options: Mapping[str, str] | None = None) -> Any:
    """A small table with ``commits`` snapshots (upserts on a PK table; appends otherwise)."""
    cat = catalog(warehouse)
    t = create_table(cat, identifier, ORDERS_SCHEMA,
                     primary_keys=(["dt", "id"] if partitioned else ["id"]) if primary_key else None,
                     partition_keys=["dt"] if partitioned else None,
                     options={"bucket": "2", **(options or {})} if primary_key else dict(options or {}))
    for i in range(commits):
        write(t, orders_rows(f"2026-01-0{1 + i % 3}", i * 2, 4))
    return cat.get_table(identifier)


def files_under(root: str | os.PathLike[str], *, exclude_dirs: Iterable[str] = ()) -> set[str]:
    out = set()
    for dirpath, _dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if any(rel == d or rel.startswith(d + os.sep) for d in exclude_dirs):
            continue
        for name in files:
            out.add(os.path.relpath(os.path.join(dirpath, name), root))
    return out


def plant_orphan(table_root: str | os.PathLike[str], name: str, content: bytes = b"x", *,
                 age_s: float = 2 * 86_400) -> Path:
    """A data file no snapshot references, in the table's first bucket directory, ``age_s`` old
    (older than the usual ``--older-than`` thresholds)."""
    bucket = next(Path(table_root).rglob("bucket-*"))
    orphan = bucket / name
    orphan.write_bytes(content)
    past = time.time() - age_s
    os.utime(orphan, (past, past))
    return orphan
