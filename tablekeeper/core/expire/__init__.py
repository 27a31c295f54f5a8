"""Snapshot and changelog expiration (paimon-semantics.md §2): the retention a table keeps
(:mod:`.retention`), the decision as data (:mod:`.planning`, :mod:`.decision`), its in-process
evaluation (:mod:`.evaluation`), and its execution as unpublish, verify, then delete
(:mod:`.commit`), re-checked at the commit point and run in batches.

It decides which snapshots and changelogs go and what they take with them; what a root
reaches is ``reach``'s, the Spark job evaluates the same decision distributed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "Batch": "batches",
    "ChangelogConfig": "planning",
    "Evaluator": "commit",
    "Expiration": "commit",
    "ExpirationDecision": "decision",
    "ExpireConfig": "planning",
    "INT_MAX": "retention",
    "ReadOutcome": "decision",
    "Retention": "retention",
    "RetentionFlags": "retention",
    "RootUse": "decision",
    "abort_unreadable_protection": "decision",
    "changelog_config": "planning",
    "changelog_range": "planning",
    "compute_range": "planning",
    "decide_expire": "planning",
    "decide_expire_changelog": "planning",
    "effective_deletions": "decision",
    "expire_changelogs": "commit",
    "expire_config": "planning",
    "expire_snapshots": "commit",
    "from_options": "retention",
    "from_policy": "retention",
    "judge_missing": "decision",
    "plan_expire": "planning",
    "plan_expire_changelog": "planning",
    "run_batches": "batches",
    "run_checked_with": "commit_point",
    "run_expire": "commit",
    "run_expire_changelog": "commit",
    "run_with_changelog": "batches",
    "unpublishing": "commit",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.expire.batches import Batch as Batch
    from tablekeeper.core.expire.batches import run_batches as run_batches
    from tablekeeper.core.expire.batches import run_with_changelog as run_with_changelog
    from tablekeeper.core.expire.commit import Evaluator as Evaluator
    from tablekeeper.core.expire.commit import Expiration as Expiration
    from tablekeeper.core.expire.commit import expire_changelogs as expire_changelogs
    from tablekeeper.core.expire.commit import expire_snapshots as expire_snapshots
    from tablekeeper.core.expire.commit import run_expire as run_expire
    from tablekeeper.core.expire.commit import run_expire_changelog as run_expire_changelog
    from tablekeeper.core.expire.commit import unpublishing as unpublishing
    from tablekeeper.core.expire.commit_point import run_checked_with as run_checked_with
    from tablekeeper.core.expire.decision import ExpirationDecision as ExpirationDecision
    from tablekeeper.core.expire.decision import ReadOutcome as ReadOutcome
    from tablekeeper.core.expire.decision import RootUse as RootUse
    from tablekeeper.core.expire.decision import abort_unreadable_protection as abort_unreadable_protection
    from tablekeeper.core.expire.decision import effective_deletions as effective_deletions
    from tablekeeper.core.expire.decision import judge_missing as judge_missing
    from tablekeeper.core.expire.planning import ChangelogConfig as ChangelogConfig
    from tablekeeper.core.expire.planning import ExpireConfig as ExpireConfig
    from tablekeeper.core.expire.planning import changelog_config as changelog_config
    from tablekeeper.core.expire.planning import changelog_range as changelog_range
    from tablekeeper.core.expire.planning import compute_range as compute_range
    from tablekeeper.core.expire.planning import decide_expire as decide_expire
    from tablekeeper.core.expire.planning import decide_expire_changelog as decide_expire_changelog
    from tablekeeper.core.expire.planning import expire_config as expire_config
    from tablekeeper.core.expire.planning import plan_expire as plan_expire
    from tablekeeper.core.expire.planning import plan_expire_changelog as plan_expire_changelog
    from tablekeeper.core.expire.retention import INT_MAX as INT_MAX
    from tablekeeper.core.expire.retention import Retention as Retention
    from tablekeeper.core.expire.retention import RetentionFlags as RetentionFlags
    from tablekeeper.core.expire.retention import from_options as from_options
    from tablekeeper.core.expire.retention import from_policy as from_policy
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
