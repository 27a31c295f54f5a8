"""Snapshot and changelog expiration (paimon-semantics.md §2, §2.7, §8, §9) on real
pypaimon-written tables.

After every executed plan: every retained view (snapshots, tags, branches) reads exactly as
before through pypaimon, and every file a retained root needs still exists (an oracle built on
pypaimon's own manifest readers, tests/maintenance/helpers.py)."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.cli.main import main as cli_main
from tablekeeper.core import errors
from tablekeeper.core.paimon.table import Table
from tablekeeper.core.plans import plan as plans
from tablekeeper.core.reclaim.expire import planning
from tablekeeper.core.storage import FileIO
from tests.maintenance.helpers import (
    IDENT,
    append_table,
    assert_roots_intact,
    check_retained,
    copy_tree,
    data_files_by_ids,
    dir_listing,
    file_set,
    handle,
    ids,
    missing_required,
    now_ms,
    overwrite,
    pk_table,
    read_changelog_rows,
    read_view,
    reload,
    rows,
    run,
    table_root,
    views,
    write,
    write_consumer,
)

ZERO = timedelta(0)


def cfg(**kw: Any) -> planning.ExpireConfig:
    kw.setdefault("retain_min", 1)
    kw.setdefault("time_retained", ZERO)
    return planning.ExpireConfig(**kw)


def later() -> int:
    """'now' for plans: a moment after every commit of the test."""
    return now_ms() + 1000


def gone_snapshots(branch: str, first: int, last: int) -> set[str]:
    return {f"{branch}@snapshot-{i}" for i in range(first, last + 1)}


def expire_run(wh: str, config: planning.ExpireConfig, branch: str = "main",
               now: int | None = None) -> tuple[plans.Plan, Any]:
    t = handle(wh, branch=branch)
    plan = planning.plan_expire(t, config, later() if now is None else now)
    return plan, run(plan, t)


@pytest.fixture
def seven(tmp_path: Path) -> str:
    """An append table with 7 snapshots, a few milliseconds apart."""
    wh = str(tmp_path / "wh")
    t = append_table(wh, partitioned=False)
    for i in range(7):
        write(t, rows("x", i * 10))
        time.sleep(0.005)
    return wh


# -- range rules (§2.2) -------------------------------------------------------------------------


@pytest.mark.parametrize("retain_min", [1, 3, 7, 10])
def test_retain_min_keeps_the_newest_snapshots(seven: str, retain_min: int) -> None:
    before = views(seven)
    plan, _ = expire_run(seven, cfg(retain_min=retain_min))
    kept = list(range(max(1, 8 - retain_min), 8))
    assert handle(seven).snapshot_ids() == kept
    assert dict(plan.details)["expired_snapshots"] == 7 - len(kept)
    check_retained(seven, before, gone=gone_snapshots("main", 1, kept[0] - 1))


def test_retain_max_expires_old_snapshots_regardless_of_time(seven: str) -> None:
    t = handle(seven)
    rng = planning.compute_range(t, cfg(retain_max=3, time_retained=timedelta(days=365)), later())
    assert (rng.earliest, rng.latest, rng.end_exclusive) == (1, 7, 5)
    before = views(seven)
    expire_run(seven, cfg(retain_max=3, time_retained=timedelta(days=365)))
    assert handle(seven).snapshot_ids() == [5, 6, 7]
    check_retained(seven, before, gone=gone_snapshots("main", 1, 4))


def test_pitfall_19_time_retention_checked_on_next_snapshot(seven: str) -> None:
    t = handle(seven)
    times = {s.id: s.time_millis for s in t.snapshots()}
    assert times[3] < times[4]
    now = later()
    threshold = (times[3] + times[4]) // 2  # snapshot 3 is older, its successor 4 is younger
    config = cfg(time_retained=timedelta(milliseconds=now - threshold))
    rng = planning.compute_range(t, config, now)
    # 2.0 rule: 3 stays "current" until 4 was committed, and 4 is younger than the threshold.
    # The <=1.4 rule (own time) would also expire 3.
    assert rng.end_exclusive == 3
    before = views(seven)
    expire_run(seven, config, now=now)
    assert handle(seven).snapshot_ids() == [3, 4, 5, 6, 7]
    check_retained(seven, before, gone=gone_snapshots("main", 1, 2))


def test_time_retention_expires_nothing_when_everything_is_young(seven: str) -> None:
    before = dir_listing(seven)
    plan, _ = expire_run(seven, cfg(time_retained=timedelta(hours=1)), now=now_ms())
    assert dict(plan.details)["expired_snapshots"] == 0
    assert handle(seven).snapshot_ids() == list(range(1, 8))
    # only the missing EARLIEST hint is written
    assert set(file_set(seven)) - set(before) == {"db.db/orders/snapshot/EARLIEST"}


def test_expire_limit_caps_one_run_and_the_next_run_continues(seven: str) -> None:
    before = views(seven)
    expire_run(seven, cfg(expire_limit=2))
    assert handle(seven).snapshot_ids() == [3, 4, 5, 6, 7]
    assert Path(table_root(seven), "snapshot", "EARLIEST").read_text() == "3"
    expire_run(seven, cfg(expire_limit=2))
    assert handle(seven).snapshot_ids() == [5, 6, 7]
    check_retained(seven, before, gone=gone_snapshots("main", 1, 4))


def test_consumers_cap_the_range(seven: str) -> None:
    t = handle(seven)
    write_consumer(t, "slow", 4)
    write_consumer(t, "fast", 6)
    rng = planning.compute_range(t, cfg(), later())
    assert rng.end_exclusive == 4 and "slow" in rng.reason
    before = views(seven)
    expire_run(seven, cfg())
    assert handle(seven).snapshot_ids() == [4, 5, 6, 7]
    check_retained(seven, before, gone=gone_snapshots("main", 1, 3))
    write_consumer(t, "slow", 7)
    expire_run(seven, cfg())
    assert handle(seven).snapshot_ids() == [6, 7]


def test_consumer_beyond_latest_and_consumers_of_other_branches_do_not_cap(seven: str) -> None:
    t = handle(seven)
    write_consumer(t, "ahead", 100)
    reload(seven).create_tag("fork")
    reload(seven).branch_manager().create_branch("b1", tag_name="fork")
    write_consumer(t.on_branch("b1"), "branch-reader", 2)
    assert planning.compute_range(t, cfg(), later()).end_exclusive == 7


@pytest.mark.parametrize(("decoupled", "capped"), [(False, True), (True, False)])
def test_consumer_changelog_only_ignored_unless_decoupled(seven: str, decoupled: bool, capped: bool) -> None:
    t = handle(seven)
    write_consumer(t, "reader", 3)
    options = {"consumer.changelog-only": "true", "snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"}
    if decoupled:
        options["changelog.num-retained.min"] = "5"
    config = planning.config_from_options(options)
    assert config.changelog_decoupled is decoupled and config.consumer_changelog_only
    end = planning.compute_range(t, config, later()).end_exclusive
    assert end == (3 if capped else 7)


def test_options_come_from_the_table_schema(seven: str) -> None:
    options = handle(seven).options() | {"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "4",
                                         "snapshot.time-retained": "30 min", "snapshot.expire.limit": "7"}
    config = planning.config_from_options(options)
    assert (config.retain_min, config.retain_max, config.time_retained, config.expire_limit) == (
        2, 4, timedelta(minutes=30), 7)
    assert not config.changelog_decoupled
    defaults = planning.config_from_options({})
    assert (defaults.retain_min, defaults.retain_max, defaults.time_retained, defaults.expire_limit) == (
        10, 2**31 - 1, timedelta(hours=1), 50)
    override = planning.config_from_options(options, retain_min=3, expire_limit=None)
    assert (override.retain_min, override.expire_limit) == (3, 7)


# -- pitfall 15: retain_min >= 1 and max >= min at every entry point ---------------------------


@pytest.mark.parametrize("bad", [0, -1])
def test_pitfall_15_retain_min_below_one_rejected_by_the_library(seven: str, bad: int) -> None:
    t = handle(seven)
    before = dir_listing(seven)
    with pytest.raises(errors.UnsafePolicyError):
        planning.ExpireConfig(retain_min=bad).validate()
    with pytest.raises(errors.UnsafePolicyError):
        planning.config_from_options({"snapshot.num-retained.min": str(bad)})
    with pytest.raises(errors.UnsafePolicyError):
        planning.config_from_options({}, retain_min=bad)
    with pytest.raises(errors.UnsafePolicyError):
        planning.plan_expire(t, planning.ExpireConfig(retain_min=bad, time_retained=ZERO), later())
    with pytest.raises(errors.UnsafePolicyError):
        planning.compute_range(t, planning.ExpireConfig(retain_min=bad, time_retained=ZERO), later())
    with pytest.raises(errors.UnsafePolicyError):
        planning.changelog_config_from_options({"changelog.num-retained.min": str(bad)})
    assert dir_listing(seven) == before


def test_pitfall_15_retain_max_below_min_rejected_by_the_library(seven: str) -> None:
    with pytest.raises(errors.InvalidInputError):
        planning.ExpireConfig(retain_min=5, retain_max=4).validate()
    with pytest.raises(errors.InvalidInputError):
        planning.config_from_options({"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "4"})
    with pytest.raises(errors.InvalidInputError):
        planning.plan_expire(handle(seven), planning.ExpireConfig(retain_min=3, retain_max=2), later())
    with pytest.raises(errors.InvalidInputError):
        planning.changelog_config_from_options({"changelog.num-retained.min": "5", "changelog.num-retained.max": "4"})
    with pytest.raises(errors.InvalidInputError):
        planning.config_from_options({"snapshot.num-retained.min": "ten"})


@pytest.mark.parametrize("args", [
    ["--retain-min", "0"],
    ["--retain-min", "-3"],
    ["--retain-min", "5", "--retain-max", "4"],
    ["--retain-max", "0"],
    ["--max-deletes", "0"],
])
def test_pitfall_15_rejected_by_the_cli(seven: str, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    before = dir_listing(seven)
    assert cli_main(["expire", "-w", seven, IDENT, "--time-retained", "0 ms", *args]) == 2
    assert "error:" in capsys.readouterr().err
    assert dir_listing(seven) == before


def test_pitfall_15_table_option_retain_min_zero_rejected_by_the_cli(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh, partitioned=False, options={"snapshot.num-retained.min": "0"})
    for i in range(3):
        write(t, rows("x", i))
    before = dir_listing(wh)
    assert cli_main(["expire", "-w", wh, IDENT, "--time-retained", "0 ms"]) == 2
    assert cli_main(["expire-changelog", "-w", wh, IDENT]) == 2
    assert dir_listing(wh) == before
    # an explicit valid flag overrides the bad table option
    assert cli_main(["expire", "-w", wh, IDENT, "--time-retained", "0 ms", "--retain-min", "1"]) == 0
    assert handle(wh).snapshot_ids() == [3]


# -- P2: EARLIEST -----------------------------------------------------------------------------


def test_p2_earliest_written_and_used_by_pypaimon(seven: str, monkeypatch: pytest.MonkeyPatch) -> None:
    hint = Path(table_root(seven), "snapshot", "EARLIEST")
    assert not hint.exists()  # pypaimon never writes it
    plan, result = expire_run(seven, cfg(retain_min=3))
    assert hint.read_text() == "5"  # no trailing newline
    assert result.written[-1] == str(hint)
    sm = reload(seven).snapshot_manager()
    probed: list[int] = []
    original = sm.get_snapshot_by_id

    def spy(sid: int) -> Any:
        probed.append(sid)
        return original(sid)

    monkeypatch.setattr(sm, "get_snapshot_by_id", spy)
    earliest = sm.try_get_earliest_snapshot()
    assert earliest is not None and earliest.id == 5
    assert probed == [5]  # started at the hint, no probing from #1
    assert handle(seven).earliest_snapshot_id() == 5


def test_p2_earliest_after_more_than_300_expired_snapshots(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh, partitioned=False)
    for i in range(305):
        write(t, [{"dt": "x", "id": i, "amount": 1.0}])
    before_latest = read_view(wh, IDENT)
    expire_run(wh, cfg(retain_min=3, expire_limit=1000))
    assert handle(wh).snapshot_ids() == [303, 304, 305]
    sm = reload(wh).snapshot_manager()
    assert sm.try_get_earliest_snapshot().id == 303
    assert read_view(wh, IDENT) == before_latest
    assert_roots_intact(wh)
    # the counterfactual: without the hint pypaimon gives up after probing #1..#301
    os.unlink(os.path.join(table_root(wh), "snapshot", "EARLIEST"))
    with pytest.raises(RuntimeError, match="Cannot find earliest snapshot"):
        reload(wh).snapshot_manager().try_get_earliest_snapshot()


def test_missing_earliest_is_written_even_when_nothing_expires(seven: str) -> None:
    plan = planning.plan_expire(handle(seven), cfg(retain_min=10), later())
    assert [type(s).__name__ for s in plan.steps] == ["WriteStep"]
    run(plan, handle(seven))
    assert Path(table_root(seven), "snapshot", "EARLIEST").read_text() == "1"
    again = planning.plan_expire(handle(seven), cfg(retain_min=10), later())
    assert again.is_empty


# -- protection: tags, branches (§2.4, §2.6, §9.2) -----------------------------------------------


def test_expire_main_deletes_exactly_the_unreferenced_files(mixed: str) -> None:
    root = table_root(mixed)
    before_views = views(mixed)
    before_files = file_set(mixed)
    by_ids = data_files_by_ids(root)
    plan, result = expire_run(mixed, cfg())
    assert handle(mixed).snapshot_ids() == [7]
    after_files = file_set(mixed)
    assert after_files - before_files == {"db.db/orders/snapshot/EARLIEST"}
    deleted_data = {k for k, p in by_ids.items() if not os.path.exists(p)}
    # a0 died in 3 (no tag before), a30/a70 died in 7 (t3 never held them, no branch does);
    # a20 and b10 died in 4 and 5 but tag t3 (and branch b1) still hold them
    assert deleted_data == {ids(0), ids(30), ids(70)}
    assert result.deleted["data"] == 3 and result.deleted["snapshot"] == 6
    gone_meta = {p for p in before_files - after_files if "/manifest/" in p}
    assert gone_meta and all(os.path.basename(p).startswith("manifest-list-") for p in gone_meta)
    check_retained(mixed, before_views, gone=gone_snapshots("main", 1, 6))


def test_pitfall_01_tag_survives_expiry(mixed: str) -> None:
    tag_rows = views(mixed)["main@tag-t3"]
    before = views(mixed)
    expire_run(mixed, cfg())
    assert views(mixed)["main@tag-t3"] == tag_rows
    assert "main@tag-t3" not in missing_required(mixed)
    by_ids = data_files_by_ids(table_root(mixed))
    assert {ids(20), ids(10)} <= set(by_ids)  # the tag's merged set: a20 and b10
    check_retained(mixed, before, gone=gone_snapshots("main", 1, 6))
    # a tag far behind a long history
    t = reload(mixed)
    for i in range(5):
        overwrite(t, rows("a", 100 + 10 * i), {"dt": "a"})
    before = views(mixed)
    expire_run(mixed, cfg())
    check_retained(mixed, before, gone=gone_snapshots("main", 7, 11))
    assert views(mixed)["main@tag-t3"] == tag_rows


def test_pitfall_12_branch_tag_protects_branch_files(mixed: str) -> None:
    before = views(mixed)
    bt_rows = before["b1@tag-bt"]
    plan, _ = expire_run(mixed, cfg(), branch="b1")
    assert handle(mixed, branch="b1").snapshot_ids() == [6]
    # c40 died in branch snapshot 6: only the branch's own tag bt still holds it
    assert ids(40) in data_files_by_ids(table_root(mixed))
    assert views(mixed)["b1@tag-bt"] == bt_rows
    check_retained(mixed, before, gone=gone_snapshots("b1", 3, 5))
    # main is untouched by a branch expiry
    assert handle(mixed).snapshot_ids() == list(range(1, 8))


def test_branch_expiry_keeps_files_main_still_uses(mixed: str) -> None:
    # remove the branch's copy of t3 (metadata only): b10, deleted in branch snapshot 5, is now
    # protected only by main's snapshots and tags
    os.unlink(os.path.join(table_root(mixed), "branch", "branch-b1", "tag", "tag-t3"))
    before = views(mixed)
    expire_run(mixed, cfg(), branch="b1")
    assert ids(10) in data_files_by_ids(table_root(mixed))
    check_retained(mixed, before, gone=gone_snapshots("b1", 3, 5))


@pytest.mark.parametrize("remove", [("tag/tag-t3",), ("tag/tag-t3", "branch/branch-b1/tag/tag-t3")])
def test_other_branch_snapshots_and_tags_protect_shared_files(mixed: str, remove: tuple[str, ...]) -> None:
    """Main's fork tag deleted (metadata only, as pypaimon's delete_tag): the branch's copy of
    the tag and the branch's snapshots still protect a20 and b10 when main expires."""
    root = table_root(mixed)
    for rel in remove:
        os.unlink(os.path.join(root, rel))
    before = views(mixed)
    expire_run(mixed, cfg())
    by_ids = data_files_by_ids(root)
    assert {ids(20), ids(10)} <= set(by_ids)
    assert ids(0) not in by_ids and ids(30) not in by_ids
    check_retained(mixed, before, gone=gone_snapshots("main", 1, 6))


