"""``tablekeeper branch``: create, drop, fast-forward, replace main with, rename and list branches."""

from __future__ import annotations

import click

from tablekeeper.cli import catalog_tables, common, printer, render, results
from tablekeeper.core import errors

__all__ = ["branch_group"]


@click.group("branch")
def branch_group() -> None:
    """Create, drop, fast-forward, replace main with, rename and list branches."""


@branch_group.command("create")
@click.argument("table")
@click.argument("name")
@click.option("--from-tag", help="Create from this tag (copies its snapshot and schemas).")
@click.option("--from-snapshot", type=int, help="Create from a snapshot (a protected fork tag is created first).")
@click.option("--empty", is_flag=True, help="Create an empty branch with main's schemas.")
@click.option("--dry-run", is_flag=True)
@common.common_options
@common.maintains("branch create")
@catalog_tables.served_by_catalog
def branch_create(table: str, name: str, from_tag: str | None, from_snapshot: int | None, empty: bool,
                  dry_run: bool, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Create branch NAME of TABLE."""
    from tablekeeper.core import refs

    if sum(x is not None and x is not False for x in (from_tag, from_snapshot, empty or None)) != 1:
        raise errors.InvalidInputError("give exactly one of --from-tag, --from-snapshot, --empty",
                                       fix="e.g. --from-tag nightly")
    t = common.open_table(table, warehouse, options)
    change = refs.create_branch(t, name, from_tag=from_tag, from_snapshot=from_snapshot, dry_run=dry_run)
    printer.emit(output, results.of_change("create-branch", t.identifier, change, dry_run=dry_run),
          lambda: render.change(change))


@branch_group.command("drop")
@click.argument("table")
@click.argument("name")
@click.option("--dry-run", is_flag=True)
@common.common_options
@common.maintains("branch drop", destructive=True)
@catalog_tables.served_by_catalog
def branch_drop(table: str, name: str, dry_run: bool, warehouse: str | None, options: tuple[str, ...],
                output: str) -> None:
    """Drop branch NAME (its own data files become orphans for clean-orphans)."""
    from tablekeeper.core import refs

    t = common.open_table(table, warehouse, options)
    change = refs.drop_branch(t, name, dry_run=dry_run)
    printer.emit(output, results.of_change("drop-branch", t.identifier, change, dry_run=dry_run),
          lambda: render.change(change))


@branch_group.command("fast-forward")
@click.argument("table")
@click.argument("name")
@click.option("--dry-run", is_flag=True)
@common.common_options
@common.maintains("branch fast-forward")
@catalog_tables.served_by_catalog
def branch_fast_forward(table: str, name: str, dry_run: bool, warehouse: str | None, options: tuple[str, ...],
                        output: str) -> None:
    """Merge branch NAME into main: main then reads exactly what the branch reads."""
    from tablekeeper.core import refs

    t = common.open_table(table, warehouse, options)
    change = refs.fast_forward(t, name, dry_run=dry_run)
    printer.emit(output, results.of_change("fast-forward-branch", t.identifier, change, dry_run=dry_run),
          lambda: render.change(change))


@branch_group.command("replace-main")
@click.argument("table")
@click.argument("name")
@click.option("--backup", help="Keep the old main as a branch with this name.")
@click.option("--dry-run", is_flag=True)
@common.common_options
@common.maintains("branch replace-main")
def branch_replace_main(table: str, name: str, backup: str | None, dry_run: bool, warehouse: str | None,
                        options: tuple[str, ...], output: str) -> None:
    """Make branch NAME the table's main (the branch is removed)."""
    from tablekeeper.core import refs

    t = common.open_table(table, warehouse, options)
    change = refs.replace_main(t, name, backup=backup, dry_run=dry_run)
    printer.emit(output, results.of_change("replace-main", t.identifier, change, dry_run=dry_run),
          lambda: render.change(change))


@branch_group.command("rename")
@click.argument("table")
@click.argument("old")
@click.argument("new")
@click.option("--dry-run", is_flag=True)
@common.common_options
@common.maintains("branch rename")
def branch_rename(table: str, old: str, new: str, dry_run: bool, warehouse: str | None, options: tuple[str, ...],
                  output: str) -> None:
    """Rename branch OLD to NEW."""
    from tablekeeper.core import refs

    t = common.open_table(table, warehouse, options)
    change = refs.rename_branch(t, old, new, dry_run=dry_run)
    printer.emit(output, results.of_change("rename-branch", t.identifier, change, dry_run=dry_run, **{"from": old}),
          lambda: render.change(change))


@branch_group.command("list")
@click.argument("table")
@common.common_options
def branch_list(table: str, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """List branches with the $branches columns and their fork points."""
    from tablekeeper.core import refs

    rows = refs.list_branches(common.open_table(table, warehouse, options))
    printer.emit(output, [r.as_dict() for r in rows], lambda: render.rows([r.as_dict() for r in rows], "no branches"))
