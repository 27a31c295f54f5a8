"""``tablekeeper show``: a table's snapshots, tags and branches as a timeline."""

from __future__ import annotations

import click

from tablekeeper.cli import common, printer, render

__all__ = ["show"]


@click.command("show")
@click.argument("table")
@common.common_options
def show(table: str, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Draw snapshots, tags and branches of TABLE as a timeline (like git log --graph)."""
    t = common.open_table(table, warehouse, options)
    timeline = render.build_timeline(t)
    printer.emit(output, timeline, lambda: render.timeline(timeline))
