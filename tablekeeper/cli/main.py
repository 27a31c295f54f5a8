"""The ``tablekeeper`` command line: tags, branches and the table timeline.

Every destructive command takes ``--dry-run`` and prints what would change; ``--output json``
prints exactly one JSON document on stdout, in one shape for every command that changes a
table (``cli/results.py``), errors included (``{"error": {...}}``). Errors print one line plus
the fix and exit with code 2, having changed nothing.

Start-up: this module imports click and the engine's constants only; each command imports the
engine modules it runs when it runs (``tablekeeper --help`` or a local ``clean-orphans`` never
loads fsspec, asyncio, fastavro's writers, pyarrow or pypaimon; tests/cli/test_startup.py)."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tablekeeper.cli import render, results, trash_report
from tablekeeper.core import errors
from tablekeeper.core.paimon import layout

if TYPE_CHECKING:
    from tablekeeper.core import execution, plans
    from tablekeeper.core.paimon.table import Table

__all__ = ["main", "entry", "cli"]

F = TypeVar("F", bound=Callable[..., Any])
EXIT_INPUT_ERROR = 2


def _common(func: F) -> F:
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
    return func


_PACING_META = "tablekeeper.pacing"
_IO_META = "tablekeeper.file_io"


def _remember_pacing(ctx: click.Context, _param: click.Parameter, value: float | None) -> None:
    if value is not None and value <= 0:
        raise click.BadParameter(f"must be a positive number of requests per second, not {value:g}")
    if value is not None:
        ctx.meta[_PACING_META] = value


def _parse_options(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise errors.InvalidInputError(f"--option {pair!r} is not KEY=VALUE", fix="write e.g. s3.region=eu-west-1")
        key, value = pair.split("=", 1)
        out[key.strip()] = value.strip()
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.meta.get(_PACING_META) is not None:
        from tablekeeper.core.storage import requests as storage_requests

        out[storage_requests.PACING_OPTION] = str(ctx.meta[_PACING_META])
    return out


_LEASE_META = "tablekeeper.lease"


_KEEP_META = "tablekeeper.keep-deleted"


def _maintains(operation: str, *, destructive: bool = False) -> Callable[[F], F]:
    """A command that changes a table: adds ``--wait`` and makes :func:`_open` take the table's
    maintenance lease (core/lease.py) for the rest of the command (not for ``--dry-run``).
    ``destructive``: adds ``--keep-deleted`` too, and :func:`_open` opens the trash window
    (core/trash) that every plan the command executes moves its files into."""
    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, wait: str | None = None, keep_deleted: str | None = None, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            ctx.meta[_LEASE_META] = (operation, _duration(wait, "--wait"), bool(kwargs.get("dry_run")))
            ctx.meta[_KEEP_META] = (destructive, keep_deleted)
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


def _take_lease(t: Table) -> None:
    ctx = click.get_current_context(silent=True)
    wanted = ctx.meta.get(_LEASE_META) if ctx is not None else None
    if ctx is None or wanted is None:
        return
    operation, wait, dry_run = wanted
    if not dry_run:
        from tablekeeper.core import lease

        ctx.meta[_LEASE_META] = None  # one lease per command, taken by the first table opened
        ctx.with_resource(lease.held(t.file_io, t.root, f"tablekeeper {operation}", wait=wait))
        destructive, keep = ctx.meta.get(_KEEP_META, (False, None))
        from tablekeeper.core import trash  # (its window's code loads only when one is asked for)

        if destructive and (keep is not None or t.options().get(trash.KEEP_OPTION) is not None):
            window = trash.keep_window(keep, t.options())
            ctx.with_resource(trash.keeping(t.file_io, t.root, operation, window, branch=t.branch,
                                                table=t.identifier))


def _open(table: str, warehouse: str | None, options: tuple[str, ...], branch: str = layout.MAIN, *,
          guard: bool = True) -> Table:
    """The table, its lease taken. ``guard=False``: the command runs ``format_guard.check_latest``
    itself, first thing in its decision's view (after the lease, before anything changes), so the
    guard's reads are the decision's own instead of a second copy (docs/storage-internals.md)."""
    from tablekeeper.core import format_guard

    t = _open_table(table, warehouse, options, branch)
    ctx = click.get_current_context(silent=True)
    if ctx is not None:  # manifests and schemas (immutable by name) are fetched once per command
        ctx.with_resource(t.file_io.immutable_reads())
    if guard:
        format_guard.check_latest(t)  # fail closed on a newer Paimon before anything changes
    _take_lease(t)
    return t


def _open_table(table: str, warehouse: str | None, options: tuple[str, ...], branch: str = layout.MAIN) -> Table:
    from tablekeeper.core.paimon.table import open_table, open_table_path

    opts = _parse_options(options)
    if warehouse or "/" in table or table.startswith("s3:"):
        t = open_table(warehouse, table, branch=branch, options=opts) if warehouse else \
            open_table_path(table, branch=branch, options=opts)
        ctx = click.get_current_context(silent=True)
        if ctx is not None:  # its requests are shown with --output json
            ctx.meta.setdefault(_IO_META, t.file_io)
        return t
    raise errors.InvalidInputError(
        f"no warehouse given for table {table!r}",
        fix="pass --warehouse URI (or set TABLEKEEPER_WAREHOUSE), or give the table's path")


#: The JSON document of the running command, printed once it finished (or inside the error
#: document of a command that failed after it: ``main``): exactly one document on stdout.
_PENDING: list[Any] = []


def _emit(output: str, payload: Any, text: Callable[[], None]) -> None:
    payload, text = trash_report.with_trash_run(payload, text)
    if output == "json":
        ctx = click.get_current_context(silent=True)
        io = ctx.meta.get(_IO_META) if ctx is not None else None
        if isinstance(payload, dict) and io is not None and "requests" not in payload:  # by kind
            payload = {**payload, "requests": io.requests.counts.snapshot()}
        _PENDING[:] = [payload]
    else:
        text()


def _print_pending() -> None:
    while _PENDING:
        click.echo(json.dumps(_PENDING.pop(0), indent=2, default=str))


def _nothing_deleted(written: list[str]) -> dict[str, Any]:
    """The ``result`` of a command that only writes metadata files."""
    return {"deleted": {}, "deleted_bytes": {}, "already_gone": {}, "unsized": {}, "failed": [], "failed_count": 0,
            "written": written, "removed_dirs": 0}


def _duration(value: str | None, field: str) -> Any:
    if value is None:  # (without importing the parser: every changing command asks for --wait)
        return None
    from tablekeeper.core import durations

    return durations.parse_duration(value, field=field)


def _timestamp_ms(value: str | None) -> int | None:
    from tablekeeper.core import timestamps

    return None if value is None else timestamps.parse_instant_ms(value, flag="--timestamp")


def _run_plan(plan: plans.Plan, table: Table, dry_run: bool, output: str, parallelism: int | None,
              action: str | None = None) -> None:
    from tablekeeper.core import execution

    if dry_run:  # sized as a run would count (a stat for what the plan cannot size)
        shown = execution.sized(plan, table.file_io)
        _emit(output, results.of_plan(shown, branch=table.branch, dry_run=True, action=action),
              lambda: render.plan(shown, dry_run=True))
        return
    result = execution.execute(plan, table.file_io, parallelism=parallelism, progress=render.progress_callback())
    _report(plan, result, output, table.branch)


def _report(plan: plans.Plan, result: execution.ExecutionResult, output: str, branch: str,
            action: str | None = None) -> None:
    _emit(output, results.of_plan(plan, branch=branch, dry_run=False, result=result, action=action),
          lambda: render.plan(plan, dry_run=False, result=result))
    if result.failed:
        raise errors.StorageError(f"{len(result.failed)} file(s) could not be deleted",
                                  fix="check permissions and rerun the same command; it resumes")


_ENGINE_HELP = "local: plan and delete in this process; spark: the same plan distributed on Spark (pyspark extra)."


def _engine_available(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """``--engine spark`` without PySpark installed is bad input, refused before the table is opened."""
    if value == "spark":
        import importlib.util

        if importlib.util.find_spec("pyspark") is None:
            raise errors.InvalidInputError(
                "--engine spark needs PySpark, which is not installed",
                fix="install the spark extra: bash scripts/bootstrap spark (or pip install 'tablekeeper[spark]')")
    return value


def _run_on_spark(operation: str, t: Table, options: tuple[str, ...], dry_run: bool, output: str,
                  **params: Any) -> None:
    """Run a maintenance command through ``tablekeeper.spark`` (local Spark unless configured)."""
    from tablekeeper.core import trash
    from tablekeeper.core.storage import requests as storage_requests
    from tablekeeper.spark import dispatch, job_request

    kept = trash.active()  # the job's deletes move into this command's trash run

    if "." not in t.identifier or not t.root.rstrip("/").rsplit("/", 2)[-2].endswith(".db"):
        raise errors.InvalidInputError(f"--engine spark needs a warehouse table, not {t.root}",
                                       fix="pass --warehouse URI and the table as database.table")
    request = job_request.JobRequest(operation=operation,  # type: ignore[arg-type]
                                warehouse=t.root.rstrip("/").rsplit("/", 2)[0], table=t.identifier,
                                branch=t.branch, options=_parse_options(options), dry_run=dry_run,
                                trash_run=None if kept is None else kept.spec(), **params)
    io_before, process_before = t.file_io.requests.counts.snapshot(), storage_requests.process_snapshot()
    result = dispatch.run(request, engine="spark")
    if kept is not None and any(result.deleted.values()):
        kept.started, kept.moved, kept.moved_bytes = True, sum(result.deleted.values()), sum(result.deleted_bytes.values())
    payload = results.of_run(result)
    # this command's requests: the table opened here (format guard, lease), the driver's during
    # dispatch (its lease, the job's planning) and the executors' (counted there, summed by Spark)
    io_after = t.file_io.requests.counts.snapshot()
    driver = storage_requests.since(storage_requests.since(io_before, io_after),  # not t's twice
                                    storage_requests.since(process_before, storage_requests.process_snapshot()))
    payload["requests"] = storage_requests.plus(io_after, driver, result.details.get("executorRequests") or {})

    def text() -> None:
        verb = "would delete" if dry_run else "deleted"
        click.echo(f"{operation} on {t.identifier} (engine spark): status {result.status}")
        for kind, n in sorted(result.planned_files.items()):
            done = "" if dry_run else f", {verb} {result.deleted.get(kind, 0)}"
            unsized = result.planned_unsized.get(kind, 0)
            size = f"{result.planned_bytes.get(kind, 0)} bytes" + (f", {unsized} of unknown size" if unsized else "")
            click.echo(f"  {kind}: {n} planned ({size}){done}")
        gone = sum(result.missing.values())
        if gone and not dry_run:
            click.echo(f"  {gone} file(s) were already gone (counted, not an error)")
        for note in result.notes:
            click.echo(f"  note: {note}")
        for path in result.sample:
            click.echo(f"  - {path}")

    _emit(output, payload, text)
    if result.errors:
        raise errors.TablekeeperError(result.errors[0]["message"], fix=result.errors[0].get("fix"))
    if result.failed_count:
        raise errors.StorageError(f"{result.failed_count} file(s) could not be deleted",
                                  fix="check permissions and rerun the same command; it resumes")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             result_callback=lambda *_a, **_k: _print_pending())
@click.version_option(package_name="tablekeeper")
def cli() -> None:
    """Keep Apache Paimon tables healthy: tags, branches and retention, declaratively.

    \b
    Examples:
      tablekeeper -h
      tablekeeper tag create -w /data/wh sales.orders nightly --time-retained '7 d'
      tablekeeper branch create -w /data/wh sales.orders fix-1 --from-tag nightly
      tablekeeper show -w /data/wh sales.orders
    """


# ----------------------------------------------------------------------------------- tags
@cli.group("tag")
def tag_group() -> None:
    """Create, delete, rename, replace and list tags."""


@tag_group.command("create")
@click.argument("table")
@click.argument("name")
@click.option("--snapshot", type=int, help="Snapshot id (default: latest).")
@click.option("--timestamp", help="Tag the latest snapshot committed at or before this time (epoch ms or ISO).")
@click.option("--time-retained", help="Tag TTL in Paimon syntax, e.g. '7 d', '12 h'.")
@click.option("--branch", "-b", default=layout.MAIN, show_default=True, help="Branch to tag.")
@click.option("--dry-run", is_flag=True, help="Show what would be created.")
@_common
@_maintains("tag create")
def tag_create(table: str, name: str, snapshot: int | None, timestamp: str | None, time_retained: str | None,
               branch: str, dry_run: bool, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Create tag NAME on TABLE (idempotent; never moves an existing tag)."""
    from tablekeeper.core import tags

    retained = _duration(time_retained, "--time-retained")
    t = _open(table, warehouse, options, branch)
    result = tags.create_tag(t, name, snapshot_id=snapshot, timestamp_ms=_timestamp_ms(timestamp),
                             time_retained=retained, dry_run=dry_run)
    writes = [t.tag_path(name)] if result.action in ("created", "would-create") else []
    payload = results.document("create-tag", t.identifier, branch, dry_run=dry_run, action=result.action,
                               writes=writes, result=None if dry_run else _nothing_deleted(writes), tag=name,
                               snapshot_id=result.snapshot_id)
    _emit(output, payload, lambda: click.echo(f"{result.action}: tag {name!r} at snapshot {result.snapshot_id}"))


