"""The REST tier stands up: Apache Paimon's own ``RESTCatalogServer`` (1.4.2) on loopback, tables
written through Java Paimon's ``RESTCatalog`` and through pypaimon's REST catalog, listed and read
back through the catalog by both engines; a tag created through the REST API lands in storage; and
the endpoint inventory docs/catalogs-testing.md gives, checked against the server: what it
implements for tags, branches (fast-forward), rollback, consumers, snapshots, commits and data
tokens, and what it answers 404 to."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests
from pypaimon import CatalogFactory
from pypaimon.table.instant import Instant

from tests.support import catalogs as C
from tests.support import paimon as P
from tests.support.javapaimon import JavaPaimon

pytestmark = [pytest.mark.catalogs, pytest.mark.rest]

FIELDS = [["dt", "STRING"], ["id", "BIGINT"], ["amount", "DOUBLE"]]


def _db() -> str:
    return f"rest_{uuid.uuid4().hex[:8]}"


def _py_ids(table: Any, options: dict[str, str] | None = None) -> list[int]:
    return sorted(int(dict(r)["id"]) for r in P.read_rows(table, options))


def _java_ids(java: JavaPaimon, options: dict[str, str], table: str, read_options: dict[str, str] | None = None
              ) -> list[int]:
    args: dict[str, Any] = {"catalog": options, "table": table}
    if read_options:
        args["options"] = read_options
    return sorted(int(r[1]) for r in java.call("read", **args)["rows"])


def _http(server: C.RestCatalogServer, method: str, path: str, body: dict[str, Any] | None = None) -> requests.Response:
    """One request to the server's REST API (``/v1/<prefix>/...``), authenticated as clients are."""
    return requests.request(method, f"{server.url}/v1/paimon/{path}", json=body, timeout=30,
                            headers={"Authorization": f"Bearer {server.token}"})


def test_tables_written_through_each_engine_read_back_through_the_catalog_by_both(
        rest_catalog_server: C.RestCatalogServer, catalog_java: JavaPaimon) -> None:
    options = rest_catalog_server.catalog_options()
    db = _db()
    java_table, py_table = f"{db}.java_orders", f"{db}.py_orders"
    catalog_java.call("create_table", catalog=options, table=java_table, fields=FIELDS, primary_keys=["dt", "id"],
                      partition_keys=["dt"], options={"bucket": "1"})
    catalog_java.call("write", catalog=options, table=java_table, rows=[["2024-01-01", 1, 1.0], ["2024-01-02", 2, 2.0]])
    catalog_java.call("write", catalog=options, table=java_table, rows=[["2024-01-02", 3, 3.0]])
    py_catalog = CatalogFactory.create(options)
    P.write(P.create_table(py_catalog, py_table, P.ORDERS_SCHEMA, partition_keys=["dt"], options={"bucket": "-1"}),
            P.rows("2024-02-01", 10, 2))

    assert db in catalog_java.call("list_databases", catalog=options)
    assert db in py_catalog.list_databases()
    assert sorted(catalog_java.call("list_tables", catalog=options, database=db)) == \
        sorted(py_catalog.list_tables(db)) == ["java_orders", "py_orders"]
    for table, ids in {java_table: [1, 2, 3], py_table: [10, 11]}.items():
        assert _java_ids(catalog_java, options, table) == ids
        assert _py_ids(CatalogFactory.create(options).get_table(table)) == ids
    # Both engines committed through the server (…/commit): it knows each table's latest snapshot.
    for table, snapshot_id in {java_table: 2, py_table: 1}.items():
        latest = py_catalog.load_snapshot(table)
        assert latest is not None and latest.snapshot.id == snapshot_id
    # The table files are where the server keeps them.
    data = Path(rest_catalog_server.data_path)
    assert (data / f"{db}.db" / "java_orders" / "snapshot" / "snapshot-2").is_file()
    assert (data / f"{db}.db" / "py_orders" / "snapshot" / "snapshot-1").is_file()


