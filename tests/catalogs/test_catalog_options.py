"""Catalog options as Paimon spells them, checked before anything is read: an unknown or
unimplemented metastore or option, a lock where the metastore has none, a missing ``uri``, a
metastore that does not answer: one line naming the option, exit 2, nothing changed, never a
fallback to the filesystem. (No catalog server needed.)"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tablekeeper.cli.main import main
from tablekeeper.core import catalogs, errors
from tests.support import paimon as P

pytestmark = [pytest.mark.catalogs]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(("pairs", "option"), [
    (["metastore=glue"], "metastore"),
    (["metastore=dlf"], "metastore"),
    (["metastore=hive"], "uri"),
    (["metastore=hive", "uri=http://h:1"], "uri"),
    (["metastore=hive", "uri=thrift://127.0.0.1:{closed}"], "uri"),
    (["metastore=hive", "hive-conf-dir=/etc/hive"], "hive-conf-dir"),
    (["metastore=jdbc", "uri=jdbc:mysql://h/db"], "uri"),
    (["metastore=jdbc", "uri=jdbc:sqlite:{missing}"], "uri"),
    (["metastore=rest", "uri=http://127.0.0.1:{closed}", "token=x"], "uri"),
    (["metastore=rest", "uri=http://127.0.0.1:1"], "token"),
    (["lock.enabled=true"], "lock.enabled"),
    (["metastore=hive", "uri=thrift://h:1", "lock.enabled=maybe"], "lock.enabled"),
    (["metastore=jdbc", "uri=jdbc:sqlite:x", "lock-acquire-timeout=soon"], "lock-acquire-timeout"),
])
def test_bad_catalog_options_are_one_line_naming_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            pairs: list[str], option: str) -> None:
    warehouse = str(tmp_path / "wh")
    t = P.create_table(P.catalog(warehouse), "db.orders", P.ORDERS_SCHEMA, options={"bucket": "-1"})
    P.write(t, P.rows("2024-01-01", 0, 1))
    before = P.dir_listing(Path(warehouse))
    args = ["tag", "create", "-w", warehouse, "db.orders", "t1", "-o", "json"]
    for pair in pairs:
        args += ["--catalog-option", pair.format(closed=_closed_port(), missing=tmp_path / "no.sqlite")]
    assert main(args) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"]["kind"] == "CatalogError", doc
    assert doc["error"]["option"] == option
    assert P.dir_listing(Path(warehouse)) == before  # never opened as a filesystem table


def test_the_filesystem_catalog_is_the_default_and_lists_its_warehouse(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    P.write(P.create_table(P.catalog(warehouse), "db.orders", P.ORDERS_SCHEMA, options={"bucket": "-1"}),
            P.rows("2024-01-01", 0, 1))
    catalog = catalogs.open_catalog({}, warehouse=warehouse)
    assert catalog.metastore == "filesystem"
    assert catalog.list_databases() == ["db"] and catalog.list_tables("db") == ["orders"]
    table, resolved = catalogs.open_catalog_table(catalog, "db.orders")
    assert table.latest_snapshot_id() == 1 and table.file_io.commit_guard is None
    assert catalog.commit_lock("db.orders") is None
    assert catalogs.unlocked_note(catalog, table) is None  # local disk: renames are atomic
    assert main(["tag", "create", "-w", warehouse, "--catalog-option", "metastore=filesystem", "db.orders", "t"]) == 0
    with pytest.raises(errors.CatalogError):
        catalog.refuse_unless_storage("tag create") if catalog.metastore == "rest" else \
            catalogs.parse_catalog_options({"metastore": "nope"})


@pytest.mark.parametrize("metastore", ["hive", "jdbc", "rest"])
def test_a_catalog_spec_with_a_metastore_the_operator_does_not_read_is_refused(metastore: str) -> None:
    from tablekeeper.core.policy.specs.catalog import PaimonCatalogSpec
    from tablekeeper.core.policy.validation import InvalidSpecError

    with pytest.raises((InvalidSpecError, ValueError), match="not maintained by the operator"):
        PaimonCatalogSpec.model_validate({"warehouse": "/data/warehouse", "metastore": metastore})
    assert PaimonCatalogSpec.model_validate({"warehouse": "/data/warehouse"}).metastore == "filesystem"


def test_a_catalog_table_is_not_sent_to_spark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The Spark job opens its table by path: it would take neither the catalog's lock nor its credentials."""
    from pypaimon import CatalogFactory

    options = {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.sqlite'}",
               "warehouse": str(tmp_path / "wh"), "lock.enabled": "true"}
    t = P.create_table(CatalogFactory.create({k: v for k, v in options.items() if k != "lock.enabled"}), "db.orders",
                       P.ORDERS_SCHEMA, options={"bucket": "-1"})
    P.write(t, P.rows("2024-01-01", 0, 1))
    args = [a for k, v in options.items() for a in ("--catalog-option", f"{k}={v}")]
    before = P.dir_listing(tmp_path / "wh")
    assert main(["expire", *args, "db.orders", "--engine", "spark", "-o", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"]["option"] == "metastore" and "--engine spark" in doc["error"]["message"]
    assert P.dir_listing(tmp_path / "wh") == before
    assert main(["tag", "create", *args, "db.orders", "t1"]) == 0  # in-process, under the catalog's lock
