"""The one batch loop of expiration: repeat batches while one expired something, then the changelog.

One snapshot-expiration plan covers at most ``expire_limit`` snapshots (Paimon's
``snapshot.expire.limit``), so a run catches up in batches, each planned on the table as the
previous one left it. The reconcile applier, the in-process Spark engine and the Spark job's
driver all repeat batches with this loop, so they stop at the same point: after ``max_batches``,
after a batch that found nothing to do, or after one that expired nothing (it only wrote hints).
A dry run plans one batch (nothing changes, the next would plan the same)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Batches", "run_batches", "run_with_changelog"]

#: One batch: plans (and unless dry, executes) once; returns None when there was nothing to do,
#: else how many snapshots or changelogs it expired.
Batch = Callable[[int], "int | None"]


@dataclass(frozen=True)
class Batches:
    """What a batch loop did: batches that had something to do and what they expired in all."""

    batches: int = 0
    expired: int = 0


def run_batches(batch: Batch, max_batches: int, *, dry_run: bool = False) -> Batches:
    """Call ``batch(n)`` for n = 1..``max_batches`` while the previous call expired something."""
    done = expired = 0
    for n in range(1, max(1, max_batches) + 1):
        count = batch(n)
        if count is None:
            break
        done += 1
        expired += count
        if count == 0 or dry_run:
            break
    return Batches(done, expired)


def run_with_changelog(snapshots: Batch, changelog: Batch, *, changelog_due: bool, max_batches: int,
                       dry_run: bool = False) -> tuple[Batches, Batches | None]:
    """Snapshot expiration in batches, then — when ``changelog_due`` (decided by the caller
    *before* the snapshots moved, as a plan of both actions would) — the decoupled changelog's
    expiration in batches, on the table as the snapshot batches left it."""
    first = run_batches(snapshots, max_batches, dry_run=dry_run)
    second = run_batches(changelog, max_batches, dry_run=dry_run) if changelog_due else None
    return first, second
