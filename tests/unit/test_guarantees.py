"""``core/reclaim/reach/guarantees.py``: the one statement of which references Paimon keeps alive, per root
kind and reference (Paimon 1.3.1 and 1.4.2). Each test pins one row and names the Paimon code it
comes from; the Java tier (tests/javapaimon/test_dangling.py) shows each dangling case on tables
Java Paimon wrote and maintained itself."""

from __future__ import annotations

import itertools

import pytest

from tablekeeper.core.paimon.metadata.snapshot import Snapshot
from tablekeeper.core.reclaim.reach import guarantees
from tablekeeper.core.reclaim.reach.guarantees import Guarantee, Reference, RootKind, RootName
from tablekeeper.core.reclaim.reach.roles import ListRole

K = RootKind
LISTS = (Reference.BASE_LIST, Reference.DELTA_LIST, Reference.CHANGELOG_LIST)
FILE_REFERENCES = (*LISTS, Reference.INDEX_MANIFEST, Reference.STATISTICS)


def snap(sid: int = 5, *, changelog: bool = True, index: bool = True) -> Snapshot:
    return Snapshot({"id": sid, "schemaId": 0, "commitKind": "COMPACT", "timeMillis": 1,
                     "baseManifestList": f"manifest-list-b{sid}", "deltaManifestList": f"manifest-list-d{sid}",
                     "changelogManifestList": f"manifest-list-c{sid}" if changelog else None,
                     "indexManifest": f"index-manifest-{sid}" if index else None})


def test_every_root_kind_has_a_rule_for_every_reference_it_carries() -> None:
    for kind, reference, delta in itertools.product(
            (K.SNAPSHOT, K.TAG, K.BRANCH_SNAPSHOT, K.BRANCH_TAG, K.CHANGELOG), FILE_REFERENCES, (False, True)):
        rule = guarantees.rule_for(kind, reference, reads_delta=delta)
        assert rule.why and rule.paimon, (kind, reference)
    assert guarantees.rule_for(K.CONSUMER, Reference.NEXT_SNAPSHOT).guarantee == Guarantee.DANGLES
    with pytest.raises(ValueError, match="no rule"):
        guarantees.rule_for(K.CONSUMER, Reference.BASE_LIST)


@pytest.mark.parametrize("kind", [K.TAG, K.BRANCH_TAG])
def test_a_tags_changelog_list_dangles(kind: RootKind) -> None:
    """TagDeletion.cleanUnusedManifests (TagDeletion.java:102-106: "doesn't clean changelog files
    because they are handled by SnapshotDeletion"), FileDeletionBase.manifestSkippingSet
    (FileDeletionBase.java:427-455, 1.3: 416-444: no changelog list in any skipping set) and
    ExpireSnapshotsImpl.expireUntil (ExpireSnapshotsImpl.java:219-229, 1.3: 198-216: changelog
    files of expired snapshots deleted without a tag skipper)."""
    rule = guarantees.rule_for(kind, Reference.CHANGELOG_LIST)
    assert rule.guarantee == Guarantee.DANGLES and rule.dangles()
    assert "TagDeletion.java:102-106" in rule.paimon and "FileDeletionBase.java:427-455" in rule.paimon


@pytest.mark.parametrize("kind", [K.TAG, K.BRANCH_TAG, K.SNAPSHOT, K.BRANCH_SNAPSHOT])
@pytest.mark.parametrize("reference", [Reference.BASE_LIST, Reference.DELTA_LIST, Reference.INDEX_MANIFEST,
                                       Reference.STATISTICS])
def test_what_every_skipping_set_holds_stays_fail_closed(kind: RootKind, reference: Reference) -> None:
    """FileDeletionBase.manifestSkippingSet (FileDeletionBase.java:427-455) holds a tag's base and
    delta lists, its index manifest and statistics; a retained snapshot keeps its own."""
    rule = guarantees.rule_for(kind, reference)
    assert rule.guarantee == Guarantee.KEPT and not rule.dangles(copied=True)


@pytest.mark.parametrize("kind", [K.SNAPSHOT, K.BRANCH_SNAPSHOT, K.CHANGELOG])
def test_a_snapshots_changelog_list_dangles_only_when_the_snapshot_was_copied(kind: RootKind) -> None:
    """FileSystemBranchManager.createBranch copies the tagged snapshot's file into the branch
    (FileSystemBranchManager.java:103-127, 1.3: 90-113) and fastForward copies a branch's
    snapshots into main (:155-210); each branch's ExpireSnapshotsImpl (ExpireSnapshotsImpl.java:
    219-229) or ChangelogDeletion (ChangelogDeletion.java:74-77) deletes the list alone."""
    rule = guarantees.rule_for(kind, Reference.CHANGELOG_LIST)
    assert rule.guarantee == Guarantee.KEPT_UNLESS_COPIED
    assert not rule.dangles() and rule.dangles(copied=True)
    assert "FileSystemBranchManager.java:103-127" in rule.paimon


def test_a_changelogs_base_and_delta_lists_dangle_unless_it_is_read_through_its_delta() -> None:
    """SnapshotDeletion.cleanUnusedManifests (SnapshotDeletion.java:84-92): deleteDataManifestLists
    = !changelogDecoupled || produceChangelog; ChangelogDeletion checks manifestList.exists
    (ChangelogDeletion.java:67,78,83)."""
    for reference in (Reference.BASE_LIST, Reference.DELTA_LIST):
        assert guarantees.rule_for(K.CHANGELOG, reference, reads_delta=False).dangles()
        assert not guarantees.rule_for(K.CHANGELOG, reference, reads_delta=True).dangles(copied=True)
    log = snap(changelog=False)
    assert guarantees.reads_delta(K.CHANGELOG, log, "none")
    assert not guarantees.reads_delta(K.CHANGELOG, log, "lookup")
    assert not guarantees.reads_delta(K.CHANGELOG, snap(changelog=True), "none")
    assert not guarantees.reads_delta(K.SNAPSHOT, log, "none")


