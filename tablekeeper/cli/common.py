"""What every table command shares: the storage and output options, opening the table (its
format guard and maintenance lease), and the parsers of durations and times on the command line.

Imports click and the engine's constants only; engine modules are imported when a command runs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tablekeeper.cli import catalog_tables
from tablekeeper.core import errors, paimon

if TYPE_CHECKING:
    from tablekeeper.core.paimon import Table

__all__ = ["F", "KEEP_META", "resolve_table", "common_options", "parse_options", "maintains", "open_table", "duration", "timestamp_ms", "now_ms",
           "ENGINE_HELP", "engine_available", "IO_META"]

F = TypeVar("F", bound=Callable[..., Any])


def common_options(func: F) -> F:
    """--warehouse, --option, --output and --branch on every table command."""
    func = click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table",
                        show_default=True, help="Output format.")(func)
    func = click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
                        help="Storage option, e.g. s3.endpoint=http://127.0.0.1:9000 (repeatable).")(func)
    func = click.option("--max-requests-per-second", type=float, default=None, expose_value=False,
                        callback=_remember_pacing, metavar="N",
                        help="Cap on storage requests per second of this command (per table prefix; "
                             "S3 throttles at 3,500 writes / 5,500 reads per second per prefix). Default: no cap.")(func)
    func = click.option("--warehouse", "-w", envvar="TABLEKEEPER_WAREHOUSE", metavar="URI",
                        help="Warehouse URI (local path or s3://bucket/path); env TABLEKEEPER_WAREHOUSE. "
                             "Without it, TABLE is a table path.")(func)
    return catalog_tables.catalog_option(func)


_PACING_META = "tablekeeper.pacing"
IO_META = "tablekeeper.file_io"


def _remember_pacing(ctx: click.Context, _param: click.Parameter, value: float | None) -> None:
    if value is not None and value <= 0:
        raise click.BadParameter(f"must be a positive number of requests per second, not {value:g}")
    if value is not None:
        ctx.meta[_PACING_META] = value


def parse_options(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise errors.InvalidInputError(f"--option {pair!r} is not KEY=VALUE", fix="write e.g. s3.region=eu-west-1")
        key, value = pair.split("=", 1)
        out[key.strip()] = value.strip()
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.meta.get(_PACING_META) is not None:
        from tablekeeper.core import storage

        out[storage.PACING_OPTION] = str(ctx.meta[_PACING_META])
    return out


_LEASE_META = "tablekeeper.lease"
KEEP_META = "tablekeeper.keep-deleted"


def maintains(operation: str, *, destructive: bool = False, deletes_files: bool = True) -> Callable[[F], F]:
    """A command that changes a table: adds ``--wait`` and makes :func:`open_table` take the table's
    maintenance lease (core/safety/concurrency/lease.py) for the rest of the command (not for ``--dry-run``).
    ``destructive``: adds ``--keep-deleted`` too, and :func:`open_table` opens the trash window
    (core/safety/trash) that every plan the command executes moves its files into; ``deletes_files=False``:
    a destructive command that deletes no file itself (the flag is refused by the command, and no
    window is opened)."""
    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, wait: str | None = None, keep_deleted: str | None = None, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            ctx.meta[_LEASE_META] = (operation, duration(wait, "--wait"), bool(kwargs.get("dry_run")))
            ctx.meta[KEEP_META] = (destructive and deletes_files, keep_deleted)
            return func(*args, **kwargs)
        command = click.option(
            "--wait", metavar="DURATION",
            help="If another tablekeeper maintains the table, wait up to this long (e.g. '10 m') for its "
                 "lease; default: exit 2 at once, naming the holder.")(wrapper)
        if destructive:
            command = click.option(
                "--keep-deleted", metavar="DURATION",
                help="Move what this run removes into the table's trash and keep it this long (e.g. '7 d'): "
                     "'tablekeeper undo TABLE RUN' puts it back. Default: the table option trash.keep, "
                     "else delete for good.")(command)
        return command  # type: ignore[return-value]
    return decorate


def _take_lease(t: Table, schema_ids: list[int] | None) -> None:
    ctx = click.get_current_context(silent=True)
    wanted = ctx.meta.get(_LEASE_META) if ctx is not None else None
    if ctx is None or wanted is None:
        return
    operation, wait, dry_run = wanted
    if not dry_run:
        from tablekeeper.core.safety import concurrency

        ctx.meta[_LEASE_META] = None  # one lease per command, taken by the first table opened
        ctx.with_resource(concurrency.held(t.file_io, t.root, f"tablekeeper {operation}", wait=wait))
        destructive, keep = ctx.meta.get(KEEP_META, (False, None))
        from tablekeeper.core.safety import trash  # (its window's code loads only when one is asked for)

        if not destructive:
            return
        # the latest schema the guard listed (and read, kept by the command's immutable reads):
        # the check costs no request of its own
        table_options = dict(t.schema(max(schema_ids)).options) if schema_ids else t.options()
        if keep is not None or table_options.get(trash.KEEP_OPTION) is not None:
            window = trash.keep_window(keep, table_options)
            ctx.with_resource(trash.keeping(t.file_io, t.root, operation, window, branch=t.branch,
                                            table=t.identifier))


def open_table(table: str, warehouse: str | None, options: tuple[str, ...], branch: str = paimon.MAIN, *,
          guard: bool = True) -> Table:
    """The table, its lease taken. ``guard=False``: the command runs ``format_guard.check_latest``
    itself, first thing in its decision's view (after the lease, before anything changes), so the
    guard's reads are the decision's own instead of a second copy (docs/storage-internals.md)."""
    from tablekeeper.core.safety import concurrency

    t = resolve_table(table, warehouse, options, branch)
    ctx = click.get_current_context(silent=True)
    if ctx is not None:  # manifests and schemas (immutable by name) are fetched once per command
        ctx.with_resource(t.file_io.immutable_reads())
    schema_ids = concurrency.check_latest(t) if guard else None  # fail closed on a newer Paimon first
    _take_lease(t, schema_ids)
    return t


def resolve_table(table: str, warehouse: str | None, options: tuple[str, ...], branch: str = paimon.MAIN) -> Table:
    from tablekeeper.core.paimon import open_table, open_table_path

    opts = parse_options(options)
    ctx = click.get_current_context(silent=True)
    wanted = ctx.meta.get(_LEASE_META) if ctx is not None else None
    through = catalog_tables.open_catalog_table(table, warehouse, opts, branch, wanted[0] if wanted else None,
                                                dry_run=bool(wanted and wanted[2]))
    if through is not None:
        if ctx is not None:
            ctx.meta.setdefault(IO_META, through.file_io)
        return through
    if warehouse or "/" in table or table.startswith("s3:"):
        t = open_table(warehouse, table, branch=branch, options=opts) if warehouse else \
            open_table_path(table, branch=branch, options=opts)
        ctx = click.get_current_context(silent=True)
        if ctx is not None:  # its requests are shown with --output json
            ctx.meta.setdefault(IO_META, t.file_io)
        return t
    raise errors.InvalidInputError(
        f"no warehouse given for table {table!r}",
        fix="pass --warehouse URI (or set TABLEKEEPER_WAREHOUSE), or give the table's path")


def duration(value: str | None, field: str) -> Any:
    if value is None:  # (without importing the parser: every changing command asks for --wait)
        return None
    from tablekeeper.core import values

    return values.parse_duration(value, field=field)


def timestamp_ms(value: str | None) -> int | None:
    from tablekeeper.core import values

    return None if value is None else values.parse_instant_ms(value, flag="--timestamp")


ENGINE_HELP = "local: plan and delete in this process; spark: the same plan distributed on Spark (pyspark extra)."


def engine_available(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """``--engine spark`` without PySpark installed is bad input, refused before the table is opened."""
    if value == "spark":
        import importlib.util

        if importlib.util.find_spec("pyspark") is None:
            raise errors.InvalidInputError(
                "--engine spark needs PySpark, which is not installed",
                fix="install the spark extra: bash scripts/bootstrap spark (or pip install 'tablekeeper[spark]')")
    return value


def now_ms(now: str | None) -> int:
    from tablekeeper.core import values

    return values.now_ms() if now is None else values.parse_instant_ms(now, flag="--now")
