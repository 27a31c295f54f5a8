"""Snapshot and changelog expiration as unpublish, verify, then delete (issue #12).

Paimon's own order (data, manifests, then snapshot files) leaves a gap: a tag created on an
expiring snapshot, a branch created from a tag, or a consumer that moves back after the plan was
made but before the snapshot files go, finds its data already deleted. Here the expiring
snapshots are *unpublished* first, then the decision is made again and compared:

1. **decide** (``expire.decide_expire``) and evaluate, and save an intent: the expiring
   snapshots' JSON, in ``<table>/.tablekeeper/pending/`` (create-if-absent; never read by
   Paimon, never touched by orphan cleanup);
2. **unpublish**: delete the expiring snapshot files, oldest first. No tool can tag or branch
   from them any more (Paimon and tablekeeper both need the snapshot file or a tag holding it);
3. **verify**: decide again on the table as it is now, with the saved snapshots standing in for
   the unpublished ones. A tag, branch or changelog created meanwhile is a root of this
   decision; a consumer that moved back shortens its range, and the snapshots it needs are
   written back from the intent (re-published; only before any file was deleted, i.e. not when
   resuming). Only files *both* evaluations delete are deleted; the rest is left for orphan
   cleanup, and the run says so;
4. **delete** data, changelog, index, statistics and manifest files in Paimon's order, then
   EARLIEST (monotonic, core/safety/concurrency/hint_writes.py); the intent goes last.

Long-lived changelogs (``expire-changelog``) go through the same phases with ``changelog-N``
files in place of snapshot files. A crash at any point is resumed by the next run: it finds the
intent and continues at step 3 (decided on the table as it is then). Snapshot expiration of
tables with a decoupled changelog lifecycle keeps Paimon's order (their changelog-N copies are
written from the snapshot files), with the commit-point re-check of core/reclaim/expire/commit_point.py.

The phases and every decision are here; *evaluating* a decision (which files it deletes) and
deleting them is an :class:`Evaluator`'s: in process (:func:`local_evaluator`) or distributed
(the Spark job's), so both engines get the same safety from this one module.

Each phase ends at a ``seams`` point (``expire:intent``, ``expire:unpublished``,
``expire:verified``; ``expire-changelogs:...`` for changelogs)."""

from __future__ import annotations

import gc
import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

from tablekeeper.core import errors, plans
from tablekeeper.core.paimon import Snapshot, Table
from tablekeeper.core.paimon.manifests import gc_paused
from tablekeeper.core.reclaim.expire import commit_point, evaluation, planning
from tablekeeper.core.reclaim.expire import decision as expire_decisions
from tablekeeper.core.reclaim.reach import Reachability
from tablekeeper.core.safety import concurrency
from tablekeeper.core.storage import join

__all__ = ["intent_path", "run_expire", "run_expire_changelog", "expire_snapshots", "expire_changelogs", "unpublishing",
           "Evaluator", "Expiration", "local_evaluator", "merged", "promote_to_oldest_generation"]

Runner = Callable[[plans.Plan], plans.ExecutionResult]


def intent_path(table: Table, what: str = "snapshots") -> str:
    """Where the intent of an expiration of ``what`` (snapshots | changelogs) of ``table``'s
    branch is saved."""
    return join(table.root, concurrency.LEASE_DIR, "pending", f"expire-{what}--{table.branch}")


@dataclass(frozen=True)
class _WithSaved(Table):
    """``table`` as if the unpublished snapshots were still there (read from the intent)."""

    saved: Mapping[int, bytes] = field(default_factory=dict, compare=False)

    def snapshot(self, snapshot_id: int) -> Snapshot:
        try:
            return super().snapshot(snapshot_id)
        except errors.SnapshotNotFoundError:
            if snapshot_id in self.saved:
                return Snapshot.from_json(self.saved[snapshot_id], what=f"saved snapshot {snapshot_id}")
            raise

    def snapshot_exists(self, snapshot_id: int) -> bool:
        return snapshot_id in self.saved or super().snapshot_exists(snapshot_id)

    def snapshot_ids(self) -> list[int]:
        return sorted(set(super().snapshot_ids()) | set(self.saved))

    def earliest_snapshot_id(self) -> int | None:
        ids = self.snapshot_ids()
        return ids[0] if ids else None


