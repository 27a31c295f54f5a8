"""Orphan file cleanup (paimon-semantics.md §5): the candidates listed first (live, or from a storage
inventory), then the used set of every root of every branch (:mod:`.references`, by a byte
scan of the manifests), and the decision as data (:mod:`.decision`).

It decides which listed files nothing references; what a root reaches is ``reach``'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "CandidateDir": "decision",
    "CandidateListing": "planning",
    "OrphanCleanDecision": "decision",
    "OrphanConfig": "planning",
    "Root": "references",
    "RootKey": "planning",
    "bucket_file_kind": "decision",
    "check_listing": "inventory",
    "cover_vanished_roots": "planning",
    "decide_orphan_clean": "planning",
    "enumerate_roots": "planning",
    "is_bucket_dir": "decision",
    "is_candidate_name": "decision",
    "is_partition_dir": "decision",
    "list_candidates": "planning",
    "listed_candidates": "planning",
    "listing_roots": "planning",
    "load_for_table": "inventory",
    "may_empty": "decision",
    "missing_reference_aborts": "decision",
    "plan_orphan_clean": "planning",
    "resolve_older_than": "planning",
    "root_key": "planning",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.orphans.decision import CandidateDir as CandidateDir
    from tablekeeper.core.orphans.decision import OrphanCleanDecision as OrphanCleanDecision
    from tablekeeper.core.orphans.decision import bucket_file_kind as bucket_file_kind
    from tablekeeper.core.orphans.decision import is_bucket_dir as is_bucket_dir
    from tablekeeper.core.orphans.decision import is_candidate_name as is_candidate_name
    from tablekeeper.core.orphans.decision import is_partition_dir as is_partition_dir
    from tablekeeper.core.orphans.decision import may_empty as may_empty
    from tablekeeper.core.orphans.decision import missing_reference_aborts as missing_reference_aborts
    from tablekeeper.core.orphans.inventory import check_listing as check_listing
    from tablekeeper.core.orphans.inventory import load_for_table as load_for_table
    from tablekeeper.core.orphans.planning import CandidateListing as CandidateListing
    from tablekeeper.core.orphans.planning import OrphanConfig as OrphanConfig
    from tablekeeper.core.orphans.planning import RootKey as RootKey
    from tablekeeper.core.orphans.planning import cover_vanished_roots as cover_vanished_roots
    from tablekeeper.core.orphans.planning import decide_orphan_clean as decide_orphan_clean
    from tablekeeper.core.orphans.planning import enumerate_roots as enumerate_roots
    from tablekeeper.core.orphans.planning import list_candidates as list_candidates
    from tablekeeper.core.orphans.planning import listed_candidates as listed_candidates
    from tablekeeper.core.orphans.planning import listing_roots as listing_roots
    from tablekeeper.core.orphans.planning import plan_orphan_clean as plan_orphan_clean
    from tablekeeper.core.orphans.planning import resolve_older_than as resolve_older_than
    from tablekeeper.core.orphans.planning import root_key as root_key
    from tablekeeper.core.orphans.references import Root as Root
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
