"""Applying a plan: each change action is carried out through the core planners and executors.

- Maintenance steps are **re-planned** at apply time with the parameters recorded in the action
  (the core planners are fail-closed and read the table as it is now); expiration runs batch
  after batch (``expireLimit`` / ``maxPerRun``) until nothing more is due, bounded by
  ``ReconcileConfig.max_batches``, so a plan right after an apply is empty.
- Ownership records are written *before* creating a tag or branch (a crash in between leaves a
  record the next plan repairs by recreating, never an untracked object), and removed after a
  deletion.
- One failing action does not stop the others (an action depending on it then fails too); its
  error is in the result.
- Reported actions (conflicts, notes, dry-run orphan reports) are never applied.

:func:`converge` plans and applies up to three times, because applying can make new work due:
a partition drop commits a snapshot that may cross an auto-tag period, a new branch can only
receive its declared tags once it exists.

The package: :mod:`.results` (what applying reports), :mod:`.steps` (one handler per action
kind), :mod:`.passes` (:func:`apply` and :func:`converge`).
"""

from tablekeeper.reconcile.applier.passes import apply, converge
from tablekeeper.reconcile.applier.results import ActionResult, ApplyResult, ConvergeResult, KeptRun

__all__ = ["ActionResult", "ApplyResult", "ConvergeResult", "KeptRun", "apply", "converge"]
