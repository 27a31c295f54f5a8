"""Tags and branches: create, delete (unpublish, verify, then delete), rename, replace, list; tag
auto-creation and expiry as Paimon's rules state them; branches created, dropped,
fast-forwarded and replacing main; fork points derived from storage.

It decides what a tag or branch operation changes; what a tag protects is ``reach``'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "AutoTagRules": "tag_auto",
    "BranchChange": "branches",
    "ExpiredTag": "tag_auto",
    "SnapshotPoint": "tag_auto",
    "TagPeriodHandler": "tag_periods",
    "TagPoint": "tag_auto",
    "create_branch": "branches",
    "create_tag": "tags",
    "delete_tag": "tag_deletion",
    "drop_branch": "branches",
    "fast_forward": "branches",
    "fork_points": "forks",
    "fork_tag_name": "branches",
    "fork_users": "forks",
    "list_branches": "branches",
    "list_tags": "tags",
    "local_wall_clock": "tag_auto",
    "main_identities": "forks",
    "parse_zone_id": "tag_auto",
    "plan_auto_tags": "tag_auto",
    "plan_batch_count_expiry": "tag_auto",
    "plan_delete_tag": "tags",
    "plan_ttl_expiry": "tag_auto",
    "rename_branch": "branches",
    "rename_tag": "tags",
    "replace_main": "branches",
    "replace_tag": "tags",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.refs.branches import BranchChange as BranchChange
    from tablekeeper.core.refs.branches import create_branch as create_branch
    from tablekeeper.core.refs.branches import drop_branch as drop_branch
    from tablekeeper.core.refs.branches import fast_forward as fast_forward
    from tablekeeper.core.refs.branches import fork_tag_name as fork_tag_name
    from tablekeeper.core.refs.branches import list_branches as list_branches
    from tablekeeper.core.refs.branches import rename_branch as rename_branch
    from tablekeeper.core.refs.branches import replace_main as replace_main
    from tablekeeper.core.refs.forks import fork_points as fork_points
    from tablekeeper.core.refs.forks import fork_users as fork_users
    from tablekeeper.core.refs.forks import main_identities as main_identities
    from tablekeeper.core.refs.tag_auto import AutoTagRules as AutoTagRules
    from tablekeeper.core.refs.tag_auto import ExpiredTag as ExpiredTag
    from tablekeeper.core.refs.tag_auto import SnapshotPoint as SnapshotPoint
    from tablekeeper.core.refs.tag_auto import TagPoint as TagPoint
    from tablekeeper.core.refs.tag_auto import local_wall_clock as local_wall_clock
    from tablekeeper.core.refs.tag_auto import parse_zone_id as parse_zone_id
    from tablekeeper.core.refs.tag_auto import plan_auto_tags as plan_auto_tags
    from tablekeeper.core.refs.tag_auto import plan_batch_count_expiry as plan_batch_count_expiry
    from tablekeeper.core.refs.tag_auto import plan_ttl_expiry as plan_ttl_expiry
    from tablekeeper.core.refs.tag_deletion import delete_tag as delete_tag
    from tablekeeper.core.refs.tag_periods import TagPeriodHandler as TagPeriodHandler
    from tablekeeper.core.refs.tags import create_tag as create_tag
    from tablekeeper.core.refs.tags import list_tags as list_tags
    from tablekeeper.core.refs.tags import plan_delete_tag as plan_delete_tag
    from tablekeeper.core.refs.tags import rename_tag as rename_tag
    from tablekeeper.core.refs.tags import replace_tag as replace_tag
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
