"""One regression test per reference Paimon lets dangle (``core/reclaim/reach/guarantees.py``), each on a state
Java Paimon made itself (tests/javapaimon/streaming.py; ``sales.dyn`` of warehouse.py), on both
versions: first that Java really left the reference without its file, then that tablekeeper's
planners (orphan cleanup, expiration, tag deletion; dry runs) exit 0, ignore it and name it with
its reason. The last tests show the other side: a reference Paimon keeps stays fail-closed, and
the refusal names the root and the file, with a fix that fits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.cli.main import main
from tests.javapaimon import judge
from tests.javapaimon import streaming as S
from tests.javapaimon import warehouse as W
from tests.support import javapaimon as J

pytestmark = [pytest.mark.javapaimon, pytest.mark.timeout(600)]


def _root_file(wh: str, table: str, branch: str, kind: str, name: str) -> dict[str, Any]:
    root = J.branch_root(wh, table, branch)
    data: dict[str, Any] = json.loads((root / kind / f"{kind}-{name}").read_text())
    return data


def _gone(wh: str, table: str, name: str | None) -> bool:
    assert name, "the root names no such file"
    return not (J.table_root(wh, table) / "manifest" / name).exists()


def _ignored(capsys: pytest.CaptureFixture[str], *args: str) -> list[tuple[str, str, str, str]]:
    doc = judge.json_cli(capsys, *args, "--dry-run")
    return judge.ignored_named(doc)


def _orphans(capsys: pytest.CaptureFixture[str], wh: str, table: str) -> list[tuple[str, str, str, str]]:
    return _ignored(capsys, "clean-orphans", "-w", wh, table, "--older-than", "1 d")


def test_a_tags_changelog_list_deleted_by_snapshot_expiry(swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """ExpireSnapshotsImpl.expireUntil deletes the changelog files of expiring snapshots with no
    tag skipper (ExpireSnapshotsImpl.java:219-229; 1.3: 198-216) and SnapshotDeletion, through
    FileDeletionBase.cleanUnusedManifests (FileDeletionBase.java:347-349; 1.3: 336-338), their
    changelog manifest list: FileDeletionBase.manifestSkippingSet (FileDeletionBase.java:427-455;
    1.3: 416-444) holds a tag's base and delta lists only. live.metrics' tag v0 (main's own
    commit-time expiry, changelog not decoupled)."""
    tag = _root_file(swh, S.METRICS, "main", "tag", "v0")
    assert _gone(swh, S.METRICS, tag["changelogManifestList"])
    assert ("tag", "main", "v0", "changelog manifest list") in _orphans(capsys, swh, S.METRICS)
    [auto] = [n for n in J.names(J.table_root(swh, S.METRICS) / "tag", "tag-") if n[:1].isdigit()]  # its snapshot expired
    assert ("tag", "main", "v0", "changelog manifest list") in _ignored(
        capsys, "tag", "delete", "-w", swh, S.METRICS, auto)


def test_a_tags_changelog_list_deleted_by_changelog_expiry(swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """With a decoupled changelog, snapshot expiry keeps the list (SnapshotDeletion.java:84-92)
    and ChangelogDeletion deletes it when the changelog-N expires: cleanUnusedDataFiles /
    cleanUnusedManifests (ChangelogDeletion.java:63-77; 1.3: 63-76), its skipping set holding no
    changelog list (ChangelogDeletion.java:92-129); TagDeletion never deletes a changelog
    ("doesn't clean changelog files", TagDeletion.java:102-106). live.orders' tag release-2."""
    tag = _root_file(swh, S.ORDERS, "main", "tag", "release-2")
    assert _gone(swh, S.ORDERS, tag["changelogManifestList"])
    assert ("tag", "main", "release-2", "changelog manifest list") in _orphans(capsys, swh, S.ORDERS)
    expiring = _ignored(capsys, "expire", "-w", swh, S.ORDERS, "--retain-min", "1", "--time-retained", "0 s")
    assert ("tag", "main", "release-2", "changelog manifest list") in expiring


