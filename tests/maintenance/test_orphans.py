"""Orphan file cleanup (paimon-semantics.md §5, §8 pitfalls 6-10 and 32, §9.7) on real
pypaimon-written tables, locally and on S3 (moto).

Orphans are planted next to real files and every file is aged; the plan must name exactly the
planted orphans, execution must delete exactly them, every retained view must read as before and
every file a retained root needs must still exist."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import s3fs

from tablekeeper.core import errors
from tablekeeper.core.plans import execution
from tablekeeper.core.plans import plan as plans
from tablekeeper.core.reclaim.expire import planning
from tablekeeper.core.reclaim.orphans import planning as orphans
from tablekeeper.core.storage import DeleteOutcome, FileIO, FileStatus, ListedEntry
from tests.maintenance.helpers import (
    DAY_MS,
    HOUR_MS,
    IDENT,
    append_table,
    assert_roots_intact,
    backdate_tree,
    build_mixed,
    check_retained,
    copy_tree,
    data_files_by_ids,
    dir_listing,
    file_set,
    handle,
    ids,
    now_ms,
    overwrite,
    pk_table,
    plant,
    reload,
    rows,
    run,
    table_root,
    views,
    write,
)
from tests.support import s3 as s3support

OLD = 3 * 86400  # seconds: older than the default threshold (1 day)


def default_config() -> orphans.OrphanConfig:
    return orphans.OrphanConfig(orphans.resolve_older_than(now_ms()))


def future_config() -> orphans.OrphanConfig:
    """A threshold in the future (only through OrphanConfig directly): every file is old enough."""
    return orphans.OrphanConfig(now_ms() + 60_000)


def plan_paths(plan: plans.Plan) -> set[str]:
    return {f.path for f in plan.files}


# -- scenes -------------------------------------------------------------------------------------


def _scene_mixed(wh: str) -> None:
    build_mixed(wh)


def _scene_dynamic_bucket(wh: str) -> None:
    """Primary-key table with dynamic buckets: HASH index files under index/."""
    t = pk_table(wh, options={"bucket": "-1"})
    for i in range(3):
        write(t, rows("a", i))
    overwrite(t, rows("a", 10), {"dt": "a"})
    t.create_tag("t2", snapshot_id=2)


def _scene_changelog(wh: str) -> None:
    """Primary-key table with changelog-producer=input: changelog files in bucket directories,
    some snapshots expired (decoupled), so changelog-N files are roots."""
    t = pk_table(wh, options={"changelog-producer": "input", "snapshot.num-retained.min": "1",
                              "changelog.num-retained.min": "4", "snapshot.time-retained": "0 ms"})
    for i in range(4):
        write(t, rows("a", i))
    h = handle(wh)
    run(planning.plan_expire(h, planning.config_from_options(h.options()), now_ms() + 1000), h)
    assert h.changelog_ids() == [1, 2, 3]


SCENES = {"mixed": _scene_mixed, "dynamic-bucket": _scene_dynamic_bucket, "changelog": _scene_changelog}


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = {}
    for name, build in SCENES.items():
        wh = str(tmp_path_factory.mktemp(name) / "wh")
        build(wh)
        out[name] = wh
    return out


@pytest.fixture
def mixed(templates: dict[str, str], tmp_path: Path) -> str:
    return copy_tree(templates["mixed"], tmp_path / "wh")


def plant_orphans(root: str) -> set[str]:
    """Old unreferenced files where orphan cleanup must find them; returns their paths."""
    out = {
        plant(f"{root}/manifest/manifest-0a0a0a0a-orphan-0"),
        plant(f"{root}/manifest/manifest-list-0a0a0a0a-orphan-0"),
        plant(f"{root}/manifest/index-manifest-0a0a0a0a-orphan-0"),
        plant(f"{root}/index/index-0a0a0a0a-orphan-0"),
        plant(f"{root}/statistics/stat-0a0a0a0a-orphan-0"),
        plant(f"{root}/dt=a/bucket-0/data-0a0a0a0a-orphan-0.parquet"),
        plant(f"{root}/dt=a/bucket-0/data-0a0a0a0a-orphan-0.parquet.index"),
        plant(f"{root}/dt=a/bucket-0/changelog-0a0a0a0a-orphan-0.parquet"),
        plant(f"{root}/dt=zz/bucket-3/data-0a0a0a0a-orphan-1.parquet"),  # orphan-only partition
        plant(f"{root}/snapshot/.snapshot-99.0a0a0a0a-0a0a.tmp"),  # crashed commit (Java temp name)
        plant(f"{root}/snapshot/junk"),
    }
    if os.path.isdir(f"{root}/branch/branch-b1"):
        out.add(plant(f"{root}/branch/branch-b1/snapshot/.snapshot-9.0a0a0a0a-0a0a.tmp"))
    return out


def plant_untouchables(root: str) -> set[str]:
    """Old files orphan cleanup must never touch (§5 step 3, §9.7)."""
    out = {
        plant(f"{root}/schema/.schema-1.0a0a.tmp"),
        plant(f"{root}/schema/junk"),
        plant(f"{root}/tag/junk"),
        plant(f"{root}/tag/.tag-x.crc"),
        plant(f"{root}/tag/tag-success-file/t3_SUCCESS"),
        plant(f"{root}/consumer/consumer-reader", b'{"nextSnapshot" : 1}'),
        plant(f"{root}/consumer/junk"),
        plant(f"{root}/snapshot/snapshot-7f0a0a0a-0a0a.tmp"),  # pypaimon's temp name: prefix snapshot-
        plant(f"{root}/changelog/changelog-0a0a.tmp"),
        plant(f"{root}/README"),  # files at the table root
        plant(f"{root}/MAIN-BRANCH"),
        plant(f"{root}/dt=a/_SUCCESS"),  # files directly in a partition directory
        plant(f"{root}/dt=a/not-a-bucket/data-0a0a-0.parquet"),
        plant(f"{root}/dt=a/bucket-0/sub/data-0a0a-1.parquet"),  # below a bucket: not listed
        plant(f"{root}/service/service-0a0a"),
        plant(f"{root}/unknown/data-0a0a-2.parquet"),
        plant(f"{root}/bucket-0/data-0a0a-3.parquet"),  # a bucket dir at the wrong depth
    }
    if os.path.isdir(f"{root}/branch/branch-b1"):
        out |= {plant(f"{root}/branch/branch-b1/tag/junk"), plant(f"{root}/branch/branch-b1/schema/junk"),
                plant(f"{root}/branch/branch-b1/consumer/junk")}
    return out


# -- the core scenario --------------------------------------------------------------------------


BUG_ORPHAN_CHANGELOG_ROOTS = (
    "BUG: orphans.plan_orphan_clean walks snap.manifest_lists (base, delta AND changelog) of every "
    "long-lived changelog-N root (orphans.py, used-set loop over _roots()); with changelog-producer "
    "!= none snapshot expiration deletes the base/delta lists of expired snapshots (Java semantics, "
    "tablekeeper's own expire does it), so the FileNotFoundError under an existing changelog-N raises "
    "IncompleteProtectionSetError and orphan cleanup can never run on such a table again; fix: for "
    "changelog roots only the changelog manifest list is required (base/delta only for producer none), "
    "skip missing base/delta lists there")


@pytest.mark.parametrize("scene", [
    "mixed", "dynamic-bucket",
    "changelog",
])
def test_planted_orphans_found_and_deleted_referenced_files_kept(templates: dict[str, str], tmp_path: Path,
                                                                 scene: str) -> None:
    wh = copy_tree(templates[scene], tmp_path / "wh")
    root = table_root(wh)
    before = views(wh)
    real_files = {os.path.join(wh, p) for p in file_set(wh)}
    orphans_planted = plant_orphans(root)
    untouchable = plant_untouchables(root)
    backdate_tree(wh, OLD)
    t = handle(wh)

    plan = orphans.plan_orphan_clean(t, default_config())
    assert plan_paths(plan) == orphans_planted
    kinds = {f.path: f.kind for f in plan.files}
    assert kinds[f"{root}/manifest/manifest-0a0a0a0a-orphan-0"] == plans.FileKind.MANIFEST
    assert kinds[f"{root}/index/index-0a0a0a0a-orphan-0"] == plans.FileKind.INDEX
    assert kinds[f"{root}/statistics/stat-0a0a0a0a-orphan-0"] == plans.FileKind.STATISTICS
    assert kinds[f"{root}/dt=a/bucket-0/data-0a0a0a0a-orphan-0.parquet"] == plans.FileKind.DATA
    assert kinds[f"{root}/snapshot/junk"] == plans.FileKind.OTHER
    summary = plan.summary()
    assert summary["total_files"] == len(orphans_planted)
    assert summary["total_bytes"] == 4 * len(orphans_planted)

    result = run(plan, t)
    left = {os.path.join(wh, p) for p in file_set(wh)}
    assert left == real_files | untouchable
    assert sum(result.deleted.values()) == len(orphans_planted)
    # the orphan-only partition is gone (bucket, then partition dir, non-recursively)
    assert not os.path.exists(f"{root}/dt=zz")
    assert os.path.isdir(f"{root}/dt=a/bucket-0") and os.path.isdir(f"{root}/dt=a/bucket-0/sub")
    check_retained(wh, before)
    # a second run finds nothing
    assert orphans.plan_orphan_clean(handle(wh), default_config()).files == ()


def test_branch_only_files_and_tag_pinned_files_survive(mixed: str) -> None:
    """Pitfall 7, first half. Main's snapshots 1..6 removed metadata-only (as a writer's own
    expiry that kept data would leave them): their manifest lists become orphans, but every
    data file stays: branch-only files (c40, b50, c90), tag-pinned ones, and even a0/a30/a70,
    because snapshot 7's base list (pypaimon never merges manifests) still names their ADD and
    DELETE entries, and orphan cleanup counts both (Java semantics)."""
    root = table_root(mixed)
    t = handle(mixed)
    lists = {sid: {f"{root}/manifest/{n}" for n in t.snapshot(sid).manifest_lists} for sid in range(1, 8)}
    for sid in range(1, 7):
        os.unlink(f"{root}/snapshot/snapshot-{sid}")
    Path(root, "snapshot", "EARLIEST").write_text("7")
    before = views(mixed)
    by_ids = data_files_by_ids(root)
    backdate_tree(mixed, OLD)
    plan = orphans.plan_orphan_clean(handle(mixed), default_config())
    # snapshot 3's lists are still named by tag t3 and by b1's fork copy of snapshot 3
    assert plan_paths(plan) == lists[1] | lists[2] | lists[4] | lists[5] | lists[6]
    run(plan, handle(mixed))
    assert data_files_by_ids(root) == by_ids
    check_retained(mixed, before)


def test_recent_files_are_never_candidates(mixed: str) -> None:
    root = table_root(mixed)
    fresh = plant(f"{root}/dt=a/bucket-0/data-0a0a-fresh-0.parquet", age_s=None)
    aged = plant(f"{root}/dt=a/bucket-0/data-0a0a-aged-0.parquet", age_s=2 * 86400)
    plan = orphans.plan_orphan_clean(handle(mixed), default_config())
    assert plan_paths(plan) == {aged}
    run(plan, handle(mixed))
    assert os.path.exists(fresh) and not os.path.exists(aged)


# -- pitfall 6: candidates are listed before the used set ------------------------------------------


def test_pitfall_06_commit_between_listing_and_used_set_survives(mixed: str) -> None:
    root = table_root(mixed)
    orphan = plant(f"{root}/dt=a/bucket-0/data-0a0a-orphan-0.parquet")
    committed: list[set[str]] = []

    def writer_commits() -> None:
        before = file_set(mixed)
        t = reload(mixed)
        overwrite(t, rows("a", 500), {"dt": "a"})
        write(t, rows("q", 600))
        committed.append(file_set(mixed) - before)

    # threshold in the future: had the new files been listed, they would be candidates
    plan = orphans.plan_orphan_clean(handle(mixed), future_config(), after_listing=writer_commits)
    new_files = {os.path.join(mixed, p) for p in committed[0]}
    assert new_files and any(p.endswith(".parquet") for p in new_files)
    assert not plan_paths(plan) & new_files
    assert plan_paths(plan) == {orphan}
    before = views(mixed)
    run(plan, handle(mixed))
    assert all(os.path.exists(p) for p in new_files)
    assert ids(500) in data_files_by_ids(root) and ids(600) in data_files_by_ids(root)
    check_retained(mixed, before)


# -- pitfall 7: branches --------------------------------------------------------------------------


@pytest.mark.parametrize("layout_", ["empty-dir", "snapshots-only"])
def test_pitfall_07_branch_without_schema_aborts(mixed: str, layout_: str) -> None:
    root = table_root(mixed)
    os.makedirs(f"{root}/branch/branch-broken")
    if layout_ == "snapshots-only":
        plant(f"{root}/branch/branch-broken/snapshot/snapshot-1", b"{}")
    plant(f"{root}/dt=a/bucket-0/data-0a0a-orphan-0.parquet")
    backdate_tree(mixed, OLD)
    before = dir_listing(mixed)
    with pytest.raises(errors.IncompleteProtectionSetError, match="broken"):
        orphans.plan_orphan_clean(handle(mixed), default_config())
    assert dir_listing(mixed) == before


def test_pitfall_07_dropped_branch_files_become_orphans_others_stay(mixed: str) -> None:
    root = table_root(mixed)
    import shutil

    shutil.rmtree(f"{root}/branch/branch-b1")  # Java's drop: metadata only
    before = views(mixed)
    backdate_tree(mixed, OLD)
    run(orphans.plan_orphan_clean(handle(mixed), default_config()), handle(mixed))
    left = data_files_by_ids(root)
    assert not {ids(40), ids(50), ids(90)} & set(left)
    assert {ids(0), ids(10), ids(20), ids(30), ids(60), ids(70), ids(80)} <= set(left)
    check_retained(mixed, before)


# -- pitfall 8: data-file.path-directory ----------------------------------------------------------


def test_pitfall_08_data_file_path_directory(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh, options={"data-file.path-directory": "data"})
    write(t, rows("a", 0))
    overwrite(t, rows("a", 10), {"dt": "a"})
    write(t, rows("b", 20))
    root = table_root(wh)
    assert os.path.isdir(f"{root}/data/dt=a/bucket-0") and not os.path.exists(f"{root}/dt=a")
    before = views(wh)
    real = {os.path.join(wh, p) for p in file_set(wh)}
    planted = {plant(f"{root}/data/dt=a/bucket-0/data-0a0a-orphan-0.parquet"),
               plant(f"{root}/data/dt=zz/bucket-0/data-0a0a-orphan-1.parquet"),
               plant(f"{root}/manifest/manifest-0a0a-orphan-0")}
    outside = plant(f"{root}/dt=a/bucket-0/data-0a0a-outside-0.parquet")  # not under the data root
    backdate_tree(wh, OLD)
    plan = orphans.plan_orphan_clean(handle(wh), default_config())
    assert plan_paths(plan) == planted
    run(plan, handle(wh))
    assert {os.path.join(wh, p) for p in file_set(wh)} == real | {outside}
    assert not os.path.exists(f"{root}/data/dt=zz") and os.path.isdir(f"{root}/data")
    check_retained(wh, before)


# -- pitfall 9: never delete a directory ------------------------------------------------------------


def test_pitfall_09_plan_never_lists_a_directory(mixed: str) -> None:
    root = table_root(mixed)
    for d in ("manifest/manifest-dir-0", "index/index-dir", "statistics/stat-dir", "dt=a/bucket-0/data-dir.parquet",
              "snapshot/.snapshot-5.dir.tmp"):
        plant(f"{root}/{d}/inner")
    backdate_tree(mixed, OLD)
    plan = orphans.plan_orphan_clean(handle(mixed), future_config())
    for f in plan.files:
        assert not os.path.isdir(f.path), f.path
    assert plan.files == ()


class LyingListIO(FileIO):
    """A listing that reports one sub-directory of a bucket as a regular file (the #7920
    failure mode), and records every path handed to delete_files."""

    def __init__(self, liar_dir: str) -> None:
        base = FileIO.for_uri("/")
        super().__init__(base.scheme, base.fs)
        self.liar_dir = liar_dir
        self.deleted: list[str] = []

    def list_dir(self, path: str) -> list[FileStatus]:
        out = super().list_dir(path)
        return [FileStatus(s.path, s.size, s.mtime_ms, False) if s.path == self.liar_dir else s for s in out]

    def scan_dir(self, path: str) -> list[ListedEntry]:
        # the lie comes with a status, as an object store's listing would carry one
        return [ListedEntry(s.path, s.name, s.is_dir, s) for s in self.list_dir(path)]

    def status_of(self, entry: ListedEntry) -> FileStatus | None:
        # local bucket directories are listed by name and stat'ed later: that stat lies too
        [status] = self.statuses_of([entry])
        return status

    def statuses_of(self, entries: Any) -> list[FileStatus | None]:
        return [FileStatus(s.path, s.size, s.mtime_ms, False) if s is not None and s.path == self.liar_dir else s
                for s in super().statuses_of(entries)]

    def delete_files(self, paths: Any) -> Any:
        paths = list(paths)
        self.deleted.extend(paths)
        return super().delete_files(paths)


def test_pitfall_09_a_directory_misreported_as_a_file_is_never_deleted(mixed: str) -> None:
    root = table_root(mixed)
    liar = f"{root}/dt=a/bucket-0/data-0a0a-dir-0.parquet"
    inner = plant(f"{liar}/inner-file")
    orphan = plant(f"{root}/dt=a/bucket-0/data-0a0a-orphan-0.parquet")
    backdate_tree(mixed, OLD)
    os.utime(liar, (time.time() - OLD, time.time() - OLD))
    io = LyingListIO(liar)
    t = handle(mixed, file_io=io)
    plan = orphans.plan_orphan_clean(t, default_config())
    assert plan_paths(plan) == {liar, orphan}  # the lie made it a candidate
    result = execution.execute(plan, io, batch_size=1)
    assert [r.path for r in result.failed] == [liar]
    assert result.failed[0].outcome == DeleteOutcome.FAILED and "directory" in (result.failed[0].error or "")
    assert os.path.isdir(liar) and os.path.exists(inner) and not os.path.exists(orphan)


class FailingListIO(FileIO):
    def __init__(self, victim: str) -> None:
        base = FileIO.for_uri("/")
        super().__init__(base.scheme, base.fs)
        self.victim = victim
        self.deleted: list[str] = []

    def list_dir(self, path: str) -> list[FileStatus]:
        if path == self.victim:
            raise OSError(f"transient listing failure of {path}")
        return super().list_dir(path)

    def scan_dir(self, path: str) -> list[ListedEntry]:
        if path == self.victim:
            raise OSError(f"transient listing failure of {path}")
        return super().scan_dir(path)

    def list_names(self, path: str) -> list[str]:
        if path == self.victim:
            raise OSError(f"transient listing failure of {path}")
        return super().list_names(path)

    def delete_files(self, paths: Any) -> Any:
        paths = list(paths)
        self.deleted.extend(paths)
        return super().delete_files(paths)


@pytest.mark.parametrize("victim", ["dt=a", "dt=a/bucket-0", "manifest", "branch/branch-b1/snapshot"])
def test_pitfall_09_failing_listing_never_leads_to_a_directory_delete(mixed: str, victim: str) -> None:
    root = table_root(mixed)
    plant(f"{root}/dt=b/bucket-0/data-0a0a-orphan-0.parquet")
    backdate_tree(mixed, OLD)
    io = FailingListIO(f"{root}/{victim}")
    t = handle(mixed, file_io=io)
    before = dir_listing(mixed)
    try:
        plan = orphans.plan_orphan_clean(t, default_config())
    except OSError:
        assert dir_listing(mixed) == before  # fail closed: nothing touched
        return
    result = execution.execute(plan, io)
    assert not result.failed
    assert all(not os.path.isdir(p) for p in io.deleted)
    assert all(before[os.path.relpath(p, mixed)] for p in io.deleted)


def test_pitfall_09_executor_rejects_directories_in_any_plan(mixed: str) -> None:
    root = table_root(mixed)
    victim_dirs = [f"{root}/dt=a/bucket-0", f"{root}/manifest", f"{root}/dt=a"]
    plan = plans.Plan("clean-orphans", IDENT, plans.Plan.ordered_deletes(
        plans.PlannedFile(d, plans.FileKind.DATA) for d in victim_dirs))
    before = dir_listing(mixed)
    result = execution.execute(plan, handle(mixed).file_io)
    assert sorted(r.path for r in result.failed) == sorted(victim_dirs)
    assert dir_listing(mixed) == before


# -- pitfall 10: older_than ------------------------------------------------------------------------


def test_pitfall_10_older_than_must_be_in_the_past() -> None:
    now = now_ms()
    with pytest.raises(errors.UnsafePolicyError):
        orphans.resolve_older_than(now, older_than_ms=now)
    with pytest.raises(errors.UnsafePolicyError):
        orphans.resolve_older_than(now, older_than_ms=now + 1)
    with pytest.raises(errors.UnsafePolicyError):
        orphans.resolve_older_than(now, older_than_ms=now + DAY_MS, force=True)
    with pytest.raises(errors.UnsafePolicyError):
        orphans.resolve_older_than(now, older_than_age=timedelta(0), force=True)
    with pytest.raises(errors.UnsafePolicyError):
        orphans.resolve_older_than(now, older_than_age=timedelta(hours=-1), force=True)


def test_pitfall_10_recent_thresholds_need_force() -> None:
    now = now_ms()
    with pytest.raises(errors.UnsafePolicyError):
        orphans.resolve_older_than(now, older_than_age=timedelta(minutes=10))
    with pytest.raises(errors.UnsafePolicyError):
        orphans.resolve_older_than(now, older_than_ms=now - HOUR_MS + 1)
    assert orphans.resolve_older_than(now, older_than_age=timedelta(minutes=10), force=True) == now - 600_000
    assert orphans.resolve_older_than(now, older_than_ms=now - 1, force=True) == now - 1
    assert orphans.resolve_older_than(now, older_than_age=timedelta(hours=1)) == now - HOUR_MS
    assert orphans.resolve_older_than(now) == now - DAY_MS  # the default: 1 day
    with pytest.raises(errors.InvalidInputError):
        orphans.resolve_older_than(now, older_than_ms=now - DAY_MS, older_than_age=timedelta(days=1))


# -- pitfall 32 (orphan variant): empty directories -------------------------------------------------


def test_pitfall_32_empty_bucket_and_partition_dirs_removed_non_recursively(mixed: str) -> None:
    root = table_root(mixed)
    plant(f"{root}/dt=zz/bucket-0/data-0a0a-orphan-0.parquet")  # whole partition orphaned
    plant(f"{root}/dt=yy/bucket-0/data-0a0a-orphan-1.parquet")
    keep = plant(f"{root}/dt=yy/_SUCCESS")  # partition dir not empty afterwards
    plant(f"{root}/dt=xx/bucket-0/data-0a0a-orphan-2.parquet")
    plant(f"{root}/dt=a/bucket-0/data-0a0a-orphan-4.parquet")  # next to live files
    os.makedirs(f"{root}/dt=ww/bucket-0")  # empty already, no orphan in it: not touched
    backdate_tree(mixed, OLD)
    plant(f"{root}/dt=xx/bucket-1/data-0a0a-orphan-3.parquet", age_s=None)  # too young: stays
    result = run(orphans.plan_orphan_clean(handle(mixed), default_config()), handle(mixed))
    assert not os.path.exists(f"{root}/dt=zz")
    assert not os.path.exists(f"{root}/dt=yy/bucket-0") and os.path.exists(keep)
    assert not os.path.exists(f"{root}/dt=xx/bucket-0") and os.path.isdir(f"{root}/dt=xx/bucket-1")
    assert os.path.isdir(f"{root}/dt=a/bucket-0") and os.path.isdir(f"{root}/dt=ww/bucket-0")
    assert os.path.isdir(root) and os.path.isdir(f"{root}/manifest")
    assert f"{root}/dt=zz" in result.removed_dirs and root not in result.removed_dirs


def test_pitfall_32_empty_directories_kept_when_disabled(mixed: str) -> None:
    root = table_root(mixed)
    plant(f"{root}/dt=zz/bucket-0/data-0a0a-orphan-0.parquet")
    backdate_tree(mixed, OLD)
    config = orphans.OrphanConfig(orphans.resolve_older_than(now_ms()), clean_empty_directories=False)
    plan = orphans.plan_orphan_clean(handle(mixed), config)
    assert not any(isinstance(s, plans.RemoveEmptyDirsStep) for s in plan.steps)
    run(plan, handle(mixed))
    assert os.path.isdir(f"{root}/dt=zz/bucket-0") and not os.listdir(f"{root}/dt=zz/bucket-0")


def test_pitfall_32_unpartitioned_table_never_loses_its_root(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh, partitioned=False)
    write(t, rows("x", 0))
    root = table_root(wh)
    plant(f"{root}/bucket-7/data-0a0a-orphan-0.parquet")
    backdate_tree(wh, OLD)
    before = views(wh)
    run(orphans.plan_orphan_clean(handle(wh), default_config()), handle(wh))
    assert not os.path.exists(f"{root}/bucket-7") and os.path.isdir(f"{root}/bucket-0")
    check_retained(wh, before)


# -- fail closed -------------------------------------------------------------------------------------


def test_missing_manifest_under_an_existing_root_aborts(mixed: str) -> None:
    root = table_root(mixed)
    t = handle(mixed)
    os.unlink(f"{root}/manifest/{t.tag('t3').snapshot.delta_manifest_list}")
    plant(f"{root}/dt=a/bucket-0/data-0a0a-orphan-0.parquet")
    backdate_tree(mixed, OLD)
    before = dir_listing(mixed)
    with pytest.raises(errors.IncompleteProtectionSetError):
        orphans.plan_orphan_clean(handle(mixed), default_config())
    assert dir_listing(mixed) == before


@pytest.mark.parametrize("processes", [1, 2])
def test_root_expired_concurrently_while_building_the_used_set(mixed: str, processes: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A concurrent expiry between listing and used-set building is tolerated; it never makes
    a retained root lose a file (also with the manifest scan shared with a forked helper)."""
    from tablekeeper.core.reclaim.orphans import references

    monkeypatch.setattr(references, "MIN_NAMES_TO_FORK", 0)
    root = table_root(mixed)
    orphan = plant(f"{root}/dt=a/bucket-0/data-0a0a-orphan-0.parquet")
    backdate_tree(mixed, OLD)

    def concurrent_expiry() -> None:
        h = handle(mixed)
        run(planning.plan_expire(h, planning.ExpireConfig(retain_min=1, time_retained=timedelta(0)), now_ms() + 1000), h)

    config = orphans.OrphanConfig(orphans.resolve_older_than(now_ms()), processes=processes)
    plan = orphans.plan_orphan_clean(handle(mixed), config, after_listing=concurrent_expiry)
    before = views(mixed)
    result = execution.execute(plan, handle(mixed).file_io)
    assert not result.failed
    assert not os.path.exists(orphan)
    check_retained(mixed, before)