@dataclass(frozen=True)
class _WithSavedChangelogs(Table):
    """``table`` as if the unpublished long-lived changelogs were still there."""

    saved: Mapping[int, bytes] = field(default_factory=dict, compare=False)

    def changelog(self, snapshot_id: int) -> Snapshot:
        try:
            return super().changelog(snapshot_id)
        except FileNotFoundError:
            if snapshot_id in self.saved:
                return Snapshot.from_json(self.saved[snapshot_id], what=f"saved changelog {snapshot_id}")
            raise

    def changelog_ids(self) -> list[int]:
        return sorted(set(super().changelog_ids()) | set(self.saved))


@dataclass(frozen=True)
class _Subject:
    """What an expiration unpublishes: the ``snapshot-N`` or the long-lived ``changelog-N``
    files of a branch, and how core decides it."""

    what: str  # "snapshots" | "changelogs"
    kind: plans.FileKind
    decide: Callable[[Table], expire_decisions.ExpirationDecision]
    path: Callable[[Table, int], str]
    exists: Callable[[Table, int], bool]
    view: Callable[[Table, Mapping[int, bytes]], Table]


def _snapshots(config: planning.ExpireConfig, now_ms: int) -> _Subject:
    return _Subject("snapshots", plans.FileKind.SNAPSHOT, lambda t: planning.decide_expire(t, config, now_ms),
                    Table.snapshot_path, Table.snapshot_exists,
                    lambda t, saved: _WithSaved(t.file_io, t.root, t.branch, t.identifier, saved))


def _changelogs(config: planning.ChangelogConfig, now_ms: int) -> _Subject:
    return _Subject("changelogs", plans.FileKind.CHANGELOG_META,
                    lambda t: planning.decide_expire_changelog(t, config, now_ms),
                    Table.changelog_path, lambda t, cid: t.file_io.exists(t.changelog_path(cid)),
                    lambda t, saved: _WithSavedChangelogs(t.file_io, t.root, t.branch, t.identifier, saved))


def _read_intent(table: Table, what: str) -> dict[int, bytes] | None:
    try:
        raw = json.loads(table.file_io.read_bytes(intent_path(table, what)))
    except FileNotFoundError:
        return None
    return {int(k): v.encode("utf-8") for k, v in raw["snapshots"].items()}


P = TypeVar("P")


@dataclass(frozen=True)
class Evaluator(Generic[P]):
    """How an engine evaluates and carries out core's expiration decisions. Core orders the
    phases (intent, unpublish, verify, delete) and makes every decision; an evaluator only says
    which files a decision deletes (``P``: a plan in process, a materialised DataFrame in Spark),
    keeps the files two evaluations agree on, and deletes. The in-process engine is
    :func:`local_evaluator`; the Spark job has its own, over the same decisions."""

    #: the files ``decision`` deletes on ``table``, without its tail (no side effect)
    evaluate: Callable[[Table, expire_decisions.ExpirationDecision], P]
    #: (the files of the second evaluation that the first deletes too, how many files of the
    #: first are kept); snapshot files are never among them (they are the decision's tail)
    agree: Callable[[P, P], tuple[P, int]]
    #: delete the evaluated files in Paimon's order, then run ``tail`` (core's metadata plan)
    delete: Callable[[P, plans.Plan], plans.ExecutionResult]
    #: runs a metadata plan (snapshot deletions) on the driver
    run_meta: Runner


@dataclass(frozen=True)
class Expiration(Generic[P]):
    """What :func:`expire_snapshots` did: the decision it executed (the verified one), the
    files it deleted (as the evaluator holds them), its notes, and the counts (the evaluator's
    deletes included, as far as it reports them through ``delete``)."""

    decision: expire_decisions.ExpirationDecision
    planned: P
    notes: tuple[str, ...]
    result: plans.ExecutionResult


