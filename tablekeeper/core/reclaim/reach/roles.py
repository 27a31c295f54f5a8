"""The roles of a root's manifest lists, and what a retained changelog reads: the words in
which every evaluator states what a root reaches."""

from __future__ import annotations

from tablekeeper.core.paimon import Snapshot
from tablekeeper.core.pycompat import StrEnum

__all__ = ["ListRole", "changelog_reads"]


class ListRole(StrEnum):
    """The three manifest lists of a snapshot, plus its index manifest."""

    BASE = "base"
    DELTA = "delta"
    CHANGELOG = "changelog"
    INDEX = "index"


def changelog_reads(snapshot: Snapshot, producer: str = "none") -> bool:
    """Whether a retained changelog-N (or a snapshot that lives on as one) reads any file: with
    changelog manifests it reads those; without, only under ``changelog-producer=none`` (the
    changelog is the delta). lookup and full-compaction write changelog manifests only on
    compaction, so such a changelog-N reads nothing and Java's expiration deletes its base and
    delta lists (seen on Java-written lookup tables, issue 13). Both evaluators follow this."""
    return bool(snapshot.changelog_manifest_list) or producer.strip().lower() == "none"
