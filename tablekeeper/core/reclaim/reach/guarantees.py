"""Which references of a root Paimon keeps alive, stated once for every evaluator.

A root (a snapshot, tag or long-lived changelog of some branch, or a consumer) names files: its
base, delta and changelog manifest lists, its index manifest, its statistics file, and through
them manifests, index files, data and changelog files. For most of these Paimon guarantees the
file exists as long as the root does: such a file missing means the table is damaged, and every
maintenance plan fails closed (nothing is deleted). For some Paimon does not: its own maintenance
deletes the file while the root still names it, by design. Such a reference *dangles*: while the
file exists it protects what it names (tablekeeper deletes nothing it reaches), and when it is
gone it is ignored and reported, never treated as damage.

:data:`RULES` is that statement, one row per (root kind, reference) with the Paimon code that
shows it (Paimon 1.3.1 and 1.4.2; line numbers of 1.4.2, 1.3 where they differ). The rule for a
list or index manifest holds for the files it names as well: the manifests of a dangling list,
the index files of a dangling index manifest, the changelog files of a dangling changelog list.

Evaluators read it through :func:`rule_for` and :meth:`Rule.dangles`: orphan cleanup
(:mod:`tablekeeper.core.reclaim.orphans.references` in process, ``tablekeeper.spark.executor.read_roots`` and
the job's error judgement in Spark), expiration (``RootUse.dangling``, set by
``expire.decide_expire*`` and judged by ``expire_decisions.judge_missing``) and tag deletion.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from tablekeeper.core import errors, paimon
from tablekeeper.core.paimon import Snapshot
from tablekeeper.core.pycompat import StrEnum
from tablekeeper.core.reclaim.reach import roles
from tablekeeper.core.reclaim.reach.roles import ListRole

__all__ = ["RootKind", "Reference", "Guarantee", "Condition", "Rule", "RULES", "rule_for", "root_kind",
           "list_reference", "reads_delta", "RootName", "IgnoredReference", "ignored_reference", "copied_lists", "dangling_roles", "notes_of",
           "details_of", "missing_kept_file"]


class RootKind(StrEnum):
    SNAPSHOT = "snapshot"
    TAG = "tag"
    BRANCH_SNAPSHOT = "branch snapshot"
    BRANCH_TAG = "branch tag"
    #: a long-lived ``changelog-N`` (decoupled changelog), of any branch
    CHANGELOG = "changelog"
    CONSUMER = "consumer"

    @property
    def file_kind(self) -> str:
        """How ``orphans.enumerate_roots`` names it: ``snapshot``, ``tag``, ``changelog`` (or ``consumer``)."""
        return {RootKind.BRANCH_SNAPSHOT: "snapshot", RootKind.BRANCH_TAG: "tag"}.get(self, self.value)


class Reference(StrEnum):
    BASE_LIST = "base manifest list"
    DELTA_LIST = "delta manifest list"
    CHANGELOG_LIST = "changelog manifest list"
    INDEX_MANIFEST = "index manifest"
    STATISTICS = "statistics file"
    #: a consumer's ``nextSnapshot``: an id, not a file
    NEXT_SNAPSHOT = "next snapshot"


class Guarantee(StrEnum):
    #: Paimon keeps the file while the root exists: missing means damage (fail closed)
    KEPT = "kept"
    #: Paimon deletes the file while the root may still name it: protects while it exists,
    #: ignored when gone
    DANGLES = "dangles"
    #: kept, unless the snapshot was copied (a tag names the same list, or another branch does):
    #: then it dangles, because the expiration of any branch holding a copy deletes it
    KEPT_UNLESS_COPIED = "kept unless copied"


class Condition(StrEnum):
    ALWAYS = "always"
    #: a changelog-N read through its delta: changelog-producer ``none`` and no changelog list
    READS_DELTA = "reads its delta"
    #: a changelog-N read through its changelog manifests (or reading nothing)
    READS_NO_DELTA = "does not read its delta"


_SNAPSHOT_LIKE = frozenset({RootKind.SNAPSHOT, RootKind.TAG, RootKind.BRANCH_SNAPSHOT, RootKind.BRANCH_TAG})
_TAGS = frozenset({RootKind.TAG, RootKind.BRANCH_TAG})
_LISTS = frozenset({Reference.BASE_LIST, Reference.DELTA_LIST})


@dataclass(frozen=True)
class Rule:
    """Whether Paimon keeps ``references`` of ``kinds`` alive (when ``when`` holds), why, and
    where Paimon's code shows it."""

    kinds: frozenset[RootKind]
    references: frozenset[Reference]
    guarantee: Guarantee
    when: Condition
    why: str
    paimon: str

    def dangles(self, *, copied: bool = False) -> bool:
        """Whether a missing file under this rule is ignored (``copied``: the root's snapshot was
        copied, :func:`copied_lists`)."""
        return self.guarantee == Guarantee.DANGLES or (self.guarantee == Guarantee.KEPT_UNLESS_COPIED and copied)

    def applies(self, kind: RootKind, reference: Reference, reads_delta: bool) -> bool:
        if kind not in self.kinds or reference not in self.references:
            return False
        if self.when == Condition.READS_DELTA:
            return reads_delta
        if self.when == Condition.READS_NO_DELTA:
            return not reads_delta
        return True