def unpublishing(decision: expire_decisions.ExpirationDecision) -> tuple[plans.DeleteStep, ...]:
    """The steps of ``decision``'s tail that delete the expiring snapshot or changelog files."""
    kinds = (plans.FileKind.SNAPSHOT, plans.FileKind.CHANGELOG_META)
    return tuple(s for s in decision.tail if isinstance(s, plans.DeleteStep) and s.kind in kinds)


def _plan_of(decision: expire_decisions.ExpirationDecision, steps: tuple[plans.Step, ...]) -> plans.Plan:
    return plans.Plan(decision.operation, decision.table, steps)


def merged(a: plans.ExecutionResult, b: plans.ExecutionResult) -> plans.ExecutionResult:
    """``a`` and ``b`` summed, as the phases of one expiration are reported (zero counts kept,
    as one executor run keeps them: e.g. 0 bytes of changelog files without sizes)."""

    def add(x: Counter[str], y: Counter[str]) -> Counter[str]:
        out = Counter(x)
        out.update(y)
        return out

    return plans.ExecutionResult(add(a.deleted, b.deleted), add(a.deleted_bytes, b.deleted_bytes),
                                     add(a.missing, b.missing), [*a.failed, *b.failed], [*a.written, *b.written],
                                     [*a.removed_dirs, *b.removed_dirs], [*a.order, *b.order],
                                     add(a.unsized, b.unsized))


def expire_snapshots(table: Table, config: planning.ExpireConfig, now_ms: int, ev: Evaluator[P]) -> Expiration[P]:
    """Expire snapshots of ``table``'s branch in the phases of the module docstring, with
    ``ev`` evaluating core's decisions (not for a decoupled changelog lifecycle: see
    :func:`run_expire`).

    Raises:
        IncompleteProtectionSetError, ConcurrentModificationError: nothing more was deleted.
    """
    return _expire_unpublishing(table, _snapshots(config, now_ms), ev)


def expire_changelogs(table: Table, config: planning.ChangelogConfig, now_ms: int,
                      ev: Evaluator[P]) -> Expiration[P]:
    """Expire the long-lived changelogs of ``table``'s branch in the same phases: the expiring
    ``changelog-N`` files are unpublished first (nothing can tag or stream from them any more),
    then the decision is made again with them standing in; a consumer that moved back gets its
    changelogs written back, a tag or branch created meanwhile is a root of the second decision.

    Raises:
        IncompleteProtectionSetError: nothing more was deleted.
    """
    return _expire_unpublishing(table, _changelogs(config, now_ms), ev)