def test_a_tag_created_through_the_rest_api_is_in_storage_and_read_by_both(
        rest_catalog_server: C.RestCatalogServer, catalog_java: JavaPaimon) -> None:
    options = rest_catalog_server.catalog_options()
    table = f"{_db()}.orders"
    py_catalog = CatalogFactory.create(options)
    t = P.create_table(py_catalog, table, P.ORDERS_SCHEMA, partition_keys=["dt"], options={"bucket": "-1"})
    P.write(t, P.rows("2024-01-01", 0, 2))
    P.write(t, P.rows("2024-01-01", 2, 1))
    py_catalog.create_tag(table, "first", snapshot_id=1)
    db, name = table.split(".")
    assert (Path(rest_catalog_server.data_path) / f"{db}.db" / name / "tag" / "tag-first").is_file()
    assert py_catalog.list_tags_paged(table).elements == ["first"]
    assert py_catalog.get_tag(table, "first").snapshot.id == 1
    assert _py_ids(CatalogFactory.create(options).get_table(table), {"scan.tag-name": "first"}) == [0, 1]
    assert _java_ids(catalog_java, options, table, {"scan.tag-name": "first"}) == [0, 1]
    tags = catalog_java.call("read", catalog=options, table=f"{table}$tags")["rows"]
    assert [row[0] for row in tags] == ["first"]
    # Java Paimon 1.4.2's Table.createTag writes the tag file itself, also on a REST table (only
    # branches, rollback and commits go through the server); the server lists it from storage.
    catalog_java.call("create_tag", catalog=options, table=table, tag="second")
    assert (Path(rest_catalog_server.data_path) / f"{db}.db" / name / "tag" / "tag-second").is_file()
    assert py_catalog.list_tags_paged(table).elements == ["first", "second"]