#: The statement: the first row that applies to a (root kind, reference) decides.
RULES: tuple[Rule, ...] = (
    Rule(_TAGS, frozenset({Reference.CHANGELOG_LIST}), Guarantee.DANGLES, Condition.ALWAYS,
         "a tag copies its snapshot's JSON, changelog manifest list included, but tags never keep changelog: "
         "expiring the tagged snapshot (or, with a decoupled changelog, its changelog-N) deletes the list, its "
         "manifests and the changelog files, no skipping set holds a changelog list, and deleting a tag never "
         "touches it",
         "TagManager.createOrReplaceTag (TagManager.java:156-170); TagDeletion.cleanUnusedManifests "
         "(TagDeletion.java:102-106, 'doesn't clean changelog files'); FileDeletionBase.manifestSkippingSet "
         "(FileDeletionBase.java:427-455, 1.3: 416-444); ExpireSnapshotsImpl.expireUntil deletes the changelog "
         "files of expired snapshots with no tag skipper (ExpireSnapshotsImpl.java:219-229, 1.3: 198-216); "
         "FileDeletionBase.cleanUnusedManifests (FileDeletionBase.java:347-349, 1.3: 336-338); "
         "ChangelogDeletion.cleanUnusedDataFiles/cleanUnusedManifests and its skipping set "
         "(ChangelogDeletion.java:63-129)"),
    Rule(frozenset({RootKind.SNAPSHOT, RootKind.BRANCH_SNAPSHOT, RootKind.CHANGELOG}),
         frozenset({Reference.CHANGELOG_LIST}), Guarantee.KEPT_UNLESS_COPIED, Condition.ALWAYS,
         "the branch that committed a snapshot keeps its changelog list until the snapshot (or, decoupled, its "
         "changelog-N) expires there, unless the snapshot was copied: a branch created from a tag on it holds a "
         "copy of the snapshot file, fast-forward copies a branch's snapshots into main, and the expiration of "
         "any branch holding a copy deletes the list without looking at the others",
         "FileSystemBranchManager.createBranch (FileSystemBranchManager.java:103-127, 1.3: 90-113) and "
         "fastForward (FileSystemBranchManager.java:155-210, 1.3: 140-195); ExpireSnapshotsImpl.java:219-229 "
         "(1.3: 198-216); ChangelogDeletion.cleanUnusedManifests (ChangelogDeletion.java:74-77)"),
    Rule(frozenset({RootKind.CHANGELOG}), _LISTS, Guarantee.DANGLES, Condition.READS_NO_DELTA,
         "snapshot expiration deletes the base and delta lists of a snapshot it keeps as changelog-N unless "
         "changelog-producer is none (or was not when it expired), and Paimon's changelog expiration checks "
         "that they still exist before it reads them",
         "SnapshotDeletion.cleanUnusedManifests: deleteDataManifestLists = !changelogDecoupled || produceChangelog "
         "(SnapshotDeletion.java:84-92); FileDeletionBase.cleanUnusedManifests (FileDeletionBase.java:331-346, "
         "1.3: 326-334); ChangelogDeletion manifestList.exists (ChangelogDeletion.java:67,78,83,97,105; "
         "1.3: 68,79,83,96)"),
    Rule(frozenset({RootKind.CHANGELOG}), _LISTS, Guarantee.KEPT, Condition.READS_DELTA,
         "with changelog-producer none the changelog is the delta: snapshot expiration keeps a decoupled "
         "snapshot's base and delta lists for its changelog-N, and changelog expiration deletes them",
         "SnapshotDeletion.java:84-92; FileDeletionBase.java:336-346; ChangelogDeletion.java:67-70,78-86"),
    Rule(frozenset({RootKind.CHANGELOG}), frozenset({Reference.INDEX_MANIFEST}), Guarantee.DANGLES,
         Condition.ALWAYS,
         "snapshot expiration deletes the index manifest and index files of every snapshot it expires, also of "
         "those it keeps as changelog-N; changelog expiration leaves index manifests alone and checks that they "
         "exist",
         "FileDeletionBase.cleanUnusedIndexManifests called from cleanUnusedManifests (FileDeletionBase.java:"
         "290-311,350; 1.3: 339); ChangelogDeletion.java:88 ('the index and statics manifest list should handle "
         "by snapshot deletion'), :114 existsManifest (1.3: 87, 113)"),
    Rule(frozenset({RootKind.CHANGELOG}), frozenset({Reference.STATISTICS}), Guarantee.DANGLES, Condition.ALWAYS,
         "snapshot expiration deletes the statistics file of every snapshot it expires, also of those it keeps "
         "as changelog-N",
         "FileDeletionBase.cleanUnusedStatisticsManifests called from cleanUnusedManifests (FileDeletionBase.java:"
         "283-288,351; 1.3: 340)"),
    Rule(_SNAPSHOT_LIKE, frozenset({*_LISTS, Reference.INDEX_MANIFEST, Reference.STATISTICS}), Guarantee.KEPT,
         Condition.ALWAYS,
         "a retained snapshot keeps them, and every skipping set holds a tag's base and delta lists with their "
         "manifests, its index manifest with its index files and its statistics file (tag deletion removes them "
         "only when no neighbour uses them)",
         "FileDeletionBase.manifestSkippingSet (FileDeletionBase.java:427-455, 1.3: 416-444); "
         "ExpireSnapshotsImpl.findSkippingTags (ExpireSnapshotsImpl.java:236-260); TagManager.doClean "
         "(TagManager.java:277-333)"),
    Rule(frozenset({RootKind.CONSUMER}), frozenset({Reference.NEXT_SNAPSHOT}), Guarantee.DANGLES, Condition.ALWAYS,
         "a consumer records the id of the next snapshot it reads: it only bounds expiration, and the snapshot "
         "may not be committed yet or be gone already (consumer.expiration-time drops stale consumers)",
         "ExpireSnapshotsImpl.expire: consumerManager.minNextSnapshot (ExpireSnapshotsImpl.java:126-131, "
         "1.3: 119-121); ExpireChangelogImpl.java:122-124"),
)


