"""Re-check a plan's inputs at the commit point; re-plan when they changed (issue #12).

An expiration plan is right for the tags, branches and consumers it read. If one of them
changes before the plan's files are deleted (a tag created on an expiring snapshot, a branch
created from a tag, a consumer that moved back), the plan would delete files the new root
needs. :func:`run_checked` records a fingerprint of those inputs before planning, and compares
it again after planning and at every phase boundary of the execution (``seams.guarded``)
before each stage; when it differs, the run stops and plans again (bounded attempts), and
finally fails closed (ConcurrentModificationError) with the reason.

What it cannot close: a root created *during* one delete stage is noticed at the next boundary
only. Writers' commits are not inputs: a commit after planning only adds snapshots, which the
expiration range never reaches (``snapshot.num-retained.min`` counts from the latest)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tablekeeper.core import errors, plans
from tablekeeper.core.paimon import Table
from tablekeeper.core.safety import concurrency

__all__ = ["Fingerprint", "fingerprint", "run_checked", "run_checked_with", "MAX_ATTEMPTS"]

MAX_ATTEMPTS = 3
P = TypeVar("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Fingerprint:
    """The inputs whose *growth* invalidates a deletion plan: tags (branch, name, snapshot id),
    branches, and the lowest consumer position per branch. Tags deleted, branches dropped and
    consumers moving forward only make a plan keep more than it must: they do not count."""

    tags: frozenset[tuple[str, str, int]]
    branches: frozenset[str]
    consumer_floor: tuple[tuple[str, int | None], ...]


def fingerprint(table: Table) -> Fingerprint:
    tags: set[tuple[str, str, int]] = set()
    floors: list[tuple[str, int | None]] = []
    branches = table.all_branches()
    for branch in branches:
        tags.update((branch.branch, t.name, t.snapshot_id) for t in branch.tags())
        positions = [c.next_snapshot for c in branch.consumers()]
        floors.append((branch.branch, min(positions) if positions else None))
    return Fingerprint(frozenset(tags), frozenset(b.branch for b in branches), tuple(floors))


class _InputsChanged(Exception):
    pass


def _grown(before: Fingerprint, now: Fingerprint) -> str | None:
    """Why ``now`` protects something ``before`` did not, or None."""
    if now.branches - before.branches:
        return f"branch(es) created: {sorted(now.branches - before.branches)}"
    if now.tags - before.tags:
        return f"tag(s) created or moved: {sorted(now.tags - before.tags)[:5]}"
    old = dict(before.consumer_floor)
    for branch, floor in now.consumer_floor:
        previous = old.get(branch)
        if floor is not None and (previous is None or floor < previous):
            return f"a consumer of branch {branch!r} is at snapshot {floor}, behind {previous}"
    return None


def run_checked(table: Table, plan: Callable[[], plans.Plan],
                run: Callable[[plans.Plan], plans.ExecutionResult]) -> tuple[plans.Plan, plans.ExecutionResult]:
    """Plan and run, re-planning when the inputs changed (see the module docstring).

    Raises:
        ConcurrentModificationError: the inputs changed in every one of ``MAX_ATTEMPTS`` attempts.
    """
    made, result, reasons = run_checked_with(table, plan, run)
    if reasons:
        made = plans.Plan(made.operation, made.table, made.steps,
                          (*made.notes, f"re-planned {len(reasons)} time(s): {'; '.join(reasons)}"), made.details)
    return made, result


def run_checked_with(table: Table, plan: Callable[[], P], run: Callable[[P], R]) -> tuple[P, R, tuple[str, ...]]:
    """:func:`run_checked` for any engine: ``plan`` makes what ``run`` executes (a plan in
    process, an evaluated decision in Spark); ``run`` must reach a ``seams`` point before each
    delete stage. Returns what was planned and run last, the result, and why it re-planned.

    Raises:
        ConcurrentModificationError: the inputs changed in every one of ``MAX_ATTEMPTS`` attempts.
    """
    reasons: list[str] = []
    for _ in range(MAX_ATTEMPTS):
        before = fingerprint(table)
        made = plan()
        concurrency.point("commit-point:planned")

        def check(point: str, before: Fingerprint = before) -> None:
            if point.startswith("before:") or point == "commit-point:planned":
                grown = _grown(before, fingerprint(table))
                if grown is not None:
                    raise _InputsChanged(grown)

        try:
            check("commit-point:planned")
            with concurrency.guarded(check):
                result = run(made)
        except _InputsChanged as e:
            reasons.append(str(e))
            continue
        return made, result, tuple(reasons)
    raise errors.ConcurrentModificationError(
        f"the inputs of the plan for {table.identifier} changed {MAX_ATTEMPTS} times while it ran: {'; '.join(reasons)}",
        fix="rerun when tags, branches and consumers are not being changed meanwhile; what ran is consistent")
