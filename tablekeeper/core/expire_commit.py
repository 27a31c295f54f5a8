"""Snapshot expiration as unpublish, verify, then delete (issue #12).

Paimon's own order (data, manifests, then snapshot files) leaves a gap: a tag created on an
expiring snapshot, a branch created from a tag, or a consumer that moves back after the plan was
made but before the snapshot files go, finds its data already deleted. Here the expiring
snapshots are *unpublished* first, then the plan is made again and compared:

1. **plan** (``expire.plan_expire``), and save an intent: the expiring snapshots' JSON, in
   ``<table>/.tablekeeper/pending/`` (create-if-absent; never read by Paimon, never touched by
   orphan cleanup);
2. **unpublish**: delete the expiring snapshot files, oldest first. No tool can tag or branch
   from them any more (Paimon and tablekeeper both need the snapshot file or a tag holding it);
3. **verify**: plan again on the table as it is now, with the saved snapshots standing in for
   the unpublished ones. A tag, branch or changelog created meanwhile is a root of this plan; a
   consumer that moved back shortens its range, and the snapshots it needs are written back
   from the intent (re-published; only before any file was deleted, i.e. not when resuming).
   Only files *both* plans delete are deleted; the rest is left for orphan cleanup, and the run
   says so. Every root is read again (a new decision); if it equals the first, so does the
   plan (evaluation is pure over immutable manifests); otherwise the manifests the first plan
   decoded are reused (``Reachability.sharing_reads``): only new roots' manifests are read;
4. **delete** data, changelog, index, statistics and manifest files in Paimon's order, then
   EARLIEST (monotonic, core/hint_writes.py); the intent goes last.

A crash at any point is resumed by the next run: it finds the intent and continues at step 3
(re-planned on the table as it is then). Tables with a decoupled changelog lifecycle keep
Paimon's order (their changelog-N copies are written from the snapshot files), with the
commit-point re-check of core/commit_point.py.

Each phase ends at a ``seams`` point (``expire:intent``, ``expire:unpublished``,
``expire:verified``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tablekeeper.core import commit_point, decisions, errors, execution, expire, lease, plans, seams
from tablekeeper.core.paimon import layout
from tablekeeper.core.paimon.snapshot import Snapshot
from tablekeeper.core.paimon.table import Table
from tablekeeper.core.reachability import Reachability
from tablekeeper.core.storage import basename, join

__all__ = ["intent_path", "run_expire"]

Runner = Callable[[plans.Plan], execution.ExecutionResult]


def intent_path(table: Table) -> str:
    return join(table.root, lease.LEASE_DIR, "pending", f"expire-snapshots--{table.branch}")


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


def _snapshot_id(path: str) -> int:
    sid = layout.parse_versioned_name(basename(path), layout.SNAPSHOT_PREFIX)
    assert sid is not None, path
    return sid


def _read_intent(table: Table) -> dict[int, bytes] | None:
    try:
        raw = json.loads(table.file_io.read_bytes(intent_path(table)))
    except FileNotFoundError:
        return None
    return {int(k): v.encode("utf-8") for k, v in raw["snapshots"].items()}


def _split(plan: plans.Plan) -> tuple[list[plans.DeleteStep], list[plans.Step], list[plans.Step]]:
    """(snapshot deletions, the file stages, the hint writes)."""
    unpublish = [s for s in plan.steps if isinstance(s, plans.DeleteStep) and s.kind == plans.FileKind.SNAPSHOT]
    hints_: list[plans.Step] = [s for s in plan.steps if isinstance(s, plans.WriteStep)]
    files = [s for s in plan.steps if s not in unpublish and s not in hints_]
    return unpublish, files, hints_


def _merge(a: execution.ExecutionResult, b: execution.ExecutionResult) -> execution.ExecutionResult:
    return execution.ExecutionResult(a.deleted + b.deleted, a.deleted_bytes + b.deleted_bytes, a.missing + b.missing,
                                     [*a.failed, *b.failed], [*a.written, *b.written],
                                     [*a.removed_dirs, *b.removed_dirs], [*a.order, *b.order])


def run_expire(table: Table, config: expire.ExpireConfig, now_ms: int,
               run: Runner | None = None) -> tuple[plans.Plan, execution.ExecutionResult]:
    """Expire snapshots of ``table``'s branch in the phases of the module docstring. Returns
    the plan that was executed (with notes on what was kept or re-published) and the result.

    Raises:
        IncompleteProtectionSetError, ConcurrentModificationError: nothing more was deleted.
    """
    runner: Runner = run or (lambda p: execution.execute(p, table.file_io))
    with table.file_io.immutable_reads():  # the verify plan reuses the manifests the first plan read
        if config.changelog_decoupled:
            return commit_point.run_checked(table, lambda: expire.plan_expire(table, config, now_ms), runner)
        return _run_expire(table, config, now_ms, runner)


def _run_expire(table: Table, config: expire.ExpireConfig, now_ms: int,
                runner: Runner) -> tuple[plans.Plan, execution.ExecutionResult]:
    io = table.file_io
    saved = _read_intent(table)
    notes: list[str] = []
    first: plans.Plan | None = None
    done = execution.ExecutionResult()
    reach: Reachability | None = None
    first_decision: decisions.ExpirationDecision | None = None
    if saved is None:
        reach = Reachability(table)
        first_decision = expire.decide_expire(table, config, now_ms)
        first = expire.evaluate_expire(table, first_decision, reach)
        unpublish, _files, _hints = _split(first)
        if not unpublish:  # nothing expires (at most a hint to write): nothing to verify
            return first, runner(first)
        expiring = [_snapshot_id(f.path) for s in unpublish for f in s.files]
        saved = {}
        for sid in expiring:
            try:
                saved[sid] = io.read_bytes(table.snapshot_path(sid))
            except FileNotFoundError:
                continue  # expired by someone else meanwhile
        io.write_new(intent_path(table), json.dumps(
            {"snapshots": {str(k): v.decode("utf-8") for k, v in saved.items()}}))
        seams.point("expire:intent")
        done = runner(plans.Plan(first.operation, first.table, tuple(unpublish)))
        seams.point("expire:unpublished")
    else:
        notes.append(f"resuming an interrupted expiration of snapshots {min(saved)}..{max(saved)}")
    # verify: plan again with the saved snapshots standing in for the unpublished ones
    view = _WithSaved(table.file_io, table.root, table.branch, table.identifier, saved)
    # every root is read again (the decision); manifests (immutable) the first plan decoded are
    # not. An equal decision (same range, same roots with the same contents) evaluates to the
    # same plan: the evaluation is a pure function of the decision and immutable manifests.
    decision = expire.decide_expire(view, config, now_ms)
    if first is not None and decision == first_decision:
        again = first
    else:
        again = expire.evaluate_expire(view, decision, reach.sharing_reads(view) if reach is not None else None)
    unpublish, files, hint_steps = _split(again)
    still_expiring = {_snapshot_id(f.path) for s in unpublish for f in s.files}
    republish = sorted(sid for sid in saved if sid not in still_expiring and not table.snapshot_exists(sid))
    if first is None and republish:
        # resuming: an earlier run may have deleted some of their files already, so they stay
        # unpublished (what only they reference is orphan cleanup's); never a broken snapshot
        notes.append(f"snapshots {republish[0]}..{republish[-1]} are no longer due but stay removed: an "
                     "interrupted run had already unpublished them")
        republish = []
    for sid in republish:  # e.g. a consumer moved back: its snapshots come back, their files were kept
        try:
            io.write_new(table.snapshot_path(sid), saved[sid])
        except FileExistsError:
            pass
    if republish:
        notes.append(f"snapshots {republish[0]}..{republish[-1]} were written back: a consumer, tag or branch "
                     "needs them again")
    if first is not None:
        agreed = {f.path for f in first.files} & {f.path for f in again.files}
        kept = [f for f in first.files if f.path not in agreed and f.kind != plans.FileKind.SNAPSHOT]
        if kept:
            notes.append(f"{len(kept)} file(s) of the first plan are kept (left for orphan cleanup): a root appeared "
                         "while the snapshots were being expired")
        files = [s for s in (_only(s, agreed) for s in files)
                 if not (isinstance(s, plans.DeleteStep) and not s.files)]
    seams.point("expire:verified")
    executed = plans.Plan(again.operation, again.table, (*unpublish, *files, *hint_steps),
                          (*again.notes, *notes), again.details)
    result = runner(plans.Plan(again.operation, again.table, (*unpublish, *files, *hint_steps)))
    if not result.failed:
        io.delete_files([intent_path(table)])
    return executed, _merge(done, result)


def _only(step: plans.Step, paths: set[str]) -> plans.Step:
    if isinstance(step, plans.DeleteStep):
        return plans.DeleteStep(step.kind, tuple(f for f in step.files if f.path in paths))
    return step