# -- S3 (moto) ----------------------------------------------------------------------------------------


def _s3_keys(s3: s3fs.S3FileSystem, prefix: str) -> set[str]:
    return {k for k in s3.find(prefix) if not k.endswith("/")}


@pytest.fixture(scope="module")
def s3_mixed_objects(s3_endpoint: str) -> dict[str, bytes]:
    """The ``build_mixed`` table written once on S3 by pypaimon (markers and all), as objects."""
    options = s3support.paimon_s3_options(s3_endpoint)
    return s3support.bucket_snapshot_once(s3_endpoint, lambda: build_mixed(f"s3://{s3support.BUCKET}/wh", options))


@pytest.fixture
def s3_mixed(s3: s3fs.S3FileSystem, s3_warehouse: str, s3_mixed_objects: dict[str, bytes]) -> Iterator[str]:
    """A fresh copy of the S3-built mixed table in ``s3_warehouse`` (restored into the emptied bucket)."""
    assert s3_warehouse == f"s3://{s3support.BUCKET}/wh"
    s3support.put_objects(s3support.BUCKET, s3_mixed_objects)
    yield s3_warehouse


@pytest.mark.s3
def test_s3_planted_orphans_found_and_deleted_referenced_files_kept(
        s3_mixed: str, s3: s3fs.S3FileSystem, s3_bucket: str, s3_options: dict[str, str]) -> None:
    wh = s3_mixed
    root = table_root(wh)
    prefix = root.removeprefix("s3://")
    before = views(wh, IDENT, s3_options)
    real = _s3_keys(s3, prefix)
    planted = {f"{prefix}/{rel}" for rel in (
        "manifest/manifest-0a0a-orphan-0", "index/index-0a0a-orphan-0", "statistics/stat-0a0a-orphan-0",
        "dt=a/bucket-0/data-0a0a-orphan-0.parquet", "dt=zz/bucket-0/data-0a0a-orphan-1.parquet",
        "snapshot/.snapshot-99.0a0a.tmp")}
    untouchable = {f"{prefix}/{rel}" for rel in (
        "schema/junk", "tag/junk", "consumer/junk", "README", "dt=a/_SUCCESS", "unknown/x.parquet",
        "snapshot/snapshot-7f0a.tmp", "branch/branch-b1/tag/junk")}
    s3support.put_objects(s3_bucket, {k.split("/", 1)[1]: b"junk" for k in planted | untouchable})
    young = f"{prefix}/dt=a/bucket-0/data-0a0a-young-0.parquet"
    for key in real | planted | untouchable:
        s3support.backdate(s3_bucket, key.split("/", 1)[1], timedelta(days=3))
    s3support.put_objects(s3_bucket, {young.split("/", 1)[1]: b"junk"})

    t = handle(wh, options=s3_options)
    plan = orphans.plan_orphan_clean(t, default_config())
    assert {p.removeprefix("s3://") for p in plan_paths(plan)} == planted
    result = run(plan, t)
    assert sum(result.deleted.values()) == len(planted)
    assert _s3_keys(s3, prefix) == real | untouchable | {young}
    check_retained(wh, before, options=s3_options)
    assert orphans.plan_orphan_clean(handle(wh, options=s3_options), default_config()).files == ()