def rule_for(kind: RootKind, reference: Reference, *, reads_delta: bool = False) -> Rule:
    """The rule for ``reference`` of a root of ``kind`` (``reads_delta``: a changelog-N read
    through its delta, :func:`tablekeeper.core.reclaim.reach.roles.changelog_reads` without a changelog list)."""
    for rule in RULES:
        if rule.applies(kind, reference, reads_delta):
            return rule
    raise ValueError(f"no rule for the {reference} of a {kind}")  # (a root of that kind has no such reference)


def root_kind(kind: str, branch: str) -> RootKind:
    """The kind of a root enumerated as ``snapshot``, ``tag`` or ``changelog`` on ``branch``."""
    if kind == "changelog":
        return RootKind.CHANGELOG
    if kind == "consumer":
        return RootKind.CONSUMER
    on_main = branch == paimon.MAIN
    if kind == "tag":
        return RootKind.TAG if on_main else RootKind.BRANCH_TAG
    return RootKind.SNAPSHOT if on_main else RootKind.BRANCH_SNAPSHOT


_REFERENCE_OF = {ListRole.BASE: Reference.BASE_LIST, ListRole.DELTA: Reference.DELTA_LIST,
                 ListRole.CHANGELOG: Reference.CHANGELOG_LIST, ListRole.INDEX: Reference.INDEX_MANIFEST}


def list_reference(role: ListRole) -> Reference:
    return _REFERENCE_OF[role]


def reads_delta(kind: RootKind, snapshot: Snapshot, producer: str) -> bool:
    """A changelog-N read through its delta (changelog-producer ``none``, no changelog list)."""
    return (kind == RootKind.CHANGELOG and not snapshot.changelog_manifest_list
            and roles.changelog_reads(snapshot, producer))


def dangling_roles(kind: RootKind, snapshot: Snapshot, *, producer: str, copied: frozenset[str]
                   ) -> frozenset[ListRole]:
    """The lists (and ``ListRole.INDEX``: the index manifest) of ``snapshot``, a root of
    ``kind``, whose absence is by design; ``copied``: the changelog lists of copied snapshots
    (:func:`copied_lists`)."""
    delta = reads_delta(kind, snapshot, producer)
    out: set[ListRole] = set()
    for role, name in ((ListRole.BASE, snapshot.base_manifest_list), (ListRole.DELTA, snapshot.delta_manifest_list),
                       (ListRole.CHANGELOG, snapshot.changelog_manifest_list),
                       (ListRole.INDEX, snapshot.index_manifest)):
        if name and rule_for(kind, list_reference(role), reads_delta=delta).dangles(copied=name in copied):
            out.add(role)
    return frozenset(out)