def test_the_endpoint_inventory(rest_catalog_server: C.RestCatalogServer, catalog_java: JavaPaimon) -> None:
    """Each endpoint docs/catalogs-testing.md lists as implemented answers as Paimon's REST API
    says, and each it lists as missing answers 404."""
    server = rest_catalog_server
    options = server.catalog_options()
    db = _db()
    # A table name no other test uses: the server lists partitions of every table of that name,
    # whatever its database (RESTCatalogServer 1.4.2 matches them by table name only).
    table = f"{db}.inventory"
    base = f"databases/{db}/tables/inventory"
    py_catalog = CatalogFactory.create(options)
    t = P.create_table(py_catalog, table, P.ORDERS_SCHEMA, partition_keys=["dt"],
                       options={"bucket": "-1", "metastore.partitioned-table": "true"})
    for n in range(3):
        P.write(t, P.rows(f"2024-01-0{n + 1}", n * 10, 1))

    # databases, tables, config
    assert _http(server, "GET", "databases").json()["databases"]
    assert _http(server, "GET", f"databases/{db}/tables").json()["tables"] == ["inventory"]
    assert _http(server, "GET", f"databases/{db}/table-details").status_code == 200
    defaults = requests.get(f"{server.url}/v1/config", params={"warehouse": server.warehouse}, timeout=30,
                            headers={"Authorization": f"Bearer {server.token}"}).json()["defaults"]
    assert defaults["prefix"] == "paimon" and defaults["data-token.enabled"] == "true"
    # snapshots: the latest one committed through the server, the list, one version
    assert _http(server, "GET", f"{base}/snapshot").json()["snapshot"]["snapshot"]["id"] == 3
    assert [s["id"] for s in _http(server, "GET", f"{base}/snapshots").json()["snapshots"]] == [1, 2, 3]
    assert _http(server, "GET", f"{base}/snapshots/EARLIEST").json()["snapshot"]["id"] == 1
    # data token (dummy credentials: the warehouse is local). The server makes a table's token on
    # the first request and keeps it (expiry = then + 4000 s): this one is older than this request,
    # so the clients fetched it to open the table's files.
    time.sleep(0.01)
    before_ms = int(time.time() * 1000)
    token = _http(server, "GET", f"{base}/token").json()
    assert token["token"]["akId"] and token["expiresAtMillis"] < before_ms + 4_000_000
    # partitions (this table keeps its partitions in the metastore: metastore.partitioned-table)
    assert sorted(p["spec"]["dt"] for p in _http(server, "GET", f"{base}/partitions").json()["partitions"]) == [
        "2024-01-01", "2024-01-02", "2024-01-03"]
    # tags: create, get, list, delete
    py_catalog.create_tag(table, "t1", snapshot_id=1)
    py_catalog.create_tag(table, "t2", snapshot_id=2)
    assert _http(server, "GET", f"{base}/tags/t2").json()["snapshot"]["id"] == 2
    assert _http(server, "DELETE", f"{base}/tags/t2").status_code == 200
    assert py_catalog.list_tags_paged(table).elements == ["t1"]
    # branches: Java's createBranch / fastForward go through the server (CatalogBranchManager).
    # The branch starts at the latest snapshot: RESTCatalogServer 1.4.2 records a new branch's
    # latest snapshot as main's even when it is created from a tag, so a commit to a branch made
    # from a tag would be based on main's latest (docs/catalogs-testing.md).
    catalog_java.call("create_branch", catalog=options, table=table, branch="b1")
    assert py_catalog.list_branches(table) == ["b1"]
    catalog_java.call("write", catalog=options, table=f"{table}$branch_b1", rows=[["2024-01-09", 90, 9.0]])
    assert _java_ids(catalog_java, options, f"{table}$branch_b1") == [0, 10, 20, 90]
    catalog_java.call("fast_forward", catalog=options, table=table, branch="b1")
    assert _py_ids(CatalogFactory.create(options).get_table(table)) == [0, 10, 20, 90]
    assert _java_ids(catalog_java, options, table) == [0, 10, 20, 90]
    py_catalog.create_branch(table, "b2", tag_name="t1")
    assert (Path(server.data_path) / f"{db}.db" / "inventory" / "branch" / "branch-b2" / "snapshot" / "snapshot-1").is_file()
    py_catalog.rename_branch(table, "b2", "b3")
    py_catalog.drop_branch(table, "b3")
    assert py_catalog.list_branches(table) == ["b1"]
    # rollback: to a snapshot the server committed, and to a tag
    py_catalog.rollback_to(table, Instant.snapshot(3))
    assert _py_ids(CatalogFactory.create(options).get_table(table)) == [0, 10, 20]
    py_catalog.rollback_to(table, Instant.tag("t1"))
    assert _py_ids(CatalogFactory.create(options).get_table(table)) == [0]
    assert _java_ids(catalog_java, options, table) == [0]
    # consumers: listed and reset (the consumer file written by Java at the table's path)
    catalog_java.call("reset_consumer", catalog=options, table=table, consumer="reader-1", next_snapshot=1)
    assert _http(server, "GET", f"{base}/consumers").json()["consumers"] == [{"consumerId": "reader-1",
                                                                             "nextSnapshot": 1}]
    assert _http(server, "POST", f"{base}/consumers/reset", {"consumerId": "reader-1"}).status_code == 200
    assert _http(server, "GET", f"{base}/consumers").json()["consumers"] == []
    # not in RESTCatalogServer 1.4.2: creating partitions (404); renaming a tag (the API has no
    # such call: the POST is read as a tag creation without a name and refused)
    assert _http(server, "POST", f"{base}/partitions",
                 {"partitionSpecs": [{"dt": "2024-01-05"}], "ignoreIfExists": True}).status_code == 404
    refused = _http(server, "POST", f"{base}/tags/t1/rename", {"toTagName": "t9"})
    assert refused.status_code == 400, refused.text
    assert py_catalog.list_tags_paged(table).elements == ["t1"]
    # a wrong token is refused
    assert requests.get(f"{server.url}/v1/paimon/databases", timeout=30,
                        headers={"Authorization": "Bearer wrong"}).status_code == 401
