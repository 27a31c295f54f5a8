"""core.decisions: the rules both evaluators read, stated once. These tests pin each rule on its
own; tests/maintenance/test_property.py proves the two evaluators agree on random histories."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tablekeeper.core import errors
from tablekeeper.core.paimon import manifests
from tablekeeper.core.paimon.metadata.snapshot import Snapshot
from tablekeeper.core.plans import plan
from tablekeeper.core.reclaim.expire import decision as expire_decisions
from tablekeeper.core.reclaim.expire.decision import ReadOutcome, RootUse
from tablekeeper.core.reclaim.orphans import decision
from tablekeeper.core.reclaim.reach.roles import ListRole


def snap(sid: int = 1, *, changelog: bool = False) -> Snapshot:
    fields = {"id": sid, "baseManifestList": f"manifest-list-b{sid}", "deltaManifestList": f"manifest-list-d{sid}"}
    if changelog:
        fields["changelogManifestList"] = f"manifest-list-c{sid}"
    return Snapshot(fields)


# -- judge_missing ---------------------------------------------------------------------------------
def test_protecting_uses_abort_on_every_list_and_manifest_they_read() -> None:
    other_branch = RootUse(snap(), keep_live=True, keep_changelog=True, keep_meta=True)
    for role in (ListRole.BASE, ListRole.DELTA, ListRole.CHANGELOG, ListRole.INDEX):
        assert ReadOutcome.ABORT in expire_decisions.judge_missing(other_branch, "list", role)
    for role in (ListRole.BASE, ListRole.DELTA, ListRole.CHANGELOG):
        assert ReadOutcome.ABORT in expire_decisions.judge_missing(other_branch, "manifest", role)


def test_a_tag_protects_metadata_strictly_but_not_the_entries_it_does_not_read() -> None:
    tag = RootUse(snap(), keep_changelog=True, keep_meta=True)
    assert expire_decisions.judge_missing(tag, "list", ListRole.BASE) == {ReadOutcome.ABORT}
    assert expire_decisions.judge_missing(tag, "manifest", ListRole.BASE) == frozenset()  # names only
    assert expire_decisions.judge_missing(tag, "manifest", ListRole.CHANGELOG) == {ReadOutcome.ABORT}


def test_expiring_uses_tolerate_what_an_interrupted_run_deleted() -> None:
    expiring = RootUse(snap(), cand_delta=plan.FileKind.DATA, cand_changelog=plan.FileKind.CHANGELOG_DATA,
                       cand_meta=True, prev_tag=None)
    assert expire_decisions.judge_missing(expiring, "manifest", ListRole.DELTA) == {ReadOutcome.SKIP_DELTA}
    assert expire_decisions.judge_missing(expiring, "list", ListRole.CHANGELOG) == {ReadOutcome.SKIP_CHANGELOG}
    assert expire_decisions.judge_missing(expiring, "list", ListRole.BASE) == frozenset()
    assert expire_decisions.judge_missing(expiring, "list", ListRole.INDEX) == frozenset()


def test_the_first_retained_snapshot_skips_a_cleaned_delta_manifest_but_not_its_list() -> None:
    end = RootUse(snap(), keep_changelog=True, keep_meta=True, cand_delta=plan.FileKind.DATA)
    assert expire_decisions.judge_missing(end, "manifest", ListRole.DELTA) == {ReadOutcome.SKIP_DELTA}
    assert ReadOutcome.ABORT in expire_decisions.judge_missing(end, "list", ListRole.DELTA)


def test_a_previous_tag_breaks_only_on_its_live_set() -> None:
    tag = RootUse(snap(), tag_live=True)
    assert expire_decisions.judge_missing(tag, "manifest", ListRole.BASE) == {ReadOutcome.BREAKS_TAG}
    assert expire_decisions.judge_missing(tag, "list", ListRole.DELTA) == {ReadOutcome.BREAKS_TAG}
    assert expire_decisions.judge_missing(tag, "list", ListRole.CHANGELOG) == frozenset()


def test_a_kept_changelog_reads_through_its_changelog_list_or_its_delta() -> None:
    with_changelog = RootUse(snap(changelog=True), log_keep=True)
    assert with_changelog.log_role == ListRole.CHANGELOG
    assert ReadOutcome.ABORT in expire_decisions.judge_missing(with_changelog, "manifest", ListRole.CHANGELOG)
    assert expire_decisions.judge_missing(with_changelog, "manifest", ListRole.DELTA) == frozenset()
    assert expire_decisions.judge_missing(with_changelog, "list", ListRole.INDEX) == frozenset()
    producer_none = RootUse(snap(), log_keep=True)
    assert producer_none.log_role == ListRole.DELTA
    assert ReadOutcome.ABORT in expire_decisions.judge_missing(producer_none, "manifest", ListRole.DELTA)
    assert ReadOutcome.ABORT in expire_decisions.judge_missing(producer_none, "list", ListRole.INDEX)


# -- entry rules -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("kinds", "deleted"), [
    ([1], True), ([1, 1], True), ([0], False), ([0, 1], False), ([1, 0], False), ([], False)])
def test_a_delete_cancelled_by_an_add_in_the_same_delta_deletes_nothing(kinds: list[int], deleted: bool) -> None:
    assert expire_decisions.effective_deletions(kinds) is deleted


def _ref(kind: int, level: int = 0) -> manifests.FileRef:
    return manifests.FileRef(kind=kind, partition=b"", bucket=0, level=level, file_name="data-1.parquet",
                             extra_files=(), external_path=None, file_source=None, embedded_index=None, file_size=1)


@given(st.lists(st.sampled_from([manifests.ADD, manifests.DELETE]), max_size=6))
def test_merge_kinds_is_the_per_identifier_form_of_merge_entries(kinds: list[int]) -> None:
    """Spark merges per identifier with merge_kinds; in process merge_entries streams: the
    same rule, so the same outcome (including the error) for every sequence."""
    try:
        survived = manifests.merge_entries(_ref(k) for k in kinds)
    except errors.FormatError as e:
        with pytest.raises(errors.FormatError) as raised:
            manifests.merge_kinds(kinds, "data-1.parquet")
        assert raised.value.message == e.message
        return
    state = manifests.merge_kinds(kinds, "data-1.parquet")
    assert [r.kind for r in survived] == ([] if state is None else [state])


def test_an_add_after_a_delete_of_the_same_identifier_is_corrupt_as_in_java() -> None:
    with pytest.raises(errors.FormatError, match="added twice"):
        manifests.merge_kinds([manifests.DELETE, manifests.ADD])
    assert manifests.merge_kinds([manifests.ADD, manifests.DELETE, manifests.ADD]) == manifests.ADD


# -- orphan rules ----------------------------------------------------------------------------------
def test_candidate_names_in_snapshot_directories_are_temp_files_only() -> None:
    snapshot_dir = decision.CandidateDir("/t/snapshot", plan.FileKind.OTHER, temp_prefix="snapshot-")
    assert decision.is_candidate_name(snapshot_dir, ".snapshot-3.tmp")
    assert not decision.is_candidate_name(snapshot_dir, "snapshot-3")
    assert not decision.is_candidate_name(snapshot_dir, "EARLIEST")
    assert not decision.is_candidate_name(snapshot_dir, "LATEST")
    manifest_dir = decision.CandidateDir("/t/manifest", plan.FileKind.MANIFEST)
    assert decision.is_candidate_name(manifest_dir, "manifest-list-x")


def test_a_missing_reference_aborts_only_under_a_root_that_still_exists() -> None:
    assert decision.missing_reference_aborts(True)
    assert not decision.missing_reference_aborts(False)


def test_directory_predicates_of_the_bucket_walk() -> None:
    assert decision.is_partition_dir("dt=2026-01-01")
    assert not decision.is_partition_dir("bucket-0")
    assert decision.is_bucket_dir("bucket-0")
    assert not decision.is_bucket_dir("dt=1")
