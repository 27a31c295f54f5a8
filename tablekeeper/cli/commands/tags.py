"""``tablekeeper tag``: create, delete, rename, replace and list tags."""

from __future__ import annotations

import click

from tablekeeper.cli import catalog_tables, common, printer, render, results
from tablekeeper.core import paimon

__all__ = ["tag_group"]


@click.group("tag")
def tag_group() -> None:
    """Create, delete, rename, replace and list tags."""


@tag_group.command("create")
@click.argument("table")
@click.argument("name")
@click.option("--snapshot", type=int, help="Snapshot id (default: latest).")
@click.option("--timestamp", help="Tag the latest snapshot committed at or before this time (epoch ms or ISO).")
@click.option("--time-retained", help="Tag TTL in Paimon syntax, e.g. '7 d', '12 h'.")
@click.option("--branch", "-b", default=paimon.MAIN, show_default=True, help="Branch to tag.")
@click.option("--dry-run", is_flag=True, help="Show what would be created.")
@common.common_options
@common.maintains("tag create")
@catalog_tables.served_by_catalog
def tag_create(table: str, name: str, snapshot: int | None, timestamp: str | None, time_retained: str | None,
               branch: str, dry_run: bool, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Create tag NAME on TABLE (idempotent; never moves an existing tag)."""
    from tablekeeper.core import refs

    retained = common.duration(time_retained, "--time-retained")
    t = common.open_table(table, warehouse, options, branch)
    result = refs.create_tag(t, name, snapshot_id=snapshot, timestamp_ms=common.timestamp_ms(timestamp),
                             time_retained=retained, dry_run=dry_run)
    writes = [t.tag_path(name)] if result.action in ("created", "would-create") else []
    payload = results.document("create-tag", t.identifier, branch, dry_run=dry_run, action=result.action,
                               writes=writes, result=None if dry_run else printer.nothing_deleted(writes), tag=name,
                               snapshot_id=result.snapshot_id)
    printer.emit(output, payload, lambda: click.echo(f"{result.action}: tag {name!r} at snapshot {result.snapshot_id}"))


@tag_group.command("delete")
@click.argument("table")
@click.argument("name")
@click.option("--branch", "-b", default=paimon.MAIN, show_default=True)
@click.option("--force", is_flag=True, help="Delete even if a branch was created from this tag.")
@click.option("--parallelism", type=int, help="Delete threads (default: 2 x CPUs, max 8).")
@click.option("--dry-run", is_flag=True, help="Print the cleanup plan, delete nothing.")
@common.common_options
@common.maintains("tag delete", destructive=True)
@catalog_tables.served_by_catalog
def tag_delete(table: str, name: str, branch: str, force: bool, parallelism: int | None, dry_run: bool,
               warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Delete tag NAME and the files only it still references."""
    from tablekeeper.core import plans, refs

    t = common.open_table(table, warehouse, options, branch)
    if dry_run:
        printer.run_plan(refs.plan_delete_tag(t, name, force=force), t, dry_run, output, parallelism, action="would-delete")
        return
    deletion = refs.delete_tag(t, name, force=force, run=lambda p: plans.execute(
        p, t.file_io, parallelism=parallelism, progress=render.progress_callback()))
    printer.report(deletion.executed, deletion.result, output, branch, action="deleted")


@tag_group.command("rename")
@click.argument("table")
@click.argument("old")
@click.argument("new")
@click.option("--branch", "-b", default=paimon.MAIN, show_default=True)
@click.option("--force", is_flag=True, help="Rename even if a branch was created from this tag.")
@click.option("--dry-run", is_flag=True)
@common.common_options
@common.maintains("tag rename")
def tag_rename(table: str, old: str, new: str, branch: str, force: bool, dry_run: bool,
               warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Rename tag OLD to NEW."""
    from tablekeeper.core import refs

    t = common.open_table(table, warehouse, options, branch)
    result = refs.rename_tag(t, old, new, force=force, dry_run=dry_run)
    writes = [t.tag_path(new)] if result.action in ("renamed", "would-rename") else []
    printer.emit(output, results.document("rename-tag", t.identifier, branch, dry_run=dry_run, action=result.action,
                                   writes=writes, result=None if dry_run else printer.nothing_deleted(writes),
                                   notes=[f"tag file renamed: {t.tag_path(old)} -> {t.tag_path(new)}"] if writes else [],
                                   tag=new, snapshot_id=result.snapshot_id, fields={"from": old, "to": new}),
          lambda: click.echo(f"{result.action}: tag {old!r} -> {new!r}"))


@tag_group.command("replace")
@click.argument("table")
@click.argument("name")
@click.option("--snapshot", type=int, help="New snapshot id (default: latest).")
@click.option("--time-retained", help="New TTL, e.g. '7 d' (default: keep the old one).")
@click.option("--branch", "-b", default=paimon.MAIN, show_default=True)
@click.option("--force", is_flag=True, help="Replace even if a branch was created from this tag.")
@click.option("--dry-run", is_flag=True)
@common.common_options
@common.maintains("tag replace")
def tag_replace(table: str, name: str, snapshot: int | None, time_retained: str | None, branch: str, force: bool,
                dry_run: bool, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Point existing tag NAME at another snapshot."""
    from tablekeeper.core import refs

    retained = common.duration(time_retained, "--time-retained")
    t = common.open_table(table, warehouse, options, branch)
    result = refs.replace_tag(t, name, snapshot_id=snapshot, time_retained=retained, force=force, dry_run=dry_run)
    writes = [t.tag_path(name)] if result.action in ("replaced", "would-replace") else []
    printer.emit(output, results.document("replace-tag", t.identifier, branch, dry_run=dry_run, action=result.action,
                                   writes=writes, result=None if dry_run else printer.nothing_deleted(writes), tag=name,
                                   snapshot_id=result.snapshot_id),
          lambda: click.echo(f"{result.action}: tag {name!r} at snapshot {result.snapshot_id}"))


@tag_group.command("list")
@click.argument("table")
@click.option("--branch", "-b", default=paimon.MAIN, show_default=True)
@common.common_options
def tag_list(table: str, branch: str, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """List tags with the $tags columns."""
    from tablekeeper.core import refs

    rows = refs.list_tags(common.open_table(table, warehouse, options, branch))
    printer.emit(output, [r.as_dict() for r in rows], lambda: render.rows([r.as_dict() for r in rows], "no tags"))