@pytest.mark.s3
def test_s3_pitfall_06_and_09_commit_between_listing_and_used_set_and_no_directory_deletes(
        s3_mixed: str, s3: s3fs.S3FileSystem, s3_bucket: str, s3_options: dict[str, str]) -> None:
    wh = s3_mixed
    prefix = table_root(wh).removeprefix("s3://")
    for key in _s3_keys(s3, prefix):
        s3support.backdate(s3_bucket, key.split("/", 1)[1], timedelta(days=3))
    new: list[set[str]] = []

    def writer_commits() -> None:
        old = _s3_keys(s3, prefix)
        overwrite(reload(wh, catalog_options=s3_options), rows("a", 500), {"dt": "a"})
        new.append(_s3_keys(s3, prefix) - old)

    plan = orphans.plan_orphan_clean(handle(wh, options=s3_options), future_config(), after_listing=writer_commits)
    assert new[0] and plan.files == ()
    run(plan, handle(wh, options=s3_options))
    assert new[0] <= _s3_keys(s3, prefix)
    assert_roots_intact(wh, IDENT, s3_options)
    # pitfall 9 on S3: directory prefixes handed to the executor are refused, nothing is deleted
    root = table_root(wh)
    keys = _s3_keys(s3, prefix)
    bad = plans.Plan("clean-orphans", IDENT, plans.Plan.ordered_deletes(
        plans.PlannedFile(f"{root}/{d}", plans.FileKind.DATA) for d in ("dt=a/bucket-0", "manifest", "dt=a")))
    io = handle(wh, options=s3_options).file_io
    # plan execution lists no parents on S3 (docs/storage-internals.md, "Request cost"): a DeleteObjects of
    # a prefix's name removes no object below it
    execution.execute(bad, io)
    assert _s3_keys(s3, prefix) == keys
    # FileIO's own contract still tells the directories apart (one listing per parent)
    results = io.delete_files([f.path for f in bad.files])
    assert len(results) == 3 and all(r.outcome.value == "failed" and "directory" in (r.error or "") for r in results)
    assert _s3_keys(s3, prefix) == keys


