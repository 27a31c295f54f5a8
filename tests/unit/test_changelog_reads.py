"""``decisions.changelog_reads`` / ``RootUse.log_reads`` (issue 13): a retained changelog-N
without changelog manifests reads nothing unless the producer is ``none``; both evaluators then
read none of its lists and no missing list of it aborts (Java deletes them)."""

from __future__ import annotations

from tablekeeper.core.paimon.metadata.snapshot import Snapshot
from tablekeeper.core.reclaim.expire import decision
from tablekeeper.core.reclaim.expire.decision import ReadOutcome, RootUse
from tablekeeper.core.reclaim.reach import roles
from tablekeeper.core.reclaim.reach.roles import ListRole


def _snap(changelog: str | None) -> Snapshot:
    fields = {"id": 7, "schemaId": 0, "commitKind": "APPEND", "timeMillis": 1, "baseManifestList": "b",
              "deltaManifestList": "d", "indexManifest": "i"}
    if changelog:
        fields["changelogManifestList"] = changelog
    return Snapshot(fields)


def test_changelog_reads_by_producer() -> None:
    assert roles.changelog_reads(_snap("c"), "lookup")
    assert roles.changelog_reads(_snap(None), "none")
    assert roles.changelog_reads(_snap(None), " NONE ")
    assert not roles.changelog_reads(_snap(None), "lookup")
    assert not roles.changelog_reads(_snap(None), "full-compaction")


def test_a_changelog_that_reads_nothing_reads_no_list() -> None:
    empty = RootUse(_snap(None), log_keep=True, log_reads=False)
    assert empty.entry_roles == frozenset() and empty.meta_lists == ()
    assert empty.meta_extra and not empty.strict_index
    for role in (ListRole.BASE, ListRole.DELTA, ListRole.CHANGELOG):
        assert ReadOutcome.ABORT not in decision.judge_missing(empty, "list", role)
    reading = RootUse(_snap(None), log_keep=True)  # producer none: the changelog is the delta
    assert ListRole.DELTA in reading.entry_roles and reading.strict_index
    assert ReadOutcome.ABORT in decision.judge_missing(reading, "list", ListRole.DELTA)
