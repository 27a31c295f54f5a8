"""tablekeeper's commands on tables of Paimon's JDBC catalog (PostgreSQL and SQLite): tables listed
from ``paimon_tables``, opened where the catalog keeps them, and the catalog's distributed lock
(``paimon_distributed_locks``, ``lock.enabled``) held around tablekeeper's commits: the same row
Java Paimon's ``JdbcCatalog`` takes, so a Java commit waits while tablekeeper commits and
tablekeeper's commit waits while another holder has it. Tables written by Java Paimon and by
pypaimon through the catalog, re-read through it by both."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pypaimon import CatalogFactory

from tablekeeper.cli.main import main
from tablekeeper.core import catalogs
from tests.support import catalogs as C
from tests.support import paimon as P
from tests.support.javapaimon import JavaPaimon, JavaPaimonError

pytestmark = [pytest.mark.catalogs, pytest.mark.jdbc]

LOCKED = {"lock.enabled": "true", "lock-acquire-timeout": "1 s", "lock-check-max-sleep": "100 ms"}


@pytest.fixture(params=["postgresql", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path, catalog_java: JavaPaimon) -> Iterator[tuple[str, dict[str, str], Any]]:
    warehouse = str(tmp_path / "warehouse")
    if request.param == "postgresql":
        server: C.PostgresServer = request.getfixturevalue("postgres_server")
        name = f"catalog_{uuid.uuid4().hex[:8]}"
        options = server.catalog_options(warehouse, uri=server.create_database(name))
        connect: Any = lambda: server.connect(name)  # noqa: E731
    else:
        db_file = str(tmp_path / "catalog.sqlite")
        options = C.sqlite_catalog_options(db_file, warehouse)
        connect = lambda: sqlite3.connect(db_file)  # noqa: E731
    yield request.param, options, connect
    for opts in (options, {**options, **LOCKED}):
        catalog_java.call("close_catalog", catalog=opts)


def _cli(options: dict[str, str]) -> list[str]:
    out: list[str] = []
    for key, value in options.items():
        out += ["--catalog-option", f"{key}={value}"]
    return out


def _java_ids(java: JavaPaimon, options: dict[str, str], table: str, read: dict[str, str] | None = None) -> list[int]:
    args: dict[str, Any] = {"catalog": options, "table": table}
    if read:
        args["options"] = read
    return sorted(int(r[1]) for r in java.call("read", **args)["rows"])


def _py_ids(options: dict[str, str], table: str, read: dict[str, str] | None = None) -> list[int]:
    return sorted(int(dict(r)["id"]) for r in P.read_rows(CatalogFactory.create(options).get_table(table), read))


def test_tables_listed_from_the_catalog_and_tagged_through_it(
        store: tuple[str, dict[str, str], Any], catalog_java: JavaPaimon) -> None:
    _dialect, options, _connect = store
    catalog_java.call("create_table", catalog=options, table="sales.java_orders",
                      fields=[["dt", "STRING"], ["id", "BIGINT"]], partition_keys=["dt"], options={"bucket": "-1"})
    catalog_java.call("write", catalog=options, table="sales.java_orders", rows=[["2024-01-01", 1], ["2024-01-02", 2]])
    catalog_java.call("write", catalog=options, table="sales.java_orders", rows=[["2024-01-02", 3]])
    P.write(P.create_table(CatalogFactory.create(options), "sales.py_orders", P.ORDERS_SCHEMA, partition_keys=["dt"],
                           options={"bucket": "-1"}), P.rows("2024-02-01", 10, 2))
    catalog = catalogs.open_catalog(options)
    try:
        assert catalog.list_databases() == ["sales"]
        assert catalog.list_tables("sales") == ["java_orders", "py_orders"]
        assert catalog.commit_lock("sales.java_orders") is None  # lock.enabled is off
    finally:
        catalog.close()
    for table, ids in {"sales.java_orders": [1, 2], "sales.py_orders": [10, 11]}.items():
        assert main(["tag", "create", *_cli(options), table, "first", "--snapshot", "1"]) == 0
        assert _java_ids(catalog_java, options, table, {"scan.tag-name": "first"}) == ids
        assert _py_ids(options, table, {"scan.tag-name": "first"}) == ids
    assert _java_ids(catalog_java, options, "sales.java_orders") == [1, 2, 3]
    assert main(["tag", "create", *_cli(options), "sales.missing", "first"]) == 2


def test_commits_take_the_distributed_lock_java_takes(store: tuple[str, dict[str, str], Any], catalog_java: JavaPaimon,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    dialect, options, connect = store
    locked = {**options, **LOCKED}
    table = "sales.locked"
    catalog_java.call("create_table", catalog=locked, table=table, fields=[["dt", "STRING"], ["id", "BIGINT"]],
                      partition_keys=["dt"], options={"bucket": "-1"})
    catalog_java.call("write", catalog=locked, table=table, rows=[["2024-01-01", 1]])

    # While tablekeeper holds the table's commit lock, Java's commit cannot get it. (The lock row
    # expires after its holder's lock-acquire-timeout, as Paimon's: tablekeeper's is a minute here.)
    catalog = catalogs.open_catalog({**locked, "lock-acquire-timeout": "60 s"})
    try:
        t, _ = catalogs.open_catalog_table(catalog, table)
        guard = t.file_io.commit_guard
        assert isinstance(guard, catalogs.TableCommitGuard)
        with guard.held():
            conn = connect()
            try:
                cur = conn.cursor()
                cur.execute("SELECT lock_id FROM paimon_distributed_locks")
                assert [r[0] for r in cur.fetchall()] == [C.jdbc_lock_id("jdbc", "sales", "locked")]
            finally:
                conn.close()
            with pytest.raises(JavaPaimonError, match="Acquire lock failed"):
                catalog_java.call("write", catalog=locked, table=table, rows=[["2024-01-02", 2]],
                                  options={"commit.max-retries": "0"})
    finally:
        catalog.close()
    catalog_java.call("write", catalog=locked, table=table, rows=[["2024-01-03", 3]])  # released: Java commits

    # While another committer holds it, tablekeeper's commit waits lock-acquire-timeout, then fails closed.
    conn = connect()
    try:
        holder = C.JdbcTableLock(conn, dialect, "jdbc", "sales", "locked", acquire_timeout_s=5, check_max_sleep_s=0.1)
        holder.acquire()
        try:
            capsys.readouterr()
            assert main(["tag", "create", *_cli(locked), table, "held", "-o", "json"]) == 2
            assert json.loads(capsys.readouterr().out)["error"]["kind"] == "CatalogError"
        finally:
            holder.release()
    finally:
        conn.close()
    assert main(["tag", "create", *_cli(locked), table, "free"]) == 0
    assert _java_ids(catalog_java, locked, table) == [1, 3]
    assert _java_ids(catalog_java, locked, table, {"scan.tag-name": "free"}) == [1, 3]
    assert _py_ids(options, table, {"scan.tag-name": "free"}) == [1, 3]
    assert not (Path(options["warehouse"]) / "sales.db" / "locked" / "tag" / "tag-held").exists()
