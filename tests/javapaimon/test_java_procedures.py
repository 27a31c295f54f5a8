"""The other direction (issue 13 point 4): states made by Java Paimon's own procedures are shown
correctly by ``tablekeeper show``, ``tag list`` and ``branch list``, and tablekeeper's expiration
and orphan cleanup on them delete nothing Java still reads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.javapaimon import judge
from tests.javapaimon import warehouse as W
from tests.support import javapaimon as J

pytestmark = [pytest.mark.javapaimon, pytest.mark.timeout(1200)]




def _java_procedures(java: J.JavaPaimon, wh: str) -> None:
    """What users run through CALL sys.*: every procedure this Paimon version has."""
    java.table_call("fast_forward", wh, W.ORDERS, branch="dev")
    java.table_call("create_tag", wh, W.ORDERS, tag="tmp", snapshot=None)
    java.table_call("rename_tag", wh, W.ORDERS, tag="tmp", target="release")
    java.table_call("replace_tag", wh, W.ORDERS, tag="release", snapshot=None, time_retained_ms=3_600_000)
    java.table_call("create_tag", wh, W.EVENTS, tag="doomed", snapshot=4)
    java.table_call("delete_tag", wh, W.EVENTS, tag="doomed")
    java.table_call("delete_branch", wh, W.EVENTS, branch="exp")
    java.table_call("rollback_to", wh, W.EVENTS, snapshot=4)
    java.table_call("expire_snapshots", wh, W.DYN, retain_max=2, retain_min=1, older_than_ms=0)


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    return json.loads(judge.cli(capsys, *args, "-o", "json"))


def test_tablekeeper_shows_java_states(java: J.JavaPaimon, wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    _java_procedures(java, wh)
    for table in W.TABLES:
        views = judge.readable(java.views(wh, table))
        java_tags = {r[0]: r for r in J.system_rows(views, "tags")}
        ours = {t["tag_name"]: t for t in _json(capsys, "tag", "list", "-w", wh, table)}
        assert set(ours) == set(java_tags), table
        for name, row in java_tags.items():
            t = ours[name]
            # $tags: tag_name, snapshot_id, schema_id, commit_time, record_count, create_time, time_retained
            assert [str(t["snapshot_id"]), str(t["schema_id"]), str(t["record_count"]), t["time_retained"]] == \
                [row[1], row[2], row[4], row[6]], (table, name)
            assert str(t["commit_time"]).startswith(str(row[3])[:19]), (table, name)
        branches = {b["branch_name"] for b in _json(capsys, "branch", "list", "-w", wh, table)}
        assert branches == {r[0] for r in J.system_rows(views, "branches")}, table
        shown = _json(capsys, "show", "-w", wh, table)
        shown_ids = {s["id"] for s in shown["main"]["snapshots"] if not s.get("expired")}
        assert shown_ids == {int(r[0]) for r in J.system_rows(views, "snapshots")}, table
    assert "release" in {t["tag_name"] for t in _json(capsys, "tag", "list", "-w", wh, W.ORDERS)}
    assert _json(capsys, "branch", "list", "-w", wh, W.EVENTS) == []


@pytest.mark.parametrize("table", W.TABLES)
def test_our_cleanup_after_java_procedures(java: J.JavaPaimon, wh: str, table: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Expiration by the table's own options, then orphan cleanup of everything unreferenced
    (the threshold is 'now', forced): Java reads every view it read before, except the
    snapshots the expiration meant to remove."""
    _java_procedures(java, wh)

    def run() -> None:
        judge.cli(capsys, "expire", "-w", wh, table, "--retain-min", "1", "--time-retained", "1 s")
        judge.cli(capsys, "expire-changelog", "-w", wh, table)
        judge.cli(capsys, "clean-orphans", "-w", wh, table, "--older-than", str(J.now_ms() - 1000), "--force")

    before, after = judge.judged(java, wh, table, run)
    gone = [k for k in before if k not in after]
    assert all(k.startswith("main@snapshot-") for k in gone), gone
    judge.unchanged_except(before, after, removed=gone)
    # Java's own orphan cleanup finds nothing left that we should have removed.
    leftover = judge.java_deleted_nothing_we_kept(java, wh, table, J.now_ms() - 1000)
    assert leftover == [], leftover
    judge.java_still_works(java, wh, table, after)
