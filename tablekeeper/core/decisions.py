"""What is safe to delete, decided once, as data: the description of an expiration and of an
orphan clean that every evaluator consumes.

Two evaluators exist. The in-process one (:mod:`tablekeeper.core.expire_evaluation`,
:func:`tablekeeper.core.orphans.plan_orphan_clean`) reads the manifests itself; the Spark job
(:mod:`tablekeeper.spark.job`) distributes the reads, set differences and deletes. Neither
decides anything: which snapshots expire, which roots protect what, which read errors abort and
which are tolerated, what the metadata tail writes, which directories hold candidates and how a
missing file under a vanished root is judged — all of that is here or in the core function that
builds these objects (``expire.decide_expire``, ``expire.decide_expire_changelog``,
``orphans.decide_orphan_clean``). A rule that two evaluators restate drifts apart; a rule they
both read cannot.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tablekeeper.core import errors, plans
from tablekeeper.core.paimon.manifest_records import FileRef
from tablekeeper.core.paimon.snapshot import Snapshot

__all__ = [
    "ListRole", "ReadOutcome", "RootUse", "ExpirationDecision", "judge_missing", "effective_deletions",
    "CandidateDir", "OrphanRoot", "OrphanCleanDecision", "missing_reference_aborts", "changelog_reads", "optional_index", "optional_list",
    "is_partition_dir", "is_bucket_dir", "is_candidate_name", "abort_unreadable_protection", "may_empty",
]


class ListRole(enum.StrEnum):
    """The three manifest lists of a snapshot, plus its index manifest."""

    BASE = "base"
    DELTA = "delta"
    CHANGELOG = "changelog"
    INDEX = "index"


class ReadOutcome(enum.StrEnum):
    """What a missing manifest list, manifest or index manifest means for one use of a root."""

    #: a protecting read failed: the protection set is incomplete, plan nothing
    ABORT = "abort"
    #: an expiring snapshot's delta was already cleaned by an earlier run: its data went first
    SKIP_DELTA = "skip-delta"
    #: an expiring snapshot's changelog was already cleaned by an earlier run
    SKIP_CHANGELOG = "skip-changelog"
    #: a tag's live set is unreadable: abort only if a delta after it still needs it
    BREAKS_TAG = "breaks-tag"


@dataclass(frozen=True)
class RootUse:
    """One snapshot (or tag, or changelog-N) and what an expiration uses it for.

    A snapshot used in several ways appears once per use: an expiring snapshot of a table with a
    decoupled changelog is a candidate and, as the ``changelog-N`` it becomes, a protecting root.
    Protecting uses read strictly (a missing file aborts); expiring uses tolerate what an
    interrupted earlier run already deleted (:func:`judge_missing`).
    """

    snapshot: Snapshot
    #: its live files (base + delta, merged) protect data files
    keep_live: bool = False
    #: every file its changelog list names protects changelog files
    keep_changelog: bool = False
    #: its lists, manifests, index manifest and files, statistics are kept
    keep_meta: bool = False
    #: a retained changelog-N: what its changelog reads (see ``log_role``) protects data and metadata
    log_keep: bool = False
    #: with ``log_keep``: the changelog-N reads something (:func:`changelog_reads`); if not, only
    #: its index manifest and statistics are kept (tolerantly) and its lists are not read
    log_reads: bool = True
    #: a tag whose live files protect the deltas after it (Paimon's "previous tag" rule)
    tag_live: bool = False
    #: the files its delta deletes are candidates, of this kind
    cand_delta: plans.FileKind | None = None
    #: the files its changelog adds are candidates, of this kind
    cand_changelog: plans.FileKind | None = None
    #: changelog candidates are checked against kept data (changelog expiration), else against
    #: kept changelog files (snapshot expiration)
    changelog_vs_data: bool = False
    #: candidates carry the manifest's file size
    cand_sizes: bool = True
    #: the id of the tag whose live files protect this delta's candidates
    prev_tag: int | None = None
    #: its metadata are candidates (tolerant reads)
    cand_meta: bool = False
    #: ... including its changelog list and manifests
    cand_meta_changelog: bool = True

    @property
    def sid(self) -> int:
        return self.snapshot.id

    @property
    def log_role(self) -> ListRole:
        """The list a retained changelog-N is read through: its changelog manifests (producer
        other than ``none``), else its delta (producer ``none``: the changelog is the delta)."""
        return ListRole.CHANGELOG if self.snapshot.changelog_manifest_list else ListRole.DELTA

    @property
    def entry_roles(self) -> frozenset[ListRole]:
        """The lists whose manifests' entries this use reads."""
        roles: set[ListRole] = set()
        if self.keep_live or self.tag_live:
            roles |= {ListRole.BASE, ListRole.DELTA}
        if self.cand_delta:
            roles.add(ListRole.DELTA)
        if self.keep_changelog or self.cand_changelog:
            roles.add(ListRole.CHANGELOG)
        if self.log_keep and self.log_reads:
            roles.add(self.log_role)
        return frozenset(roles)

    @property
    def meta_lists(self) -> tuple[ListRole, ...]:
        """The lists whose names and manifests are this use's metadata."""
        if self.keep_meta or (self.log_keep and self.log_reads and self.log_role == ListRole.DELTA):
            return (ListRole.BASE, ListRole.DELTA, ListRole.CHANGELOG)
        if self.log_keep:
            return (ListRole.CHANGELOG,) if self.log_reads else ()
        if self.cand_meta:
            return ((ListRole.BASE, ListRole.DELTA, ListRole.CHANGELOG) if self.cand_meta_changelog
                    else (ListRole.BASE, ListRole.DELTA))
        return ()

    @property
    def meta_extra(self) -> bool:
        """The index manifest, index files and statistics belong to this use's metadata."""
        return self.keep_meta or self.log_keep or self.cand_meta

    @property
    def strict_index(self) -> bool:
        return self.keep_meta or (self.log_keep and self.log_reads and self.log_role == ListRole.DELTA)

    def strict_entries(self, role: ListRole) -> bool:
        """A missing list or manifest of ``role`` aborts: this use reads its entries to protect."""
        return bool((self.keep_live and role in (ListRole.BASE, ListRole.DELTA))
                    or (self.keep_changelog and role == ListRole.CHANGELOG)
                    or (self.log_keep and self.log_reads and role == self.log_role))

    def strict_list(self, role: ListRole) -> bool:
        """A missing manifest list of ``role`` aborts (entries, or protected metadata)."""
        strict_meta = self.keep_meta or (self.log_keep and self.log_reads and (self.log_role == ListRole.DELTA
                                                                               or role == ListRole.CHANGELOG))
        return strict_meta or self.strict_entries(role)

    @property
    def protects(self) -> bool:
        return self.keep_live or self.keep_changelog or self.keep_meta or self.log_keep or self.tag_live

    @property
    def expires(self) -> bool:
        return bool(self.cand_delta or self.cand_changelog or self.cand_meta)


