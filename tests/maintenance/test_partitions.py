"""Partition expiration (paimon-semantics.md §6, §8 pitfalls 26-29 and 32) on real
pypaimon-written tables: planning, the OVERWRITE commit through pypaimon, what old snapshots and
tags still read, and how snapshot expiration reclaims the dropped partitions' files."""

from __future__ import annotations

import dataclasses
import os
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tablekeeper.core import errors
from tablekeeper.core.reclaim.expire import planning
from tablekeeper.core.reclaim.partitions import expiration
from tests.maintenance.helpers import (
    IDENT,
    append_table,
    catalog,
    check_retained,
    data_files_by_ids,
    file_set,
    handle,
    ids,
    now_ms,
    read_view,
    reload,
    rows,
    run,
    table_root,
    views,
    write,
)
from tests.support.paimon import create_table

NOW = datetime(2026, 1, 20, 12, 0)  # writers' wall clock for values-time tests
WEEK = timedelta(days=7)


def pconf(**kw: Any) -> expiration.PartitionConfig:
    kw.setdefault("expiration_time", WEEK)
    kw.setdefault("zone_known", True)
    return expiration.PartitionConfig(**kw)


def expired_specs(plan: expiration.PartitionPlan) -> list[tuple[tuple[str, str], ...]]:
    return [p.spec for p in plan.expired]


def table_with(wh: str, schema: pa.Schema, keys: list[str], data: list[dict[str, Any]],
               options: dict[str, str] | None = None, identifier: str = IDENT) -> Any:
    t = create_table(catalog(wh), identifier, schema, partition_keys=keys, options=options)
    write(t, data, schema)
    return t


def row_ids(wh: str, identifier: str = IDENT, options: dict[str, str] | None = None) -> set[int]:
    return {dict(r)["id"] for r in read_view(wh, identifier, options=options)}


# -- values-time -----------------------------------------------------------------------------


@pytest.fixture
def daily(tmp_path: Path) -> str:
    wh = str(tmp_path / "wh")
    t = append_table(wh)
    for i, dt in enumerate(["2026-01-01", "2026-1-5", "2026-01-10", "2026-01-13", "2026-01-19", "not-a-date"]):
        write(t, rows(dt, 10 * i))
    return wh


def test_values_time_default_formatter(daily: str) -> None:
    t = handle(daily)
    plan = expiration.plan_partition_expiry(t, pconf(), NOW)
    # deadline 2026-01-13 12:00; the default parser is lenient (yyyy-M-d)
    assert expired_specs(plan) == [(("dt", "2026-01-01"),), (("dt", "2026-01-10"),), (("dt", "2026-01-13"),),
                                   (("dt", "2026-1-5"),)]
    assert plan.unparseable == ("dt=not-a-date",)
    assert plan.live == 6 and plan.summary()["files"] == 4
    before = views(daily)
    assert expiration.apply_partition_expiry(t, plan) == 4
    latest = handle(daily).latest_snapshot()
    assert latest is not None and latest.commit_kind == "OVERWRITE" and latest.id == 7
    assert row_ids(daily) == {40, 41, 50, 51}
    new_views = views(daily)
    for key, value in before.items():  # every old snapshot still reads the dropped partitions
        if key != "main@latest":
            assert new_views[key] == value
    assert expiration.plan_partition_expiry(handle(daily), pconf(), NOW).expired == ()


def test_values_time_unknown_writer_zone_adds_a_12h_margin(daily: str) -> None:
    plan = expiration.plan_partition_expiry(handle(daily), pconf(zone_known=False), NOW)
    # deadline 2026-01-13 00:00: 2026-01-13 (midnight) is no longer strictly before it
    assert (("dt", "2026-01-13"),) not in expired_specs(plan)
    assert len(plan.expired) == 3 and any("12 h" in n for n in plan.notes)


def test_values_time_formatter_yyyyMMdd(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh)
    for i, dt in enumerate(["20260101", "20260119", "2026-01-01", "2026-0101"]):
        write(t, rows(dt, 10 * i))
    options = {"partition.expiration-time": "7 d", "partition.timestamp-formatter": "yyyyMMdd"}
    config = expiration.config_from_options(options, zone_known=True)
    assert config is not None and config.timestamp_formatter == "yyyyMMdd"
    plan = expiration.plan_partition_expiry(handle(wh), config, NOW)
    assert expired_specs(plan) == [(("dt", "20260101"),)]
    assert set(plan.unparseable) == {"dt=2026-01-01", "dt=2026-0101"}
    expiration.apply_partition_expiry(handle(wh), plan)
    assert row_ids(wh) == {10, 11, 20, 21, 30, 31}


