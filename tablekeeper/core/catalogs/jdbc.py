"""``metastore=jdbc``: Paimon's JdbcCatalog (PostgreSQL and SQLite) as tablekeeper meets it.

- Tables are the rows of ``paimon_tables`` of the catalog's ``catalog-key`` (default ``jdbc``);
  locations are the warehouse layout ``<warehouse>/<db>.db/<table>``, as JdbcCatalog's.
- ``lock.enabled``: ``JdbcCatalogLock``'s lock: a row ``<catalog-key>.<db>.<table>`` inserted into
  ``paimon_distributed_locks`` (its primary key refuses a second holder), after deleting that row
  when older than its ``expire_time_seconds``; retried with a sleep doubling up to
  ``lock-check-max-sleep`` until ``lock-acquire-timeout``; released by deleting the row. The SQL is
  that of Paimon's PostgreSQL and SQLite lock dialects.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlparse

from tablekeeper.core import errors
from tablekeeper.core.catalogs.catalog import Catalog, CatalogTable, split_identifier
from tablekeeper.core.catalogs.commit_lock import TableLock
from tablekeeper.core.catalogs.options import CatalogOptions
from tablekeeper.core.storage import join

__all__ = ["JdbcCatalog", "JdbcLock", "LOCK_TABLE"]

LOCK_TABLE = "paimon_distributed_locks"
_EXPIRED = {
    "postgresql": f"DELETE FROM {LOCK_TABLE} WHERE EXTRACT(EPOCH FROM AGE(NOW(), acquired_at)) > expire_time_seconds "
                  "AND lock_id = %s",
    "sqlite": f"DELETE FROM {LOCK_TABLE} WHERE strftime('%s', 'now') - strftime('%s', acquired_at) > "
              "expire_time_seconds AND lock_id = ?",
}
_EXISTS = {
    "postgresql": "SELECT 1 FROM information_schema.tables WHERE table_name = %s",
    "sqlite": "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
}


def _connect(options: CatalogOptions) -> tuple[str, Any]:
    """(dialect, DB-API connection) for the catalog's ``uri`` and ``jdbc.*`` options."""
    uri = options.require("uri", "the JDBC URL, e.g. jdbc:postgresql://host:5432/db or jdbc:sqlite:/path/catalog.db")
    if uri.startswith("jdbc:sqlite:"):
        path = uri[len("jdbc:sqlite:"):]
        try:
            conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=30)
        except sqlite3.Error as e:
            raise errors.CatalogError(f"metastore=jdbc: cannot open the SQLite catalog {path} ({e})", option="uri",
                                      fix="point uri at the catalog's existing SQLite file") from e
        return "sqlite", conn
    if uri.startswith("jdbc:postgresql:"):
        try:
            import psycopg
        except ImportError as e:
            raise errors.CatalogError("metastore=jdbc on PostgreSQL needs psycopg", option="uri",
                                      fix="pip install 'tablekeeper[catalogs]'") from e
        parsed = urlparse(uri[len("jdbc:"):])
        params = dict(parse_qsl(parsed.query))
        user = options.get("jdbc.user") or params.get("user")
        password = options.get("jdbc.password") or params.get("password")
        try:
            pg: Any = psycopg.connect(host=parsed.hostname or "localhost", port=parsed.port or 5432,
                                   dbname=parsed.path.lstrip("/"), user=user, password=password, connect_timeout=10)
        except psycopg.OperationalError as e:
            first = " ".join(str(e).split())[:200]
            option = "jdbc.password" if "password" in first or "authentication" in first else "uri"
            raise errors.CatalogError(f"metastore=jdbc: cannot connect to {uri} ({first})", option=option,
                                      fix=f"check {option} (and jdbc.user)") from e
        return "postgresql", pg
    raise errors.CatalogError(f"metastore=jdbc: uri {uri.split('//')[0]} catalogs are not supported", option="uri",
                              fix="use a jdbc:postgresql:// or jdbc:sqlite: catalog")