def judge_missing(use: RootUse, what: str, role: ListRole) -> frozenset[ReadOutcome]:
    """What a *missing* file means for ``use``: ``what`` is ``list`` (a manifest list of
    ``role``, or the index manifest for ``ListRole.INDEX``) or ``manifest`` (a manifest named by
    the list of ``role``). The empty set means tolerated. An unreadable (damaged) file always
    aborts; see :func:`abort_unreadable_protection`.
    """
    out: set[ReadOutcome] = set()
    if role == ListRole.INDEX:
        return frozenset({ReadOutcome.ABORT}) if use.strict_index else frozenset()
    strict = use.strict_list(role) if what == "list" else use.strict_entries(role)
    if strict:
        out.add(ReadOutcome.ABORT)
    if use.tag_live and role in (ListRole.BASE, ListRole.DELTA):
        out.add(ReadOutcome.BREAKS_TAG)
    if use.cand_delta and role == ListRole.DELTA:
        out.add(ReadOutcome.SKIP_DELTA)
    if use.cand_changelog and role == ListRole.CHANGELOG:
        out.add(ReadOutcome.SKIP_CHANGELOG)
    return frozenset(out)


def abort_unreadable_protection(what: str, error: object) -> errors.TablekeeperError:
    """The error an evaluator raises when a protecting read fails (nothing was deleted)."""
    return errors.IncompleteProtectionSetError(
        f"cannot read a protecting root while planning expiration: {what}: {error}",
        fix="a manifest of a retained snapshot/tag/branch is missing; repair it (nothing was deleted)")