def test_expire_both_branches_then_every_view_still_reads(mixed: str) -> None:
    before = views(mixed)
    expire_run(mixed, cfg(), branch="b1")
    expire_run(mixed, cfg())
    check_retained(mixed, before, gone=gone_snapshots("main", 1, 6) | gone_snapshots("b1", 3, 5))
    # a second run of each is a no-op
    listing = dir_listing(mixed)
    for branch in ("main", "b1"):
        plan = planning.plan_expire(handle(mixed, branch=branch), cfg(), later())
        assert plan.is_empty, plan
    assert dir_listing(mixed) == listing


# -- decoupled changelog (§2.7) ---------------------------------------------------------------

DECOUPLED = {"snapshot.num-retained.min": "1", "changelog.num-retained.min": "3", "snapshot.time-retained": "0 ms"}


def test_decoupled_expiry_writes_byte_identical_changelog_copies(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh, options=DECOUPLED)
    for i in range(5):
        write(t, rows("a", 10 * i))
    h = handle(wh)
    config = planning.config_from_options(h.options())
    assert config.changelog_decoupled
    snapshot_bytes = {sid: Path(h.snapshot_path(sid)).read_bytes() for sid in range(1, 5)}
    before = views(wh)
    plan, result = expire_run(wh, config)
    assert h.changelog_ids() == [1, 2, 3, 4]
    for sid, raw in snapshot_bytes.items():
        assert Path(h.changelog_path(sid)).read_bytes() == raw
    assert Path(table_root(wh), "changelog", "LATEST").read_text() == "4"
    writes = [o for o in result.order if o.startswith("write:") and "/changelog/" in o]
    assert result.order.index("delete:snapshot") > result.order.index(writes[-1])
    for sid in range(1, 5):
        assert read_changelog_rows(wh, IDENT, sid) == [
            (("amount", float(i)), ("dt", "a"), ("id", i)) for i in (10 * (sid - 1), 10 * (sid - 1) + 1)]
    check_retained(wh, before, gone=gone_snapshots("main", 1, 4))
    # a rerun does not clobber the copies (create-only writes)
    assert planning.plan_expire(h, config, later()).files == ()


