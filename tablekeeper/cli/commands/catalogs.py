"""``tablekeeper catalog databases`` / ``catalog tables DB``: what a catalog holds, as tablekeeper
sees it (the tables it maintains, and those it skips with the reason)."""

from __future__ import annotations

import json

import click

from tablekeeper.cli import catalog_tables

__all__ = ["catalog_group"]


def _catalog(warehouse: str | None) -> object:
    from tablekeeper.core import catalogs

    catalog = catalogs.open_catalog(dict(catalog_tables.catalog_options() or {}), warehouse=warehouse)
    click.get_current_context().call_on_close(catalog.close)
    return catalog


_WAREHOUSE = click.option("--warehouse", "-w", envvar="TABLEKEEPER_WAREHOUSE", metavar="URI",
                          help="The catalog's warehouse (a path; the catalog's name for REST).")
_OUTPUT = click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table", show_default=True)


@click.group("catalog")
def catalog_group() -> None:
    """List what a catalog holds (--catalog-option metastore=hive|jdbc|rest ...)."""


@catalog_group.command("databases")
@_WAREHOUSE
@_OUTPUT
@catalog_tables.catalog_option
def databases(warehouse: str | None, output: str) -> None:
    """The catalog's databases."""
    from tablekeeper.core.catalogs import Catalog

    catalog = _catalog(warehouse)
    assert isinstance(catalog, Catalog)
    names = catalog.list_databases()
    if output == "json":
        click.echo(json.dumps({"metastore": catalog.metastore, "databases": names}, indent=2))
    else:
        for name in names:
            click.echo(name)


@catalog_group.command("tables")
@click.argument("database")
@_WAREHOUSE
@_OUTPUT
@catalog_tables.catalog_option
def tables(database: str, warehouse: str | None, output: str) -> None:
    """The Paimon tables of DATABASE, and the tables skipped (not Paimon's) with the reason."""
    from tablekeeper.core.catalogs import Catalog

    catalog = _catalog(warehouse)
    assert isinstance(catalog, Catalog)
    names, skipped = catalog.list_tables(database), catalog.skipped_tables(database)
    if output == "json":
        click.echo(json.dumps({"metastore": catalog.metastore, "database": database,
                               "tables": [f"{database}.{n}" for n in names],
                               "skipped": [{"table": s.identifier, "reason": s.reason} for s in skipped]}, indent=2))
        return
    for name in names:
        click.echo(f"{database}.{name}")
    for s in skipped:
        click.echo(f"{s.identifier}  (skipped: {s.reason})")