def test_a_changelogs_index_manifest_and_statistics_dangle() -> None:
    """FileDeletionBase.cleanUnusedManifests calls cleanUnusedIndexManifests and
    cleanUnusedStatisticsManifests for every expiring snapshot, also one kept as changelog-N
    (FileDeletionBase.java:350-351, 1.3: 339-340); ChangelogDeletion.java:88 leaves them to
    snapshot deletion and checks existsManifest (:114)."""
    for delta in (False, True):
        assert guarantees.rule_for(K.CHANGELOG, Reference.INDEX_MANIFEST, reads_delta=delta).dangles()
        assert guarantees.rule_for(K.CHANGELOG, Reference.STATISTICS, reads_delta=delta).dangles()


def test_a_consumers_next_snapshot_is_a_bound_not_a_file() -> None:
    """ExpireSnapshotsImpl.expire bounds the range by consumerManager.minNextSnapshot
    (ExpireSnapshotsImpl.java:126-131); the id may not exist yet or any more."""
    assert guarantees.rule_for(K.CONSUMER, Reference.NEXT_SNAPSHOT).dangles()


def test_copied_lists_are_those_a_tag_or_a_second_branch_names() -> None:
    main_snap = RootName(K.SNAPSHOT, "main", "6")
    main_tag = RootName(K.TAG, "main", "v1")
    branch_snap = RootName(K.BRANCH_SNAPSHOT, "dev", "9")
    branch_log = RootName(K.CHANGELOG, "dev", "6")
    copied = guarantees.copied_lists([(main_snap, "L6"), (main_tag, "L6"), (RootName(K.SNAPSHOT, "main", "7"), "L7"),
                                      (branch_snap, "L9"), (branch_log, "L8"), (RootName(K.CHANGELOG, "main", "8"),
                                                                                 "L8"), (main_snap, None)])
    assert copied == frozenset({"L6", "L8"})


def test_dangling_roles_of_each_root_kind() -> None:
    s = snap()
    assert guarantees.dangling_roles(K.TAG, s, producer="lookup", copied=frozenset()) == {ListRole.CHANGELOG}
    assert guarantees.dangling_roles(K.SNAPSHOT, s, producer="lookup", copied=frozenset()) == frozenset()
    assert guarantees.dangling_roles(K.SNAPSHOT, s, producer="lookup", copied=frozenset({"manifest-list-c5"})) == {
        ListRole.CHANGELOG}
    assert guarantees.dangling_roles(K.CHANGELOG, s, producer="lookup", copied=frozenset()) == {
        ListRole.BASE, ListRole.DELTA, ListRole.INDEX}
    no_log = snap(changelog=False)
    assert guarantees.dangling_roles(K.CHANGELOG, no_log, producer="none", copied=frozenset()) == {ListRole.INDEX}
    assert guarantees.dangling_roles(K.CHANGELOG, no_log, producer="input", copied=frozenset()) == {
        ListRole.BASE, ListRole.DELTA, ListRole.INDEX}


def test_root_kinds_and_names() -> None:
    assert guarantees.root_kind("tag", "main") == K.TAG
    assert guarantees.root_kind("tag", "dev") == K.BRANCH_TAG
    assert guarantees.root_kind("snapshot", "dev") == K.BRANCH_SNAPSHOT
    assert guarantees.root_kind("changelog", "dev") == K.CHANGELOG
    assert str(RootName(K.BRANCH_TAG, "dev", "t1")) == "tag 't1' of branch dev"
    assert str(RootName(K.CHANGELOG, "main", "12")) == "changelog 12 of branch main"


def test_a_refusal_names_the_root_and_the_file_and_fits_the_cause() -> None:
    e = guarantees.missing_kept_file(RootName(K.TAG, "main", "release-1"), "its base manifest list",
                                     "manifest-list-x-1", operation="orphan cleanup")
    assert "tag 'release-1' of branch main" in e.message and "manifest-list-x-1" in e.message
    assert e.fix is not None and "restore manifest-list-x-1" in e.fix and "remove_unexisting_files" not in e.fix
    e = guarantees.missing_kept_file(RootName(K.BRANCH_SNAPSHOT, "dev", "4"), "its delta manifest list", "m",
                                     operation="expiration")
    assert e.fix is not None and "branch drop" in e.fix


def test_notes_and_rows_name_what_was_ignored_and_why() -> None:
    rule = guarantees.rule_for(K.TAG, Reference.CHANGELOG_LIST)
    ignored = [guarantees.IgnoredReference(RootName(K.TAG, "main", "a"), Reference.CHANGELOG_LIST, "L1", rule),
               guarantees.IgnoredReference(RootName(K.TAG, "main", "b"), Reference.CHANGELOG_LIST, "L1", rule)]
    [note] = guarantees.notes_of(ignored)
    assert "tag 'a' of branch main, tag 'b' of branch main" in note and "tags never keep changelog" in note
    rows = guarantees.details_of(ignored)
    assert [r["root"] for r in rows] == ["a", "b"] and rows[0]["file"] == "L1" and rows[0]["paimon"] == rule.paimon
