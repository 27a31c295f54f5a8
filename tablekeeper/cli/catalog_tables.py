"""``--catalog-option KEY=VALUE``: tables opened through their catalog (Hive Metastore, JDBC, REST).

The option is remembered on the click context (like ``--max-requests-per-second``), so every table
command takes it without changing its signature. ``metastore`` picks the catalog; the other keys
are Paimon's catalog options (``uri``, ``lock.enabled``, ``jdbc.user``, ``token`` ...);
``--warehouse`` is the catalog's ``warehouse``. The decisions are core's (``core.catalogs``): this
module only carries the command's options there and keeps the catalog for the command's end."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tablekeeper.core import errors

if TYPE_CHECKING:
    from collections.abc import Callable

    from tablekeeper.core.catalogs import CatalogTable
    from tablekeeper.core.paimon.table import Table
    from tablekeeper.core.partitions import PartitionPlan

__all__ = ["catalog_option", "catalog_options", "open_catalog_table", "opened", "apply_partition_expiry",
           "refuse_on_spark"]

F = TypeVar("F", bound="Callable[..., Any]")
_OPTIONS_META = "tablekeeper.catalog_options"
_OPENED_META = "tablekeeper.catalog_table"


def _remember(ctx: click.Context, _param: click.Parameter, pairs: tuple[str, ...]) -> None:
    out: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE (e.g. metastore=hive)")
        key, value = pair.split("=", 1)
        out[key.strip()] = value.strip()
    if out:
        ctx.meta[_OPTIONS_META] = out


def catalog_option(func: F) -> F:
    return click.option(  # type: ignore[return-value]
        "--catalog-option", multiple=True, metavar="KEY=VALUE", expose_value=False, callback=_remember,
        help="Catalog option as Paimon names it, e.g. metastore=hive, uri=thrift://host:9083, lock.enabled=true "
             "(repeatable; default metastore=filesystem).")(func)


def catalog_options() -> Mapping[str, str] | None:
    """The command's ``--catalog-option`` pairs, or None when it gave none."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get(_OPTIONS_META)


def open_catalog_table(table: str, warehouse: str | None, storage_options: Mapping[str, Any], branch: str,
                       operation: str | None) -> Table | None:
    """The table through its catalog, or None when the command names no catalog other than the
    filesystem's (the caller opens it as before). Refuses, before anything is read further, an
    operation the catalog owns; says once what running without a lock means on an object store."""
    given = catalog_options()
    if given is None or given.get("metastore", "filesystem").strip().lower() == "filesystem" and \
            not set(given) - {"metastore", "warehouse"}:
        return None
    from tablekeeper.core import catalogs  # (only for a catalog: start-up of the others unchanged)

    ctx = click.get_current_context()
    catalog = catalogs.open_catalog(given, warehouse=warehouse)
    ctx.call_on_close(catalog.close)
    if operation is not None:
        catalog.refuse_unless_storage(operation)
    if "/" in table:
        raise errors.CatalogError(f"with metastore={catalog.metastore} name the table as database.table, not {table!r}",
                                  option="metastore", fix="give database.table: the catalog says where it is")
    t, resolved = catalogs.open_catalog_table(catalog, table, branch=branch, storage_options=storage_options)
    ctx.meta[_OPENED_META] = resolved
    note = catalogs.unlocked_note(catalog, t) if operation is not None else None
    if note:
        click.echo(f"note: {note}", err=True)
    return t


def refuse_on_spark() -> None:
    """``--engine spark`` on a table opened through a catalog: refused. The Spark job opens its
    table by warehouse path, so it would neither take the catalog's lock nor use its vended
    credentials."""
    resolved = opened()
    if resolved is not None:
        raise errors.CatalogError(
            f"--engine spark does not open tables through the {resolved.catalog.metastore} catalog yet (its commits "
            "would not take the catalog's lock)", option="metastore", fix="run it in-process (drop --engine spark)")


def opened() -> CatalogTable | None:
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get(_OPENED_META)


def apply_partition_expiry(t: Table, plan: PartitionPlan, options: Mapping[str, str]) -> int:
    """The partition drop; through the catalog first (Paimon's order) when it keeps partitions."""
    from tablekeeper.core import partitions

    def commit() -> int:
        return partitions.apply_partition_expiry(t, plan, options=options)

    resolved = opened()
    if resolved is None:
        return commit()
    from tablekeeper.core import catalogs
    keys = plan.partition_keys or tuple(t.schema().partition_keys)
    default = t.options().get("partition.default-name", "__DEFAULT_PARTITION__")
    specs = [catalogs.metastore_spec(p.values, keys, default) for p in plan.expired]
    _in_catalog, dropped = catalogs.expire_partitions(resolved, t, specs, commit)
    return dropped


