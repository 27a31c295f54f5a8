"""Orphan file cleanup: candidates listed first (live or from a storage inventory), then the
used set of every root of every branch, and the decision as data. It decides which listed
files nothing references; what a root reaches is ``reach``'s."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"bucket_file_kind": "decision", "CandidateDir": "decision", "is_bucket_dir": "decision",
    "is_candidate_name": "decision", "is_partition_dir": "decision", "may_empty": "decision",
    "missing_reference_aborts": "decision", "OrphanCleanDecision": "decision", "check_listing": "inventory",
    "load_for_table": "inventory", "CandidateListing": "planning", "cover_vanished_roots": "planning",
    "decide_orphan_clean": "planning", "enumerate_roots": "planning", "list_candidates": "planning",
    "listed_candidates": "planning", "listing_roots": "planning", "OrphanConfig": "planning",
    "plan_orphan_clean": "planning", "resolve_older_than": "planning", "root_key": "planning", "RootKey": "planning",
    "Root": "references"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .decision import (bucket_file_kind as bucket_file_kind, CandidateDir as CandidateDir,
        is_bucket_dir as is_bucket_dir, is_candidate_name as is_candidate_name, is_partition_dir as is_partition_dir,
        may_empty as may_empty, missing_reference_aborts as missing_reference_aborts,
        OrphanCleanDecision as OrphanCleanDecision)
    from .inventory import check_listing as check_listing, load_for_table as load_for_table
    from .planning import (CandidateListing as CandidateListing, cover_vanished_roots as cover_vanished_roots,
        decide_orphan_clean as decide_orphan_clean, enumerate_roots as enumerate_roots,
        list_candidates as list_candidates, listed_candidates as listed_candidates, listing_roots as listing_roots,
        OrphanConfig as OrphanConfig, plan_orphan_clean as plan_orphan_clean,
        resolve_older_than as resolve_older_than, root_key as root_key, RootKey as RootKey)
    from .references import Root as Root
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
