"""Plans that remove or move consumers, as Paimon's ConsumerManager does:

- expire: a consumer whose file was last modified longer ago than ``consumer.expiration-time``
  (Paimon compares the file's modification time; a running consumer rewrites its file on every
  checkpoint) is deleted;
- clear: consumers whose id matches ``including`` (a regular expression matched against the
  whole id, default every id) and not ``excluding`` are deleted (``clear_consumers``);
- reset: the consumer's file is rewritten to ``nextSnapshot = N`` (N must be an existing
  snapshot), or deleted without N (``reset_consumer``).

Plans are ``plans.Plan`` values carried out by ``core/plans/execution.py`` like every other deletion."""

from __future__ import annotations

import re
from datetime import timedelta

from tablekeeper.core import errors, paimon, plans
from tablekeeper.core.paimon import Consumer, Table
from tablekeeper.core.refs.consumers.listing import ConsumerRow
from tablekeeper.core.storage import join

__all__ = ["EXPIRATION_OPTION", "expiration_of", "plan_expire", "plan_clear", "plan_reset", "consumer_path"]

#: Paimon's option: consumers not updated for this long are deleted (default: never).
EXPIRATION_OPTION = "consumer.expiration-time"


def consumer_path(table: Table, consumer_id: str) -> str:
    return join(table.dir(paimon.CONSUMER_DIR), f"{paimon.CONSUMER_PREFIX}{consumer_id}")


def expiration_of(options: dict[str, str], given: timedelta | None) -> timedelta:
    """The expiration age: ``given``, else the table's ``consumer.expiration-time``.

    Raises:
        InvalidInputError: neither is set (Paimon never expires consumers then).
    """
    if given is not None:
        return given
    from tablekeeper.core import values

    value = options.get(EXPIRATION_OPTION)
    if not value:
        raise errors.InvalidInputError(
            f"the table does not set {EXPIRATION_OPTION}, so its consumers never expire",
            fix="pass --older-than DURATION (e.g. '7 d'), or set the table option")
    return values.parse_duration(value, field=EXPIRATION_OPTION)


def _deletes(table: Table, rows: list[ConsumerRow], operation: str, why: str) -> plans.Plan:
    files = [plans.PlannedFile(consumer_path(table, r.consumer_id), plans.FileKind.OTHER, None,
                               f"consumer {r.consumer_id} {why}") for r in rows]
    return plans.Plan(operation, table.identifier, plans.Plan.ordered_deletes(files) if files else (),
                      details=(("consumers", [r.consumer_id for r in rows]),))


def plan_expire(table: Table, rows: list[ConsumerRow], expire_after: timedelta) -> plans.Plan:
    """Delete the consumers not updated for longer than ``expire_after`` (``rows`` from
    ``listing.rows_of`` with the same age)."""
    return _deletes(table, [r for r in rows if r.age > expire_after], "expire-consumers",
                    f"was not updated for more than {expire_after}")


def _pattern(value: str | None, flag: str) -> re.Pattern[str] | None:
    if value is None or not value.strip():
        return None
    try:
        return re.compile(value)
    except re.error as e:
        raise errors.InvalidInputError(f"{flag} {value!r} is not a regular expression: {e}",
                                       fix="give a regular expression, e.g. 'job-.*'") from None


def plan_clear(table: Table, rows: list[ConsumerRow], including: str | None, excluding: str | None) -> plans.Plan:
    inc = _pattern(including, "--including") or re.compile(".*")
    exc = _pattern(excluding, "--excluding")
    chosen = [r for r in rows if inc.fullmatch(r.consumer_id) and not (exc and exc.fullmatch(r.consumer_id))]
    return _deletes(table, chosen, "clear-consumers", "matched the clear patterns")


def plan_reset(table: Table, consumer_id: str, next_snapshot: int | None) -> plans.Plan:
    """Rewrite (or with no ``next_snapshot``, delete) consumer ``consumer_id``.

    Raises:
        InvalidInputError: a bad id. SnapshotNotFoundError: ``next_snapshot`` does not exist.
    """
    if not consumer_id or "/" in consumer_id or consumer_id.strip() != consumer_id:
        raise errors.InvalidInputError(f"consumer id {consumer_id!r} is not valid",
                                       fix="give the id as listed by 'tablekeeper consumer list'")
    path = consumer_path(table, consumer_id)
    if next_snapshot is None:
        if not table.file_io.exists(path):
            raise errors.NotFoundError(f"consumer {consumer_id!r} does not exist on branch {table.branch!r}",
                                       fix=f"list consumers with 'tablekeeper consumer list {table.identifier}'")
        return plans.Plan("reset-consumer", table.identifier, plans.Plan.ordered_deletes(
            [plans.PlannedFile(path, plans.FileKind.OTHER, None, f"consumer {consumer_id} reset without a snapshot")]),
            details=(("consumers", [consumer_id]),))
    table.snapshot(next_snapshot)  # as Paimon: the snapshot must exist (SnapshotNotFoundError)
    return plans.Plan("reset-consumer", table.identifier,
                      (plans.WriteStep(path, Consumer(consumer_id, next_snapshot).to_json(),
                                       f"consumer {consumer_id} continues at snapshot {next_snapshot}"),),
                      details=(("consumers", [consumer_id]), ("next_snapshot_id", next_snapshot)))