def test_pitfall_16_decoupled_producer_none_changelogs_stay_readable(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh, options=DECOUPLED)
    write(t, rows("a", 0))
    overwrite(t, rows("a", 10), {"dt": "a"})
    overwrite(t, rows("a", 20), {"dt": "a"})
    write(t, rows("b", 30))
    write(t, rows("b", 40))
    h = handle(wh)
    before = views(wh)
    expire_run(wh, planning.config_from_options(h.options()))
    assert h.changelog_ids() == [1, 2, 3, 4]
    check_retained(wh, before, gone=gone_snapshots("main", 1, 4))
    for cid in h.changelog_ids():
        read_changelog_rows(wh, IDENT, cid)  # changelog-1 ADDs a0, changelog-2 ADDs a10
    # then changelog expiration (retain 3 of 5): changelog-1 and -2 go, 3 and 4 stay readable
    plan = planning.plan_expire_changelog(h, planning.changelog_config_from_options(h.options()), later())
    run(plan, h)
    assert h.changelog_ids() == [3, 4]
    for cid in (3, 4):
        read_changelog_rows(wh, IDENT, cid)
    assert_roots_intact(wh)


def _producer_input_table(wh: str, options: dict[str, str]) -> Table:
    t = pk_table(wh, options={"changelog-producer": "input", **options})
    for i in range(5):
        write(t, rows("a", i))
    return handle(wh)


