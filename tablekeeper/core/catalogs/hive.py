"""``metastore=hive``: Paimon's HiveCatalog as tablekeeper meets it, over the metastore's thrift
API (pymetastore's generated client).

- Locations come from the metastore (``sd.location``); a table whose ``table_type`` parameter is
  not ``PAIMON`` is not a Paimon table and is skipped (listing) or refused (opening).
- ``lock.enabled``: ``HiveCatalogLock``'s lock: one EXCLUSIVE table-level lock request,
  ``check_lock`` polled with a sleep doubling up to ``lock-check-max-sleep``, given up (and
  unlocked) after ``lock-acquire-timeout``.
- ``metastore.partitioned-table``: ``HiveCatalog.dropPartitions``' order: the metastore's
  partitions are dropped first (a missing one is fine), then the storage commit drops them; a
  crash in between leaves partitions in storage that the next run expires again, dropping nothing
  more in the metastore: a rerun converges.
"""

from __future__ import annotations

import getpass
import socket
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlparse

from tablekeeper.core import errors
from tablekeeper.core.catalogs.catalog import Catalog, CatalogTable, SkippedTable, split_identifier
from tablekeeper.core.catalogs.commit_lock import TableLock
from tablekeeper.core.catalogs.options import CatalogOptions

__all__ = ["HiveCatalog", "HiveLock", "PAIMON_TABLE_TYPE"]

PAIMON_TABLE_TYPE = "PAIMON"
_CONNECT_TIMEOUT_MS = 10_000


def _thrift() -> tuple[Any, Any]:
    try:
        from pymetastore.hive_metastore import ThriftHiveMetastore, ttypes
    except ImportError as e:
        raise errors.CatalogError("metastore=hive needs the Hive Metastore client (pymetastore)", option="metastore",
                                  fix="pip install 'tablekeeper[catalogs]'") from e
    return ThriftHiveMetastore, ttypes


class _Connection:
    """One thrift connection to the first metastore of ``uri`` that answers."""

    def __init__(self, uri: str) -> None:
        from thrift.protocol.TBinaryProtocol import TBinaryProtocol
        from thrift.transport import TSocket, TTransport

        service, _ = _thrift()
        last: Exception | None = None
        for one in [u.strip() for u in uri.split(",") if u.strip()]:
            parsed = urlparse(one)
            if parsed.scheme != "thrift" or not parsed.hostname:
                raise errors.CatalogError(f"metastore=hive: uri {one!r} is not thrift://host:port", option="uri",
                                          fix="set uri=thrift://metastore-host:9083")
            sock = TSocket.TSocket(parsed.hostname, parsed.port or 9083)
            sock.setTimeout(_CONNECT_TIMEOUT_MS)
            transport = TTransport.TBufferedTransport(sock)
            try:
                transport.open()
            except Exception as e:  # TTransportException: refused, timed out, unknown host
                last = e
                continue
            self.transport = transport
            self.client = service.Client(TBinaryProtocol(transport))
            return
        raise errors.CatalogError(f"metastore=hive: no Hive Metastore answers at {uri} ({last})", option="uri",
                                  fix="check uri (thrift://host:port) and that the metastore is running")

    def close(self) -> None:
        self.transport.close()


def _plain_location(location: str) -> str:
    """The metastore's ``file:/x`` / ``file:///x`` as the local path ``/x``; other URIs unchanged."""
    if location.startswith("file:"):
        rest = location[len("file:"):]
        return "/" + rest.lstrip("/") if rest.startswith("/") else rest
    return location