@tag_group.command("delete")
@click.argument("table")
@click.argument("name")
@click.option("--branch", "-b", default=layout.MAIN, show_default=True)
@click.option("--force", is_flag=True, help="Delete even if a branch was created from this tag.")
@click.option("--parallelism", type=int, help="Delete threads (default: 2 x CPUs, max 8).")
@click.option("--dry-run", is_flag=True, help="Print the cleanup plan, delete nothing.")
@_common
@_maintains("tag delete", destructive=True)
def tag_delete(table: str, name: str, branch: str, force: bool, parallelism: int | None, dry_run: bool,
               warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Delete tag NAME and the files only it still references."""
    from tablekeeper.core import execution, tag_deletion, tags

    t = _open(table, warehouse, options, branch)
    if dry_run:
        _run_plan(tags.plan_delete_tag(t, name, force=force), t, dry_run, output, parallelism, action="would-delete")
        return
    deletion = tag_deletion.delete_tag(t, name, force=force, run=lambda p: execution.execute(
        p, t.file_io, parallelism=parallelism, progress=render.progress_callback()))
    _report(deletion.executed, deletion.result, output, branch, action="deleted")


@tag_group.command("rename")
@click.argument("table")
@click.argument("old")
@click.argument("new")
@click.option("--branch", "-b", default=layout.MAIN, show_default=True)
@click.option("--force", is_flag=True, help="Rename even if a branch was created from this tag.")
@click.option("--dry-run", is_flag=True)
@_common
@_maintains("tag rename")
def tag_rename(table: str, old: str, new: str, branch: str, force: bool, dry_run: bool,
               warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Rename tag OLD to NEW."""
    from tablekeeper.core import tags

    t = _open(table, warehouse, options, branch)
    result = tags.rename_tag(t, old, new, force=force, dry_run=dry_run)
    writes = [t.tag_path(new)] if result.action in ("renamed", "would-rename") else []
    _emit(output, results.document("rename-tag", t.identifier, branch, dry_run=dry_run, action=result.action,
                                   writes=writes, result=None if dry_run else _nothing_deleted(writes),
                                   notes=[f"tag file renamed: {t.tag_path(old)} -> {t.tag_path(new)}"] if writes else [],
                                   tag=new, snapshot_id=result.snapshot_id, fields={"from": old, "to": new}),
          lambda: click.echo(f"{result.action}: tag {old!r} -> {new!r}"))


@tag_group.command("replace")
@click.argument("table")
@click.argument("name")
@click.option("--snapshot", type=int, help="New snapshot id (default: latest).")
@click.option("--time-retained", help="New TTL, e.g. '7 d' (default: keep the old one).")
@click.option("--branch", "-b", default=layout.MAIN, show_default=True)
@click.option("--force", is_flag=True, help="Replace even if a branch was created from this tag.")
@click.option("--dry-run", is_flag=True)
@_common
@_maintains("tag replace")
def tag_replace(table: str, name: str, snapshot: int | None, time_retained: str | None, branch: str, force: bool,
                dry_run: bool, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Point existing tag NAME at another snapshot."""
    from tablekeeper.core import tags

    retained = _duration(time_retained, "--time-retained")
    t = _open(table, warehouse, options, branch)
    result = tags.replace_tag(t, name, snapshot_id=snapshot, time_retained=retained, force=force, dry_run=dry_run)
    writes = [t.tag_path(name)] if result.action in ("replaced", "would-replace") else []
    _emit(output, results.document("replace-tag", t.identifier, branch, dry_run=dry_run, action=result.action,
                                   writes=writes, result=None if dry_run else _nothing_deleted(writes), tag=name,
                                   snapshot_id=result.snapshot_id),
          lambda: click.echo(f"{result.action}: tag {name!r} at snapshot {result.snapshot_id}"))


@tag_group.command("list")
@click.argument("table")
@click.option("--branch", "-b", default=layout.MAIN, show_default=True)
@_common
def tag_list(table: str, branch: str, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """List tags with the $tags columns."""
    from tablekeeper.core import tags

    rows = tags.list_tags(_open(table, warehouse, options, branch))
    _emit(output, [r.as_dict() for r in rows], lambda: render.rows([r.as_dict() for r in rows], "no tags"))


# ------------------------------------------------------------------------------- branches
@cli.group("branch")
def branch_group() -> None:
    """Create, drop, fast-forward, replace main with, rename and list branches."""


@branch_group.command("create")
@click.argument("table")
@click.argument("name")
@click.option("--from-tag", help="Create from this tag (copies its snapshot and schemas).")
@click.option("--from-snapshot", type=int, help="Create from a snapshot (a protected fork tag is created first).")
@click.option("--empty", is_flag=True, help="Create an empty branch with main's schemas.")
@click.option("--dry-run", is_flag=True)
@_common
@_maintains("branch create")
def branch_create(table: str, name: str, from_tag: str | None, from_snapshot: int | None, empty: bool,
                  dry_run: bool, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Create branch NAME of TABLE."""
    from tablekeeper.core import branches

    if sum(x is not None and x is not False for x in (from_tag, from_snapshot, empty or None)) != 1:
        raise errors.InvalidInputError("give exactly one of --from-tag, --from-snapshot, --empty",
                                       fix="e.g. --from-tag nightly")
    t = _open(table, warehouse, options)
    change = branches.create_branch(t, name, from_tag=from_tag, from_snapshot=from_snapshot, dry_run=dry_run)
    _emit(output, results.of_change("create-branch", t.identifier, change, dry_run=dry_run),
          lambda: render.change(change))


@branch_group.command("drop")
@click.argument("table")
@click.argument("name")
@click.option("--dry-run", is_flag=True)
@_common
@_maintains("branch drop", destructive=True)
def branch_drop(table: str, name: str, dry_run: bool, warehouse: str | None, options: tuple[str, ...],
                output: str) -> None:
    """Drop branch NAME (its own data files become orphans for clean-orphans)."""
    from tablekeeper.core import branches

    t = _open(table, warehouse, options)
    change = branches.drop_branch(t, name, dry_run=dry_run)
    _emit(output, results.of_change("drop-branch", t.identifier, change, dry_run=dry_run),
          lambda: render.change(change))


@branch_group.command("fast-forward")
@click.argument("table")
@click.argument("name")
@click.option("--dry-run", is_flag=True)
@_common
@_maintains("branch fast-forward")
def branch_fast_forward(table: str, name: str, dry_run: bool, warehouse: str | None, options: tuple[str, ...],
                        output: str) -> None:
    """Merge branch NAME into main: main then reads exactly what the branch reads."""
    from tablekeeper.core import branches

    t = _open(table, warehouse, options)
    change = branches.fast_forward(t, name, dry_run=dry_run)
    _emit(output, results.of_change("fast-forward-branch", t.identifier, change, dry_run=dry_run),
          lambda: render.change(change))


@branch_group.command("replace-main")
@click.argument("table")
@click.argument("name")
@click.option("--backup", help="Keep the old main as a branch with this name.")
@click.option("--dry-run", is_flag=True)
@_common
@_maintains("branch replace-main")
def branch_replace_main(table: str, name: str, backup: str | None, dry_run: bool, warehouse: str | None,
                        options: tuple[str, ...], output: str) -> None:
    """Make branch NAME the table's main (the branch is removed)."""
    from tablekeeper.core import branches

    t = _open(table, warehouse, options)
    change = branches.replace_main(t, name, backup=backup, dry_run=dry_run)
    _emit(output, results.of_change("replace-main", t.identifier, change, dry_run=dry_run),
          lambda: render.change(change))


@branch_group.command("rename")
@click.argument("table")
@click.argument("old")
@click.argument("new")
@click.option("--dry-run", is_flag=True)
@_common
@_maintains("branch rename")
def branch_rename(table: str, old: str, new: str, dry_run: bool, warehouse: str | None, options: tuple[str, ...],
                  output: str) -> None:
    """Rename branch OLD to NEW."""
    from tablekeeper.core import branches

    t = _open(table, warehouse, options)
    change = branches.rename_branch(t, old, new, dry_run=dry_run)
    _emit(output, results.of_change("rename-branch", t.identifier, change, dry_run=dry_run, **{"from": old}),
          lambda: render.change(change))


@branch_group.command("list")
@click.argument("table")
@_common
def branch_list(table: str, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """List branches with the $branches columns and their fork points."""
    from tablekeeper.core import branches

    rows = branches.list_branches(_open(table, warehouse, options))
    _emit(output, [r.as_dict() for r in rows], lambda: render.rows([r.as_dict() for r in rows], "no branches"))


# ---------------------------------------------------------------------------- maintenance
def _now_ms(now: str | None) -> int:
    from tablekeeper.core import timestamps

    return timestamps.now_ms() if now is None else timestamps.parse_instant_ms(now, flag="--now")


@cli.command("expire")
@click.argument("table")
@click.option("--branch", "-b", default=layout.MAIN, show_default=True)
@click.option("--retain-min", type=int, help="snapshot.num-retained.min (default: table option, else 10; >= 1).")
@click.option("--retain-max", type=int, help="snapshot.num-retained.max (default: table option, else unlimited).")
@click.option("--time-retained", help="snapshot.time-retained, e.g. '1 h' (default: table option, else 1 h).")
@click.option("--max-deletes", "expire_limit", type=int, help="snapshot.expire.limit (default: table option, else 50).")
@click.option("--parallelism", type=int, help="Delete threads.")
@click.option("--now", hidden=True, help="Evaluate retention at this time (epoch ms or ISO).")
@click.option("--dry-run", is_flag=True, help="Print the plan, delete nothing.")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              callback=_engine_available, help=_ENGINE_HELP)
@_common
@_maintains("expire", destructive=True)
def expire_cmd(table: str, branch: str, retain_min: int | None, retain_max: int | None, time_retained: str | None,
               expire_limit: int | None, parallelism: int | None, now: str | None, dry_run: bool, engine: str,
               warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Expire old snapshots of TABLE: data, changelog, manifests, then snapshot files, EARLIEST.

    Options come from the flags, else from the table's own Paimon options."""
    from tablekeeper.core import execution, expire, expire_commit, retention_settings

    t = _open(table, warehouse, options, branch)
    retention = retention_settings.from_options(t.options(), retention_settings.RetentionFlags(
        retain_min=retain_min, retain_max=retain_max, time_retained=_duration(time_retained, "--time-retained"),
        expire_limit=expire_limit))
    if engine == "spark":
        _run_on_spark("expire", t, options, dry_run, output, retention=retention, parallelism=parallelism,
                      now_ms=_now_ms(now) if now else None)
        return
    config = expire.expire_config(retention, t.options())
    if dry_run:
        _run_plan(expire.plan_expire(t, config, _now_ms(now)), t, dry_run, output, parallelism)
        return
    made, result = expire_commit.run_expire(t, config, _now_ms(now), lambda p: execution.execute(
        p, t.file_io, parallelism=parallelism, progress=render.progress_callback()))
    _report(made, result, output, branch)


@cli.command("expire-changelog")
@click.argument("table")
@click.option("--branch", "-b", default=layout.MAIN, show_default=True)
@click.option("--parallelism", type=int)
@click.option("--now", hidden=True)
@click.option("--dry-run", is_flag=True)
@_common
@_maintains("expire-changelog", destructive=True)
def expire_changelog_cmd(table: str, branch: str, parallelism: int | None, now: str | None, dry_run: bool,
                         warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Expire long-lived changelog-N files (decoupled changelog.* options of the table)."""
    from tablekeeper.core import execution, expire, expire_commit, retention_settings

    t = _open(table, warehouse, options, branch)
    config = expire.changelog_config(retention_settings.from_options(t.options()), t.options())
    if dry_run:
        _run_plan(expire.plan_expire_changelog(t, config, _now_ms(now)), t, dry_run, output, parallelism)
        return
    # unpublish, verify, then delete (core/expire_commit.py)
    made, result = expire_commit.run_expire_changelog(t, config, _now_ms(now), lambda p: execution.execute(
        p, t.file_io, parallelism=parallelism, progress=render.progress_callback()))
    _report(made, result, output, branch)


@cli.command("expire-partitions")
@click.argument("table")
@click.option("--branch", "-b", default=layout.MAIN, show_default=True)
@click.option("--expiration-time", help="partition.expiration-time, e.g. '30 d' (default: table option).")
@click.option("--strategy", type=click.Choice(["values-time", "update-time"]))
@click.option("--timestamp-formatter", help="Java pattern, e.g. yyyyMMdd.")
@click.option("--timestamp-pattern", help="e.g. '$dt $hour:00:00'.")
@click.option("--max-expires", type=int, help="partition.expiration-max-num (default 100).")
@click.option("--zone-known", is_flag=True, help="Clock of this machine equals the writers' zone (no 12 h margin).")
@click.option("--now", hidden=True)
@click.option("--dry-run", is_flag=True)
@_common
@_maintains("expire-partitions", destructive=True)
def expire_partitions_cmd(table: str, branch: str, expiration_time: str | None, strategy: str | None,
                          timestamp_formatter: str | None, timestamp_pattern: str | None, max_expires: int | None,
                          zone_known: bool, now: str | None, dry_run: bool, warehouse: str | None,
                          options: tuple[str, ...], output: str) -> None:
    """Drop expired partitions with an OVERWRITE commit (files go with snapshot expiration)."""
    if click.get_current_context().meta.get(_KEEP_META, (False, None))[1] is not None:
        raise errors.InvalidInputError(
            "expire-partitions deletes no file: the dropped partitions' files stay until expire removes them",
            fix="leave out --keep-deleted here and give it to the expire that follows")
    from tablekeeper.core import format_guard, partitions

    t = _open(table, warehouse, options, branch, guard=False)
    with t.file_io.one_view():  # one decision: its schema, hints and snapshot read once (FileIO.one_view)
        format_guard.check_latest(t)  # the guard, in the decision's view: nothing has changed yet
        config = partitions.config_from_options(
            t.options(), expiration_time=_duration(expiration_time, "--expiration-time"), strategy=strategy,
            timestamp_formatter=timestamp_formatter, timestamp_pattern=timestamp_pattern, max_expires=max_expires,
            zone_known=zone_known or None)
        if config is None:
            raise errors.InvalidInputError("partition expiration is off for this table",
                                           fix="pass --expiration-time or set partition.expiration-time")
        plan = partitions.plan_partition_expiry(t, config, datetime.fromtimestamp(_now_ms(now) / 1000))
    summary = plan.summary()
    dropped = None if dry_run else partitions.apply_partition_expiry(t, plan, options=_parse_options(options))
    payload = results.document(
        "expire-partitions", t.identifier, branch, dry_run=dry_run, action=None, notes=summary["notes"],
        result=None if dry_run else _nothing_deleted([]), dropped=dropped,
        fields={k: v for k, v in summary.items() if k not in ("operation", "table", "branch", "notes", "files")},
        partition_files=summary["files"])

    def text() -> None:
        verb = "would drop" if dry_run else "dropped"
        click.echo(f"expire-partitions on {t.identifier}: {verb} {len(plan.expired)} partition(s)")
        for p in plan.expired:
            click.echo(f"  - {p.name} ({p.file_count} files)")
        for name in plan.unparseable:
            click.echo(f"  kept (value does not parse): {name}")
        for note in plan.notes:
            click.echo(f"  note: {note}")

    _emit(output, payload, text)


@cli.command("clean-orphans")
@click.argument("table")
@click.option("--older-than", help="Delete only files older than this: an age ('2 d') or a time (ISO/epoch ms). "
                                   "Default: 1 day.")
@click.option("--force", is_flag=True, help="Allow thresholds less than 1 hour ago (no writer may be running).")
@click.option("--parallelism", type=int, help="Delete threads (default: 2 x CPUs, max 8).")
@click.option("--plan-processes", type=click.IntRange(min=1),
              help="Processes that scan manifests while planning, on local warehouses (default: one per CPU, "
                   "at most 4; 1 scans in this process only).")
@click.option("--listing", "listing_path", metavar="PATH",
              help="Take the candidates from a storage inventory instead of listing the store: an S3 Inventory "
                   "manifest.json (CSV, ORC or Parquet) or a CSV/Parquet file list (key,size,last_modified); "
                   "local or on the store. It must predate the threshold (docs/inventory.md).")
@click.option("--now", hidden=True)
@click.option("--dry-run", is_flag=True, help="List the orphans, delete nothing.")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              callback=_engine_available, help=_ENGINE_HELP)
@_common
@_maintains("clean-orphans", destructive=True)
def clean_orphans_cmd(table: str, older_than: str | None, force: bool, parallelism: int | None,
                      plan_processes: int | None, listing_path: str | None, now: str | None, dry_run: bool,
                      engine: str, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Delete files no snapshot, tag, branch or changelog references (never directories or
    metadata JSON)."""
    from tablekeeper.core import orphans, timestamps, writers

    t = _open(table, warehouse, options)
    now_ms = _now_ms(now)
    at, age = timestamps.parse_time_or_age(older_than, flag="--older-than") if older_than is not None else (None, None)
    threshold = orphans.resolve_older_than(now_ms, older_than_ms=at, older_than_age=age, force=force)
    warning = writers.forced_threshold_warning(t, threshold, now_ms)
    if warning is not None:
        click.echo(f"warning: {warning}", err=True)
    if engine == "spark":
        _run_on_spark("clean-orphans", t, options, dry_run, output, older_than=older_than, force=force,
                      parallelism=parallelism, now_ms=_now_ms(now) if now else None, listing=listing_path)
        return
    listing = None
    if listing_path is not None:
        from tablekeeper.core import inventory

        listing = inventory.load_for_table(listing_path, t.file_io, t.root, orphans.listing_roots(t),
                                           _parse_options(options))
    config = orphans.OrphanConfig(threshold, processes=plan_processes, listing=listing)
    _run_plan(orphans.plan_orphan_clean(t, config), t, dry_run, output, parallelism)


# ----------------------------------------------------------------------------------- show
@cli.command("show")
@click.argument("table")
@_common
def show(table: str, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Draw snapshots, tags and branches of TABLE as a timeline (like git log --graph)."""
    t = _open(table, warehouse, options)
    timeline = render.build_timeline(t)
    _emit(output, timeline, lambda: render.timeline(timeline))


# --------------------------------------------------------------------------------- gitops
def _gitops_options(func: F) -> F:
    func = click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table",
                        show_default=True, help="Output format.")(func)
    func = click.option("--now", hidden=True, help="Evaluate at this time (ISO-8601 or epoch ms; tests).")(func)
    func = click.option("--verbose", "-v", is_flag=True, help="Show the effective-policy values behind each action, "
                                                              "with their sources.")(func)
    func = click.option("--no-estimate", is_flag=True, help="Do not size deletions (faster; no file counts).")(func)
    func = click.option("--spark-threshold", type=int, default=100_000, show_default=True,
                        help="engine: Auto runs a step with at least this many files on Spark.")(func)
    func = click.option("--ignore-schedules", is_flag=True,
                        help="Treat every maintenance step as due (a manual run).")(func)
    func = click.option("--table", "tables", multiple=True, metavar="DB.TABLE",
                        help="Only these tables (repeatable).")(func)
    func = click.option("--relative-to", type=click.Choice(["cwd", "manifests"]), default="cwd", show_default=True,
                        help="What relative warehouse paths of catalogs resolve against: the current directory or "
                             "the directory of the manifest file.")(func)
    func = click.option("--filename", "-f", "paths", multiple=True, required=True, metavar="PATH",
                        help="Manifest file or directory (*.yaml, *.yml; repeatable).")(func)
    return func


def _reconcile_setup(paths: tuple[str, ...], relative_to: str, spark_threshold: int, ignore_schedules: bool,
                     no_estimate: bool) -> tuple[Any, Any, Any, Any]:
    from tablekeeper import reconcile
    from tablekeeper.cli import gitops

    desired = gitops.load_desired(paths, relative_to)
    opener = reconcile.Opener()
    config = reconcile.ReconcileConfig(spark_threshold_files=spark_threshold, ignore_schedules=ignore_schedules,
                                       estimate=not no_estimate, table_options=True)
    return desired, opener, gitops.record_store(opener), config


@cli.command("plan")
@_gitops_options
def plan_cmd(paths: tuple[str, ...], relative_to: str, tables: tuple[str, ...], ignore_schedules: bool,
             spark_threshold: int, no_estimate: bool, verbose: bool, now: str | None, output: str) -> None:
    """Show what 'apply -f' would change so storage matches the manifests (terraform plan).

    \b
    Exit codes: 0 nothing would change; 2 something would change (the diff is on stdout);
    2 with an 'error:' line on stderr for bad manifests (nothing is read or changed then).
    """
    from tablekeeper import reconcile
    from tablekeeper.cli import gitops

    desired, opener, store, config = _reconcile_setup(paths, relative_to, spark_threshold, ignore_schedules,
                                                      no_estimate)
    result = reconcile.plan(desired, now=gitops.parse_now(now), store=store, opener=opener, config=config,
                            tables=tables or None)
    _emit(output, result.to_dict(), lambda: gitops.render_plan(result, verbose=verbose))
    if not result.is_empty:
        raise click.exceptions.Exit(gitops.EXIT_CHANGES)


@cli.command("apply")
@_gitops_options
def apply_cmd(paths: tuple[str, ...], relative_to: str, tables: tuple[str, ...], ignore_schedules: bool,
              spark_threshold: int, no_estimate: bool, verbose: bool, now: str | None, output: str) -> None:
    """Make storage match the manifests: create/adopt tags and branches, delete what manifests
    no longer declare, expire tags, run due maintenance. Every manifest is validated first;
    on any problem nothing is changed.

    \b
    Exit codes: 0 applied (or nothing to do); 1 an action failed or conflicts remain;
    2 bad manifests ('error:' on stderr, nothing changed).
    """
    from tablekeeper import reconcile
    from tablekeeper.cli import gitops

    desired, opener, store, config = _reconcile_setup(paths, relative_to, spark_threshold, ignore_schedules,
                                                      no_estimate)
    when = gitops.parse_now(now)
    first = reconcile.plan(desired, now=when, store=store, opener=opener, config=config, tables=tables or None)
    text = output == "table"
    if text:
        gitops.render_plan(first, verbose=verbose)
        if not first.is_empty:
            click.echo("\nApplying:")
    passes = {"n": 0}

    def progress(r: reconcile.ActionResult) -> None:
        if text:
            gitops.render_result(r)

    if tables:
        result = reconcile.converge(reconcile.DesiredState(desired.resources, tuple(
            t for t in desired.tables if t.location.identifier in tables)), now=when, store=store, opener=opener,
            config=config, on_result=progress, first_plan=first)
    else:
        result = reconcile.converge(desired, now=when, store=store, opener=opener, config=config,
                                    on_result=progress, first_plan=first)
    passes["n"] = len(result.applied)
    if output == "json":
        click.echo(json.dumps(result.to_dict(), indent=2, default=str))
    elif result.applied:
        totals = [r.totals() for r in result.applied]
        applied = sum(t["applied"] for t in totals)
        failed = sum(t["failed"] for t in totals)
        deleted = sum(t["deletedFiles"] for t in totals)
        size = sum(t["deletedBytes"] for t in totals)
        extra = f" in {passes['n']} passes (applying made more work due)" if passes["n"] > 1 else ""
        click.echo(f"\nApply complete{extra}: {applied} applied, {failed} failed; deleted {deleted} file(s), "
                   f"{gitops.human_bytes(size)}.")
        if not result.final.is_empty:
            click.echo("Still pending (run apply again):")
            for tp in result.final.tables:
                for a in tp.changes:
                    click.echo(f"  {a.kind} {a.table}: {a.reason}")
    conflicts = [a for a in result.final.reported if a.kind in ("TagConflict", "BranchConflict")]
    if not result.ok or conflicts:
        raise click.exceptions.Exit(gitops.EXIT_APPLY_FAILED)


@cli.command("demo")
@click.option("--dir", "directory", default=".tablekeeper-demo", show_default=True,
              help="Where to build the demo warehouse (recreated).")
@click.option("--examples", type=click.Path(file_okay=False), help="The examples/ directory to apply "
              "(default: the one of the source tree).")
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table", show_default=True)
def demo(directory: str, examples: str | None, output: str) -> None:
    """Build a local warehouse with days of history, apply examples/ step by step through the
    reconciler (tags, a branch, a retention policy), and verify every retained view."""
    from tablekeeper.cli import demo as demo_mod

    report = demo_mod.run(os.path.abspath(directory), echo=output == "table", examples=examples)
    if output == "json":
        click.echo(json.dumps(report, indent=2, default=str))


@cli.command("operator")
@click.option("--namespace", "-n", "namespaces", multiple=True, metavar="NS",
              help="Watch only this namespace (repeatable); default: the whole cluster.")
@click.option("--liveness", default="http://0.0.0.0:8080/healthz", show_default=True, metavar="URL",
              help="Health endpoint for liveness probes; '' disables it.")
@click.option("--metrics-port", type=click.IntRange(min=0, max=65535), default=9090, show_default=True,
              help="Port of the Prometheus metrics server; 0 disables it.")
def operator(namespaces: tuple[str, ...], liveness: str, metrics_port: int) -> None:
    """Run the Kubernetes operator (Kopf, standalone; needs the 'operator' extra)."""
    try:
        from tablekeeper.operator import main as operator_main
    except ImportError as e:
        raise errors.InvalidInputError(f"the operator cannot start: {e}",
                                       fix="install the operator extra: pip install 'tablekeeper[operator]'") from e
    operator_main.run(namespaces=namespaces, liveness_endpoint=liveness or None, metrics_port=metrics_port)


if __name__ != "__main__":  # (``python -m``: the module proper registers them, see the end)
    from tablekeeper.cli import trash_commands  # (its commands use the helpers above)

    cli.add_command(trash_commands.undo_cmd)
    cli.add_command(trash_commands.trash_group)


def _wants_json(argv: list[str]) -> bool:
    """Whether the command line asks for ``--output json`` (also when it fails to parse)."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg in ("-o", "--output") and i + 1 < len(argv) and argv[i + 1] == "json":
            return True
        if arg in ("--output=json", "-ojson", "-o=json"):
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants_json(args)
    _PENDING.clear()

    def failed(e: BaseException) -> None:
        if as_json:  # the one document on stdout: the error, with what the command did before it
            partial = _PENDING.pop() if _PENDING else None
            _PENDING.clear()
            click.echo(json.dumps(results.error(e, partial=partial), indent=2, default=str))

    try:
        rv = cli.main(args=args, prog_name="tablekeeper", standalone_mode=False)
    except errors.TablekeeperError as e:
        failed(e)
        click.echo(f"error: {e.message}", err=True)
        if e.fix:
            click.echo(f"  fix: {e.fix}", err=True)
        return EXIT_INPUT_ERROR
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except click.ClickException as e:
        failed(e)
        e.show()
        return EXIT_INPUT_ERROR
    _print_pending()  # (a command that ends with click's Exit: plan with changes pending)
    return rv if isinstance(rv, int) else 0  # click returns an Exit's code here (plan: 2 = changes pending)


def entry() -> None:
    """The ``tablekeeper`` console script: :func:`main`, then the process ends without freeing
    its heap (``cli/process_exit.py``: threads, atexit handlers and output first)."""
    code = main()
    from tablekeeper.cli import process_exit

    process_exit.exit_now(code)


if __name__ == "__main__":  # (an ordinary exit: profilers such as ``python -m cProfile`` write on return)
    # the module proper, whose commands are all registered (a command module imports it by name)
    from tablekeeper.cli.main import main as registered_main

    sys.exit(registered_main())
