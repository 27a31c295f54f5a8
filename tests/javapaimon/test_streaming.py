"""Every tablekeeper operation on tables as streaming jobs leave them (tests/javapaimon/streaming.py:
lookup and full-compaction changelogs, deletion vectors, commit-time expiry by Java, a decoupled
changelog, tags by ``createTag(name)`` and by ``tag.automatic-creation``, branches from those
tags with their own commits and compactions), judged by Java Paimon on both versions.

Each case: the command exits 0; Java reads every view before and after, equal except what the
command meant to change; where Java has the same procedure it runs it on a twin copy and both
read the same; Java then commits to main and every branch and runs its own expiry and orphan
cleanup (``judge.java_still_works``). ``--output json`` is checked on the way: the bytes of every
deleted kind are the sizes of the files that went, measured before, and the references the
tables name by design without the file (a tag's changelog manifest list, a branch's copy of its
fork snapshot) are named as ignored, with the reason.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.javapaimon import judge
from tests.javapaimon import streaming as S
from tests.javapaimon.test_operations import _same_as_java, _same_as_java_views, _snapshot_ids
from tests.support import javapaimon as J

pytestmark = [pytest.mark.javapaimon, pytest.mark.timeout(1200)]


def _twin(wh: str) -> str:
    twin = f"{wh}-java"
    shutil.copytree(wh, twin, copy_function=shutil.copy2)
    return twin


def _run(capsys: pytest.CaptureFixture[str], wh: str, *args: str) -> dict[str, Any]:
    """The command with -o json, its bytes checked against the files it removed."""
    before = judge.listing(wh)
    doc = judge.json_cli(capsys, *args)
    judge.bytes_match(before, wh, doc)
    return doc


# ------------------------------------------------------------------------------- expiration
@pytest.mark.parametrize("table", S.TABLES)
def test_expire(java: J.JavaPaimon, swh: str, table: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Expiry past the tagged COMPACT snapshots: every tag still reads, the dangling changelog
    lists are ignored and named. live.metrics' consumer first moves to its latest snapshot (it
    held main's expiration back), on ours and on Java's twin."""
    if table == S.METRICS:
        latest = java.table_call("latest_snapshot", swh, table)
        java.table_call("reset_consumer", swh, table, consumer="reader-1", next_snapshot=latest)
    _twin(swh)
    docs: list[dict[str, Any]] = []
    before, after = judge.judged(java, swh, table, lambda: docs.append(_run(
        capsys, swh, "expire", "-w", swh, table, "--retain-min", "1", "--retain-max", "2", "--time-retained", "1 s")))
    ids = _snapshot_ids(before)
    judge.unchanged_except(before, after, removed=[f"main@snapshot-{i}" for i in ids[:-1]])
    named = judge.ignored_named(docs[0])
    assert ("tag", "main", "release-1" if table == S.ORDERS else "v1", "changelog manifest list") in named, named
    _same_as_java(java, swh, table, after, "expire_snapshots", retain_max=2, retain_min=1, older_than_ms=1000)
    judge.java_still_works(java, swh, table, after)


