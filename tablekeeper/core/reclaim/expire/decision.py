"""What an expiration decided, as data: the roots it reads and what each one is used for
(:class:`RootUse`), how a missing manifest list or manifest is judged for each use
(:func:`judge_missing`), and the decision every evaluator of an expiration consumes
(:class:`ExpirationDecision`: the in-process one in :mod:`tablekeeper.core.reclaim.expire.evaluation`,
the Spark job in :mod:`tablekeeper.spark.job`).

A module of its own, beside :mod:`tablekeeper.core.reclaim.orphans.decision` (the list roles and the orphan
cleanup's decision), so a local orphan cleanup or ``tag list`` never loads the expiration's
types (CLI start-up, tests/cli/test_startup.py). The rules are built by ``expire.decide_expire``
and ``expire.decide_expire_changelog`` and read by both evaluators, never restated."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tablekeeper.core import errors, plans
from tablekeeper.core.paimon import Snapshot
from tablekeeper.core.paimon.manifests import FileRef
from tablekeeper.core.pycompat import StrEnum
from tablekeeper.core.reclaim import reach
from tablekeeper.core.reclaim.reach import ListRole

__all__ = [
    "ReadOutcome", "RootUse", "ExpirationDecision", "judge_missing", "effective_deletions", "effectively_deleted",
    "abort_unreadable_protection",
]


class ReadOutcome(StrEnum):
    """What a missing manifest list, manifest or index manifest means for one use of a root."""

    #: a protecting read failed: the protection set is incomplete, plan nothing
    ABORT = "abort"
    #: an expiring snapshot's delta was already cleaned by an earlier run: its data went first
    SKIP_DELTA = "skip-delta"
    #: an expiring snapshot's changelog was already cleaned by an earlier run
    SKIP_CHANGELOG = "skip-changelog"
    #: a tag's live set is unreadable: abort only if a delta after it still needs it
    BREAKS_TAG = "breaks-tag"
    #: the file is gone by design (Paimon lets this reference dangle: guarantees.RULES): ignored, reported
    DANGLING = "dangling"


@dataclass(frozen=True)
class RootUse:
    """One snapshot (or tag, or changelog-N) and what an expiration uses it for.

    A snapshot used in several ways appears once per use: an expiring snapshot of a table with a
    decoupled changelog is a candidate and, as the ``changelog-N`` it becomes, a protecting root.
    Protecting uses read strictly (a missing file aborts); expiring uses tolerate what an
    interrupted earlier run already deleted (:func:`judge_missing`).
    """

    snapshot: Snapshot
    #: which root this is (kind, branch, id or name): named by every refusal and report
    root: reach.RootName | None = None
    #: its lists (``ListRole.INDEX``: its index manifest) whose absence is by design
    #: (``guarantees.dangling_roles``): protect what they name while they exist, ignored when
    #: gone (and, for an expiring use, no sign of an earlier interrupted run)
    dangling: frozenset[ListRole] = frozenset()
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
    def label(self) -> str:
        """The root as refusals name it."""
        return str(self.root) if self.root is not None else f"snapshot {self.sid}"

    def ignored(self, role: ListRole, file: str, via_list: str | None = None) -> reach.IgnoredReference:
        """The report of a file of ``role`` (in :attr:`dangling`) that is gone by design."""
        assert self.root is not None, "a use with dangling references names its root"
        kind = self.root.kind
        reads_delta = kind == reach.RootKind.CHANGELOG and self.log_reads and self.log_role == ListRole.DELTA
        reference = reach.list_reference(role)
        return reach.IgnoredReference(self.root, reference, file,
                                           reach.rule_for(kind, reference, reads_delta=reads_delta), via_list)

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
    the list of ``role``). The empty set means tolerated; ``DANGLING`` means tolerated and
    reported (the reference may dangle: ``use.dangling``). An unreadable (damaged) file always
    aborts; see :func:`abort_unreadable_protection`.
    """
    out: set[ReadOutcome] = set()
    if role in use.dangling:  # gone by design: whatever this use read it for, it is ignored
        out.add(ReadOutcome.DANGLING)
    if role == ListRole.INDEX:
        return frozenset({ReadOutcome.ABORT}) if use.strict_index and role not in use.dangling else frozenset(out)
    strict = use.strict_list(role) if what == "list" else use.strict_entries(role)
    if strict and role not in use.dangling:
        out.add(ReadOutcome.ABORT)
    if use.tag_live and role in (ListRole.BASE, ListRole.DELTA):
        out.add(ReadOutcome.BREAKS_TAG)
    if use.cand_delta and role == ListRole.DELTA:
        out.add(ReadOutcome.SKIP_DELTA)
    if use.cand_changelog and role == ListRole.CHANGELOG:
        out.add(ReadOutcome.SKIP_CHANGELOG)
    return frozenset(out)


def abort_unreadable_protection(use: RootUse | None, what: str, file: str, operation: str = "expiration"
                                ) -> errors.TablekeeperError:
    """The error an evaluator raises when a file a protecting root keeps is missing (nothing
    was deleted): names the root and the file (``what``: what the file is to the root)."""
    if use is not None and use.root is not None:
        return reach.missing_kept_file(use.root, what, file, operation=operation)
    label = use.label if use is not None else "a protecting root"
    return errors.IncompleteProtectionSetError(
        f"{operation}: {label} names {what} {file}, which is missing; Paimon keeps that file while the root exists, "
        "so the table is damaged (nothing was deleted)",
        fix=f"restore {file} (from a backup or the store's object versioning) and rerun")


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
