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
    from tablekeeper.core.paimon import Table
    from tablekeeper.core.reclaim.partitions import PartitionPlan

__all__ = ["catalog_option", "catalog_options", "open_catalog_table", "opened", "apply_partition_expiry",
           "refuse_on_spark", "served_by_catalog"]

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


#: Commands whose whole commit holds the catalog lock (short, several commit files each); the long
#: ones (expire, clean-orphans) take it per commit file instead, so writers are not held up.
_LOCKED_FOR_THE_COMMAND = ("tag create", "tag delete", "tag rename", "tag replace", "branch create", "branch drop",
                           "branch fast-forward", "branch replace-main", "branch rename", "expire-partitions")


def open_catalog_table(table: str, warehouse: str | None, storage_options: Mapping[str, Any], branch: str,
                       operation: str | None, *, dry_run: bool = False) -> Table | None:
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
    guard = t.file_io.commit_guard
    if guard is not None and operation in _LOCKED_FOR_THE_COMMAND and not dry_run:
        ctx.with_resource(guard.held())  # one commit: no other committer between its files
    note = catalogs.unlocked_note(catalog, t) if operation is not None else None
    if note:
        click.echo(f"note: {note}", err=True)
    return t


#: Commands the REST API carries out, and how their options map onto its calls.
_SERVED = ("tag create", "tag delete", "branch create", "branch drop", "branch fast-forward", "rollback")


def served_by_catalog(func: F) -> F:
    """A tag or branch command on a table whose catalog owns the operation (REST): carried out
    through the catalog's API instead of storage; the options the API has no field for are
    refused. Other catalogs: the command runs as written. (Below ``_maintains``: the operation
    name is the command's lease name.)"""
    import functools

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = catalog_options()
        if given is None or given.get("metastore", "").strip().lower() != "rest":
            return func(*args, **kwargs)
        ctx = click.get_current_context()
        operation = ctx.command_path.split(" ", 1)[1] if " " in ctx.command_path else ctx.command_path
        if operation not in _SERVED:
            return func(*args, **kwargs)  # refused when the table is opened (catalog.refuse_unless_storage)
        return _through_rest(operation, given, kwargs)

    return wrapper  # type: ignore[return-value]


def _refuse(flag: str, operation: str) -> None:
    raise errors.CatalogError(f"'{operation}' through the REST catalog has no {flag}", option="metastore",
                              fix=f"drop {flag}: the REST API does not offer it")


def _through_rest(operation: str, given: Mapping[str, str], params: Mapping[str, Any]) -> None:
    import json

    from tablekeeper.core import catalogs
    from tablekeeper.core.catalogs import RestCatalog

    catalog = catalogs.open_catalog(given, warehouse=params.get("warehouse"))
    click.get_current_context().call_on_close(catalog.close)
    assert isinstance(catalog, RestCatalog)
    if operation == "rollback":
        _rollback_through_rest(catalog, params)
        return
    ident, name = str(params["table"]), str(params["name"])
    catalog.resolve(ident, {})  # the table exists (TableNotFoundError otherwise)
    if params.get("branch", "main") != "main":
        _refuse("--branch", operation)
    for flag in ("timestamp", "from_snapshot", "backup", "force"):
        if params.get(flag):
            _refuse("--" + flag.replace("_", "-"), operation)
    if operation == "branch create" and not (params.get("from_tag") or params.get("empty")):
        raise errors.CatalogError("'branch create' through the REST catalog needs --from-tag or --empty",
                                  option="metastore", fix="pass --from-tag TAG or --empty")
    dry_run = bool(params.get("dry_run"))
    calls = {
        "tag create": lambda: catalog.create_tag(ident, name, params.get("snapshot"), params.get("time_retained")),
        "tag delete": lambda: catalog.delete_tag(ident, name),
        "branch create": lambda: catalog.create_branch(ident, name, params.get("from_tag")),
        "branch drop": lambda: catalog.drop_branch(ident, name),
        "branch fast-forward": lambda: catalog.fast_forward(ident, name),
    }
    if not dry_run:
        calls[operation]()
    action = ("would-" if dry_run else "") + "call the REST catalog"
    if params.get("output") == "json":
        click.echo(json.dumps({"operation": operation, "table": ident, "name": name, "dry_run": dry_run,
                               "through": "rest", "action": action}, indent=2))
    else:
        click.echo(f"{operation} {name!r} on {ident}: {'would go' if dry_run else 'done'} through the REST catalog")


def _rollback_through_rest(catalog: Any, params: Mapping[str, Any]) -> None:
    """``rollback --discard-later`` as the REST API's rollback (Paimon's ``rollback_to`` on the
    server: it deletes the later snapshots and tags). Restore-as-latest has no endpoint: refused."""
    import json

    ident = str(params["table"])
    if not params.get("discard_later"):
        raise errors.CatalogError(
            "the REST catalog's rollback deletes the later snapshots and tags (Paimon's rollback_to); its API has no "
            "rollback that keeps them", option="metastore",
            fix="pass --discard-later to roll back through the server (it deletes what came after the target)")
    if params.get("branch", "main") != "main":
        _refuse("--branch", "rollback")
    for flag in ("to_timestamp", "keep_as_tag"):
        if params.get(flag):
            _refuse("--" + flag.replace("_", "-"), "rollback")
    snapshot_id, tag = params.get("to_snapshot"), params.get("to_tag")
    if (snapshot_id is None) == (tag is None):
        raise errors.InvalidInputError("name exactly one rollback target", fix="pass one of --to-snapshot N, --to-tag NAME")
    catalog.resolve(ident, {})  # the table exists (TableNotFoundError otherwise)
    dry_run = bool(params.get("dry_run"))
    if not dry_run:
        catalog.rollback(ident, snapshot_id=snapshot_id, tag=tag)
    target = f"snapshot {snapshot_id}" if tag is None else f"tag {tag}"
    if params.get("output") == "json":
        click.echo(json.dumps({"operation": "rollback", "table": ident, "target": target, "dry_run": dry_run,
                               "through": "rest", "action": ("would-" if dry_run else "") + "call the REST catalog"},
                              indent=2))
    else:
        click.echo(f"rollback of {ident} to {target}: {'would go' if dry_run else 'done'} through the REST catalog "
                   "(the server deletes the later snapshots and tags)")


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
    from tablekeeper.core.reclaim import partitions

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


