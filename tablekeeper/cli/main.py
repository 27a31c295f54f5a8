"""The ``tablekeeper`` command line: tags, branches and the table timeline.

Every destructive command takes ``--dry-run`` and prints what would change; ``--output json``
prints exactly one JSON document on stdout, in one shape for every command that changes a
table (``cli/results.py``), errors included (``{"error": {...}}``). Errors print one line plus
the fix and exit with code 2, having changed nothing.

The commands live in ``cli/commands/`` (one module per family), what they share in
``cli/common.py`` (options, opening a table) and ``cli/printer.py`` (printing, running a plan).

Start-up: the CLI imports click and the engine's constants only; each command imports the
engine modules it runs when it runs (``tablekeeper --help`` or a local ``clean-orphans`` never
loads fsspec, asyncio, fastavro's writers, pyarrow or pypaimon; tests/cli/test_startup.py)."""

from __future__ import annotations

import json
import sys

import click

from tablekeeper.cli import printer, results
from tablekeeper.cli.commands import (
    branches,
    catalogs,
    consumers,
    demo,
    gitops,
    maintenance,
    operator,
    recovery,
    show,
    tags,
    trash,
)
from tablekeeper.core import errors

__all__ = ["main", "entry", "cli"]

EXIT_INPUT_ERROR = 2


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             result_callback=lambda *_a, **_k: printer.print_pending())
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


for command in (tags.tag_group, branches.branch_group, maintenance.expire_cmd, maintenance.expire_changelog_cmd,
                maintenance.expire_partitions_cmd, maintenance.clean_orphans_cmd, show.show, gitops.plan_cmd,
                gitops.apply_cmd, demo.demo, operator.operator, recovery.rollback_cmd, recovery.check_cmd,
                recovery.repair_cmd, recovery.explain_cmd, consumers.consumer_group, catalogs.catalog_group, trash.undo_cmd,
                trash.trash_group):
    cli.add_command(command)


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
    printer.PENDING.clear()

    def failed(e: BaseException) -> None:
        if as_json:  # the one document on stdout: the error, with what the command did before it
            partial = printer.PENDING.pop() if printer.PENDING else None
            printer.PENDING.clear()
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
    printer.print_pending()  # (a command that ends with click's Exit: plan with changes pending)
    return rv if isinstance(rv, int) else 0  # click returns an Exit's code here (plan: 2 = changes pending)


def entry() -> None:
    """The ``tablekeeper`` console script: :func:`main`, then the process ends without freeing
    its heap (``cli/process_exit.py``: threads, atexit handlers and output first)."""
    code = main()
    from tablekeeper.cli import process_exit

    process_exit.exit_now(code)


if __name__ == "__main__":  # (an ordinary exit: profilers such as ``python -m cProfile`` write on return)
    sys.exit(main())