def test_values_time_formatter_is_strict_like_java(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh)
    for i, dt in enumerate(["20260101", "2026011", "2026111"]):
        write(t, rows(dt, 10 * i))
    plan = expiration.plan_partition_expiry(handle(wh), pconf(timestamp_formatter="yyyyMMdd"), NOW)
    assert expired_specs(plan) == [(("dt", "20260101"),)]
    assert set(plan.unparseable) == {"dt=2026011", "dt=2026111"}


HOURLY = pa.schema([("dt", pa.string()), ("hr", pa.string()), ("id", pa.int64())])


def test_values_time_pattern_multi_field(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    data = [{"dt": "2026-01-13", "hr": "11", "id": 1}, {"dt": "2026-01-13", "hr": "13", "id": 2},
            {"dt": "2026-01-12", "hr": "23", "id": 3}, {"dt": "2026-01-14", "hr": "00", "id": 4}]
    table_with(wh, HOURLY, ["dt", "hr"], data)
    options = {"partition.expiration-time": "7 d", "partition.timestamp-pattern": "$dt $hr:00:00"}
    config = expiration.config_from_options(options, zone_known=True)
    assert config is not None
    plan = expiration.plan_partition_expiry(handle(wh), config, NOW)  # deadline 2026-01-13 12:00
    assert expired_specs(plan) == [(("dt", "2026-01-12"), ("hr", "23")), (("dt", "2026-01-13"), ("hr", "11"))]
    expiration.apply_partition_expiry(handle(wh), plan)
    assert row_ids(wh) == {2, 4}


def test_extract_time_rules() -> None:
    c = pconf()
    assert expiration.extract_time(("dt",), ("2026-01-02",), c) == datetime(2026, 1, 2)
    assert expiration.extract_time(("dt",), ("2026-01-02 03:04:05",), c) == datetime(2026, 1, 2, 3, 4, 5)
    assert expiration.extract_time(("dt",), ("2026-1-2",), c) == datetime(2026, 1, 2)
    assert expiration.extract_time(("dt",), ("2026-13-45",), c) is None
    assert expiration.extract_time(("dt", "x"), ("2026-01-02", "zz"), c) == datetime(2026, 1, 2)  # first field
    f = pconf(timestamp_formatter="yyyyMMddHH")
    assert expiration.extract_time(("dt",), ("2026010203",), f) == datetime(2026, 1, 2, 3)
    with pytest.raises(errors.InvalidInputError):
        pconf(timestamp_formatter="yyyy-ww").validate()
    with pytest.raises(errors.InvalidInputError):
        pconf(strategy="values").validate()
    with pytest.raises(errors.InvalidInputError):
        pconf(max_expires=0).validate()
    assert expiration.config_from_options({}) is None  # feature off without partition.expiration-time


# -- pitfalls 26, 27 ---------------------------------------------------------------------------

REGION = pa.schema([("region", pa.string()), ("dt", pa.string()), ("id", pa.int64())])


def test_pitfall_26_partition_value_containing_a_comma(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    data = [{"region": "x,y", "dt": "2026-01-01", "id": 1}, {"region": "x", "dt": "2026-01-19", "id": 2},
            {"region": "y", "dt": "2026-01-19", "id": 3}, {"region": "x,y", "dt": "2026-01-19", "id": 4},
            {"region": "x", "dt": "2026-01-01, y", "id": 5}]
    table_with(wh, REGION, ["region", "dt"], data)
    config = pconf(timestamp_pattern="$dt")
    plan = expiration.plan_partition_expiry(handle(wh), config, NOW)
    assert [p.values for p in plan.expired] == [("x,y", "2026-01-01")]
    assert plan.unparseable == ("region=x, dt=2026-01-01, y",)
    expiration.apply_partition_expiry(handle(wh), plan)
    assert row_ids(wh) == {2, 3, 4, 5}


DT1 = pa.schema([("dt1", pa.string()), ("dt", pa.string()), ("id", pa.int64())])


def test_pitfall_27_dollar_dt_inside_dollar_dt1() -> None:
    config = pconf(timestamp_pattern="$dt1 $dt:00:00")
    for keys, values in ((("dt1", "dt"), ("2026-01-01", "08")), (("dt", "dt1"), ("08", "2026-01-01"))):
        assert expiration.extract_time(keys, values, config) == datetime(2026, 1, 1, 8)
    assert expiration.extract_time(("dt", "dt1"), ("2026-01-02", "x"), pconf(timestamp_pattern="$dt")) == \
        datetime(2026, 1, 2)


def test_pitfall_27_end_to_end(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    data = [{"dt1": "2026-01-01", "dt": "08", "id": 1}, {"dt1": "2026-01-19", "dt": "08", "id": 2}]
    table_with(wh, DT1, ["dt1", "dt"], data)
    plan = expiration.plan_partition_expiry(handle(wh), pconf(timestamp_pattern="$dt1 $dt:00:00"), NOW)
    assert [p.values for p in plan.expired] == [("2026-01-01", "08")]
    expiration.apply_partition_expiry(handle(wh), plan)
    assert row_ids(wh) == {2}


# -- pitfall 28: DATE partition columns ------------------------------------------------------------

DATES = pa.schema([("dt", pa.date32()), ("id", pa.int64())])


@pytest.mark.parametrize("pattern", [None, "$dt"])
def test_pitfall_28_date_partition_columns_are_supported(tmp_path: Path, pattern: str | None) -> None:
    wh = str(tmp_path / "wh")
    data = [{"dt": date(2026, 1, 1), "id": 1}, {"dt": date(2026, 1, 19), "id": 2}, {"dt": None, "id": 3}]
    table_with(wh, DATES, ["dt"], data)
    assert os.path.isdir(os.path.join(table_root(wh), "dt=20454"))  # legacy name: days since epoch
    t = handle(wh)
    infos = {p.values: p for p in expiration.list_partitions(t)}
    assert set(infos) == {(date(2026, 1, 1),), (date(2026, 1, 19),), (None,)}
    plan = expiration.plan_partition_expiry(t, pconf(timestamp_pattern=pattern), NOW)
    assert expired_specs(plan) == [(("dt", "2026-01-01"),)]
    assert plan.unparseable == ("dt=__DEFAULT_PARTITION__",)
    before = views(wh)
    expiration.apply_partition_expiry(t, plan)
    assert row_ids(wh) == {2, 3}
    assert views(wh)["main@snapshot-1"] == before["main@snapshot-1"]


# -- pitfall 29: null, default and empty values --------------------------------------------------------


def test_pitfall_29_null_default_and_empty_values_never_expire_and_never_crash(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh)
    write(t, [{"dt": None, "id": 1, "amount": 1.0}, {"dt": "", "id": 2, "amount": 1.0},
              {"dt": "__DEFAULT_PARTITION__", "id": 3, "amount": 1.0}, {"dt": "2026-01-01", "id": 4, "amount": 1.0}])
    for config in (pconf(), pconf(timestamp_formatter="yyyy-MM-dd"), pconf(timestamp_pattern="$dt 00:00:00")):
        plan = expiration.plan_partition_expiry(handle(wh), config, NOW)
        assert [p.values for p in plan.expired] == [("2026-01-01",)]
        assert len(plan.unparseable) == 3
    expiration.apply_partition_expiry(handle(wh), plan)
    assert row_ids(wh) == {1, 2, 3}
    for values in ((None,), ("",), ("__DEFAULT_PARTITION__",)):
        assert expiration.extract_time(("dt",), values, pconf()) is None


def test_pitfall_29_null_or_empty_in_other_fields(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    data = [{"region": None, "dt": "2026-01-01", "id": 1}, {"region": "", "dt": "2026-01-02", "id": 2},
            {"region": "x", "dt": None, "id": 3}, {"region": "x", "dt": "", "id": 4},
            {"region": "x", "dt": "2026-01-03", "id": 5}]
    table_with(wh, REGION, ["region", "dt"], data)
    plan = expiration.plan_partition_expiry(handle(wh), pconf(timestamp_pattern="$dt"), NOW)
    # a null anywhere keeps the partition (conservative); an empty non-time field does not matter
    assert sorted(p.values for p in plan.expired) == [("", "2026-01-02"), ("x", "2026-01-03")]
    expiration.apply_partition_expiry(handle(wh), plan)
    assert row_ids(wh) == {1, 3, 4}


def test_pitfall_29_update_time_never_expires_default_partitions(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh)
    write(t, [{"dt": None, "id": 1, "amount": 1.0}, {"dt": "", "id": 2, "amount": 1.0},
              {"dt": "__DEFAULT_PARTITION__", "id": 3, "amount": 1.0}, {"dt": "2026-01-01", "id": 4, "amount": 1.0}])
    config = pconf(strategy="update-time", expiration_time=timedelta(hours=1))
    plan = expiration.plan_partition_expiry(handle(wh), config, datetime.now() + timedelta(hours=3))
    assert [p.values for p in plan.expired] == [("2026-01-01",)]
    assert expiration.apply_partition_expiry(handle(wh), plan) == 1
    assert row_ids(wh) == {1, 2, 3}


# -- update-time -------------------------------------------------------------------------------------


def test_update_time_uses_the_newest_file_of_each_partition(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh)
    write(t, rows("p1", 0))
    import time

    time.sleep(0.05)
    write(t, rows("p2", 10))
    infos = {p.values[0]: p for p in expiration.list_partitions(handle(wh))}
    t1, t2 = infos["p1"].last_file_creation_ms, infos["p2"].last_file_creation_ms
    assert t1 is not None and t2 is not None and t1 < t2
    config = pconf(strategy="update-time", expiration_time=timedelta(hours=1))
    mid = datetime(1970, 1, 1) + timedelta(milliseconds=(t1 + t2) // 2)  # writer wall clock
    plan = expiration.plan_partition_expiry(handle(wh), config, mid + timedelta(hours=1))
    assert [p.values for p in plan.expired] == [("p1",)]
    # a later write into p1 makes it young again
    time.sleep(0.05)
    write(t, rows("p1", 20))
    plan = expiration.plan_partition_expiry(handle(wh), config, mid + timedelta(hours=1))
    assert plan.expired == ()
    # relative to the real clock: nothing is an hour old; 2 h later everything is
    assert expiration.plan_partition_expiry(handle(wh), config, datetime.now()).expired == ()
    later = expiration.plan_partition_expiry(handle(wh), config, datetime.now() + timedelta(hours=2))
    assert len(later.expired) == 2
    # unknown writer zone: only when expired under every offset (12 h margin)
    unknown = dataclasses.replace(config, zone_known=False)
    assert expiration.plan_partition_expiry(handle(wh), unknown, datetime.now() + timedelta(hours=2)).expired == ()
    assert len(expiration.plan_partition_expiry(handle(wh), unknown,
                                                datetime.now() + timedelta(hours=14)).expired) == 2


# -- max-num ----------------------------------------------------------------------------------------


def test_max_num_caps_one_run_and_the_next_run_continues(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh)
    days = ["2026-01-05", "2026-01-01", "2026-01-04", "2026-01-02", "2026-01-03", "2026-01-19"]
    for i, dt in enumerate(days):
        write(t, rows(dt, 10 * i))
    config = expiration.config_from_options({"partition.expiration-time": "7 d",
                                             "partition.expiration-max-num": "2"}, zone_known=True)
    assert config is not None and config.max_expires == 2
    plan = expiration.plan_partition_expiry(handle(wh), config, NOW)
    assert expired_specs(plan) == [(("dt", "2026-01-01"),), (("dt", "2026-01-02"),)]
    assert any("3 more" in n for n in plan.notes)
    expiration.apply_partition_expiry(handle(wh), plan)
    plan = expiration.plan_partition_expiry(handle(wh), config, NOW)
    assert expired_specs(plan) == [(("dt", "2026-01-03"),), (("dt", "2026-01-04"),)]
    expiration.apply_partition_expiry(handle(wh), plan)
    assert [p.values for p in expiration.plan_partition_expiry(handle(wh), config, NOW).expired] == [("2026-01-05",)]


# -- the drop, old views, and reclaiming files with snapshot expiration ---------------------------------


def _dropped_history(wh: str) -> Any:
    """1 +d1(0)  [tag t1]  2 +d2(10)  3 +d3(20)  4 +d1(30); then a partition drop of d1, d2."""
    t = append_table(wh)
    write(t, rows("2026-01-01", 0))
    t.create_tag("t1")
    write(t, rows("2026-01-02", 10))
    write(t, rows("2026-01-19", 20))
    write(t, rows("2026-01-01", 30))
    return t


def test_drop_is_an_overwrite_old_views_keep_data_and_expiry_reclaims_untagged_files(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    _dropped_history(wh)
    root = table_root(wh)
    before = views(wh)
    plan = expiration.plan_partition_expiry(handle(wh), pconf(), NOW)
    assert [p.values for p in plan.expired] == [("2026-01-01",), ("2026-01-02",)]
    assert [p.file_count for p in plan.expired] == [2, 1]
    expiration.apply_partition_expiry(handle(wh), plan)
    latest = handle(wh).latest_snapshot()
    assert latest is not None and latest.id == 5 and latest.commit_kind == "OVERWRITE"
    assert row_ids(wh) == {20, 21}
    after = views(wh)
    assert set(after) - set(before) == {"main@snapshot-5"}
    assert {k: after[k] for k in before if k != "main@latest"} == {k: v for k, v in before.items() if k != "main@latest"}
    assert row_ids(wh, options={"scan.snapshot-id": "4"}) == {0, 1, 10, 11, 20, 21, 30, 31}
    assert row_ids(wh, options={"scan.tag-name": "t1"}) == {0, 1}
    # files stay until snapshot expiration ...
    assert {ids(0), ids(10), ids(30)} <= set(data_files_by_ids(root))
    before = views(wh)
    h = handle(wh)
    run(planning.plan_expire(h, planning.ExpireConfig(retain_min=1, time_retained=timedelta(0)), now_ms() + 1000), h)
    left = data_files_by_ids(root)
    # ... which reclaims them, except the file tag t1 still pins
    assert ids(0) in left and ids(10) not in left and ids(30) not in left and ids(20) in left
    check_retained(wh, before, gone={f"main@snapshot-{i}" for i in range(1, 5)})
    assert row_ids(wh, options={"scan.tag-name": "t1"}) == {0, 1}
    assert row_ids(wh) == {20, 21}


def test_drop_on_a_branch_leaves_main_alone(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    _dropped_history(wh)
    reload(wh).create_tag("t4")
    reload(wh).branch_manager().create_branch("b1", tag_name="t4")
    before = views(wh)
    b1 = handle(wh, branch="b1")
    plan = expiration.plan_partition_expiry(b1, pconf(), NOW)
    assert plan.branch == "b1" and len(plan.expired) == 2
    expiration.apply_partition_expiry(b1, plan)
    assert {dict(r)["id"] for r in read_view(wh, IDENT, branch="b1")} == {20, 21}
    after = views(wh)
    assert set(after) - set(before) == {"b1@snapshot-5"}
    assert {k: after[k] for k in before if k != "b1@latest"} == {k: v for k, v in before.items() if k != "b1@latest"}


def test_pitfall_32_empty_partition_directories_stay_by_default(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh)
    write(t, rows("2026-01-02", 10))
    write(t, rows("2026-01-19", 20))
    expiration.apply_partition_expiry(handle(wh), expiration.plan_partition_expiry(handle(wh), pconf(), NOW))
    h = handle(wh)
    config = planning.config_from_options(h.options(), retain_min=1, time_retained=timedelta(0))
    assert not config.clean_empty_directories
    run(planning.plan_expire(h, config, now_ms() + 1000), h)
    root = table_root(wh)
    assert os.path.isdir(f"{root}/dt=2026-01-02/bucket-0") and not os.listdir(f"{root}/dt=2026-01-02/bucket-0")


def test_pitfall_32_empty_partition_directories_removed_when_enabled(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh, options={"snapshot.clean-empty-directories": "true"})
    write(t, rows("2026-01-02", 10))
    write(t, rows("2026-01-19", 20))
    root = table_root(wh)
    Path(root, "dt=2026-01-19", "_SUCCESS").write_text("")
    expiration.apply_partition_expiry(handle(wh), expiration.plan_partition_expiry(handle(wh), pconf(), NOW))
    h = handle(wh)
    config = planning.config_from_options(h.options(), retain_min=1, time_retained=timedelta(0))
    assert config.clean_empty_directories
    before = views(wh)
    run(planning.plan_expire(h, config, now_ms() + 1000), h)
    assert not os.path.exists(f"{root}/dt=2026-01-02")  # bucket, then partition dir
    assert os.path.isdir(f"{root}/dt=2026-01-19/bucket-0")
    assert any(p.endswith("_SUCCESS") for p in file_set(wh))
    check_retained(wh, before, gone={"main@snapshot-1", "main@snapshot-2"})