def test_expire_changelog(java: J.JavaPaimon, swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """live.orders' decoupled changelog: its changelog-N files lost their base and delta lists to
    Java's snapshot expiry (lookup producer) and some their index manifests; three are kept."""
    java.call("alter_table", warehouse=swh, table=S.ORDERS, changes=[["set_option", "changelog.num-retained.max", "3"]])
    twin = _twin(swh)
    changelogs = J.ids(J.table_root(swh, S.ORDERS) / "changelog", "changelog-")
    docs: list[dict[str, Any]] = []
    before, after = judge.judged(java, swh, S.ORDERS, lambda: docs.append(_run(
        capsys, swh, "expire-changelog", "-w", swh, S.ORDERS)))
    judge.unchanged_except(before, after)
    left = J.ids(J.table_root(swh, S.ORDERS) / "changelog", "changelog-")
    assert len(left) < len(changelogs) and set(left) <= set(changelogs)
    assert docs[0]["result"]["deleted"].get("changelog-meta") == len(changelogs) - len(left)
    assert not any("earlier run" in n for n in docs[0]["notes"]), docs[0]["notes"]  # (gone by design, not by a crash)
    java.table_call("expire_changelog", twin, S.ORDERS, retain_max=3, retain_min=1, older_than_ms=3_600_000)
    assert J.ids(J.table_root(twin, S.ORDERS) / "changelog", "changelog-") == left
    assert J.data_views(judge.readable(java.views(twin, S.ORDERS))) == J.data_views(after)
    judge.java_still_works(java, swh, S.ORDERS, after)


def test_expire_partitions(java: J.JavaPaimon, swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    twin = _twin(swh)
    docs: list[dict[str, Any]] = []
    before, after = judge.judged(java, swh, S.ORDERS, lambda: docs.append(judge.json_cli(
        capsys, "expire-partitions", "-w", swh, S.ORDERS, "--expiration-time", "30 d",
        "--timestamp-formatter", "yyyy-MM-dd")))
    assert docs[0]["dropped"] == 1 and docs[0]["expired"] == [f"dt={S.OLD}"]
    [new] = [k for k in after if k not in before]
    judge.unchanged_except(before, after, changed=["main@latest"], added=[new])
    assert after["main@latest"]["rows"] == [r for r in before["main@latest"]["rows"] if r[0] != S.OLD]
    if java.version.startswith("1.3."):
        # Java 1.3's own drop refuses this partition: its commit check finds a deletion vector of
        # a file the partition's compactions rewrote (the table Java 1.3 streamed); after ours,
        # Java 1.3 still commits and maintains the table (below)
        with pytest.raises(J.JavaPaimonError, match="deletion vector"):
            java.table_call("expire_partitions", twin, S.ORDERS, expiration_ms=30 * 86_400_000,
                            timestamp_formatter="yyyy-MM-dd")
    else:
        expired = java.table_call("expire_partitions", twin, S.ORDERS, expiration_ms=30 * 86_400_000,
                                  timestamp_formatter="yyyy-MM-dd")
        assert expired == [{"dt": S.OLD}]
        _same_as_java_views(java, twin, S.ORDERS, after, "expire_partitions")
    judge.java_still_works(java, swh, S.ORDERS, after)


def _plant(wh: str, table: str) -> list[Path]:
    root = J.table_root(wh, table)
    bucket = next(root.glob("**/bucket-0"))
    planted = [bucket / "data-orphan-0.parquet", bucket / "changelog-orphan-0.parquet",
               root / "manifest" / "manifest-orphan-0", root / "manifest" / "index-manifest-orphan-0"]
    old = time.time() - 3 * 86400
    for p in planted:
        p.write_bytes(b"left behind by a failed writer" * (1 + len(p.name)))
        os.utime(p, (old, old))
    return planted


@pytest.mark.parametrize("table", S.TABLES)
def test_clean_orphans(java: J.JavaPaimon, swh: str, table: str, capsys: pytest.CaptureFixture[str]) -> None:
    planted = _plant(swh, table)
    docs: list[dict[str, Any]] = []
    before, after = judge.judged(java, swh, table, lambda: docs.append(_run(
        capsys, swh, "clean-orphans", "-w", swh, table, "--older-than", "1 d")))
    judge.unchanged_except(before, after)
    assert not any(p.exists() for p in planted)
    assert docs[0]["result"]["deleted"] == {"data": 1, "changelog": 1, "manifest": 2}
    named = judge.ignored_named(docs[0])
    if table == S.ORDERS:
        assert ("branch tag", "hotfix", "release-1", "changelog manifest list") in named
        assert ("changelog", "hotfix", "12", "changelog manifest list") in named  # the branch's copy of its fork
    else:
        assert ("snapshot", "main", "6", "changelog manifest list") in named  # deleted by the branch's expiry
    assert judge.java_deleted_nothing_we_kept(java, swh, table, J.now_ms() - 86_400_000) == []
    judge.java_still_works(java, swh, table, after)


# -------------------------------------------------------------------------------------- tags
def test_tag_create(java: J.JavaPaimon, swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """createTag(name) on the latest snapshot, as Java's default does."""
    twin = _twin(swh)
    docs: list[dict[str, Any]] = []
    before, after = judge.judged(java, swh, S.ORDERS, lambda: docs.append(judge.json_cli(
        capsys, "tag", "create", "-w", swh, S.ORDERS, "release-3")))
    judge.unchanged_except(before, after, added=["main@tag-release-3"])
    assert docs[0]["action"] == "created" and docs[0]["writes"] == [
        str(J.table_root(swh, S.ORDERS) / "tag" / "tag-release-3")]
    java.table_call("create_tag", twin, S.ORDERS, tag="release-3", snapshot=None)
    _same_as_java_views(java, twin, S.ORDERS, after, "create_tag")
    judge.java_still_works(java, swh, S.ORDERS, after)


@pytest.mark.parametrize(("table", "tag"), [(S.ORDERS, "release-2"), (S.METRICS, "v1")])
def test_tag_delete(java: J.JavaPaimon, swh: str, table: str, tag: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A tag whose snapshot expired and whose changelog list is gone by design (release-2; no
    branch forked from it: compared with Java's delete_tag), and v1, the fork point of branch
    exp (forced: exp keeps reading)."""
    twin = _twin(swh)
    force = ("--force",) if table == S.METRICS else ()
    docs: list[dict[str, Any]] = []
    before, after = judge.judged(java, swh, table, lambda: docs.append(_run(
        capsys, swh, "tag", "delete", "-w", swh, table, tag, *force)))
    judge.unchanged_except(before, after, removed=[f"main@tag-{tag}"])
    assert docs[0]["result"]["deleted"]["tag"] == 1
    if not force:
        _same_as_java(java, swh, table, after, "delete_tag", tag=tag)
        assert J.all_files(swh) == J.all_files(twin), "tablekeeper and Java's delete_tag left different files"
    judge.java_still_works(java, swh, table, after)


def test_tag_rename_and_replace(java: J.JavaPaimon, swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    twin = _twin(swh)
    [auto, *_] = [n for n in J.names(J.table_root(swh, S.ORDERS) / "tag", "tag-") if re.match(r"\d{4}-", n)]
    latest = _snapshot_ids(judge.readable(java.views(swh, S.ORDERS)))[-1]

    def run() -> None:
        judge.json_cli(capsys, "tag", "rename", "-w", swh, S.ORDERS, "release-2", "release-2b")
        judge.json_cli(capsys, "tag", "replace", "-w", swh, S.ORDERS, auto, "--snapshot", str(latest))

    before, after = judge.judged(java, swh, S.ORDERS, run)
    judge.unchanged_except(before, after, removed=["main@tag-release-2"], added=["main@tag-release-2b"],
                           changed=[f"main@tag-{auto}"])
    assert after["main@tag-release-2b"] == before["main@tag-release-2"]
    assert after[f"main@tag-{auto}"] == before[f"main@snapshot-{latest}"]
    java.table_call("rename_tag", twin, S.ORDERS, tag="release-2", target="release-2b")
    java.table_call("replace_tag", twin, S.ORDERS, tag=auto, snapshot=latest, time_retained_ms=None)
    _same_as_java_views(java, twin, S.ORDERS, after, "rename_tag + replace_tag")
    judge.java_still_works(java, swh, S.ORDERS, after)


# ---------------------------------------------------------------------------------- branches
def test_branch_create_from_tags(java: J.JavaPaimon, swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """From an automatic tag on a retained snapshot (compared with Java's create_branch) and from
    release-2, whose snapshot expired (Java 1.3/1.4 cannot: it copies the snapshot file); both
    branches read as their tags."""
    twin = _twin(swh)
    auto = sorted(n for n in J.names(J.table_root(swh, S.ORDERS) / "tag", "tag-") if re.match(r"\d{4}-", n))[-1]

    def run() -> None:
        judge.json_cli(capsys, "branch", "create", "-w", swh, S.ORDERS, "b-auto", "--from-tag", auto)
        doc = judge.json_cli(capsys, "branch", "create", "-w", swh, S.ORDERS, "b-old", "--from-tag", "release-2")
        assert doc["action"] == "created" and doc["operation"] == "create-branch" and doc["writes"]

    before, after = judge.judged(java, swh, S.ORDERS, run)
    new = [k for k in after if k.startswith(("b-auto@", "b-old@"))]
    judge.unchanged_except(before, after, added=new)
    assert after["b-auto@latest"] == before[f"main@tag-{auto}"]
    assert after["b-old@latest"] == before["main@tag-release-2"]
    java.table_call("create_branch", twin, S.ORDERS, branch="b-auto", tag=auto)
    theirs = judge.readable(java.views(twin, S.ORDERS))
    assert {k: v for k, v in J.data_views(theirs).items() if k.startswith("b-auto@")} == \
        {k: v for k, v in J.data_views(after).items() if k.startswith("b-auto@")}
    judge.java_still_works(java, swh, S.ORDERS, after)


@pytest.mark.parametrize(("table", "branch"), [(S.ORDERS, "hotfix"), (S.METRICS, "exp")])
def test_branch_drop(java: J.JavaPaimon, swh: str, table: str, branch: str,
                     capsys: pytest.CaptureFixture[str]) -> None:
    _twin(swh)
    docs: list[dict[str, Any]] = []
    before, after = judge.judged(java, swh, table, lambda: docs.append(_run(
        capsys, swh, "branch", "drop", "-w", swh, table, branch)))
    judge.unchanged_except(before, after, removed=[k for k in before if k.startswith(f"{branch}@")])
    doc = docs[0]
    assert doc["operation"] == "drop-branch" and doc["action"] == "dropped" and doc["result"]["deleted"]["snapshot"]
    _same_as_java(java, swh, table, after, "delete_branch", branch=branch)
    judge.java_still_works(java, swh, table, after)
    # with the branch gone, main's roots that shared its copied snapshot still clean
    judge.json_cli(capsys, "clean-orphans", "-w", swh, table, "--older-than", "1 d")


def test_branch_fast_forward(java: J.JavaPaimon, swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    """hotfix's own expiry moved its fork snapshot to a changelog-N; main has nothing older than
    the branch's earliest snapshot left, so main can follow it (as Java's fast_forward does)."""
    twin = _twin(swh)
    docs: list[dict[str, Any]] = []
    before, after = judge.judged(java, swh, S.ORDERS, lambda: docs.append(_run(
        capsys, swh, "branch", "fast-forward", "-w", swh, S.ORDERS, "hotfix")))
    assert after["main@latest"] == before["hotfix@latest"]
    for sid in _snapshot_ids(before, "hotfix"):
        assert after[f"main@snapshot-{sid}"] == before[f"hotfix@snapshot-{sid}"]
    assert {k: v for k, v in after.items() if k.startswith("hotfix@")} == \
        {k: v for k, v in before.items() if k.startswith("hotfix@")}
    assert docs[0]["action"] == "fast-forwarded" and docs[0]["result"]["deleted"]["snapshot"] >= 1
    java.table_call("fast_forward", twin, S.ORDERS, branch="hotfix")
    _same_as_java_views(java, twin, S.ORDERS, after, "fast_forward")
    # Java commits to main (and expires there, commit-time); hotfix then shares snapshots whose
    # manifests main's expiry deleted: Java cannot commit to it after its own fast_forward
    # either, so only main is judged further
    judge.java_still_works(java, swh, S.ORDERS, after, branches=["main"])
    java.table_call("commit_probe", twin, S.ORDERS)
    with pytest.raises(J.JavaPaimonError, match="manifest-list"):
        java.table_call("commit_probe", twin, S.ORDERS, on_branch="hotfix")


def test_branch_replace_main(java: J.JavaPaimon, swh: str, capsys: pytest.CaptureFixture[str]) -> None:
    docs: list[dict[str, Any]] = []
    before, after = judge.judged(java, swh, S.METRICS, lambda: docs.append(_run(
        capsys, swh, "branch", "replace-main", "-w", swh, S.METRICS, "exp", "--backup", "old-main")))
    assert after["main@latest"] == before["exp@latest"]
    assert after["old-main@latest"] == before["main@latest"]
    for key, value in before.items():
        if key.startswith("main@tag-"):
            assert after[key.replace("main@", "old-main@")] == value
    assert not [k for k in after if k.startswith("exp@")]
    assert docs[0]["action"] == "replaced-main"
    judge.java_still_works(java, swh, S.METRICS, after)


# ------------------------------------------------------------------------------ apply -f
def _manifests(tmp_path: Path, wh: str) -> Path:
    out = tmp_path / "manifests"
    out.mkdir()
    catalog = {"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonCatalog",
               "metadata": {"name": "live", "namespace": "demo"},
               "spec": {"warehouse": wh, "metastore": "filesystem", "writerTimeZone": "UTC"}}
    tables = [{"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonTable",
               "metadata": {"name": name, "namespace": "demo"},
               "spec": {"catalogRef": {"kind": "PaimonCatalog", "name": "live"}, "database": "live", "table": name}}
              for name in ("orders", "metrics")]
    tag = {"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonTag",
           "metadata": {"name": "audit", "namespace": "demo"}, "spec": {"tableRef": {"name": "orders"},
                                                                         "fromLatest": True}}
    branch = {"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonBranch",
              "metadata": {"name": "audit-branch", "namespace": "demo"},
              "spec": {"tableRef": {"name": "orders"}, "fromTag": "audit"}}
    policy = {"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonRetentionPolicy",
              "metadata": {"name": "live", "namespace": "demo"},
              "spec": {"selector": {"tableNames": ["live.*"]}, "priority": 10, "defaults": {
                  "snapshots": {"minRetained": 1, "maxAge": "1 s"},
                  "partitions": {"expiration": "30 d", "strategy": "values-time", "timestampFormatter": "yyyy-MM-dd"},
                  "orphanFiles": {"state": "Enabled", "olderThan": "1 d", "dryRun": False}}}}
    (out / "live.yaml").write_text(yaml.safe_dump_all([catalog, *tables, tag, branch, policy], sort_keys=False))
    return out


def test_apply(java: J.JavaPaimon, swh: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A declared tag and a branch from it, and a retention policy (snapshots, partitions,
    orphan files) over both streaming tables: every tag and branch Java read before reads the
    same; the old partition is gone from the latest state."""
    manifests = _manifests(tmp_path, swh)
    before = {t: judge.readable(java.views(swh, t)) for t in S.TABLES}
    judge.cli(capsys, "apply", "-f", str(manifests))
    for t in S.TABLES:
        after = judge.readable(java.views(swh, t))
        judge.check_system_tables(swh, t, after)
        if t == S.ORDERS:
            assert after["main@latest"]["rows"] == [r for r in before[t]["main@latest"]["rows"] if r[0] != S.OLD]
            assert "main@tag-audit" in after and after["audit-branch@latest"] == after["main@tag-audit"]
        else:
            assert after["main@latest"] == before[t]["main@latest"]
        for key, value in J.data_views(before[t]).items():
            if key == "main@latest" or (key.startswith("main@snapshot-") and key not in after):
                continue
            assert after.get(key) == value, (t, key)
        judge.java_still_works(java, swh, t, after)