class JdbcLock:
    """``JdbcCatalogLock`` on one table (module docstring), on its own connection."""

    def __init__(self, options: CatalogOptions, catalog_key: str, database: str, table: str) -> None:
        self.options = options
        self.lock_id = f"{catalog_key}.{database}.{table}"
        self._dialect: str | None = None
        self._conn: Any = None

    def _ready(self) -> tuple[str, Any]:
        if self._conn is None:
            self._dialect, self._conn = _connect(self.options)
            cur = self._conn.cursor()
            cur.execute(_EXISTS[self._dialect], (LOCK_TABLE,))
            if cur.fetchone() is None:
                cur.execute(f"CREATE TABLE IF NOT EXISTS {LOCK_TABLE}(lock_id VARCHAR(255) NOT NULL,"
                            "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL,"
                            "expire_time_seconds BIGINT DEFAULT 0 NOT NULL,PRIMARY KEY (lock_id))")
            self._conn.commit()
        assert self._dialect is not None
        return self._dialect, self._conn

    def _try(self) -> bool:
        dialect, conn = self._ready()
        mark = "%s" if dialect == "postgresql" else "?"
        cur = conn.cursor()
        cur.execute(_EXPIRED[dialect], (self.lock_id,))
        conn.commit()
        try:
            cur.execute(f"INSERT INTO {LOCK_TABLE} (lock_id, expire_time_seconds) VALUES ({mark}, {mark})",
                        (self.lock_id, int(self.options.lock_acquire_timeout_s)))
            conn.commit()
            return True
        except Exception:  # the primary key: another committer holds it
            conn.rollback()
            return False

    def acquire(self) -> None:
        start = time.monotonic()
        sleep = 0.05
        while not self._try():
            if time.monotonic() - start > self.options.lock_acquire_timeout_s:
                raise errors.CatalogError(
                    f"could not take the JDBC catalog lock {self.lock_id} within {time.monotonic() - start:.1f} s "
                    "(another committer holds it)", option="lock-acquire-timeout",
                    fix="retry when the table's writers are quiet, or raise lock-acquire-timeout")
            sleep = min(sleep * 2, self.options.lock_check_max_sleep_s)
            time.sleep(sleep)

    def release(self) -> None:
        dialect, conn = self._ready()
        mark = "%s" if dialect == "postgresql" else "?"
        conn.cursor().execute(f"DELETE FROM {LOCK_TABLE} WHERE lock_id = {mark}", (self.lock_id,))
        conn.commit()

    def close(self) -> None:
        """Close the lock's connection (a lock still held is left to expire, as Paimon's)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class JdbcCatalog(Catalog):
    metastore = "jdbc"

    def __init__(self, options: CatalogOptions) -> None:
        super().__init__(options)
        self.catalog_key = options.get("catalog-key") or "jdbc"
        self.warehouse = options.require("warehouse", "where the catalog's tables are")
        self.dialect, self._conn = _connect(options)
        self._mark = "%s" if self.dialect == "postgresql" else "?"
        self._locks: list[JdbcLock] = []

    def _rows(self, sql: str, *args: str) -> list[tuple[Any, ...]]:
        cur = self._conn.cursor()
        try:
            cur.execute(sql.replace("?", self._mark), args)
            rows = [tuple(r) for r in cur.fetchall()]
        except Exception as e:
            self._conn.rollback()
            raise errors.CatalogError(f"metastore=jdbc: {self.options.uri} has no Paimon catalog tables ({e})",
                                      option="uri", fix="point uri at the database of Paimon's JDBC catalog") from e
        self._conn.rollback()  # read-only: end the transaction
        return rows

    def list_databases(self) -> list[str]:
        return sorted({r[0] for r in self._rows(
            "SELECT DISTINCT database_name FROM paimon_tables WHERE catalog_key = ?", self.catalog_key)})

    def list_tables(self, database: str) -> list[str]:
        return sorted(r[0] for r in self._rows(
            "SELECT table_name FROM paimon_tables WHERE catalog_key = ? AND database_name = ?",
            self.catalog_key, database))

    def resolve(self, identifier: str, storage_options: Mapping[str, Any]) -> CatalogTable:
        db, name = split_identifier(identifier)
        if not self._rows("SELECT 1 FROM paimon_tables WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
                          self.catalog_key, db, name):
            raise errors.TableNotFoundError(
                f"table {identifier} is not in the JDBC catalog {self.options.uri} (catalog-key {self.catalog_key})",
                fix="check the database.table name and catalog-key")
        return CatalogTable(identifier, join(self.warehouse.rstrip("/"), f"{db}.db", name), self, dict(storage_options))

    def commit_lock(self, identifier: str) -> TableLock | None:
        if not self.options.lock_enabled:
            return None
        db, name = split_identifier(identifier)
        lock = JdbcLock(self.options, self.catalog_key, db, name)
        self._locks.append(lock)
        return lock

    def close(self) -> None:
        for lock in self._locks:
            lock.close()
        self._locks.clear()
        self._conn.close()