def copied_lists(named: Iterable[tuple[RootName, str | None]]) -> frozenset[str]:
    """The changelog lists of copied snapshots, from (root, its changelog list) of the roots a
    plan reads: a list a tag names (a branch may have been created from that tag, holding a copy
    of the snapshot), or that roots of more than one branch name (fast-forward, a branch's copy
    of its fork snapshot). A copy that no root read any more can reveal makes a list look
    kept, which fails closed."""
    branches: dict[str, set[str]] = defaultdict(set)
    tagged: set[str] = set()
    for root, name in named:
        if name:
            branches[name].add(root.branch)
            if root.kind in _TAGS:
                tagged.add(name)
    return frozenset(name for name, held in branches.items() if len(held) > 1 or name in tagged)


@dataclass(frozen=True, order=True)
class RootName:
    """A root as a user names it: its kind, branch and id (snapshot, changelog) or name (tag)."""

    kind: RootKind
    branch: str
    name: str

    def __str__(self) -> str:
        word = {RootKind.SNAPSHOT: "snapshot", RootKind.BRANCH_SNAPSHOT: "snapshot", RootKind.TAG: "tag",
                RootKind.BRANCH_TAG: "tag", RootKind.CHANGELOG: "changelog", RootKind.CONSUMER: "consumer"}[self.kind]
        name = repr(self.name) if self.kind in _TAGS or self.kind == RootKind.CONSUMER else self.name
        return f"{word} {name} of branch {self.branch}"


@dataclass(frozen=True)
class IgnoredReference:
    """A file a root names that is gone by design (the rule says so): ignored, and reported."""

    root: RootName
    reference: Reference
    #: the missing file's name (a list or index manifest, or a manifest under such a list)
    file: str
    rule: Rule
    #: the file is a manifest named by the ``reference`` list, not the list itself
    via_list: str | None = None


def ignored_reference(root: RootName, snapshot: Snapshot, role: ListRole, file: str, via_list: str | None, *,
                      producer: str) -> IgnoredReference:
    """The report of a missing file of ``role`` (a dangling reference of ``root``)."""
    reference = list_reference(role)
    rule = rule_for(root.kind, reference, reads_delta=reads_delta(root.kind, snapshot, producer))
    return IgnoredReference(root, reference, file, rule, via_list)


def notes_of(ignored: Iterable[IgnoredReference], limit: int = 5) -> list[str]:
    """One note per rule: which roots' references were ignored, and why."""
    by_rule: dict[tuple[Rule, Reference], list[IgnoredReference]] = defaultdict(list)
    for item in ignored:
        by_rule[(item.rule, item.reference)].append(item)
    out: list[str] = []
    for (rule, reference), items in by_rule.items():
        roots = sorted({i.root for i in items})
        shown = ", ".join(str(r) for r in roots[:limit]) + (f" and {len(roots) - limit} more" if len(roots) > limit
                                                              else "")
        files = len({i.file for i in items})
        out.append(f"ignored {files} missing file(s) of the {reference} of {shown}: gone by design, since {rule.why}")
    return out


def details_of(ignored: Iterable[IgnoredReference]) -> list[dict[str, str]]:
    """The ignored references as rows (``--output json``)."""
    rows = {(str(i.root), i.file): {"root_kind": i.root.kind.value, "branch": i.root.branch, "root": i.root.name,
                                    "reference": i.reference.value, "file": i.file,
                                    **({"named_by": i.via_list} if i.via_list else {}),
                                    "why": i.rule.why, "paimon": i.rule.paimon}
            for i in ignored}
    return [rows[k] for k in sorted(rows)]


def missing_kept_file(root: RootName, what: str, file: str, *, operation: str) -> errors.IncompleteProtectionSetError:
    """The refusal for a file Paimon keeps for ``root`` that is missing: names the root and the
    file (``what``: e.g. 'its base manifest list', 'a manifest of its delta manifest list ...');
    the fix fits a damaged table (nothing was deleted)."""
    if root.kind in _TAGS:
        remove = f"if tag {root.name!r} is no longer needed, delete it (tablekeeper tag delete -b {root.branch} ...)"
    elif root.kind == RootKind.BRANCH_SNAPSHOT:
        remove = f"if branch {root.branch!r} is no longer needed, drop it (tablekeeper branch drop)"
    elif root.kind == RootKind.CHANGELOG:
        remove = "or expire that changelog with Paimon (CALL sys.expire_changelogs)"
    else:
        remove = "or roll the table back to a readable snapshot (Paimon's rollback_to)"
    return errors.IncompleteProtectionSetError(
        f"{operation}: {root} names {what} {file}, which is missing; Paimon keeps that file while the root exists, "
        "so the table is damaged (nothing was deleted)",
        fix=f"restore {file} (from a backup or the store's object versioning) and rerun; {remove}")