def effectively_deleted(refs: Iterable[FileRef]) -> Iterator[FileRef]:
    """The DELETE entries of one delta that :func:`effective_deletions` counts as deletions
    (no ADD of the same file in the same delta), in delta order; the same rule, computed with
    one set of the delta's ADDs instead of a set of kinds per file (an expiration looks at
    ~200k delta entries)."""
    refs = list(refs)
    added = {(r.partition, r.bucket, r.file_name) for r in refs if r.kind == 0}
    for r in refs:
        if r.kind == 1 and (r.partition, r.bucket, r.file_name) not in added:
            yield r


def effective_deletions(kinds: Iterable[int]) -> bool:
    """Whether a file's entries *within one delta* delete it: a DELETE that an ADD of the same
    file in the same delta cancels is an upgrade (DELETE level L + ADD level L'), not a
    deletion, whatever the order of the two entries."""
    seen = set(kinds)
    return 1 in seen and 0 not in seen


@dataclass(frozen=True)
class ExpirationDecision:
    """One expiration (snapshots or long-lived changelogs of one branch), decided.

    ``roots`` is everything the evaluators read; ``tail`` is what runs after the data and
    metadata deletes, in order (changelog-N copies and changelog LATEST when decoupled, then the
    snapshot or changelog files and the EARLIEST hint). A decision with no expiring roots has
    only a tail (hints), which the in-process executor runs as is."""

    operation: str  # "expire-snapshots" | "expire-changelog"
    table: str
    branch: str
    #: ids of the snapshots (or changelogs) that expire, in order
    expiring_ids: tuple[int, ...]
    #: ids in the range whose files were already gone (a concurrent or earlier run)
    missing_ids: tuple[int, ...]
    roots: tuple[RootUse, ...]
    tail: tuple[plans.Step, ...]
    notes: tuple[str, ...] = ()
    details: tuple[tuple[str, object], ...] = ()
    #: partition depth of the emptied-directory cleanup after the data stages, or None
    empty_dirs_depth: int | None = None

    @property
    def reads_manifests(self) -> bool:
        return any(r.expires for r in self.roots)

    def tail_plan(self) -> plans.Plan:
        return plans.Plan(self.operation, self.table, self.tail)


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


@dataclass(frozen=True)
class OrphanRoot:
    """A snapshot, tag or changelog-N file of some branch: everything it reaches is used.
    ``name`` is the snapshot or changelog id, or the tag name."""

    path: str
    kind: str  # "snapshot" | "tag" | "changelog"
    branch: str
    name: str


def optional_list(root_kind: str, snapshot: Snapshot, list_name: str, producer: str = "none") -> bool:
    """A changelog-N with changelog manifests keeps only those: Paimon's expiration deleted its
    base and delta lists on purpose, so their absence is no sign of damage. The same holds for
    a changelog-N without changelog manifests when the table's ``changelog-producer`` is not
    ``none`` (lookup and full-compaction write them only on compaction): it reads nothing, and
    Java deletes its lists too (seen on Java-written lookup tables, issue 13)."""
    if root_kind != "changelog" or list_name == snapshot.changelog_manifest_list:
        return False
    return bool(snapshot.changelog_manifest_list) or producer.strip().lower() != "none"


def changelog_reads(snapshot: Snapshot, producer: str = "none") -> bool:
    """Whether a retained changelog-N (or a snapshot that lives on as one) reads any file: with
    changelog manifests it reads those; without, only under ``changelog-producer=none`` (the
    changelog is the delta). lookup and full-compaction write changelog manifests only on
    compaction, so such a changelog-N reads nothing and Java's expiration deletes its base and
    delta lists (seen on Java-written lookup tables, issue 13). Both evaluators follow this."""
    return bool(snapshot.changelog_manifest_list) or producer.strip().lower() == "none"


def optional_index(is_changelog: bool) -> bool:
    """A changelog-N reads its changelog (or delta) files only: Java's expiration deletes the
    index manifest of a snapshot that lives on as changelog-N (seen on Java-written dynamic
    bucket tables, issue 13), so its absence there is no sign of damage."""
    return is_changelog


def missing_reference_aborts(root_exists: bool) -> bool:
    """A file a root references is missing: abort (fail closed) while the root exists; a root
    that vanished meanwhile (a concurrent expiration) protects nothing."""
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


def may_empty(listed: int, deleted: int) -> bool:
    """Whether deleting ``deleted`` files of a bucket directory where the orphan listing saw
    ``listed`` may leave it empty: only then is it checked (and removed if empty); a check is a
    request on an object store, and a directory still holding a listed file cannot be empty."""
    return listed <= deleted