def test_a_branch_tags_copied_changelog_list(swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """FileSystemBranchManager.createBranch copies the tag file into the branch
    (FileSystemBranchManager.java:112-115; 1.3: 95-98), and a tag holds its snapshot's JSON
    (TagManager.createOrReplaceTag, TagManager.java:166-170): the branch's tag names the list
    main's changelog expiry deletes. live.orders' branch hotfix, tag release-1."""
    tag = _root_file(swh, S.ORDERS, "hotfix", "tag", "release-1")
    assert _gone(swh, S.ORDERS, tag["changelogManifestList"])
    assert ("branch tag", "hotfix", "release-1", "changelog manifest list") in _orphans(capsys, swh, S.ORDERS)


def test_a_branch_changelog_of_its_copied_fork_snapshot(swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """FileSystemBranchManager.createBranch copies the tagged snapshot's file into the branch
    (FileSystemBranchManager.java:116-119; 1.3: 99-102); the branch's own decoupled expiry keeps
    it as changelog-12 (ExpireSnapshotsImpl.java:263-268, commitChangelog), while main's
    ChangelogDeletion deletes the list both name (ChangelogDeletion.java:74-77). live.orders'
    branch hotfix, changelog 12: a snapshot copied between branches, its list kept by neither."""
    log = _root_file(swh, S.ORDERS, "hotfix", "changelog", "12")
    assert _gone(swh, S.ORDERS, log["changelogManifestList"])
    assert ("changelog", "hotfix", "12", "changelog manifest list") in _orphans(capsys, swh, S.ORDERS)


def test_a_main_snapshot_whose_list_the_branchs_expiry_deleted(swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The branch created from tag v1 holds a copy of snapshot 6 (FileSystemBranchManager.java:
    116-119); its own commit-time expiry, not decoupled, deletes that snapshot's changelog files
    and list (ExpireSnapshotsImpl.java:219-229, FileDeletionBase.java:347-349) although main
    still retains snapshot 6 (a consumer holds it). live.metrics' snapshot 6 of main."""
    snap = _root_file(swh, S.METRICS, "main", "snapshot", "6")
    assert _gone(swh, S.METRICS, snap["changelogManifestList"])
    assert ("snapshot", "main", "6", "changelog manifest list") in _orphans(capsys, swh, S.METRICS)
    assert ("snapshot", "main", "6", "changelog manifest list") in _ignored(
        capsys, "tag", "delete", "-w", swh, S.METRICS, "v0")


def test_a_changelogs_base_and_delta_lists(swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """SnapshotDeletion.cleanUnusedManifests deletes the base and delta lists of a snapshot it
    keeps as changelog-N unless changelog-producer is none (deleteDataManifestLists =
    !changelogDecoupled || produceChangelog, SnapshotDeletion.java:84-92, FileDeletionBase.java:
    336-346); ChangelogDeletion checks that they exist (ChangelogDeletion.java:67,78,83).
    live.orders (lookup): its changelog-23 has neither list."""
    log = _root_file(swh, S.ORDERS, "main", "changelog", "23")
    assert _gone(swh, S.ORDERS, log["baseManifestList"]) and _gone(swh, S.ORDERS, log["deltaManifestList"])
    named = _orphans(capsys, swh, S.ORDERS)
    assert ("changelog", "main", "23", "base manifest list") in named
    assert ("changelog", "main", "23", "delta manifest list") in named


def test_a_changelogs_index_manifest(wh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """FileDeletionBase.cleanUnusedManifests calls cleanUnusedIndexManifests for every expiring
    snapshot, also one kept as changelog-N (FileDeletionBase.java:290-311,350; 1.3: 339);
    ChangelogDeletion leaves index manifests to snapshot deletion (ChangelogDeletion.java:88)
    and checks existsManifest (:114). sales.dyn (dynamic bucket, decoupled): changelog-2."""
    log = _root_file(wh, W.DYN, "main", "changelog", "2")
    assert _gone(wh, W.DYN, log["indexManifest"])
    assert ("changelog", "main", "2", "index manifest") in _orphans(capsys, wh, W.DYN)


def test_a_consumers_next_snapshot_is_only_a_bound(java: J.JavaPaimon, swh: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """ExpireSnapshotsImpl.expire bounds the range by consumerManager.minNextSnapshot
    (ExpireSnapshotsImpl.java:126-131; 1.3: 119-121) and ExpireChangelogImpl likewise
    (ExpireChangelogImpl.java:122-124): a consumer names an id, which may not be committed yet
    or be gone already. Consumers at an expired and at a future snapshot: every command runs."""
    latest = java.table_call("latest_snapshot", swh, S.METRICS)
    java.table_call("reset_consumer", swh, S.METRICS, consumer="reader-1", next_snapshot=2)  # expired long ago
    java.table_call("reset_consumer", swh, S.METRICS, consumer="reader-2", next_snapshot=latest + 1)  # not yet
    doc = judge.json_cli(capsys, "expire", "-w", swh, S.METRICS, "--retain-min", "1", "--dry-run")
    assert doc["total_files"] == 0 and any("consumer reader-1 at 2" in n for n in doc["notes"])
    _orphans(capsys, swh, S.METRICS)


# -- and what Paimon keeps stays fail-closed -------------------------------------------------------
def _refused(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main([*args, "-o", "json"])
    out, _err = capsys.readouterr()
    assert code == 2, out
    doc: dict[str, Any] = json.loads(out)
    return doc["error"]  # type: ignore[no-any-return]


def test_a_tags_missing_base_list_is_refused_naming_the_tag_and_the_file(
        swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """FileDeletionBase.manifestSkippingSet keeps a tag's base and delta lists
    (FileDeletionBase.java:431-436): missing, the table is damaged."""
    tag = _root_file(swh, S.ORDERS, "main", "tag", "release-2")
    (J.table_root(swh, S.ORDERS) / "manifest" / tag["baseManifestList"]).unlink()
    for args in (("clean-orphans", "-w", swh, S.ORDERS, "--older-than", "1 d", "--dry-run"),
                 ("expire", "-w", swh, S.ORDERS, "--retain-min", "1", "--time-retained", "0 s", "--dry-run"),
                 ("tag", "delete", "-w", swh, S.ORDERS, "release-1", "--force", "--dry-run")):
        error = _refused(capsys, *args)
        assert "tag 'release-2' of branch main" in error["message"], (args, error)
        assert tag["baseManifestList"] in error["message"] and "base manifest list" in error["message"]
        assert error["kind"] == "IncompleteProtectionSet" and "remove_unexisting_files" not in (error["fix"] or "")
        assert f"restore {tag['baseManifestList']}" in error["fix"]


def test_a_retained_snapshots_own_changelog_list_is_refused(swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The branch that committed a snapshot keeps its changelog list while it retains it
    (ExpireSnapshotsImpl.java:219-229 deletes only the expiring snapshots'): live.orders' latest
    snapshot, tagged by nothing, copied by no branch."""
    root = J.table_root(swh, S.ORDERS)
    latest = max(J.ids(root / "snapshot", "snapshot-"))
    snap = _root_file(swh, S.ORDERS, "main", "snapshot", str(latest))
    assert snap["changelogManifestList"], "the latest snapshot of a lookup table after a commit carries changelog"
    Path(root / "manifest" / snap["changelogManifestList"]).unlink()
    error = _refused(capsys, "clean-orphans", "-w", swh, S.ORDERS, "--older-than", "1 d", "--dry-run")
    assert f"snapshot {latest} of branch main" in error["message"] and "changelog manifest list" in error["message"]