def test_pitfall_18_decoupled_producer_input_changelogs_readable_after_snapshot_expiry(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    h = _producer_input_table(wh, DECOUPLED)
    config = planning.config_from_options(h.options())
    assert config.changelog_decoupled and config.changelog_producer == "input"
    changelog_files = {p for p in file_set(wh) if os.path.basename(p).startswith("changelog-")}
    expected = {sid: read_changelog_rows_from_snapshot(wh, sid) for sid in range(1, 5)}
    before = views(wh)
    plan, result = expire_run(wh, config)
    assert "changelog" not in result.deleted  # the changelog files live on in changelog-N
    assert changelog_files <= file_set(wh)
    for sid in range(1, 5):
        assert read_changelog_rows(wh, IDENT, sid) == expected[sid]
    check_retained(wh, before, gone=gone_snapshots("main", 1, 4))


def read_changelog_rows_from_snapshot(wh: str, sid: int) -> list[Any]:
    """Rows of the changelog files a snapshot's changelog manifest list ADDs (pypaimon readers)."""
    import pyarrow.parquet as pq
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    from pypaimon.utils.file_store_path_factory import canonical_data_file_path

    t = reload(wh)
    snap = t.snapshot_manager().get_snapshot_by_id(sid)
    out = []
    for m in ManifestListManager(t).read_changelog(snap):
        for e in ManifestFileManager(t).read(m.file_name, file_size=m.file_size):
            p = canonical_data_file_path(t, tuple(e.partition.values), e.bucket, e.file.file_name)
            for r in pq.ParquetFile(p.removeprefix("file:")).read().to_pylist():
                out.append(tuple(sorted((k, v) for k, v in r.items() if not k.startswith("_"))))
    assert out
    return sorted(out, key=repr)


def test_pitfall_16_decoupled_producer_input_expire_changelog_later(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    h = _producer_input_table(wh, DECOUPLED)
    expire_run(wh, planning.config_from_options(h.options()))
    expected = {sid: read_changelog_rows(wh, IDENT, sid) for sid in (3, 4)}
    before = views(wh)
    listing = file_set(wh)
    plan = planning.plan_expire_changelog(h, planning.changelog_config_from_options(h.options()), later())
    run(plan, h)
    assert h.changelog_ids() == [3, 4]
    removed = listing - file_set(wh)
    assert any(os.path.basename(p).startswith("changelog-") and p.endswith(".parquet") for p in removed)
    assert any("-changelog" in os.path.basename(p) for p in removed if "/manifest/" in p)
    for sid in (3, 4):
        assert read_changelog_rows(wh, IDENT, sid) == expected[sid]
    check_retained(wh, before)


BUG_CHANGELOG_ROOT_LISTS = (
    "BUG: expire.plan_expire treats every existing changelog-N as needing its base/delta manifest lists "
    "(expire.py: 'keep_data.update(... reach.delta_refs(log))' and 'reach.union_meta([..., *changelog_roots])'); "
    "with changelog-producer != none the previous run deleted those lists (as Java does), so once any "
    "changelog-N exists every later expiration raises IncompleteProtectionSetError: expiration of a "
    "decoupled producer-input table works exactly once. Fix: for changelog roots use only the changelog "
    "manifest list when producer != none (base/delta only for producer none)")


def test_pitfall_16_decoupled_producer_input_second_expiry_run(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    h = _producer_input_table(wh, DECOUPLED)
    config = planning.config_from_options(h.options())
    expire_run(wh, config)
    assert h.changelog_ids() == [1, 2, 3, 4]
    write(reload(wh), rows("a", 9))
    before = views(wh)
    expire_run(wh, config)
    assert h.snapshot_ids() == [6] and h.changelog_ids() == [1, 2, 3, 4, 5]
    for sid in range(1, 6):
        read_changelog_rows(wh, IDENT, sid)
    check_retained(wh, before, gone={"main@snapshot-5"})


def test_pitfall_17_expire_changelog_tolerates_missing_middle_changelog(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh, options={**DECOUPLED, "changelog.num-retained.min": "2"})
    for i in range(6):
        write(t, rows("a", 10 * i))  # appends only: no DELETE entries
    h = handle(wh)
    expire_run(wh, planning.config_from_options(h.options()))
    assert h.changelog_ids() == [1, 2, 3, 4, 5]
    os.unlink(h.changelog_path(3))  # a middle changelog vanished (concurrent job, manual cleanup)
    expected = {cid: read_changelog_rows(wh, IDENT, cid) for cid in (5,)}
    before = views(wh)
    plan = planning.plan_expire_changelog(h, planning.changelog_config_from_options(h.options()), later())
    run(plan, h)
    assert h.changelog_ids() == [5]
    assert Path(table_root(wh), "changelog", "EARLIEST").read_text() == "5"
    assert read_changelog_rows(wh, IDENT, 5) == expected[5]
    check_retained(wh, before)
    # data of the retained snapshot is untouched
    assert views(wh)["main@latest"] == before["main@latest"]


def test_expire_changelog_is_bounded_by_consumers(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh, options={"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms",
                                  "changelog.time-retained": "1 ms"})
    for i in range(6):
        write(t, rows("a", 10 * i))
    h = handle(wh)
    write_consumer(h, "reader", 3)
    config = planning.config_from_options(h.options())
    assert config.changelog_decoupled and not config.consumer_changelog_only
    # the consumer also bounds snapshot expiry (not changelog-only): expire without it first
    os.unlink(os.path.join(h.dir("consumer"), "consumer-reader"))
    expire_run(wh, config)
    write_consumer(h, "reader", 3)
    plan = planning.plan_expire_changelog(h, planning.changelog_config_from_options(h.options()), later())
    run(plan, h)
    assert h.changelog_ids()[0] == 3


def test_coupled_changelog_files_are_deleted_with_their_snapshots(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    _producer_input_table(wh, {})
    config = cfg()
    assert not config.changelog_decoupled
    before = views(wh)
    changelogs = {p for p in file_set(wh) if os.path.basename(p).startswith("changelog-")}
    plan, result = expire_run(wh, config)
    left = {p for p in file_set(wh) if os.path.basename(p).startswith("changelog-")}
    # changelog files of snapshots 1..4 go; snapshot 5's stay
    assert result.deleted["changelog"] == 4 and len(left) == 1 and left < changelogs
    assert not list(Path(table_root(wh)).glob("changelog/changelog-*"))
    check_retained(wh, before, gone=gone_snapshots("main", 1, 4))


# -- pitfall 4: fail closed ---------------------------------------------------------------------


def _manifest_lists_of(table: Table, snapshot_id: int | None = None, tag: str | None = None) -> list[str]:
    snap = table.tag(tag).snapshot if tag else table.snapshot(snapshot_id or 0)
    return [os.path.join(table.root, "manifest", n) for n in snap.manifest_lists]


def _branch_only_manifest(table: Table) -> str:
    """A manifest written by a branch commit (in b1's snapshot 6 delta only)."""
    from tablekeeper.core.paimon import manifests

    b1 = table.on_branch("b1")
    metas = manifests.read_manifest_list(table.file_io, os.path.join(table.root, "manifest",
                                                                     b1.snapshot(6).delta_manifest_list))
    return os.path.join(table.root, "manifest", metas[0].file_name)


@pytest.mark.parametrize("victim", ["main-tag-base-list", "branch-tag-delta-list", "branch-snapshot-manifest"])
def test_pitfall_04_missing_manifest_of_a_protecting_root_aborts(mixed: str, victim: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    t = handle(mixed)
    if victim == "main-tag-base-list":
        # first expire up to the tag: snapshot 3 is gone, only tag t3 (and b1's fork copies of
        # snapshot 3 and tag t3) still name its manifest lists
        expire_run(mixed, cfg(retain_min=4))
        assert t.snapshot_ids() == [4, 5, 6, 7]
        path = _manifest_lists_of(t, tag="t3")[0]
    elif victim == "branch-tag-delta-list":
        path = _manifest_lists_of(t.on_branch("b1"), tag="bt")[1]
    else:
        path = _branch_only_manifest(t)
    os.unlink(path)
    before = dir_listing(mixed)
    with pytest.raises(errors.IncompleteProtectionSetError):
        planning.plan_expire(handle(mixed), cfg(), later())
    assert cli_main(["expire", "-w", mixed, IDENT, "--retain-min", "1", "--time-retained", "0 ms"]) == 2
    assert "error:" in capsys.readouterr().err
    assert dir_listing(mixed) == before


class UnreadableIO(FileIO):
    """A FileIO on which one file cannot be read (permissions, a flaky store)."""

    def __init__(self, victim: str) -> None:
        base = FileIO.for_uri("/")
        super().__init__(base.scheme, base.fs)
        self.victim = victim

    def read_bytes(self, path: str) -> bytes:
        if path == self.victim:
            raise PermissionError(f"denied: {path}")
        return super().read_bytes(path)


def test_pitfall_04_unreadable_tag_manifest_aborts_with_zero_deletions(mixed: str) -> None:
    t = handle(mixed)
    victim = _manifest_lists_of(t, tag="t3")[0]
    before = dir_listing(mixed)
    broken = handle(mixed, file_io=UnreadableIO(victim))
    with pytest.raises((errors.TablekeeperError, OSError)):
        plan = planning.plan_expire(broken, cfg(), later())
        run(plan, broken)
    assert dir_listing(mixed) == before


class TagDeletingIO(FileIO):
    """While planning reads tag ``trigger``, another job deletes tag ``victim`` (metadata only)."""

    def __init__(self, tag_dir: str, trigger: str, victim: str) -> None:
        base = FileIO.for_uri("/")
        super().__init__(base.scheme, base.fs)
        self.trigger = os.path.join(tag_dir, f"tag-{trigger}")
        self.victim = os.path.join(tag_dir, f"tag-{victim}")
        self.fired = 0

    def read_bytes(self, path: str) -> bytes:
        data = super().read_bytes(path)
        if path == self.trigger and os.path.exists(self.victim):
            os.unlink(self.victim)
            self.fired += 1
        return data


@pytest.mark.parametrize(("trigger", "victim"), [("t3", "mid"), ("mid", "t3"), ("late", "t3"), ("t3", "late")])
def test_pitfall_03_tag_deleted_while_planning_deletes_no_live_file(mixed: str, trigger: str, victim: str) -> None:
    t = reload(mixed)
    t.create_tag("mid", snapshot_id=5)
    t.create_tag("late", snapshot_id=6)
    before = views(mixed)
    io = TagDeletingIO(os.path.join(table_root(mixed), "tag"), trigger, victim)
    tracked = handle(mixed, file_io=io)
    plan = planning.plan_expire(tracked, cfg(), later())
    assert io.fired == 1
    run(plan, handle(mixed))
    # every view but the deleted tag still reads as before; nothing a retained root needs is gone
    check_retained(mixed, before, gone=gone_snapshots("main", 1, 6) | {f"main@tag-{victim}"})


@pytest.mark.parametrize("victim", ["tag-index-manifest", "tag-base-list"])
def test_p8_missing_index_manifest_of_a_protecting_root_aborts(tmp_path: Path, victim: str) -> None:
    """A missing index manifest under an existing root is an error, not an empty list (pypaimon's
    IndexManifestFile.read returns [] for it)."""
    wh = str(tmp_path / "wh")
    t = pk_table(wh, options={"bucket": "-1"})
    for i in range(3):
        write(t, rows("a", i))
    t.create_tag("t2", snapshot_id=2)
    overwrite(t, rows("a", 10), {"dt": "a"})
    write(t, rows("a", 20))
    expire_run(wh, cfg(retain_min=3))  # snapshot 2 is gone: only tag t2 names its metadata
    tag = handle(wh).tag("t2").snapshot
    name = tag.index_manifest if victim == "tag-index-manifest" else tag.base_manifest_list
    assert name
    os.unlink(os.path.join(table_root(wh), "manifest", name))
    before = dir_listing(wh)
    with pytest.raises(errors.IncompleteProtectionSetError):
        planning.plan_expire(handle(wh), cfg(), later())
    from tablekeeper.core.reclaim.orphans import planning as orphans

    with pytest.raises(errors.IncompleteProtectionSetError):
        orphans.plan_orphan_clean(handle(wh), orphans.OrphanConfig(now_ms() + 60_000))
    assert dir_listing(wh) == before


# -- pitfall 20: concurrent runs ----------------------------------------------------------------


def test_pitfall_20_overlapping_runs_complete_without_extra_deletions(mixed: str, tmp_path: Path) -> None:
    reference = copy_tree(mixed, tmp_path / "reference")
    expire_run(reference, cfg())
    before = views(mixed)
    t = handle(mixed)
    plan_a = planning.plan_expire(t, cfg(), later())
    plan_b = planning.plan_expire(t, cfg(), later())  # a second job planned at the same time
    run(plan_a, t)
    result_b = run(plan_b, t)
    assert sum(result_b.deleted.values()) == 0 and sum(result_b.missing.values()) == len(plan_b.files)
    assert file_set(mixed) == file_set(reference)
    check_retained(mixed, before, gone=gone_snapshots("main", 1, 6))


def test_pitfall_20_snapshot_files_removed_by_another_job_during_the_run(mixed: str, tmp_path: Path) -> None:
    reference = copy_tree(mixed, tmp_path / "reference")
    expire_run(reference, cfg())
    before = views(mixed)
    t = handle(mixed)
    plan = planning.plan_expire(t, cfg(), later())
    snapshot_files = [f.path for f in plan.files if f.kind == plans.FileKind.SNAPSHOT]

    def other_job(paths: list[str]) -> None:
        # the other expirer removes snapshot-1..3 while we still delete data and manifests
        for p in snapshot_files[:3]:
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass

    result = run(plan, t, fault=other_job, batch_size=1)
    assert result.missing["snapshot"] == 3
    assert file_set(mixed) == file_set(reference)
    check_retained(mixed, before, gone=gone_snapshots("main", 1, 6))


class VanishingSnapshotIO(FileIO):
    """A concurrent expirer deletes snapshot-1..``upto`` the moment we first read snapshot-2."""

    def __init__(self, root: str, upto: int) -> None:
        base = FileIO.for_uri("/")
        super().__init__(base.scheme, base.fs)
        self.snapshot_dir = os.path.join(root, "snapshot")
        self.upto = upto
        self.fired = False

    def read_bytes(self, path: str) -> bytes:
        if not self.fired and path == os.path.join(self.snapshot_dir, "snapshot-2"):
            self.fired = True
            for sid in range(1, self.upto + 1):
                os.unlink(os.path.join(self.snapshot_dir, f"snapshot-{sid}"))
        return super().read_bytes(path)


def test_pitfall_20_snapshot_vanishing_while_planning_is_tolerated(mixed: str) -> None:
    before = views(mixed)
    t = handle(mixed, file_io=VanishingSnapshotIO(table_root(mixed), upto=2))
    plan = planning.plan_expire(t, cfg(), later())
    run(plan, t)
    assert handle(mixed).snapshot_ids() == [7]
    check_retained(mixed, before, gone=gone_snapshots("main", 1, 6))


def test_pitfall_20_gaps_in_snapshot_ids_are_skipped(mixed: str) -> None:
    os.unlink(os.path.join(table_root(mixed), "snapshot", "snapshot-3"))
    before = views(mixed)
    plan, _ = expire_run(mixed, cfg())
    assert any("already gone" in n for n in plan.notes)
    assert handle(mixed).snapshot_ids() == [7]
    check_retained(mixed, before, gone=gone_snapshots("main", 1, 6) - {"main@snapshot-3"})


# -- pitfall 21: deletion order -------------------------------------------------------------------


def _order_kinds(order: list[str]) -> list[str]:
    return [o.split(":", 1)[1] if o.startswith("delete:") else
            "earliest" if o.endswith("/snapshot/EARLIEST") else
            "changelog-copy" for o in order]


@pytest.mark.parametrize(("kind", "expected"), [
    ("append-overwrites", ["data", "manifest", "snapshot", "earliest"]),
    ("pk-changelog-input", ["data", "changelog", "manifest", "snapshot", "earliest"]),
    ("dynamic-bucket-index", ["data", "index", "manifest", "snapshot", "earliest"]),
    ("decoupled", ["manifest", "changelog-copy", "snapshot", "earliest"]),
])
def test_pitfall_21_executor_operation_order(tmp_path: Path, kind: str, expected: list[str]) -> None:
    wh = str(tmp_path / "wh")
    if kind == "append-overwrites":
        t = append_table(wh)
        write(t, rows("a", 0))
        overwrite(t, rows("a", 10), {"dt": "a"})
        overwrite(t, rows("a", 20), {"dt": "a"})
        config = cfg()
    elif kind == "pk-changelog-input":
        t = pk_table(wh, options={"changelog-producer": "input"})
        write(t, rows("a", 0))
        write(t, rows("a", 1))
        overwrite(t, rows("a", 10), {"dt": "a"})
        write(t, rows("a", 20))
        config = cfg()
    elif kind == "dynamic-bucket-index":
        t = pk_table(wh, options={"bucket": "-1"})
        for i in range(3):
            write(t, rows("a", i))
        overwrite(t, rows("a", 10), {"dt": "a"})
        config = cfg()
    else:
        t = pk_table(wh, options={"changelog-producer": "input", **DECOUPLED})
        for i in range(3):
            write(t, rows("a", i))
        config = planning.config_from_options(handle(wh).options())
    before = views(wh)
    plan, result = expire_run(wh, config)
    kinds = _order_kinds(result.order)
    collapsed = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
    assert collapsed == expected
    stage = {k: i for i, k in enumerate(plans.STAGE_ORDER)}
    deletes = [plans.FileKind(o.split(":", 1)[1]) for o in result.order if o.startswith("delete:")]
    assert [stage[k] for k in deletes] == sorted(stage[k] for k in deletes)
    assert result.order[-1].endswith("/snapshot/EARLIEST")
    check_retained(wh, before, gone=gone_snapshots("main", 1, handle(wh).snapshot_ids()[0] - 1))
