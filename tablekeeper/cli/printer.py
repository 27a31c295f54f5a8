"""What a command prints: exactly one JSON document on stdout for ``--output json`` (errors too,
printed by :func:`tablekeeper.cli.main.main`), or text; and running a plan, or its dry run."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from tablekeeper.cli import render, results, trash_report
from tablekeeper.cli.common import IO_META
from tablekeeper.core import errors

if TYPE_CHECKING:
    from tablekeeper.core import plans
    from tablekeeper.core.paimon import Table

__all__ = ["PENDING", "emit", "print_pending", "nothing_deleted", "run_plan", "report"]


#: The JSON document of the running command, printed once it finished (or inside the error
#: document of a command that failed after it: ``main``): exactly one document on stdout.
PENDING: list[Any] = []


def emit(output: str, payload: Any, text: Callable[[], None]) -> None:
    payload, text = trash_report.with_trash_run(payload, text)
    if output == "json":
        ctx = click.get_current_context(silent=True)
        io = ctx.meta.get(IO_META) if ctx is not None else None
        if isinstance(payload, dict) and io is not None and "requests" not in payload:  # by kind
            payload = {**payload, "requests": io.requests.counts.snapshot()}
        PENDING[:] = [payload]
    else:
        text()


def print_pending() -> None:
    while PENDING:
        click.echo(json.dumps(PENDING.pop(0), indent=2, default=str))


def nothing_deleted(written: list[str]) -> dict[str, Any]:
    """The ``result`` of a command that only writes metadata files."""
    return {"deleted": {}, "deleted_bytes": {}, "already_gone": {}, "unsized": {}, "failed": [], "failed_count": 0,
            "written": written, "removed_dirs": 0}


def run_plan(plan: plans.Plan, table: Table, dry_run: bool, output: str, parallelism: int | None,
              action: str | None = None) -> None:
    from tablekeeper.core import plans

    if dry_run:  # sized as a run would count (a stat for what the plan cannot size)
        shown = plans.sized(plan, table.file_io)
        emit(output, results.of_plan(shown, branch=table.branch, dry_run=True, action=action),
              lambda: render.plan(shown, dry_run=True))
        return
    result = plans.execute(plan, table.file_io, parallelism=parallelism, progress=render.progress_callback())
    report(plan, result, output, table.branch)


def report(plan: plans.Plan, result: plans.ExecutionResult, output: str, branch: str,
            action: str | None = None) -> None:
    emit(output, results.of_plan(plan, branch=branch, dry_run=False, result=result, action=action),
          lambda: render.plan(plan, dry_run=False, result=result))
    if result.failed:
        raise errors.StorageError(f"{len(result.failed)} file(s) could not be deleted",
                                  fix="check permissions and rerun the same command; it resumes")
