"""``tablekeeper consumer list | expire | clear | reset``: the consumer ids that hold history back.

Decisions live in ``tablekeeper.core.refs.consumers``; this module parses, runs and renders."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from tablekeeper.cli import common, printer, render
from tablekeeper.core import paimon

__all__ = ["consumer_group"]

_BRANCH = click.option("--branch", "-b", default=paimon.MAIN, show_default=True, help="Branch of the consumers.")
F = TypeVar("F", bound=Callable[..., Any])


def _age_options(help_text: str) -> Callable[[F], F]:
    """--older-than (what counts as not updated) and the hidden --now."""
    def decorate(func: F) -> F:
        func = click.option("--now", hidden=True)(func)
        return click.option("--older-than", metavar="DURATION", help=help_text)(func)
    return decorate


@click.group("consumer")
def consumer_group() -> None:
    """List, expire, clear and reset consumers (the streaming readers' positions).

    Expiration keeps every snapshot from a consumer's next snapshot on: a consumer id left
    behind by a stopped job keeps all later history alive until it is expired or cleared."""


@consumer_group.command("list")
@click.argument("table")
@_BRANCH
@_age_options("Mark consumers not updated for this long as expired (default: consumer.expiration-time).")
@common.common_options
def consumer_list(table: str, branch: str, older_than: str | None, now: str | None, warehouse: str | None,
                  options: tuple[str, ...], output: str) -> None:
    """List the consumers of TABLE: next snapshot, last update, snapshots held."""
    from tablekeeper.core import values
    from tablekeeper.core.refs import consumers

    t = common.open_table(table, warehouse, options, branch)
    given = common.duration(older_than, "--older-than")
    setting = t.options().get(consumers.EXPIRATION_OPTION)
    expire_after = given if given is not None else (
        values.parse_duration(setting, field=consumers.EXPIRATION_OPTION) if setting else None)
    rows = [r.as_dict() for r in consumers.list_consumers(t, common.now_ms(now), expire_after)]
    printer.emit(output, rows, lambda: render.rows(rows, "no consumers"))


@consumer_group.command("expire")
@click.argument("table")
@_BRANCH
@_age_options("Delete consumers not updated for this long (default: the table's consumer.expiration-time).")
@click.option("--dry-run", is_flag=True, help="Show which consumers would be deleted.")
@common.common_options
@common.maintains("consumer expire")
def consumer_expire(table: str, branch: str, older_than: str | None, now: str | None, dry_run: bool,
                    warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Delete the consumers of TABLE not updated within the expiration time (Paimon's
    consumer.expiration-time); the next 'expire' reclaims the snapshots they held."""
    from tablekeeper.core.refs import consumers

    t = common.open_table(table, warehouse, options, branch)
    expire_after = consumers.expiration_of(t.options(), common.duration(older_than, "--older-than"))
    rows = consumers.list_consumers(t, common.now_ms(now), expire_after)
    printer.run_plan(consumers.plan_expire(t, rows, expire_after), t, dry_run, output, None,
              action="would-expire" if dry_run else "expired")


@consumer_group.command("clear")
@click.argument("table")
@_BRANCH
@click.option("--including", metavar="REGEX", help="Consumer ids to clear (whole-id match; default: all).")
@click.option("--excluding", metavar="REGEX", help="Consumer ids to keep among those included.")
@click.option("--dry-run", is_flag=True, help="Show which consumers would be deleted.")
@common.common_options
@common.maintains("consumer clear")
def consumer_clear(table: str, branch: str, including: str | None, excluding: str | None, dry_run: bool,
                   warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Delete consumers of TABLE by id pattern (Paimon's clear_consumers)."""
    from tablekeeper.core.refs import consumers

    t = common.open_table(table, warehouse, options, branch)
    rows = consumers.list_consumers(t, common.now_ms(None), None)
    printer.run_plan(consumers.plan_clear(t, rows, including, excluding), t, dry_run, output, None,
              action="would-clear" if dry_run else "cleared")


@consumer_group.command("reset")
@click.argument("table")
@click.argument("consumer_id")
@_BRANCH
@click.option("--next-snapshot", type=int, metavar="N",
              help="The snapshot the consumer reads next (must exist); without it the consumer is deleted.")
@click.option("--dry-run", is_flag=True, help="Show what would be written or deleted.")
@common.common_options
@common.maintains("consumer reset")
def consumer_reset(table: str, consumer_id: str, branch: str, next_snapshot: int | None, dry_run: bool,
                   warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Move CONSUMER_ID of TABLE to snapshot N, or delete it (Paimon's reset_consumer).
    Stop the job that uses it first: a running job writes its own position back."""
    from tablekeeper.core.refs import consumers

    t = common.open_table(table, warehouse, options, branch)
    printer.run_plan(consumers.plan_reset(t, consumer_id, next_snapshot), t, dry_run, output, None,
              action="would-reset" if dry_run else "reset")