# -- the byte-level name scan (core/reclaim/orphans/name_scan.py) against decoding every entry ----------------------


def _plans_by_scan_and_by_decoding(t_factory: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[set[str], set[str]]:
    from tablekeeper.core.paimon import manifests
    from tablekeeper.core.reclaim.orphans import name_scan

    decoded: list[str] = []
    real_refs = manifests.read_manifest_refs

    def spy(file_io: Any, path: str) -> Any:
        decoded.append(path)
        return real_refs(file_io, path)

    monkeypatch.setattr(manifests, "read_manifest_refs", spy)
    scanned = plan_paths(orphans.plan_orphan_clean(t_factory(), default_config()))
    assert decoded == []  # the scan served every manifest
    monkeypatch.setattr(name_scan, "MAX_LITERAL_NAMES", -1)  # scanner unusable: decode entries
    by_decoding = plan_paths(orphans.plan_orphan_clean(t_factory(), default_config()))
    assert decoded  # and now every manifest was decoded
    return scanned, by_decoding


@pytest.mark.parametrize("scene", ["mixed", "dynamic-bucket", "changelog"])
def test_name_scan_plans_exactly_what_decoding_plans(templates: dict[str, str], tmp_path: Path, scene: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    wh = copy_tree(templates[scene], tmp_path / "wh")
    planted = plant_orphans(table_root(wh))
    backdate_tree(wh, OLD)
    scanned, by_decoding = _plans_by_scan_and_by_decoding(lambda: handle(wh), monkeypatch)
    assert scanned == by_decoding == planted


def test_name_scan_on_the_java_fixture_matches_decoding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tablekeeper.core.paimon.table import open_table_path
    from tests.support.paimon import extract_java_fixture

    wh = extract_java_fixture(tmp_path / "java")
    tables = sorted(p for p in (wh / "default.db").iterdir() if (p / "snapshot").is_dir())
    assert tables
    for root in tables:
        bucket = next(p for p in root.rglob("bucket-*") if p.is_dir())
        planted = {plant(f"{bucket}/data-{'0a0a0a0a-0a0a-0a0a-0a0a-0a0a0a0a0a0a'}-0.parquet"),
                   plant(f"{bucket}/data-0a0a-orphan-0.parquet")}
        backdate_tree(str(wh), OLD)
        scanned, by_decoding = _plans_by_scan_and_by_decoding(lambda r=root: open_table_path(str(r)), monkeypatch)
        assert scanned == by_decoding == planted, root.name
        monkeypatch.undo()


# -- the manifest scan shared with forked helpers ------------------------------------------------


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Fork helpers on tables of any size; the pids of the helpers started."""
    from tablekeeper.core.reclaim import reach
    from tablekeeper.core.reclaim.orphans import references
    from tablekeeper.core.reclaim.reach import child_process

    monkeypatch.setattr(references, "MIN_NAMES_TO_FORK", 0)
    pids: list[int] = []
    real = child_process.ForkedCall

    class Recorded(real):  # type: ignore[misc, valid-type]
        def __init__(self, fn: Any) -> None:
            super().__init__(fn)
            pids.append(self._pid)

    monkeypatch.setattr(reach, "ForkedCall", Recorded)  # what references reads
    return pids


def plant_shaped_orphans(root: str) -> set[str]:
    """Like plant_orphans, with data and changelog names of Paimon's shape (searched by key, so
    the helpers' results are used; odd names make the caller scan every share itself)."""
    out = plant_orphans(root)
    for odd in [p for p in out if "/dt=" in p]:
        os.unlink(odd)
        out.discard(odd)
    for directory, prefix, ext in (("dt=a/bucket-0", "data-", "parquet"), ("dt=a/bucket-0", "changelog-", "parquet"),
                                   ("dt=zz/bucket-3", "data-", "orc")):
        name = f"{prefix}{uuid.uuid4()}-0.{ext}"
        out.add(plant(f"{root}/{directory}/{name}"))
        if prefix == "data-":
            out.add(plant(f"{root}/{directory}/{name}.index"))
    return out


def _all_reaped(pids: list[int]) -> bool:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False
    return True


@pytest.mark.parametrize("processes", [2, 3])
@pytest.mark.parametrize("scene", ["mixed", "dynamic-bucket", "changelog"])
def test_forked_scan_plans_exactly_what_one_process_plans(templates: dict[str, str], tmp_path: Path, scene: str,
                                                          processes: int, forking: list[int]) -> None:
    wh = copy_tree(templates[scene], tmp_path / "wh")
    planted = plant_shaped_orphans(table_root(wh))
    backdate_tree(wh, OLD)
    threshold = orphans.resolve_older_than(now_ms())
    alone = plan_paths(orphans.plan_orphan_clean(handle(wh), orphans.OrphanConfig(threshold, processes=1)))
    assert forking == []
    shared = plan_paths(orphans.plan_orphan_clean(handle(wh), orphans.OrphanConfig(threshold, processes=processes)))
    assert len(forking) == processes - 1
    assert _all_reaped(forking)
    assert alone == shared == planted
    before = views(wh)
    plan = orphans.plan_orphan_clean(handle(wh), orphans.OrphanConfig(threshold, processes=processes))
    result = execution.execute(plan, handle(wh).file_io)
    assert not result.failed and not any(os.path.exists(p) for p in planted)
    check_retained(wh, before)


def test_a_failing_helper_share_is_scanned_by_the_caller(mixed: str, forking: list[int],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from tablekeeper.core.reclaim.orphans import references

    planted = plant_shaped_orphans(table_root(mixed))
    backdate_tree(mixed, OLD)

    def broken(*_args: Any) -> bytes:
        raise MemoryError("helper ran out of memory")

    monkeypatch.setattr(references, "_helper_scan", broken)
    plan = orphans.plan_orphan_clean(handle(mixed), orphans.OrphanConfig(orphans.resolve_older_than(now_ms()),
                                                                          processes=2))
    assert forking and _all_reaped(forking)
    assert plan_paths(plan) == planted


@pytest.mark.timeout(120)  # the helper would sleep 600 s
def test_a_stuck_helper_is_killed_and_its_share_scanned_by_the_caller(mixed: str, forking: list[int],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A helper that hangs (a lock another thread held at fork time, say) costs a timeout, never
    a wrong plan or a planner that waits forever."""
    from tablekeeper.core.reclaim.orphans import references

    planted = plant_shaped_orphans(table_root(mixed))
    backdate_tree(mixed, OLD)

    def stuck(*_args: Any) -> bytes:
        time.sleep(600)
        return b""

    monkeypatch.setattr(references, "_helper_scan", stuck)
    monkeypatch.setattr(references, "HELPER_TIMEOUT_FLOOR_S", 0.5)
    plan = orphans.plan_orphan_clean(handle(mixed), orphans.OrphanConfig(orphans.resolve_older_than(now_ms()),
                                                                          processes=2))
    assert forking and _all_reaped(forking)
    assert plan_paths(plan) == planted


def test_the_first_helpers_walk_is_adopted(mixed: str, forking: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller builds its name scanner while the first helper walks the lists, and takes that
    walk over instead of walking again."""
    from tablekeeper.core.reclaim.orphans import references

    planted = plant_shaped_orphans(table_root(mixed))
    backdate_tree(mixed, OLD)
    walks_here: list[int] = []
    real_walk = references._Walk.walk

    def counted(self: Any, *args: Any) -> None:
        walks_here.append(os.getpid())
        real_walk(self, *args)

    monkeypatch.setattr(references._Walk, "walk", counted)
    plan = orphans.plan_orphan_clean(handle(mixed), orphans.OrphanConfig(orphans.resolve_older_than(now_ms()),
                                                                          processes=2))
    assert forking and os.getpid() not in walks_here  # (the helper's walk counts in its own copy)
    assert plan_paths(plan) == planted


def test_a_helper_that_walked_other_roots_is_not_trusted(mixed: str, forking: list[int],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Manifests are claimed by their index in the walk the caller publishes: a helper whose own
    walk differs (a root appearing or vanishing between the walks) would scan other manifests
    than the indices it claims, so it claims nothing."""
    import functools

    from tablekeeper.core.reclaim import reach
    from tablekeeper.core.reclaim.orphans import references

    planted = plant_shaped_orphans(table_root(mixed))
    backdate_tree(mixed, OLD)
    monkeypatch.setattr(references, "CLAIM_BATCH", 1)
    recorded = reach.ForkedCall  # (the forking fixture's recorder)
    started: list[int] = []

    class SecondSeesLess(recorded):  # type: ignore[misc, valid-type]
        def __init__(self, fn: Any) -> None:
            if started:  # the second helper walks the roots in reverse: other manifests at each index
                fn = functools.partial(fn.func, fn.args[0], fn.args[1][::-1], *fn.args[2:])
            started.append(1)
            super().__init__(fn)

    monkeypatch.setattr(reach, "ForkedCall", SecondSeesLess)  # what references reads
    plan = orphans.plan_orphan_clean(handle(mixed), orphans.OrphanConfig(orphans.resolve_older_than(now_ms()),
                                                                          processes=3))
    assert len(forking) == 2
    assert plan_paths(plan) == planted


def test_a_helper_claims_manifests_only_when_its_walk_is_the_published_one(mixed: str) -> None:
    """The claim protocol, run in this process: with the digest of its own walk published, a
    helper claims every manifest (no one else claims); with another digest it claims none and
    leaves the counter untouched."""
    import pickle

    from tablekeeper.core.reclaim.orphans import references
    from tablekeeper.core.reclaim.reach import child_process

    t = handle(mixed)
    roots = orphans.read_roots(t, orphans.enumerate_roots(t))
    listing = orphans.list_candidates(t, orphans.decide_orphan_clean(t, orphans.OrphanConfig(now_ms())))
    names = listing.data_names
    joined = "\n".join(names).encode()
    walk = references._Walk(t, set(), None, [])
    paths: list[str] = []
    walk.walk(roots, paths.append)
    sent: list[bytes] = []
    for published, expect_all in ((references._digest(paths), True), (references._digest(paths[::-1]), False)):
        claims = child_process.SharedClaims()
        claims.publish(published)
        result = references._helper_scan(t, roots, set(), names, ("data-", "changelog-"), joined, claims, sent.append)
        digest, claimed, _state, _deferred = pickle.loads(result)
        assert digest == references._digest(paths)
        covered = sorted(i for start, stop in claimed for i in range(start, stop))
        assert covered == (list(range(len(paths))) if expect_all else [])
        assert claims.claim(len(paths), 1) == (range(len(paths), len(paths)) if expect_all else range(1))
    assert [pickle.loads(m)[0] for m in sent] == [paths, paths]  # the walk, sent before scanning


def test_the_caller_ignores_a_helper_result_of_another_walk(mixed: str) -> None:
    """A helper result cut from another walk (its digest differs) is not merged and its claims
    count for nothing: the caller scans those manifests itself. Here a forged result claims
    every manifest and says every name was seen; the orphan must still be found."""
    import pickle
    import uuid as uuid_

    from tablekeeper.core.reclaim.orphans import references
    from tablekeeper.core.reclaim.orphans.name_scan import NameScanner
    from tablekeeper.core.reclaim.reach import child_process

    root = table_root(mixed)
    orphan_name = f"data-{uuid_.uuid4()}-0.parquet"
    plant(f"{root}/dt=a/bucket-0/{orphan_name}")
    t = handle(mixed)
    roots = orphans.read_roots(t, orphans.enumerate_roots(t))
    names = orphans.list_candidates(t, orphans.decide_orphan_clean(t, orphans.OrphanConfig(now_ms()))).data_names
    walk = references._Walk(t, set(), NameScanner(names, ("data-",)), names)
    paths: list[str] = []
    walk.walk(roots, paths.append)
    everything_seen = (bytes(len(walk.scanner._keys)), [])

    class ForgedHelper:
        def result(self, timeout: float | None = None) -> bytes:
            return pickle.dumps((references._digest(paths[::-1]), [(0, len(paths))], everything_seen, []))

        def cancel(self) -> None:
            pass

    claims = child_process.SharedClaims()
    claims._memory[0:8] = len(paths).to_bytes(8, "little")  # the forged helper "claimed" everything
    walk.scan_shared(paths, [ForgedHelper()], claims)  # type: ignore[list-item]
    assert orphan_name in walk.scanner.missing()


def test_forked_scan_with_names_of_another_shape(mixed: str, forking: list[int]) -> None:
    """Names searched literally (debris of another shape) are searched by the helpers too."""
    root = table_root(mixed)
    planted = plant_orphans(root) | {plant(f"{root}/dt=a/bucket-0/.data-0a0a.parquet.crc"),
                                     plant(f"{root}/dt=a/bucket-0/part-00000.parquet")}
    backdate_tree(mixed, OLD)
    plan = orphans.plan_orphan_clean(handle(mixed), orphans.OrphanConfig(orphans.resolve_older_than(now_ms()),
                                                                          processes=2))
    assert forking
    assert plan_paths(plan) == planted


def test_forked_scan_missing_manifest_under_an_existing_root_aborts(mixed: str, forking: list[int]) -> None:
    from tablekeeper.core.paimon import manifests

    root = table_root(mixed)
    t = handle(mixed)
    victim = manifests.read_manifest_list(t.file_io, f"{root}/manifest/{t.tag('t3').snapshot.delta_manifest_list}")
    os.unlink(f"{root}/manifest/{victim[0].file_name}")
    plant(f"{root}/dt=a/bucket-0/data-0a0a-orphan-0.parquet")
    backdate_tree(mixed, OLD)
    before = dir_listing(mixed)
    with pytest.raises(errors.IncompleteProtectionSetError, match="snapshot 3 of branch main names a manifest .* which is missing"):
        orphans.plan_orphan_clean(handle(mixed), orphans.OrphanConfig(orphans.resolve_older_than(now_ms()),
                                                                      processes=2))
    assert forking and _all_reaped(forking)
    assert dir_listing(mixed) == before
