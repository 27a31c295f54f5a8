"""The JDBC tier stands up: Paimon's JDBC catalog on a private PostgreSQL cluster and on SQLite,
tables written through Java Paimon's ``JdbcCatalog`` and through pypaimon's JDBC catalog, both
listed and read back through the same catalog by both engines; the catalog's distributed lock
(``paimon_distributed_locks``) taken from Python blocks a Java commit made with ``lock.enabled``
until it is released."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pypaimon import CatalogFactory

from tests.support import catalogs as C
from tests.support import paimon as P
from tests.support.javapaimon import JavaPaimon, JavaPaimonError

pytestmark = [pytest.mark.catalogs, pytest.mark.jdbc]

#: Paimon's catalog lock, with timeouts short enough for a test to wait them out.
LOCKED = {"lock.enabled": "true", "lock-acquire-timeout": "1 s", "lock-check-max-sleep": "100 ms"}


@dataclass
class JdbcStore:
    """One JDBC catalog store (a fresh PostgreSQL database or SQLite file) and its warehouse."""

    dialect: str
    options: dict[str, str]
    connect: Any

    def pypaimon(self, **extra: str) -> Any:
        return CatalogFactory.create({**self.options, **extra})


@pytest.fixture(params=["postgresql", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path, catalog_java: JavaPaimon) -> Iterator[JdbcStore]:
    warehouse = str(tmp_path / "warehouse")
    if request.param == "postgresql":
        server: C.PostgresServer = request.getfixturevalue("postgres_server")
        name = f"catalog_{uuid.uuid4().hex[:8]}"
        uri = server.create_database(name)
        store = JdbcStore("postgresql", server.catalog_options(warehouse, uri=uri), lambda: server.connect(name))
    else:
        db_file = str(tmp_path / "catalog.sqlite")
        store = JdbcStore("sqlite", C.sqlite_catalog_options(db_file, warehouse), lambda: sqlite3.connect(db_file))
    yield store
    # Java's catalogs of this store (with and without the lock) give their connections back.
    for options in (store.options, {**store.options, **LOCKED}):
        catalog_java.call("close_catalog", catalog=options)


def _py_rows(table: Any) -> list[tuple[str, int]]:
    return sorted((str(dict(r)["dt"]), int(dict(r)["id"])) for r in P.read_rows(table))


def _java_rows(java: JavaPaimon, options: dict[str, str], table: str) -> list[tuple[str, int]]:
    rows = java.call("read", catalog=options, table=table)["rows"]
    return sorted((r[0], int(r[1])) for r in rows)


def test_tables_written_through_each_engine_read_back_through_the_catalog_by_both(
        store: JdbcStore, catalog_java: JavaPaimon) -> None:
    java_table, py_table = "sales.java_orders", "sales.py_orders"
    catalog_java.call("create_table", catalog=store.options, table=java_table,
                      fields=[["dt", "STRING"], ["id", "BIGINT"], ["amount", "DOUBLE"]],
                      primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"})
    catalog_java.call("write", catalog=store.options, table=java_table,
                      rows=[["2024-01-01", 1, 1.0], ["2024-01-02", 2, 2.0]])
    py_catalog = store.pypaimon()
    P.write(P.create_table(py_catalog, py_table, P.ORDERS_SCHEMA, partition_keys=["dt"], options={"bucket": "-1"}),
            P.rows("2024-02-01", 10, 3))

    assert catalog_java.call("list_databases", catalog=store.options) == py_catalog.list_databases() == ["sales"]
    assert sorted(catalog_java.call("list_tables", catalog=store.options, database="sales")) == \
        py_catalog.list_tables("sales") == ["java_orders", "py_orders"]
    expected = {java_table: [("2024-01-01", 1), ("2024-01-02", 2)],
                py_table: [("2024-02-01", 10), ("2024-02-01", 11), ("2024-02-01", 12)]}
    for table, rows in expected.items():
        assert _java_rows(catalog_java, store.options, table) == rows
        assert _py_rows(store.pypaimon().get_table(table)) == rows
    with store.connect() as conn:
        cur = conn.cursor()
        cur.execute("SELECT catalog_key, database_name, table_name FROM paimon_tables ORDER BY table_name")
        assert [tuple(r) for r in cur.fetchall()] == [("jdbc", "sales", "java_orders"), ("jdbc", "sales", "py_orders")]


def test_the_distributed_lock_blocks_a_java_commit_until_released(store: JdbcStore, catalog_java: JavaPaimon) -> None:
    locked = {**store.options, **LOCKED}
    table = "sales.locked"
    catalog_java.call("create_table", catalog=locked, table=table, fields=[["dt", "STRING"], ["id", "BIGINT"]],
                      partition_keys=["dt"], options={"bucket": "-1"})
    catalog_java.call("write", catalog=locked, table=table, rows=[["2024-01-01", 1]])
    conn = store.connect()
    try:
        lock = C.JdbcTableLock(conn, store.dialect, "jdbc", "sales", "locked", acquire_timeout_s=60,
                               check_max_sleep_s=0.1)
        lock.acquire()
        cur = conn.cursor()
        cur.execute("SELECT lock_id FROM paimon_distributed_locks")
        assert [r[0] for r in cur.fetchall()] == ["jdbc.sales.locked"]
        conn.commit()
        # A second locker cannot take it; Java's commit waits lock-acquire-timeout, then fails.
        assert not C.JdbcTableLock(conn, store.dialect, "jdbc", "sales", "locked").try_acquire()
        with pytest.raises(JavaPaimonError, match="Acquire lock failed"):
            catalog_java.call("write", catalog=locked, table=table, rows=[["2024-01-02", 2]],
                              options={"commit.max-retries": "0"})  # one attempt, not ten
        lock.release()
        catalog_java.call("write", catalog=locked, table=table, rows=[["2024-01-03", 3]])
        # Java released its own lock after the commit: ours can be taken again.
        with C.JdbcTableLock(conn, store.dialect, "jdbc", "sales", "locked", acquire_timeout_s=5):
            pass
    finally:
        conn.close()
    assert _java_rows(catalog_java, locked, table) == [("2024-01-01", 1), ("2024-01-03", 3)]
    assert _py_rows(store.pypaimon().get_table(table)) == [("2024-01-01", 1), ("2024-01-03", 3)]
