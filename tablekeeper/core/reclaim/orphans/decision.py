"""What is safe to delete, decided once, as data: the description of an expiration and of an
orphan clean that every evaluator consumes.

Two evaluators exist. The in-process one (:mod:`tablekeeper.core.reclaim.expire.evaluation`,
:func:`tablekeeper.core.reclaim.orphans.planning.plan_orphan_clean`) reads the manifests itself; the Spark job
(:mod:`tablekeeper.spark.job`) distributes the reads, set differences and deletes. Neither
decides anything: which snapshots expire, which roots protect what, which read errors abort and
which are tolerated, what the metadata tail writes, which directories hold candidates and how a
missing file under a vanished root is judged — all of that is here or in the core function that
builds these objects (``expire.decide_expire``, ``expire.decide_expire_changelog``,
``orphans.decide_orphan_clean``). A rule that two evaluators restate drifts apart; a rule they
both read cannot.

An expiration's own types (which roots expire and protect what, how a missing file is judged)
are in :mod:`tablekeeper.core.reclaim.expire.decision`: an orphan cleanup never loads them.
"""

from __future__ import annotations

from dataclasses import dataclass

from tablekeeper.core import plans

__all__ = ["CandidateDir", "OrphanRoot", "OrphanCleanDecision", "missing_reference_aborts", "is_partition_dir",
    "is_bucket_dir", "is_candidate_name", "may_empty", "bucket_file_kind"]


# -- orphan cleanup --------------------------------------------------------------------------------
_KEPT_NAMES = frozenset({"EARLIEST", "LATEST"})


@dataclass(frozen=True)
class CandidateDir:
    """A directory whose files are candidates: every regular file (``temp_prefix`` None), or
    only leftover temp files (names not starting with ``temp_prefix``, never a hint)."""

    path: str
    kind: plans.FileKind
    temp_prefix: str | None = None


def is_candidate_name(directory: CandidateDir, name: str) -> bool:
    """Whether a regular file ``name`` listed in ``directory`` may be an orphan."""
    if directory.temp_prefix is None:
        return True
    return not name.startswith(directory.temp_prefix) and name not in _KEPT_NAMES


def is_partition_dir(name: str) -> bool:
    """A partition directory level (``key=value``)."""
    return "=" in name


def is_bucket_dir(name: str) -> bool:
    return name.startswith("bucket-")


def bucket_file_kind(name: str, changelog_prefixes: tuple[str, ...]) -> plans.FileKind:
    """What a file in a bucket directory is, by its name: a changelog file (its prefix), an
    index file kept beside the data (``index-file-in-data-file-dir``), else a data file (or one
    of its extra files)."""
    if name.startswith(changelog_prefixes):
        return plans.FileKind.CHANGELOG_DATA
    if name.startswith("index-"):
        return plans.FileKind.INDEX
    return plans.FileKind.DATA


@dataclass(frozen=True)
class OrphanRoot:
    """A snapshot, tag or changelog-N file of some branch: everything it reaches is used.
    ``name`` is the snapshot or changelog id, or the tag name."""

    path: str
    kind: str  # "snapshot" | "tag" | "changelog"
    branch: str
    name: str


def missing_reference_aborts(root_exists: bool) -> bool:
    """A file a root references by a reference Paimon keeps (``guarantees.RULES``) is missing:
    abort (fail closed) while the root exists; a root that vanished meanwhile (a concurrent
    expiration) protects nothing."""
    return root_exists


@dataclass(frozen=True)
class OrphanCleanDecision:
    """An orphan clean, decided: candidates are listed first (Paimon #3075), in ``listings``
    and in the bucket directories found by walking ``partition_depth`` levels of partition
    directories below each of ``data_roots``; only *then* are the roots enumerated
    (``orphans.enumerate_roots``: every snapshot, tag and changelog-N of every branch), and
    every file they reach is used; files older than ``older_than_ms`` used by nothing are
    orphans. A file a root references that is missing aborts while the root exists
    (:func:`missing_reference_aborts`)."""

    table: str
    older_than_ms: int
    listings: tuple[CandidateDir, ...]
    data_roots: tuple[str, ...]
    partition_depth: int
    #: name prefixes of the data and changelog files manifests may reference
    name_prefixes: tuple[str, ...]
    clean_empty_directories: bool = True
    #: name prefixes of changelog files (``bucket_file_kind``)
    changelog_prefixes: tuple[str, ...] = ("changelog-",)


def may_empty(listed: int, deleted: int) -> bool:
    """Whether deleting ``deleted`` files of a bucket directory where the orphan listing saw
    ``listed`` may leave it empty: only then is it checked (and removed if empty); a check is a
    request on an object store, and a directory still holding a listed file cannot be empty."""
    return listed <= deleted
