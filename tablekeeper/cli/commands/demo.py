"""``tablekeeper demo``: a local warehouse with history, the examples applied step by step."""

from __future__ import annotations

import json
import os

import click

__all__ = ["demo"]


@click.command("demo")
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