class HiveLock:
    """``HiveCatalogLock`` on one table (module docstring), on its own connection."""

    def __init__(self, uri: str, database: str, table: str, options: CatalogOptions) -> None:
        self.uri, self.database, self.table, self.options = uri, database, table, options
        self._conn: _Connection | None = None
        self.lock_id: int | None = None

    def acquire(self) -> None:
        _, ttypes = _thrift()
        if self._conn is None:
            self._conn = _Connection(self.uri)
        client = self._conn.client
        component = ttypes.LockComponent(type=ttypes.LockType.EXCLUSIVE, level=ttypes.LockLevel.TABLE,
                                         dbname=self.database, tablename=self.table)
        start = time.monotonic()
        response = client.lock(ttypes.LockRequest(component=[component], user=getpass.getuser(),
                                                  hostname=socket.gethostname()))
        lock_id = int(response.lockid)
        sleep = 0.05
        try:
            while response.state == ttypes.LockState.WAITING:
                if time.monotonic() - start >= self.options.lock_acquire_timeout_s:
                    break
                sleep = min(sleep * 2, self.options.lock_check_max_sleep_s)
                time.sleep(sleep)
                response = client.check_lock(ttypes.CheckLockRequest(lockid=lock_id))
        finally:
            if response.state != ttypes.LockState.ACQUIRED and lock_id > 0:
                client.unlock(ttypes.UnlockRequest(lockid=lock_id))
        if response.state != ttypes.LockState.ACQUIRED:
            raise errors.CatalogError(
                f"could not take the Hive Metastore lock on {self.database}.{self.table} within "
                f"{time.monotonic() - start:.1f} s (another committer holds it)", option="lock-acquire-timeout",
                fix="retry when the table's writers are quiet, or raise lock-acquire-timeout")
        self.lock_id = lock_id

    def release(self) -> None:
        _, ttypes = _thrift()
        if self.lock_id is not None and self._conn is not None:
            self._conn.client.unlock(ttypes.UnlockRequest(lockid=self.lock_id))
            self.lock_id = None

    def close(self) -> None:
        """Release (if held) and close the lock's connection."""
        try:
            self.release()
        finally:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class HiveCatalog(Catalog):
    metastore = "hive"

    def __init__(self, options: CatalogOptions) -> None:
        super().__init__(options)
        self.uri = options.require("uri", "the metastore's thrift://host:port")
        self._conn = _Connection(self.uri)
        self._locks: list[HiveLock] = []

    @property
    def client(self) -> Any:
        return self._conn.client

    def _hive_table(self, db: str, name: str) -> Any:
        _, ttypes = _thrift()
        try:
            return self.client.get_table_req(ttypes.GetTableRequest(dbName=db, tblName=name)).table
        except ttypes.NoSuchObjectException:
            raise errors.TableNotFoundError(f"table {db}.{name} is not in the Hive Metastore at {self.uri}",
                                            fix="check the database.table name (tablekeeper list-tables)") from None

    @staticmethod
    def _table_type(hive_table: Any) -> str:
        return str((hive_table.parameters or {}).get("table_type", "")).upper()

    def list_databases(self) -> list[str]:
        return sorted(self.client.get_all_databases())

    def _tables(self, database: str) -> list[Any]:
        _, ttypes = _thrift()
        names = self.client.get_all_tables(database)
        if not names:
            return []
        request = ttypes.GetTablesRequest(dbName=database, tblNames=list(names))
        return list(self.client.get_table_objects_by_name_req(request).tables)

    def list_tables(self, database: str) -> list[str]:
        return sorted(t.tableName for t in self._tables(database) if self._table_type(t) == PAIMON_TABLE_TYPE)

    def skipped_tables(self, database: str) -> list[SkippedTable]:
        return [SkippedTable(f"{database}.{t.tableName}", f"not a Paimon table (table_type={self._table_type(t) or 'none'})")
                for t in self._tables(database) if self._table_type(t) != PAIMON_TABLE_TYPE]

    def resolve(self, identifier: str, storage_options: Mapping[str, Any]) -> CatalogTable:
        db, name = split_identifier(identifier)
        hive_table = self._hive_table(db, name)
        kind = self._table_type(hive_table)
        if kind != PAIMON_TABLE_TYPE:
            raise errors.CatalogError(
                f"{identifier} in the Hive Metastore is not a Paimon table (table_type={kind or 'none'})",
                option="metastore", fix="name a table Paimon's HiveCatalog created (table_type=PAIMON)")
        keys = [k.name for k in hive_table.partitionKeys or []]
        location = getattr(hive_table.sd, "location", None) if hive_table.sd is not None else None
        if not isinstance(location, str) or not location or "\x00" in location:
            raise errors.CatalogError(f"the Hive Metastore gave no usable location for {identifier} ({location!r})",
                                      option="metastore", fix="check the table in the metastore: Paimon's "
                                                              "HiveCatalog stores the table's path as its location")
        return CatalogTable(identifier, _plain_location(location), self, dict(storage_options),
                            {"partition_keys": keys, "parameters": dict(hive_table.parameters or {})})

    def commit_lock(self, identifier: str) -> TableLock | None:
        if not self.options.lock_enabled:
            return None
        db, name = split_identifier(identifier)
        lock = HiveLock(self.uri, db, name, self.options)
        self._locks.append(lock)
        return lock

    def drop_partitions(self, table: CatalogTable, partitions: Sequence[Mapping[str, str]]) -> int:
        _, ttypes = _thrift()
        keys: list[str] = list(table.details.get("partition_keys") or [])
        if not keys:  # metastore.partitioned-table is off: the metastore keeps no partitions
            return 0
        db, name = split_identifier(table.identifier)
        dropped = 0
        for spec in partitions:
            try:
                if self.client.drop_partition(db, name, [spec[k] for k in keys], False):
                    dropped += 1
            except ttypes.NoSuchObjectException:
                pass  # dropped by an earlier run that crashed before its storage commit
        return dropped

    def close(self) -> None:
        for lock in self._locks:
            lock.close()
        self._locks.clear()
        self._conn.close()