def _expire_unpublishing(table: Table, subject: _Subject, ev: Evaluator[P]) -> Expiration[P]:
    io = table.file_io
    what = subject.what
    saved = _read_intent(table, what)
    unpublished: set[str] = set()  # deleted by this run's first unpublish: not deleted (and counted) twice
    notes: list[str] = []
    first: P | None = None
    done = plans.ExecutionResult()
    if saved is None:
        # one decision is one view of the table (FileIO.one_view): its snapshots, tags, schemas and
        # hints are read once, and the intent saves the very bytes the decision read
        with io.one_view():
            decided = subject.decide(table)
            if decided.expiring_ids:
                first = ev.evaluate(table, decided)
                saved = {}
                for sid in decided.expiring_ids:
                    try:
                        saved[sid] = io.read_bytes(subject.path(table, sid))
                    except FileNotFoundError:
                        continue  # expired by someone else meanwhile
        if not decided.expiring_ids:  # nothing expires (at most a hint to write): nothing to verify
            planned = ev.evaluate(table, decided)
            return Expiration(decided, planned, (), ev.delete(planned, decided.tail_plan()))
        assert saved is not None
        io.write_new(intent_path(table, what), json.dumps(
            {"snapshots": {str(k): v.decode("utf-8") for k, v in saved.items()}}))
        concurrency.point("expire:intent" if what == "snapshots" else f"expire-{what}:intent")
        done = ev.run_meta(_plan_of(decided, unpublishing(decided)))
        unpublished = {f.path for step in unpublishing(decided) for f in step.files}
        concurrency.point("expire:unpublished" if what == "snapshots" else f"expire-{what}:unpublished")
    else:
        notes.append(f"resuming an interrupted expiration of {what} {min(saved)}..{max(saved)}" if saved
                     else f"resuming an interrupted expiration of {what}")
    # verify: decide again with the saved files standing in for the unpublished ones
    view = subject.view(table, saved)
    with io.one_view():  # a view of its own: the table as it is now, each file read once
        again = subject.decide(view)
        notes.extend(_republish(table, subject, saved, set(again.expiring_ids), resuming=first is None))
        planned = ev.evaluate(view, again)
    if first is not None:
        planned, kept = ev.agree(first, planned)
        if kept:
            notes.append(f"{kept} file(s) of the first plan are kept (left for orphan cleanup): a root appeared "
                         f"while the {what} were being expired")
    concurrency.point("expire:verified" if what == "snapshots" else f"expire-{what}:verified")
    unpublish = unpublishing(again)
    # files that became due meanwhile are unpublished before any file goes, like the others (the
    # ones this run unpublished already are left out: stores without a missing-check, S3/OSS plan
    # deletes, would report them deleted a second time)
    due = tuple(replace(step, files=tuple(f for f in step.files if f.path not in unpublished))
                for step in unpublish)
    result = merged(done, ev.run_meta(_plan_of(again, tuple(step for step in due if step.files))))
    result = merged(result, ev.delete(planned, _plan_of(again, tuple(s for s in again.tail if s not in unpublish))))
    if not result.failed:
        io.delete_files([intent_path(table, what)], tell_missing=False)  # ours: no listing to tell it missing
    return Expiration(again, planned, tuple(notes), result)


def _republish(table: Table, subject: _Subject, saved: Mapping[int, bytes], still_expiring: set[int], *,
               resuming: bool) -> list[str]:
    """Write back the unpublished files the verifying decision keeps (e.g. a consumer moved
    back); when resuming, they stay removed (an earlier run may have deleted their files)."""
    notes: list[str] = []
    what = subject.what
    republish = sorted(sid for sid in saved if sid not in still_expiring and not subject.exists(table, sid))
    if resuming and republish:
        # an earlier run may have deleted some of their files already, so they stay
        # unpublished (what only they reference is orphan cleanup's); never a broken snapshot
        notes.append(f"{what} {republish[0]}..{republish[-1]} are no longer due but stay removed: an "
                     "interrupted run had already unpublished them")
        return notes
    for sid in republish:  # e.g. a consumer moved back: its snapshots come back, their files were kept
        try:
            table.file_io.write_new(subject.path(table, sid), saved[sid])
        except FileExistsError:
            pass
    if republish:
        notes.append(f"{what} {republish[0]}..{republish[-1]} were written back: a consumer, tag or branch "
                     "needs them again")
    return notes


def local_evaluator(table: Table, run: Runner) -> Evaluator[plans.Plan]:
    """The in-process evaluator: ``expire_evaluation.evaluate``, executed by ``run``."""

    reach = Reachability(table)
    evaluated: list[tuple[expire_decisions.ExpirationDecision, plans.Plan]] = []

    def evaluate(view: Table, decision: expire_decisions.ExpirationDecision) -> plans.Plan:
        # an equal decision (same range, same roots with the same contents) evaluates to the
        # same plan: the evaluation is a pure function of the decision and immutable manifests;
        # otherwise the manifests the first evaluation decoded are reused (sharing_reads)
        for seen, plan in evaluated:
            if seen == decision:
                return plan
        with gc_paused():
            full = evaluation.evaluate(view, decision, reach if view is table else reach.sharing_reads(view))
        body = full.steps[:len(full.steps) - len(decision.tail)] if decision.reads_manifests else ()
        plan = plans.Plan(full.operation, full.table, body, full.notes, full.details)
        evaluated.append((decision, plan))
        return plan

    def agree(first: plans.Plan, again: plans.Plan) -> tuple[plans.Plan, int]:
        if again is first:  # an equal decision, evaluated once: every file agrees (~100k paths not compared)
            return again, 0
        agreed = {f.path for f in first.files} & {f.path for f in again.files}
        kept = sum(1 for f in first.files if f.path not in agreed)
        steps = tuple(s for s in (_only(s, agreed) for s in again.steps)
                      if not (isinstance(s, plans.DeleteStep) and not s.files))
        return plans.Plan(again.operation, again.table, steps, again.notes, again.details), kept

    def delete(planned: plans.Plan, tail: plans.Plan) -> plans.ExecutionResult:
        return run(plans.Plan(planned.operation, planned.table, (*planned.steps, *tail.steps)))

    return Evaluator(evaluate, agree, delete, run)


