"""Snapshot and changelog expiration: the retention a table keeps, the decision as data, its
in-process evaluation, and its execution as unpublish, verify, then delete, re-checked at the
commit point and run in batches. What a root reaches is ``reach``'s; the Spark job evaluates
the same decision."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"Batch": "batches", "run_batches": "batches", "run_with_changelog": "batches", "Evaluator": "commit",
    "Expiration": "commit", "expire_changelogs": "commit", "expire_snapshots": "commit", "run_expire": "commit",
    "run_expire_changelog": "commit", "unpublishing": "commit", "run_checked_with": "commit_point",
    "abort_unreadable_protection": "decision", "effective_deletions": "decision", "ExpirationDecision": "decision",
    "judge_missing": "decision", "ReadOutcome": "decision", "RootUse": "decision", "changelog_config": "planning",
    "changelog_range": "planning", "ChangelogConfig": "planning", "compute_range": "planning",
    "decide_expire": "planning", "decide_expire_changelog": "planning", "expire_config": "planning",
    "ExpireConfig": "planning", "ExpireRange": "planning", "plan_expire": "planning",
    "plan_expire_changelog": "planning", "from_options": "retention", "from_policy": "retention",
    "INT_MAX": "retention", "Retention": "retention", "RetentionFlags": "retention"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .batches import Batch as Batch, run_batches as run_batches, run_with_changelog as run_with_changelog
    from .commit import (Evaluator as Evaluator, Expiration as Expiration, expire_changelogs as expire_changelogs,
        expire_snapshots as expire_snapshots, run_expire as run_expire, run_expire_changelog as run_expire_changelog,
        unpublishing as unpublishing)
    from .commit_point import run_checked_with as run_checked_with
    from .decision import (abort_unreadable_protection as abort_unreadable_protection,
        effective_deletions as effective_deletions, ExpirationDecision as ExpirationDecision,
        judge_missing as judge_missing, ReadOutcome as ReadOutcome, RootUse as RootUse)
    from .planning import (changelog_config as changelog_config, changelog_range as changelog_range,
        ChangelogConfig as ChangelogConfig, compute_range as compute_range, decide_expire as decide_expire,
        decide_expire_changelog as decide_expire_changelog, expire_config as expire_config,
        ExpireConfig as ExpireConfig, ExpireRange as ExpireRange, plan_expire as plan_expire,
        plan_expire_changelog as plan_expire_changelog)
    from .retention import (from_options as from_options, from_policy as from_policy, INT_MAX as INT_MAX,
        Retention as Retention, RetentionFlags as RetentionFlags)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
