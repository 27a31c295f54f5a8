"""The Hive Metastore tier stands up: Apache Hive's standalone metastore on loopback, tables
written by Java Paimon and by pypaimon at the warehouse path and registered as Paimon's
HiveCatalog registers them, read back at the location the metastore gives, by both; partitions
added, listed and dropped; the metastore lock HiveCatalogLock takes, taken, queued and released.

(Paimon's HiveCatalog itself is not on the Maven mirror, so neither engine opens the metastore
directly: the location comes from the metastore, the reads from each engine's filesystem catalog.)
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support import catalogs as C
from tests.support import paimon as P
from tests.support.javapaimon import JavaPaimon

pytestmark = [pytest.mark.catalogs, pytest.mark.hive]


def _warehouse_of(location: str) -> str:
    """The warehouse of a table at ``<warehouse>/<db>.db/<table>`` (metastore spelling ``file:/...``)."""
    return str(Path(location.removeprefix("file:")).parent.parent)


def test_tables_written_by_java_and_pypaimon_are_registered_as_hive_catalog_does(
        hive_metastore: C.HiveMetastore, catalog_java: JavaPaimon) -> None:
    wh = hive_metastore.warehouse
    db = f"hms_{uuid.uuid4().hex[:8]}"
    java_table, py_table = f"{db}.java_orders", f"{db}.py_orders"
    options = {"bucket": "1", "metastore.partitioned-table": "true", "hive.owner-team": "data"}
    catalog_java.call("create_table", warehouse=wh, table=java_table,
                      fields=[["dt", "STRING"], ["id", "BIGINT"], ["amount", "DOUBLE"]],
                      primary_keys=["dt", "id"], partition_keys=["dt"], options=options)
    catalog_java.write(wh, java_table, [["2024-01-01", 1, 1.5], ["2024-01-02", 2, 2.5]])
    py = P.create_table(P.catalog(wh), py_table, P.ORDERS_SCHEMA, partition_keys=["dt"],
                        options={"bucket": "-1", "metastore.partitioned-table": "true"})
    P.write(py, P.rows("2024-02-01", 0, 2) + P.rows("2024-02-02", 10, 1))

    with C.hms_client(hive_metastore) as hms:
        registered = {t: C.register_paimon_table(hms.client, wh, t) for t in (java_table, py_table)}
        assert sorted(hms.list_tables(db)) == ["java_orders", "py_orders"]
        for ident, hive_table in registered.items():
            name = ident.split(".", 1)[1]
            params = hive_table.parameters
            assert params["table_type"] == C.PAIMON_TABLE_TYPE
            assert params["storage_handler"] == C.PAIMON_STORAGE_HANDLER
            assert params["metastore.partitioned-table"] == "true"  # sync-all-properties
            assert params["partition"] == "dt"
            assert hive_table.sd.serdeInfo.serializationLib == C.PAIMON_SERDE
            assert hive_table.sd.inputFormat == C.PAIMON_INPUT_FORMAT
            assert [k.name for k in hive_table.partitionKeys] == ["dt"]
            assert "dt" not in [c.name for c in hive_table.sd.cols]
            assert hive_table.sd.location.removeprefix("file:") == f"{wh}/{db}.db/{name}"
            # Hive Metastore 4 stores a non-transactional managed table as external + purge.
            assert hive_table.tableType == "EXTERNAL_TABLE"
            assert params.get("TRANSLATED_TO_EXTERNAL") == "TRUE"
        assert registered[java_table].parameters["primary-key"] == "dt,id"
        assert registered[java_table].parameters["hive.owner-team"] == "data"
        assert C.metastore_partitions(hms.client, db, "java_orders") == [{"dt": "2024-01-01"}, {"dt": "2024-01-02"}]
        assert C.metastore_partitions(hms.client, db, "py_orders") == C.paimon_partitions(wh, py_table) == [
            {"dt": "2024-02-01"}, {"dt": "2024-02-02"}]
        part = hms.client.get_partition(db, "java_orders", ["2024-01-01"])
        assert part.sd.location.removeprefix("file:").rstrip("/") == f"{wh}/{db}.db/java_orders/dt=2024-01-01"

        # Read back where the metastore says the tables are, by both engines.
        for ident, hive_table in registered.items():
            at = _warehouse_of(hive_table.sd.location)
            java_rows = catalog_java.read(at, ident)
            py_rows = P.read_rows(P.catalog(at).get_table(ident))
            assert len(java_rows) == len(py_rows) == (2 if ident == java_table else 3)
            assert sorted(r[1] for r in java_rows) == sorted(str(dict(r)["id"]) for r in py_rows)

        # A partition added, then dropped, as HiveCatalog's createPartitions / dropPartitions do.
        C.add_metastore_partitions(hms.client, registered[py_table], ["dt"], [{"dt": "2024-02-03"}])
        assert {"dt": "2024-02-03"} in C.metastore_partitions(hms.client, db, "py_orders")
        assert hms.client.drop_partition(db, "py_orders", ["2024-02-03"], False)
        assert hms.client.drop_partition(db, "py_orders", ["2024-02-01"], False)
        assert C.metastore_partitions(hms.client, db, "py_orders") == [{"dt": "2024-02-02"}]


def test_unpartitioned_in_metastore_without_the_option(hive_metastore: C.HiveMetastore) -> None:
    wh = hive_metastore.warehouse
    ident = f"hms_{uuid.uuid4().hex[:8]}.plain"
    P.write(P.create_table(P.catalog(wh), ident, P.ORDERS_SCHEMA, partition_keys=["dt"], options={"bucket": "-1"}),
            P.rows("2024-03-01", 0, 1))
    with C.hms_client(hive_metastore) as hms:
        hive_table = C.register_paimon_table(hms.client, wh, ident, sync_all_properties=False, external=True)
        assert hive_table.partitionKeys == []
        assert [c.name for c in hive_table.sd.cols] == ["dt", "id", "amount"]
        assert [c.type for c in hive_table.sd.cols] == ["string", "bigint", "double"]
        assert hive_table.tableType == "EXTERNAL_TABLE" and hive_table.parameters["EXTERNAL"] == "TRUE"
        assert "bucket" not in hive_table.parameters  # only hive.-prefixed options without sync-all


def _state(hms: Any, lock_id: int) -> Any:
    ttypes = pytest.importorskip("pymetastore.hive_metastore.ttypes")
    return hms.client.check_lock(ttypes.CheckLockRequest(lockid=lock_id)).state


def test_the_table_lock_is_taken_queued_and_released(hive_metastore: C.HiveMetastore) -> None:
    ttypes = pytest.importorskip("pymetastore.hive_metastore.ttypes")
    db = f"lock_{uuid.uuid4().hex[:8]}"
    with C.hms_client(hive_metastore) as first, C.hms_client(hive_metastore) as second, \
            C.hms_client(hive_metastore) as third:
        holder = C.HiveTableLock(first.client, db, "orders")
        holder.acquire()
        # A second committer's request queues behind it; a third gives up after its timeout and
        # leaves no lock behind (HiveCatalogLock unlocks what it did not acquire).
        queued = C.HiveTableLock(second.client, db, "orders").request()
        assert queued.state == ttypes.LockState.WAITING
        with pytest.raises(TimeoutError, match="Acquire lock failed"):
            C.HiveTableLock(third.client, db, "orders", acquire_timeout_s=0.3, check_max_sleep_s=0.1).acquire()
        held = {lk.lockid: lk.state for lk in third.client.show_locks(ttypes.ShowLocksRequest()).locks
                if lk.dbname == db}
        assert held == {holder.lock_id: ttypes.LockState.ACQUIRED, queued.lockid: ttypes.LockState.WAITING}
        # Another table's lock is independent.
        with C.HiveTableLock(third.client, db, "other", acquire_timeout_s=5):
            pass
        holder.release()
        assert _state(second, queued.lockid) == ttypes.LockState.ACQUIRED
        second.client.unlock(ttypes.UnlockRequest(lockid=queued.lockid))
        assert not [lk for lk in third.client.show_locks(ttypes.ShowLocksRequest()).locks if lk.dbname == db]


def test_a_second_locker_waits_until_the_first_releases(hive_metastore: C.HiveMetastore) -> None:
    db = f"lock_{uuid.uuid4().hex[:8]}"
    events: list[str] = []
    acquired = threading.Event()
    with C.hms_client(hive_metastore) as first:
        holder = C.HiveTableLock(first.client, db, "orders")
        holder.acquire()

        def second_committer() -> None:
            with C.hms_client(hive_metastore) as hms, C.HiveTableLock(hms.client, db, "orders", acquire_timeout_s=60,
                                                                       check_max_sleep_s=0.2):
                events.append("second acquired")
                acquired.set()

        worker = threading.Thread(target=second_committer)
        worker.start()
        assert not acquired.wait(1.0), "the second locker got the lock while the first held it"
        events.append("first released")
        holder.release()
        worker.join(timeout=60)
        assert events == ["first released", "second acquired"]


def test_pypaimon_schema_types_map_to_hive_types() -> None:
    assert [C._hive_type(t) for t in ("BIGINT NOT NULL", "STRING", "VARCHAR(10)", "VARCHAR(70000)", "CHAR(300)",
                                      "DECIMAL(10, 2)", "TIMESTAMP(6)", "TIMESTAMP(3) WITH LOCAL TIME ZONE",
                                      "DATE", "BYTES")] == [
        "bigint", "string", "varchar(10)", "string", "string", "decimal(10,2)", "timestamp",
        "timestamp with local time zone", "date", "binary"]
    assert C._hive_type({"type": "MAP", "key": "STRING NOT NULL", "value": {"type": "ARRAY", "element": "INT"}}) == \
        "map<string,array<int>>"
    assert C._hive_type({"type": "ROW", "fields": [{"name": "a", "type": "INT"}]}) == "struct<a:int>"
