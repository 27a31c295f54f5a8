"""``tablekeeper rollback --discard-later`` compared with Java Paimon's own ``rollback_to`` on
copies of the same Java-written table: Java reads every remaining view of both alike, we delete
no file Java keeps, and Java commits, expires and cleans orphans after ours."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tablekeeper.cli.main import main
from tests.javapaimon import judge
from tests.javapaimon import warehouse as W
from tests.support import javapaimon as J

pytestmark = [pytest.mark.javapaimon, pytest.mark.timeout(1200)]


def _files(wh: str) -> set[str]:
    return {f for f in J.all_files(wh) if "/.tablekeeper/" not in f and not f.startswith(".tablekeeper")}


@pytest.mark.parametrize("table", W.TABLES)
def test_discard_later_matches_java_rollback_to(java: J.JavaPaimon, wh: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str], table: str) -> None:
    theirs = str(tmp_path / "java-rollback")
    shutil.copytree(wh, theirs)
    ids = J.ids(J.table_root(wh, table) / "snapshot", "snapshot-")
    target = ids[1]
    java.table_call("rollback_to", theirs, table, snapshot=target)
    dry = judge.json_cli(capsys, "rollback", "-w", wh, table, "--to-snapshot", str(target), "--discard-later",
                         "--dry-run")
    listing = _files(wh)
    assert dry["dry_run"] is True and _files(wh) == listing
    before, after = judge.judged(java, wh, table, lambda: judge.json_cli(
        capsys, "rollback", "-w", wh, table, "--to-snapshot", str(target), "--discard-later"))
    java_views = judge.readable(java.views(theirs, table))
    assert J.data_views(after) == J.data_views(java_views)  # every remaining view reads as after Java's
    ours, java_kept = _files(wh), _files(theirs)
    # what Java's rollback_to leaves behind unreferenced, by Java's own orphan cleanup
    left_by_java = {str(Path(p).relative_to(theirs)) if p.startswith(theirs) else p.split(theirs.rstrip("/") + "/", 1)[-1]
                    for p in judge.java_deleted_nothing_we_kept(java, theirs, table, J.now_ms() + 60_000)}
    deleted_more = java_kept - ours
    assert deleted_more <= left_by_java, f"we deleted files Java still uses: {sorted(deleted_more - left_by_java)[:5]}"
    kept_more = sorted(ours - java_kept)
    assert dry["total_files"] >= len(listing - ours)  # the dry run listed what the run deleted
    assert f"main@snapshot-{target + 1}" not in after and after[f"main@snapshot-{target}"] == before[
        f"main@snapshot-{target}"]
    judge.java_still_works(java, wh, table, after)
    print(f"{table}: kept {len(kept_more)} file(s) Java deleted {kept_more[:6]}; deleted {len(deleted_more)} "
          "file(s) Java left unreferenced")


def test_refused_when_a_branch_was_created_after_the_target(java: J.JavaPaimon, wh: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    ids = J.ids(J.table_root(wh, W.ORDERS) / "snapshot", "snapshot-")
    java.table_call("create_tag", wh, W.ORDERS, tag="late", snapshot=ids[-1])
    java.table_call("create_branch", wh, W.ORDERS, branch="late-branch", tag="late")
    listing = J.all_files(wh)
    code = main(["rollback", "-w", wh, W.ORDERS, "--to-snapshot", str(ids[1]), "--discard-later"])
    err = capsys.readouterr()[1]
    assert code == 2 and "late-branch" in err.splitlines()[0] and J.all_files(wh) == listing
