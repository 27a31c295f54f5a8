"""Where Paimon keeps things (paimon-semantics.md §1.1). Main lives at the table root; branch
``X`` keeps only its metadata under ``branch/branch-X/``; manifests, index, statistics and data
are shared by all branches and always live under the table root."""

from __future__ import annotations

__all__ = [
    "MAIN", "SNAPSHOT_DIR", "SCHEMA_DIR", "TAG_DIR", "CHANGELOG_DIR", "CONSUMER_DIR",
    "MANIFEST_DIR", "INDEX_DIR", "STATISTICS_DIR", "BRANCH_DIR", "BRANCH_PREFIX",
    "SNAPSHOT_PREFIX", "SCHEMA_PREFIX", "TAG_PREFIX", "CHANGELOG_PREFIX", "CONSUMER_PREFIX",
    "branch_root", "parse_versioned_name",
]

MAIN = "main"
SNAPSHOT_DIR = "snapshot"
SCHEMA_DIR = "schema"
TAG_DIR = "tag"
CHANGELOG_DIR = "changelog"
CONSUMER_DIR = "consumer"
MANIFEST_DIR = "manifest"
INDEX_DIR = "index"
STATISTICS_DIR = "statistics"
BRANCH_DIR = "branch"
BRANCH_PREFIX = "branch-"
SNAPSHOT_PREFIX = "snapshot-"
SCHEMA_PREFIX = "schema-"
TAG_PREFIX = "tag-"
CHANGELOG_PREFIX = "changelog-"
CONSUMER_PREFIX = "consumer-"


def branch_root(table_root: str, branch: str) -> str:
    """The directory holding ``branch``'s snapshot/, schema/, tag/ ... directories."""
    if branch == MAIN:
        return table_root
    from tablekeeper.core.storage import join  # (the CLI reads the names above before any table is opened)

    return join(table_root, BRANCH_DIR, BRANCH_PREFIX + branch)


def parse_versioned_name(name: str, prefix: str) -> int | None:
    """``snapshot-12`` -> 12; anything whose suffix is not a plain long -> None (Java's
    listVersionedFiles drops such names, e.g. pypaimon's ``snapshot-1<uuid>.tmp``)."""
    if not name.startswith(prefix):
        return None
    rest = name[len(prefix):]
    if not rest.isdigit() or not rest.isascii():
        return None
    return int(rest)
