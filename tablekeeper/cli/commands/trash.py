"""``tablekeeper undo``, ``tablekeeper trash list`` and ``tablekeeper trash purge``: the table's
trash (core/safety/trash), where runs with ``--keep-deleted`` (or the table option ``trash.keep``)
moved what they removed."""

from __future__ import annotations

import click

from tablekeeper.cli import common, printer, results
from tablekeeper.cli.trash_report import iso

__all__ = ["undo_cmd", "trash_group"]


@click.command("undo")
@click.argument("table")
@click.argument("run")
@click.option("--dry-run", is_flag=True, help="Check the run can be undone and count its files; change nothing.")
@common.common_options
@common.maintains("undo")
def undo_cmd(table: str, run: str, dry_run: bool, warehouse: str | None, options: tuple[str, ...],
             output: str) -> None:
    """Put back everything trash run RUN of TABLE removed: the table then reads as before it.

    Runs are undone newest first; a file whose place holds other bytes now is refused (nothing
    is changed then)."""
    from tablekeeper.core.safety import trash

    t = common.open_table(table, warehouse, options)
    result = trash.undo(t.file_io, t.root, run, dry_run=dry_run)
    payload = results.document(
        "undo", t.identifier, result.run.branch, dry_run=dry_run, action="would-restore" if dry_run else "restored",
        writes=result.hints, fields=result.as_dict(),
        result=None if dry_run else {"restored": result.restored, "restored_bytes": result.restored_bytes,
                                     "already_back": result.already_back, "never_moved": result.never_moved})

    def text() -> None:
        verb = "would restore" if dry_run else "restored"
        click.echo(f"undo {run} ({result.run.operation}) on {t.identifier}: {verb} {result.restored} file(s), "
                   f"{result.restored_bytes} bytes")
        if result.already_back:
            click.echo(f"  {result.already_back} file(s) were back already")
        if result.never_moved:
            click.echo(f"  {result.never_moved} recorded file(s) were never moved (an interrupted run)")
        for hint in result.hints:
            click.echo(f"  hint: {hint}")

    printer.emit(output, payload, text)


@click.group("trash")
def trash_group() -> None:
    """A table's trash: the runs that can be undone, and purging them."""


@trash_group.command("list")
@click.argument("table")
@common.common_options
def trash_list(table: str, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """The trash runs of TABLE, oldest first, with their state and size."""
    from tablekeeper.core import values
    from tablekeeper.core.safety import trash
    from tablekeeper.core.storage import join

    t = common.resolve_table(table, warehouse, options)
    now = values.now_ms()
    rows = []
    for record in trash.list_runs(t.file_io, t.root):
        files = list(t.file_io.walk_files(join(trash.trash_root(t.root), record.run_id, "files")))
        rows.append({"run": record.run_id, "operation": record.operation, "branch": record.branch,
                     "created": iso(record.created_ms), "keep_until": iso(record.keep_until_ms),
                     "state": trash.state_of(t.file_io, t.root, record, now).value,
                     "files": len(files), "bytes": sum(s.size for s in files)})

    def text() -> None:
        if not rows:
            click.echo(f"the trash of {t.identifier} is empty")
        for r in rows:
            click.echo(f"{r['run']}  {r['operation']:<18} {r['state']:<8} until {r['keep_until']}  "
                       f"{r['files']} file(s), {r['bytes']} bytes")

    printer.emit(output, {"operation": "trash-list", "table": t.identifier, "runs": rows}, text)


@trash_group.command("purge")
@click.argument("table")
@click.option("--older-than", metavar="DURATION",
              help="Purge the runs made longer ago than this (e.g. '1 d'), whatever their window. "
                   "Default: the runs past their window, and the runs undone.")
@click.option("--dry-run", is_flag=True, help="Say which runs would be purged; delete nothing.")
@common.common_options
@common.maintains("trash purge")
def trash_purge(table: str, older_than: str | None, dry_run: bool, warehouse: str | None, options: tuple[str, ...],
                output: str) -> None:
    """Delete trash runs of TABLE for good (only paths inside the table's trash)."""
    from tablekeeper.core import values
    from tablekeeper.core.safety import trash

    t = common.open_table(table, warehouse, options)
    now = values.now_ms()
    age = common.duration(older_than, "--older-than")
    cutoff = None if age is None else now - int(age.total_seconds() * 1000)
    result = trash.purge(t.file_io, t.root, now, cutoff, dry_run=dry_run)
    payload = results.document("trash-purge", t.identifier, t.branch, dry_run=dry_run,
                               action="would-purge" if dry_run else "purged", fields=result.as_dict())

    def text() -> None:
        verb = "would purge" if dry_run else "purged"
        click.echo(f"trash purge on {t.identifier}: {verb} {len(result.runs)} run(s), {result.files} file(s), "
                   f"{result.bytes} bytes")
        for run in result.runs:
            click.echo(f"  - {run}")

    printer.emit(output, payload, text)
    if result.failed:
        from tablekeeper.core import errors

        raise errors.StorageError(f"{result.failed} file(s) of the trash could not be deleted",
                                  fix="check permissions and rerun the same command; it resumes")
