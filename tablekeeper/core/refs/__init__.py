"""What pins history: tags and branches (create, delete: unpublish, verify, then delete; rename,
replace, list), tag auto-creation and expiry by Paimon's rules, fork points derived from storage;
and the readers' consumers (``consumers``: listing, expiry, the oldest snapshot they hold). What a
tag or consumer protects is ``reclaim.reach``'s."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"BranchChange": "branches", "create_branch": "branches", "drop_branch": "branches",
    "fast_forward": "branches", "fork_tag_name": "branches", "list_branches": "branches", "rename_branch": "branches",
    "replace_main": "branches", "fork_point": "forks", "fork_points": "forks", "fork_users": "forks",
    "ForkPoint": "forks", "identities_of": "forks", "main_identities": "forks", "AutoTagRules": "tag_auto", "ExpiredTag": "tag_auto", "local_wall_clock": "tag_auto",
    "parse_zone_id": "tag_auto", "plan_auto_tags": "tag_auto", "plan_batch_count_expiry": "tag_auto",
    "plan_ttl_expiry": "tag_auto", "SnapshotPoint": "tag_auto", "TagPoint": "tag_auto", "delete_tag": "tag_deletion",
    "TagPeriodHandler": "tag_periods", "create_tag": "tags", "list_tags": "tags", "plan_delete_tag": "tags",
    "rename_tag": "tags", "replace_tag": "tags"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .branches import (BranchChange as BranchChange, create_branch as create_branch, drop_branch as drop_branch,
        fast_forward as fast_forward, fork_tag_name as fork_tag_name, list_branches as list_branches,
        rename_branch as rename_branch, replace_main as replace_main)
    from .forks import (fork_point as fork_point, fork_points as fork_points, fork_users as fork_users,
        ForkPoint as ForkPoint, identities_of as identities_of, main_identities as main_identities)
    from .tag_auto import (AutoTagRules as AutoTagRules, ExpiredTag as ExpiredTag,
        local_wall_clock as local_wall_clock, parse_zone_id as parse_zone_id, plan_auto_tags as plan_auto_tags,
        plan_batch_count_expiry as plan_batch_count_expiry, plan_ttl_expiry as plan_ttl_expiry,
        SnapshotPoint as SnapshotPoint, TagPoint as TagPoint)
    from .tag_deletion import delete_tag as delete_tag
    from .tag_periods import TagPeriodHandler as TagPeriodHandler
    from .tags import (create_tag as create_tag, list_tags as list_tags, plan_delete_tag as plan_delete_tag,
        rename_tag as rename_tag, replace_tag as replace_tag)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