def run_expire(table: Table, config: planning.ExpireConfig, now_ms: int,
               run: Runner | None = None) -> tuple[plans.Plan, plans.ExecutionResult]:
    """Expire snapshots of ``table``'s branch in the phases of the module docstring, in
    process. Returns the plan that was executed (with notes on what was kept or re-published)
    and the result.

    Raises:
        IncompleteProtectionSetError, ConcurrentModificationError: nothing more was deleted.
    """
    runner: Runner = run or (lambda p: plans.execute(p, table.file_io))
    # the verify plan reuses the manifests the first plan read; the cyclic GC stays paused from
    # the first plan to the last delete: re-enabled between them, its generation scans walked the
    # plans' ~1M acyclic objects again and again while ~100k files were deleted (issue 13)
    with table.file_io.immutable_reads(), gc_paused():
        try:
            if config.changelog_decoupled:
                return commit_point.run_checked(table, lambda: planning.plan_expire(table, config, now_ms), runner)
            return _executed(expire_snapshots(table, config, now_ms, local_evaluator(table, runner)))
        finally:
            promote_to_oldest_generation()


def promote_to_oldest_generation() -> None:
    """Move every object the collector tracks to its oldest generation, while it is paused.

    An expiration allocates ~1M objects with the collector paused; once it is re-enabled, the
    first young collection walked them all (~0.1 s on the peer table, issue 13) and found nearly
    all alive. ``gc.freeze()`` then ``gc.unfreeze()`` move whole generation lists (O(1)) and
    reset the young count; cyclic garbage among them is still collected, by the next full
    collection. Skipped when an embedding program froze objects itself (unfreeze would release
    them)."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def run_expire_changelog(table: Table, config: planning.ChangelogConfig, now_ms: int,
                         run: Runner | None = None) -> tuple[plans.Plan, plans.ExecutionResult]:
    """Expire the long-lived changelogs of ``table``'s branch in process, unpublishing first
    (:func:`expire_changelogs`). Returns the plan that was executed and the result.

    Raises:
        IncompleteProtectionSetError: nothing more was deleted.
    """
    runner: Runner = run or (lambda p: plans.execute(p, table.file_io))
    with table.file_io.immutable_reads():
        return _executed(expire_changelogs(table, config, now_ms, local_evaluator(table, runner)))


def _executed(done: Expiration[plans.Plan]) -> tuple[plans.Plan, plans.ExecutionResult]:
    """The in-process report of an expiration: one plan in the order it ran."""
    again, planned = done.decision, done.planned
    unpublish = unpublishing(again)
    details = dict(again.details)
    details.update({k: v for k, v in planned.details if k not in details})  # (the evaluation's: ignored references)
    executed = plans.Plan(again.operation, again.table,
                          (*unpublish, *planned.steps, *(s for s in again.tail if s not in unpublish)),
                          (*planned.notes, *done.notes), tuple(details.items()))
    return executed, done.result


def _only(step: plans.Step, paths: set[str]) -> plans.Step:
    if isinstance(step, plans.DeleteStep):
        return plans.DeleteStep(step.kind, tuple(f for f in step.files if f.path in paths))
    return step
