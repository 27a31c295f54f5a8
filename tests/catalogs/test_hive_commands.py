"""tablekeeper's commands on tables of a Hive Metastore catalog (``--catalog-option metastore=hive``):
the location from the metastore, tables that are not Paimon's skipped or refused, the metastore's
partitions dropped with ``expire-partitions`` in Paimon's order (a crash between the metastore
drop and the storage commit, then a rerun, converges), and the metastore lock (``lock.enabled``)
held around tablekeeper's commits: a commit waits for a holder and gives up after
``lock-acquire-timeout``, changing nothing. Tables written by pypaimon, re-read by pypaimon."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.cli.main import main
from tablekeeper.core import catalogs, errors
from tablekeeper.core.safety.concurrency import seams
from tests.support import catalogs as C
from tests.support import paimon as P
from tests.support.javapaimon import JavaPaimon

pytestmark = [pytest.mark.catalogs, pytest.mark.hive]

DAYS = ["2024-01-01", "2024-01-02", "2024-01-09"]


def _hive(server: C.HiveMetastore, *extra: str) -> list[str]:
    out = ["--catalog-option", "metastore=hive", "--catalog-option", f"uri={server.uri}"]
    for pair in extra:
        out += ["--catalog-option", pair]
    return out


def _partitioned_table(server: C.HiveMetastore) -> tuple[str, Any]:
    ident = f"hms_{uuid.uuid4().hex[:8]}.orders"
    t = P.create_table(P.catalog(server.warehouse), ident, P.ORDERS_SCHEMA, partition_keys=["dt"],
                       options={"bucket": "-1", "metastore.partitioned-table": "true"})
    for n, day in enumerate(DAYS):
        P.write(t, P.rows(day, n * 10, 2))
    with C.hms_client(server) as hms:
        C.register_paimon_table(hms.client, server.warehouse, ident)
    return ident, t


def _expire(server: C.HiveMetastore, ident: str) -> int:
    return main(["expire-partitions", *_hive(server), ident, "--expiration-time", "3 d", "--timestamp-formatter",
                 "yyyy-MM-dd", "--zone-known", "--now", "2024-01-10T00:00:00Z", "-o", "json"])


def _days_in_storage(server: C.HiveMetastore, ident: str) -> list[str]:
    return sorted({str(dict(r)["dt"]) for r in P.read_rows(P.catalog(server.warehouse).get_table(ident))})


def test_expire_partitions_drops_them_in_the_metastore_too(hive_metastore: C.HiveMetastore, catalog_java: JavaPaimon,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    ident, _ = _partitioned_table(hive_metastore)
    db, name = ident.split(".")
    before = P.read_rows(P.catalog(hive_metastore.warehouse).get_table(ident))
    assert sorted(r[1] for r in catalog_java.read(hive_metastore.warehouse, ident)) == ["0", "1", "10", "11", "20", "21"]
    assert _expire(hive_metastore, ident) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["dropped"] == 2
    assert _days_in_storage(hive_metastore, ident) == ["2024-01-09"]
    after = P.read_rows(P.catalog(hive_metastore.warehouse).get_table(ident))
    assert sorted(after) == sorted(r for r in before if dict(r)["dt"] == "2024-01-09")
    assert sorted(r[1] for r in catalog_java.read(hive_metastore.warehouse, ident)) == ["20", "21"]
    with C.hms_client(hive_metastore) as hms:
        assert C.metastore_partitions(hms.client, db, name) == C.paimon_partitions(hive_metastore.warehouse, ident) \
            == [{"dt": "2024-01-09"}]


class _Crash(BaseException):
    """The process dying at a seam (not an error tablekeeper handles)."""


def test_a_crash_between_the_metastore_drop_and_the_commit_converges_on_rerun(
        hive_metastore: C.HiveMetastore, capsys: pytest.CaptureFixture[str]) -> None:
    ident, _ = _partitioned_table(hive_metastore)
    db, name = ident.split(".")

    def crash(point: str) -> None:
        if point == catalogs.tables.CATALOG_DROPPED:
            raise _Crash("after the metastore drop")

    with seams.installed(crash), pytest.raises(_Crash):
        _expire(hive_metastore, ident)
    # Paimon's order: the metastore lost the partitions first; storage still has them.
    with C.hms_client(hive_metastore) as hms:
        assert C.metastore_partitions(hms.client, db, name) == [{"dt": "2024-01-09"}]
    assert _days_in_storage(hive_metastore, ident) == DAYS
    capsys.readouterr()
    assert _expire(hive_metastore, ident) == 0
    assert json.loads(capsys.readouterr().out)["dropped"] == 2
    assert _days_in_storage(hive_metastore, ident) == ["2024-01-09"]
    with C.hms_client(hive_metastore) as hms:
        assert C.metastore_partitions(hms.client, db, name) == C.paimon_partitions(hive_metastore.warehouse, ident)


def test_the_location_comes_from_the_metastore_and_other_tables_are_skipped(
        hive_metastore: C.HiveMetastore, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ttypes = pytest.importorskip("pymetastore.hive_metastore.ttypes")
    db = f"hms_{uuid.uuid4().hex[:8]}"
    # A Paimon table written at a path outside the warehouse layout, registered there.
    elsewhere = str(tmp_path / "elsewhere")
    t = P.create_table(P.catalog(elsewhere), f"{db}.orders", P.ORDERS_SCHEMA, options={"bucket": "-1"})
    P.write(t, P.rows("2024-01-01", 0, 3))
    with C.hms_client(hive_metastore) as hms:
        C.register_paimon_table(hms.client, elsewhere, f"{db}.orders", external=True)
        plain = ttypes.Table(tableName="csv_events", dbName=db, tableType="EXTERNAL_TABLE", parameters={"EXTERNAL": "TRUE"},
                             sd=ttypes.StorageDescriptor(cols=[ttypes.FieldSchema("x", "string", None)],
                                                         location=str(tmp_path / "csv"),
                                                         serdeInfo=ttypes.SerDeInfo(parameters={})), partitionKeys=[])
        hms.client.create_table(plain)
    catalog = catalogs.open_catalog({"metastore": "hive", "uri": hive_metastore.uri})
    try:
        assert catalog.list_tables(db) == ["orders"]
        assert [(s.identifier, s.reason) for s in catalog.skipped_tables(db)] == [
            (f"{db}.csv_events", "not a Paimon table (table_type=none)")]
        table, resolved = catalogs.open_catalog_table(catalog, f"{db}.orders")
        assert resolved.location == f"{elsewhere}/{db}.db/orders"
        assert table.latest_snapshot_id() == 1
        with pytest.raises(errors.CatalogError, match="not a Paimon table"):
            catalog.resolve(f"{db}.csv_events", {})
    finally:
        catalog.close()
    capsys.readouterr()
    assert main(["catalog", "tables", db, *_hive(hive_metastore), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "metastore": "hive", "database": db, "tables": [f"{db}.orders"],
        "skipped": [{"table": f"{db}.csv_events", "reason": "not a Paimon table (table_type=none)"}]}
    assert main(["catalog", "databases", *_hive(hive_metastore)]) == 0
    assert db in capsys.readouterr().out.split()
    # The CLI tags the table where the metastore says it is; a non-Paimon table is one line, exit 2.
    assert main(["tag", "create", *_hive(hive_metastore), f"{db}.orders", "first"]) == 0
    assert P.read_rows(P.catalog(elsewhere).get_table(f"{db}.orders"), {"scan.tag-name": "first"})
    capsys.readouterr()
    assert main(["tag", "create", *_hive(hive_metastore), f"{db}.csv_events", "first"]) == 2
    err = capsys.readouterr().err
    assert "not a Paimon table" in err and len(err.strip().splitlines()) <= 2


def test_commits_wait_for_the_metastore_lock_and_give_up_after_its_timeout(
        hive_metastore: C.HiveMetastore, capsys: pytest.CaptureFixture[str]) -> None:
    ident, _ = _partitioned_table(hive_metastore)
    db, name = ident.split(".")
    locked = _hive(hive_metastore, "lock.enabled=true", "lock-acquire-timeout=1 s", "lock-check-max-sleep=100 ms")
    root = f"{hive_metastore.warehouse}/{db}.db/{name}"
    with C.hms_client(hive_metastore) as hms:
        holder = C.HiveTableLock(hms.client, db, name)
        holder.acquire()
        try:
            assert main(["tag", "create", *locked, ident, "held", "-o", "json"]) == 2
            doc = json.loads(capsys.readouterr().out)
            assert doc["error"]["kind"] == "CatalogError" and "lock-acquire-timeout" in json.dumps(doc)
            assert not (Path(root) / "tag" / "tag-held").exists()
        finally:
            holder.release()
        assert main(["tag", "create", *locked, ident, "free"]) == 0
        # The lock was given back: another committer takes it at once.
        with C.HiveTableLock(hms.client, db, name, acquire_timeout_s=2):
            pass
    assert P.read_rows(P.catalog(hive_metastore.warehouse).get_table(ident), {"scan.tag-name": "free"})


def test_the_commit_guard_holds_the_lock_around_commit_files_only(hive_metastore: C.HiveMetastore) -> None:
    ident, _ = _partitioned_table(hive_metastore)
    catalog = catalogs.open_catalog({"metastore": "hive", "uri": hive_metastore.uri, "lock.enabled": "true"})
    try:
        table, _ = catalogs.open_catalog_table(catalog, ident)
        guard = table.file_io.commit_guard
        assert isinstance(guard, catalogs.TableCommitGuard)
        assert guard.covers(table.snapshot_path(1)) and guard.covers(table.tag_path("x"))
        assert not guard.covers(f"{table.root}/dt=2024-01-01/data.parquet")
        assert not guard.covers(f"{table.root}/manifest/manifest-1")
        with guard.held(), guard.held():  # reentrant: one acquisition
            pass
        assert guard.acquisitions == 1
    finally:
        catalog.close()


def test_a_partition_drop_holds_the_metastore_lock_for_its_whole_commit(
        hive_metastore: C.HiveMetastore, capsys: pytest.CaptureFixture[str]) -> None:
    """From the metastore drop to the storage commit no other committer gets the table's lock."""
    ident, _ = _partitioned_table(hive_metastore)
    db, name = ident.split(".")
    seen: list[str] = []

    def another_committer(point: str) -> None:
        if point != catalogs.tables.CATALOG_DROPPED:
            return
        with C.hms_client(hive_metastore) as hms:
            try:
                C.HiveTableLock(hms.client, db, name, acquire_timeout_s=0.5, check_max_sleep_s=0.1).acquire()
                seen.append("acquired")
            except TimeoutError:
                seen.append("waited")

    with seams.installed(another_committer):
        assert main(["expire-partitions", *_hive(hive_metastore, "lock.enabled=true"), ident, "--expiration-time",
                     "3 d", "--timestamp-formatter", "yyyy-MM-dd", "--zone-known", "--now", "2024-01-10T00:00:00Z",
                     "-o", "json"]) == 0
    assert seen == ["waited"]
    assert json.loads(capsys.readouterr().out)["dropped"] == 2
    with C.hms_client(hive_metastore) as hms:  # released at the command's end
        with C.HiveTableLock(hms.client, db, name, acquire_timeout_s=2):
            pass
        assert C.metastore_partitions(hms.client, db, name) == [{"dt": "2024-01-09"}]
