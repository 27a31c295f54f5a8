"""tablekeeper on tables of Paimon's REST catalog (``RESTCatalogServer`` 1.4.2): tables and
locations from the server, the data token fetched to open the table's files, operations the
server owns refused with one line (never written to storage behind it) or carried out through its
API (tags, branches, rollback, consumers), and snapshot expiration on storage as Java Paimon's
procedure does on a REST table. Tables written through the server by pypaimon and Java Paimon and
re-read through it by both."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from pypaimon import CatalogFactory

from tablekeeper.cli.main import main
from tablekeeper.core import catalogs, errors
from tablekeeper.core.catalogs.rest import RestCatalog
from tests.support import catalogs as C
from tests.support import paimon as P
from tests.support.javapaimon import JavaPaimon

pytestmark = [pytest.mark.catalogs, pytest.mark.rest]


def _cli(options: dict[str, str]) -> list[str]:
    out: list[str] = []
    for key, value in options.items():
        out += ["--catalog-option", f"{key}={value}"]
    return out


def _table(server: C.RestCatalogServer, commits: int = 3) -> str:
    ident = f"rest_{uuid.uuid4().hex[:8]}.orders"
    t = P.create_table(CatalogFactory.create(server.catalog_options()), ident, P.ORDERS_SCHEMA, partition_keys=["dt"],
                       options={"bucket": "-1"})
    for n in range(commits):
        P.write(t, P.rows("2024-01-01", n * 10, 1))
    return ident


def _py_ids(server: C.RestCatalogServer, ident: str, read: dict[str, str] | None = None) -> list[int]:
    return sorted(int(dict(r)["id"]) for r in P.read_rows(CatalogFactory.create(server.catalog_options()).get_table(ident),
                                                           read))


def _java_ids(java: JavaPaimon, server: C.RestCatalogServer, ident: str, read: dict[str, str] | None = None) -> list[int]:
    args: dict[str, Any] = {"catalog": server.catalog_options(), "table": ident}
    if read:
        args["options"] = read
    return sorted(int(r[1]) for r in java.call("read", **args)["rows"])


def test_tables_and_locations_come_from_the_server_with_its_data_token(rest_catalog_server: C.RestCatalogServer) -> None:
    ident = _table(rest_catalog_server)
    db, name = ident.split(".")
    catalog = catalogs.open_catalog(rest_catalog_server.catalog_options())
    try:
        assert db in catalog.list_databases()
        assert catalog.list_tables(db) == [name]
        assert isinstance(catalog, RestCatalog) and catalog.data_token_enabled
        assert catalog.data_token(ident) == {}  # the test server's token is dummy credentials (akId, ...)
        fetched = catalog.data_token_expires_ms(ident)
        assert fetched is not None and fetched > time.time() * 1000 + 60_000
        # A token about to expire is fetched again (the server hands out the one it keeps, or a new one).
        catalog._tokens[ident] = ({}, int(time.time() * 1000) + 1_000)
        catalog.data_token(ident)
        assert catalog.data_token_expires_ms(ident) == fetched
        table, resolved = catalogs.open_catalog_table(catalog, ident)
        assert Path(resolved.location) == Path(rest_catalog_server.data_path) / f"{db}.db" / name
        assert table.latest_snapshot_id() == 3
        assert catalog.owner(catalogs.Operation.TAG_CREATE) is catalogs.Owner.CATALOG
        assert catalog.owner(catalogs.Operation.EXPIRE) is catalogs.Owner.STORAGE
        with pytest.raises(errors.TableNotFoundError):
            catalog.resolve(f"{db}.missing", {})
    finally:
        catalog.close()


def test_server_owned_operations_without_an_api_call_are_refused_with_one_line_and_change_nothing(
        rest_catalog_server: C.RestCatalogServer, capsys: pytest.CaptureFixture[str]) -> None:
    ident = _table(rest_catalog_server)
    db, name = ident.split(".")
    root = Path(rest_catalog_server.data_path) / f"{db}.db" / name
    before = P.dir_listing(root)
    options = _cli(rest_catalog_server.catalog_options())
    for args in (["tag", "rename", ident, "a", "b"], ["branch", "replace-main", ident, "b1"],
                 ["expire-partitions", ident, "--expiration-time", "1 d"], ["tag", "create", ident, "t", "--timestamp", "1"],
                 ["branch", "create", ident, "b2", "--from-snapshot", "1"]):
        capsys.readouterr()
        assert main([*args, *options]) == 2, args
        err = capsys.readouterr().err
        assert "rest catalog" in err.lower() and len(err.strip().splitlines()) == 2, (args, err)
    assert P.dir_listing(root) == before


def test_tag_and_branch_commands_go_through_the_server(rest_catalog_server: C.RestCatalogServer,
                                                        catalog_java: JavaPaimon,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    ident = _table(rest_catalog_server)
    options = _cli(rest_catalog_server.catalog_options())
    py = CatalogFactory.create(rest_catalog_server.catalog_options())
    assert main(["tag", "create", *options, ident, "t1", "--snapshot", "2", "--dry-run"]) == 0
    assert py.list_tags_paged(ident).elements == []
    assert main(["tag", "create", *options, ident, "t1", "--snapshot", "2"]) == 0
    assert py.list_tags_paged(ident).elements == ["t1"]
    assert _py_ids(rest_catalog_server, ident, {"scan.tag-name": "t1"}) == [0, 10]
    assert _java_ids(catalog_java, rest_catalog_server, ident, {"scan.tag-name": "t1"}) == [0, 10]
    assert main(["branch", "create", *options, ident, "b1", "--empty"]) == 0
    assert py.list_branches(ident) == ["b1"]
    capsys.readouterr()
    assert main(["branch", "drop", *options, ident, "b1", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["through"] == "rest"
    assert py.list_branches(ident) == []
    assert main(["tag", "delete", *options, ident, "t1"]) == 0
    assert py.list_tags_paged(ident).elements == []
    assert _py_ids(rest_catalog_server, ident) == _java_ids(catalog_java, rest_catalog_server, ident) == [0, 10, 20]


def test_tags_branches_rollback_and_consumers_go_through_the_server(
        rest_catalog_server: C.RestCatalogServer, catalog_java: JavaPaimon) -> None:
    ident = _table(rest_catalog_server)
    catalog = catalogs.open_catalog(rest_catalog_server.catalog_options())
    assert isinstance(catalog, catalogs.Catalog)
    rest: Any = catalog
    try:
        rest.create_tag(ident, "t1", 2)
        assert _py_ids(rest_catalog_server, ident, {"scan.tag-name": "t1"}) == [0, 10]
        assert _java_ids(catalog_java, rest_catalog_server, ident, {"scan.tag-name": "t1"}) == [0, 10]
        rest.create_branch(ident, "b1")
        assert CatalogFactory.create(rest_catalog_server.catalog_options()).list_branches(ident) == ["b1"]
        rest.drop_branch(ident, "b1")
        assert CatalogFactory.create(rest_catalog_server.catalog_options()).list_branches(ident) == []
        rest.reset_consumer(ident, "reader-1", 2)
        rest.reset_consumer(ident, "reader-1", None)
        rest.rollback(ident, snapshot_id=2)
        assert _py_ids(rest_catalog_server, ident) == [0, 10]
        assert _java_ids(catalog_java, rest_catalog_server, ident) == [0, 10]
        rest.delete_tag(ident, "t1")
        assert CatalogFactory.create(rest_catalog_server.catalog_options()).list_tags_paged(ident).elements == []
        with pytest.raises(errors.InvalidInputError):
            rest.rollback(ident)
    finally:
        catalog.close()


def test_snapshot_expiration_runs_on_storage_and_both_engines_read_the_rest(
        rest_catalog_server: C.RestCatalogServer, catalog_java: JavaPaimon, capsys: pytest.CaptureFixture[str]) -> None:
    ident = _table(rest_catalog_server, commits=4)
    ids = [0, 10, 20, 30]
    assert _py_ids(rest_catalog_server, ident) == _java_ids(catalog_java, rest_catalog_server, ident) == ids
    capsys.readouterr()
    assert main(["expire", *_cli(rest_catalog_server.catalog_options()), ident, "--retain-min", "2", "--retain-max",
                 "2", "--time-retained", "1 ms", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["result"]["deleted"].get("snapshot", 0) == 2
    db, name = ident.split(".")
    assert sorted(p.name for p in (Path(rest_catalog_server.data_path) / f"{db}.db" / name / "snapshot").glob("snapshot-*")) \
        == ["snapshot-3", "snapshot-4"]
    assert _py_ids(rest_catalog_server, ident) == _java_ids(catalog_java, rest_catalog_server, ident) == ids


def test_a_wrong_token_and_an_unreachable_server_are_one_line_naming_the_option(
        rest_catalog_server: C.RestCatalogServer, capsys: pytest.CaptureFixture[str]) -> None:
    ident = _table(rest_catalog_server, commits=1)
    wrong = {**rest_catalog_server.catalog_options(), "token": "not-the-token"}
    for options, option in ((wrong, "token"), ({**wrong, "uri": "http://127.0.0.1:9"}, "uri")):
        capsys.readouterr()
        assert main(["expire", *_cli(options), ident, "-o", "json"]) == 2
        doc = json.loads(capsys.readouterr().out)
        assert doc["error"]["kind"] == "CatalogError" and option in doc["error"]["fix"]
    with pytest.raises(errors.CatalogError) as raised:
        catalogs.open_catalog({**rest_catalog_server.catalog_options(), "token.provider": "dlf"})
    assert raised.value.option == "token.provider"


def test_rollback_discard_later_goes_through_the_server_and_restore_as_latest_is_refused(
        rest_catalog_server: C.RestCatalogServer, catalog_java: JavaPaimon, capsys: pytest.CaptureFixture[str]) -> None:
    ident = _table(rest_catalog_server, commits=4)
    options = _cli(rest_catalog_server.catalog_options())
    db, name = ident.split(".")
    snapshot_dir = Path(rest_catalog_server.data_path) / f"{db}.db" / name / "snapshot"
    listing = sorted(p.name for p in snapshot_dir.iterdir())
    capsys.readouterr()
    for refused in ([], ["--discard-later", "--keep-as-tag", "head"], ["--discard-later", "--branch", "b1"]):
        assert main(["rollback", *options, ident, "--to-snapshot", "2", *refused]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[0].startswith("error: ") and "REST" in err[0] and err[1].strip().startswith("fix: "), err
    assert main(["rollback", *options, ident, "--to-snapshot", "2", "--discard-later", "--dry-run"]) == 0
    assert "would go through the REST catalog" in capsys.readouterr().out
    assert sorted(p.name for p in snapshot_dir.iterdir()) == listing  # nothing changed so far
    assert _py_ids(rest_catalog_server, ident) == [0, 10, 20, 30]

    assert main(["rollback", *options, ident, "--to-snapshot", "2", "--discard-later", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["through"] == "rest" and doc["target"] == "snapshot 2"
    assert _py_ids(rest_catalog_server, ident) == _java_ids(catalog_java, rest_catalog_server, ident) == [0, 10]
    assert not (snapshot_dir / "snapshot-3").exists() and not (snapshot_dir / "snapshot-4").exists()
    P.write(CatalogFactory.create(rest_catalog_server.catalog_options()).get_table(ident), P.rows("2024-01-01", 40, 1))
    assert _py_ids(rest_catalog_server, ident) == _java_ids(catalog_java, rest_catalog_server, ident) == [0, 10, 40]
