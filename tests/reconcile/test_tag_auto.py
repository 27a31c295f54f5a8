"""Paimon's tag auto-creation and expiry rules (tablekeeper.core.refs.tag_auto), pure.

Vectors are ported from apache/paimon 5dacde516b: ``TagPeriodHandlerTest`` and
``TagAutoManagerTest`` (every commit there is a watermark commit; the expected tag names are
Java's). ``Writer`` below replays those tests commit by commit; ``JavaTagAutoCreation`` is a
literal per-commit port of ``TagAutoCreation`` used as the reference when tablekeeper runs the
rules only now and then over simulated weeks (injected clock, no sleeps)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

import pytest

from tablekeeper.core import errors
from tablekeeper.core.refs.tag_auto import (
    AutoTagRules,
    SnapshotPoint,
    TagPoint,
    extract_time,
    is_batch_tag,
    parse_zone_id,
    plan_auto_tags,
    plan_batch_count_expiry,
    plan_ttl_expiry,
)
from tablekeeper.core.refs.tag_periods import LONG_MIN, TagPeriodHandler


def utc_ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def zone_ms(text: str, zone: tzinfo) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=zone).timestamp() * 1000)


# -- TagPeriodHandlerTest -------------------------------------------------------------------

def test_daily_handler() -> None:
    h = TagPeriodHandler.create("daily", None, "with_dashes")
    assert h.time_to_tag(datetime(2023, 1, 1)) == "2023-01-01"
    assert h.tag_to_time("2023-01-01") == datetime(2023, 1, 1)
    assert h.is_auto_tag("2023-01-01") and not h.is_auto_tag("20230101")
    h = TagPeriodHandler.create("daily", None, "without_dashes")
    assert h.time_to_tag(datetime(2023, 1, 1)) == "20230101"
    assert h.tag_to_time("20230101") == datetime(2023, 1, 1)
    assert h.is_auto_tag("20230101") and not h.is_auto_tag("2023-01-01")
    assert TagPeriodHandler.create("daily", None, "without_dashes_and_spaces").time_to_tag(
        datetime(2023, 1, 1, 5)) == "20230101"


def test_hourly_handler() -> None:
    h = TagPeriodHandler.create("hourly", None, "with_dashes")
    assert h.time_to_tag(datetime(2023, 1, 1, 1)) == "2023-01-01 01"
    assert h.tag_to_time("2023-01-01 01") == datetime(2023, 1, 1, 1)
    assert h.is_auto_tag("2023-01-01 01") and not h.is_auto_tag("20230101 01")
    h = TagPeriodHandler.create("hourly", None, "without_dashes")
    assert h.time_to_tag(datetime(2023, 1, 1, 1)) == "20230101 01"
    assert h.is_auto_tag("20230101 01") and not h.is_auto_tag("2023-01-01 01")
    h = TagPeriodHandler.create("hourly", None, "without_dashes_and_spaces")
    assert h.time_to_tag(datetime(2023, 1, 1, 1)) == "2023010101"
    assert h.tag_to_time("2023010101") == datetime(2023, 1, 1, 1)
    assert h.is_auto_tag("2023010101") and not h.is_auto_tag("20230101 01")


def test_period_duration_handler() -> None:
    h = TagPeriodHandler.create(None, timedelta(minutes=5), None)
    assert h.time_to_tag(datetime(2023, 1, 1, 1, 1)) == "202301010101"
    assert h.tag_to_time("202301010101") == datetime(2023, 1, 1, 1, 1)
    assert h.is_auto_tag("202301010101") and not h.is_auto_tag("20230101 0101")
    # the duration overrides the named period and its formatter
    assert TagPeriodHandler.create("hourly", timedelta(minutes=30), "with_dashes").kind == "duration"


@pytest.mark.parametrize("name", [
    "2023-02-29", "2023-02-30", "2023-13-01", "2023-1-01", "23-01-01", "+2023-01-01", "2023-01-01x",
    "２０２３-01-01", "", " ", "savepoint-11", "rollback-to-as-latest-3-abc", "batch-write-2023-01-01",
])
def test_strict_daily_names_rejected(name: str) -> None:
    assert not TagPeriodHandler.create("daily", None, "with_dashes").is_auto_tag(name)


def test_strict_resolution_edges() -> None:
    daily = TagPeriodHandler.create("daily", None, "with_dashes")
    assert daily.is_auto_tag("2024-02-29")  # leap day
    assert daily.is_auto_tag("2023-07-18 11")  # Java: tag.split(" ")[0] before parsing
    assert daily.is_auto_tag("2023-07-18 whatever")
    hourly = TagPeriodHandler.create("hourly", None, "with_dashes")
    assert not hourly.is_auto_tag("2023-07-18 24") and not hourly.is_auto_tag("2023-07-18 1")
    assert not hourly.is_auto_tag("2023-07-18")
    two = TagPeriodHandler.create("two-hours", None, "without_dashes")  # formatter ignored
    assert two.time_to_tag(datetime(2023, 7, 18, 10)) == "2023-07-18 10" and two.is_auto_tag("2023-07-18 11")
    minute = TagPeriodHandler.create(None, timedelta(minutes=15), None)
    assert not minute.is_auto_tag("202301010160") and not minute.is_auto_tag("20230101016")


def test_normalize_and_delay_validation() -> None:
    daily = TagPeriodHandler.create("daily", None, "with_dashes")
    assert daily.normalize_to_previous_tag(datetime(2024, 7, 10, 9)) == datetime(2024, 7, 9)
    assert daily.normalize_to_previous_tag(datetime(2024, 7, 11)) == datetime(2024, 7, 10)
    custom = TagPeriodHandler.create(None, timedelta(minutes=45), None)
    # floor on wall-clock millis read as UTC, as Java's Timestamp.fromLocalDateTime
    assert custom.normalize_to_previous_tag(datetime(1970, 1, 1, 2, 0)) == datetime(1970, 1, 1, 0, 45)
    # before 1970 Java's long division truncates toward zero
    assert daily.normalize_to_previous_tag(datetime(1969, 12, 31, 12)) == datetime(1969, 12, 31)
    daily.validate_delay(timedelta(hours=23))
    with pytest.raises(errors.InvalidInputError):
        daily.validate_delay(timedelta(days=1))
    with pytest.raises(errors.InvalidInputError):
        AutoTagRules("process-time", TagPeriodHandler.create("hourly"), UTC, delay=timedelta(hours=1))


def test_time_extraction_and_zones() -> None:
    snap = SnapshotPoint(1, utc_ms("2023-07-18T23:30:00"), LONG_MIN)
    assert extract_time("process-time", snap, ZoneInfo("Asia/Shanghai")) == datetime(2023, 7, 19, 7, 30)
    assert extract_time("watermark", snap, UTC) is None
    assert extract_time("watermark", SnapshotPoint(1, 0, None), UTC) is None
    assert parse_zone_id("GMT-08:00") == timezone(-timedelta(hours=8))
    assert parse_zone_id("UTC+8") == timezone(timedelta(hours=8))
    assert parse_zone_id("Asia/Shanghai") == ZoneInfo("Asia/Shanghai")
    with pytest.raises(errors.InvalidInputError):
        parse_zone_id("Mars/Olympus")


# -- TagAutoManagerTest, replayed commit by commit ---------------------------------------------

@dataclass
class Writer:
    """A Paimon writer committing watermark snapshots; after each commit the rules run (creation,
    then TTL expiry, as TagAutoManager.run) over what is retained, with an injected clock."""

    rules: AutoTagRules
    clock: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    snapshots: list[SnapshotPoint] = field(default_factory=list)
    tags: dict[str, TagPoint] = field(default_factory=dict)
    next_id: int = 1

    def commit(self, watermark: int | None, *, time_ms: int | None = None) -> None:
        self.snapshots.append(SnapshotPoint(self.next_id, time_ms if time_ms is not None else watermark or 0,
                                            watermark))
        self.next_id += 1
        self.run()

    def run(self) -> None:
        plan = plan_auto_tags(self.snapshots, self.tags.values(), self.rules)
        assert plan.refused is None, plan.refused
        wall = self.clock.astimezone(UTC).replace(tzinfo=None)
        for c in plan.create:
            retained = self.rules.default_time_retained
            self.tags[c.name] = TagPoint(c.name, c.snapshot_id, wall if retained else None, retained)
        for e in plan.expire:
            del self.tags[e.name]
        expired, _ = plan_ttl_expiry(self.tags.values(), self.clock, UTC)
        for e in expired:
            del self.tags[e.name]

    def manual_tag(self, name: str, snapshot_id: int, retained: timedelta | None = None) -> None:
        wall = self.clock.astimezone(UTC).replace(tzinfo=None)
        self.tags[name] = TagPoint(name, snapshot_id, wall if retained else None, retained)

    def expire_snapshots(self, keep: int) -> None:
        self.snapshots = self.snapshots[-keep:]

    @property
    def names(self) -> set[str]:
        return set(self.tags)


def hourly(**kw: object) -> AutoTagRules:
    return AutoTagRules("watermark", TagPeriodHandler.create("hourly", None, str(kw.pop("fmt", "with_dashes"))),
                        UTC, **kw)  # type: ignore[arg-type]


def test_tag() -> None:
    w = Writer(hourly(num_retained_max=3))
    w.commit(utc_ms("2023-07-18T12:12:00"))
    assert w.names == {"2023-07-18 11"}
    w.commit(utc_ms("2023-07-18T12:59:00"))
    assert w.names == {"2023-07-18 11"}
    w.commit(utc_ms("2023-07-18T13:00:00"))  # just in time
    assert w.names == {"2023-07-18 11", "2023-07-18 12"}
    w.commit(utc_ms("2023-07-18T14:00:00"))
    w.commit(utc_ms("2023-07-18T15:00:00"))
    assert w.names == {"2023-07-18 12", "2023-07-18 13", "2023-07-18 14"}
    w.commit(utc_ms("2023-07-18T15:01:00"))
    w.commit(utc_ms("2023-07-18T15:02:00"))
    w.commit(utc_ms("2023-07-18T15:03:00"))
    w.expire_snapshots(1)  # snapshot.num-retained.min = max = 1
    w.commit(utc_ms("2023-07-18T15:04:00"))
    w.expire_snapshots(1)
    w.commit(utc_ms("2023-07-18T16:00:00"))  # restore from the latest auto tag, jump to the earliest snapshot
    assert w.names == {"2023-07-18 13", "2023-07-18 14", "2023-07-18 15"}


def test_tag_delay() -> None:
    w = Writer(hourly(delay=timedelta(seconds=10)))
    w.commit(utc_ms("2023-07-18T12:00:09"))  # the first tag is created anyway
    assert w.names == {"2023-07-18 11"}
    w.commit(utc_ms("2023-07-18T13:00:09"))
    assert w.names == {"2023-07-18 11"}
    w.commit(utc_ms("2023-07-18T13:00:10"))
    assert w.names == {"2023-07-18 11", "2023-07-18 12"}


def test_tag_sink_watermark_zone() -> None:
    zone = ZoneInfo("Asia/Shanghai")
    w = Writer(AutoTagRules("watermark", TagPeriodHandler.create("hourly"), zone))
    w.commit(LONG_MIN)
    assert w.names == set()
    w.commit(zone_ms("2023-07-18T12:00:09", zone))
    assert w.names == {"2023-07-18 11"}
    w.commit(zone_ms("2023-07-18T13:00:10", zone))
    assert w.names == {"2023-07-18 11", "2023-07-18 12"}


def test_tag_two_hours() -> None:
    w = Writer(AutoTagRules("watermark", TagPeriodHandler.create("two-hours"), UTC))
    w.commit(utc_ms("2023-07-18T12:00:01"))
    assert w.names == {"2023-07-18 10"}
    w.commit(utc_ms("2023-07-18T13:00:01"))
    assert w.names == {"2023-07-18 10"}
    w.commit(utc_ms("2023-07-18T14:00:09"))
    assert w.names == {"2023-07-18 10", "2023-07-18 12"}


def test_tag_daily() -> None:
    w = Writer(AutoTagRules("watermark", TagPeriodHandler.create("daily"), UTC))
    w.commit(utc_ms("2023-07-18T12:00:01"))
    assert w.names == {"2023-07-17"}
    w.commit(utc_ms("2023-07-19T12:00:01"))
    assert w.names == {"2023-07-17", "2023-07-18"}
    w.commit(utc_ms("2023-07-20T12:00:01"))  # a new writer restores from the latest auto tag
    assert w.names == {"2023-07-17", "2023-07-18", "2023-07-19"}


def test_modify_tag_period() -> None:
    w = Writer(hourly())
    w.commit(utc_ms("2023-07-18T12:00:09"))
    assert w.names == {"2023-07-18 11"}
    w.rules = AutoTagRules("watermark", TagPeriodHandler.create("daily"), UTC)
    w.commit(utc_ms("2023-07-20T12:00:01"))
    assert {"2023-07-18 11", "2023-07-19"} <= w.names


def test_savepoint_tag_is_not_counted() -> None:
    w = Writer(hourly(num_retained_max=3))
    w.commit(utc_ms("2023-07-18T12:12:00"))
    w.manual_tag("savepoint-11", 1)
    w.commit(utc_ms("2023-07-18T14:00:00"))
    assert w.names == {"savepoint-11", "2023-07-18 11", "2023-07-18 13"}
    w.commit(utc_ms("2023-07-18T15:00:00"))
    w.commit(utc_ms("2023-07-18T16:00:00"))
    assert w.names == {"savepoint-11", "2023-07-18 13", "2023-07-18 14", "2023-07-18 15"}


@pytest.mark.parametrize(("period", "fmt", "first", "second", "names"), [
    ("daily", "without_dashes", "2023-07-18T12:12:00", "2023-07-19T12:12:00", {"20230717", "20230718"}),
    ("hourly", "without_dashes", "2023-07-18T12:12:00", "2023-07-18T13:13:00", {"20230718 11", "20230718 12"}),
    ("hourly", "without_dashes_and_spaces", "2023-07-18T12:12:00", "2023-07-18T13:13:00",
     {"2023071811", "2023071812"}),
])
def test_period_formatters(period: str, fmt: str, first: str, second: str, names: set[str]) -> None:
    w = Writer(AutoTagRules("watermark", TagPeriodHandler.create(period, None, fmt), UTC))
    w.commit(utc_ms(first))
    w.commit(utc_ms(second))
    assert w.names == names


def test_only_expire_auto_created_tags() -> None:
    w = Writer(hourly(num_retained_max=1))
    w.commit(utc_ms("2023-07-18T12:12:00"))
    w.manual_tag("many-tags-test", 1)
    assert w.names == {"2023-07-18 11", "many-tags-test"}
    w.commit(utc_ms("2023-07-18T13:13:00"))
    assert w.names == {"2023-07-18 12", "many-tags-test"}


def test_auto_expire_without_dashes() -> None:
    w = Writer(AutoTagRules("watermark", TagPeriodHandler.create("daily", None, "without_dashes"), UTC,
                            num_retained_max=1))
    w.commit(utc_ms("2023-07-18T12:12:00"))
    assert w.names == {"20230717"}
    w.commit(utc_ms("2023-07-19T12:12:00"))
    assert w.names == {"20230718"}


def test_auto_tags_expire_by_time_retained() -> None:
    """testAutoCreateTagNotExpiredByTimeRetained, with the 1 s sleep replaced by the clock."""
    w = Writer(hourly(num_retained_max=3, default_time_retained=timedelta(milliseconds=500)))
    for at in ("2023-07-18T12:12:00", "2023-07-18T14:00:00", "2023-07-18T15:12:00", "2023-07-18T16:00:00"):
        w.commit(utc_ms(at))
    w.clock += timedelta(seconds=1)
    w.commit(utc_ms("2023-07-18T19:00:00"))
    assert w.names == {"2023-07-18 18"}


def test_manual_tags_expire_by_time_retained() -> None:
    """testExpireTagsByTimeRetained."""
    w = Writer(hourly(num_retained_max=3, default_time_retained=timedelta(milliseconds=500)))
    for at in ("2023-07-18T12:12:00", "2023-07-18T14:00:00", "2023-07-18T15:12:00", "2023-07-18T16:00:00"):
        w.commit(utc_ms(at))
    w.manual_tag("non-auto-create-tag-shoule-expire", 4, timedelta(milliseconds=500))
    w.manual_tag("non-auto-create-tag-shoule-not-expire", 4, timedelta(days=1))
    w.clock += timedelta(seconds=1)
    w.commit(utc_ms("2023-07-18T19:00:00"))
    assert w.names == {"2023-07-18 18", "non-auto-create-tag-shoule-not-expire"}


def test_auto_complete_tags() -> None:
    w = Writer(hourly(num_retained_max=3, automatic_completion=True))
    w.commit(utc_ms("2024-06-26T16:12:00"))
    assert w.names == {"2024-06-26 15"}
    w.commit(utc_ms("2024-06-26T18:05:00"))  # restarted after a 2 h stop: fills 16 first
    assert w.names == {"2024-06-26 15", "2024-06-26 16"}
    w.commit(utc_ms("2024-06-26T18:10:00"))
    assert w.names == {"2024-06-26 15", "2024-06-26 16", "2024-06-26 17"}


def test_second_auto_tag_on_one_snapshot_is_refused() -> None:
    """testMultiAutoTagsOnOneSnapshot: Java throws; the rules never plan one."""
    w = Writer(AutoTagRules("watermark", TagPeriodHandler.create("daily"), UTC))
    w.commit(utc_ms("2023-07-18T12:00:01"))
    assert w.names == {"2023-07-17"}
    w.tags["2023-07-19"] = TagPoint("2023-07-19", 1)  # someone created a second auto-shaped tag on it
    plan = plan_auto_tags(w.snapshots, w.tags.values(), w.rules)
    assert plan.create == () and any("several auto tags" in n for n in plan.notes)


# -- tablekeeper's stricter rules -------------------------------------------------------------

def test_unknown_zone_refuses_naming() -> None:
    rules = AutoTagRules("process-time", TagPeriodHandler.create("daily"), None)
    plan = plan_auto_tags([SnapshotPoint(1, utc_ms("2023-07-18T12:00:00"))], [], rules)
    assert plan.create == () and plan.refused is not None and plan.refused.startswith("TimeZoneUnset")


def test_ttl_expiry_with_unknown_zone_waits_12_hours() -> None:
    tag = TagPoint("t", 1, datetime(2024, 1, 1, 0, 0), timedelta(days=1))
    now = datetime(2024, 1, 2, 6, 0, tzinfo=UTC)
    assert [e.name for e in plan_ttl_expiry([tag], now, UTC)[0]] == ["t"]
    assert plan_ttl_expiry([tag], now, None)[0] == []  # expired in UTC, not under every offset
    assert [e.name for e in plan_ttl_expiry([tag], now + timedelta(hours=12, seconds=1), None)[0]] == ["t"]
    # the writers' wall clock decides: in Asia/Shanghai the same instant is 8 h later
    assert [e.name for e in plan_ttl_expiry([tag], datetime(2024, 1, 1, 16, 1, tzinfo=UTC),
                                            ZoneInfo("Asia/Shanghai"))[0]] == ["t"]
    # strictly after createTime + timeRetained
    assert plan_ttl_expiry([tag], datetime(2024, 1, 2, 0, 0, tzinfo=UTC), UTC)[0] == []


def test_never_expired_and_protected_tags() -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    old = datetime(2020, 1, 1)
    tags = [TagPoint(n, i, old, timedelta(days=1)) for i, n in enumerate(
        ["savepoint-3", "rollback-to-as-latest-4-x", "fork-b-5", "plain"], start=1)]
    expired, kept = plan_ttl_expiry(tags, now, UTC, protected={"fork-b-5"})
    assert [e.name for e in expired] == ["plain"]
    assert set(kept) == {"savepoint-3", "rollback-to-as-latest-4-x", "fork-b-5"}


def test_count_expiry_keeps_protected_without_deleting_newer() -> None:
    rules = hourly(num_retained_max=2)
    snaps = [SnapshotPoint(i, 0, utc_ms(f"2023-07-18T{10 + i:02d}:30:00")) for i in range(1, 6)]
    tags = [TagPoint(f"2023-07-18 {10 + i:02d}", i) for i in range(1, 6)]
    plan = plan_auto_tags(snaps, tags, rules, protected={"2023-07-18 11"})
    # Java would delete 11, 12, 13; the fork point 11 stays and no newer tag dies in its place
    assert [e.name for e in plan.expire] == ["2023-07-18 12", "2023-07-18 13"]
    assert plan.kept_protected == ("2023-07-18 11",)


def test_batch_count_expiry_counts_only_batch_tags() -> None:
    tags = [TagPoint("manual", 1), TagPoint("batch-write-2024-01-01", 2), TagPoint("batch-write-2024-01-02", 3),
            TagPoint("batch-write-2024-01-03", 4), TagPoint("batch-write-2024-02-30", 5)]
    expired, _ = plan_batch_count_expiry(tags, 2)
    assert [e.name for e in expired] == ["batch-write-2024-01-01"]
    assert not is_batch_tag("batch-write-2024-02-30") and is_batch_tag("batch-write-2024-02-29")


def test_created_then_counted_out_is_never_planned() -> None:
    rules = AutoTagRules("process-time", TagPeriodHandler.create("daily"), UTC, num_retained_max=2)
    snaps = [SnapshotPoint(i, utc_ms(f"2023-07-{10 + i:02d}T12:00:00")) for i in range(1, 8)]
    plan = plan_auto_tags(snaps, [], rules)
    assert [c.name for c in plan.create] == ["2023-07-15", "2023-07-16"]  # day D is tagged D - 1
    assert plan.expire == ()


# -- simulated weeks: periodic runs == Java's per-commit runs ---------------------------------

class JavaTagAutoCreation:
    """A literal port of TagAutoCreation (constructor + run + tryToCreateTags), one instance per
    writer session, run after every commit."""

    def __init__(self, rules: AutoTagRules, snapshots: list[SnapshotPoint], tags: dict[str, TagPoint]) -> None:
        self.rules, self.snapshots, self.tags = rules, snapshots, tags
        h = rules.handler
        auto = sorted((n for n in tags if h.is_auto_tag(n)), key=h.tag_to_time, reverse=True)
        self.next_tag: datetime | None = None
        if not auto:
            self.next_snapshot = min((s.id for s in snapshots), default=1)
        else:
            self.next_snapshot = tags[auto[0]].snapshot_id + 1
            self.next_tag = h.next_tag_time(h.tag_to_time(auto[0]))

    def run(self) -> None:
        by_id = {s.id: s for s in self.snapshots}
        while True:
            if self.next_snapshot in by_id:
                self._try(by_id[self.next_snapshot])
                self.next_snapshot += 1
            else:
                earliest = min(by_id, default=None)
                if earliest is not None and earliest > self.next_snapshot:
                    self.next_snapshot = earliest
                else:
                    break

    def _try(self, snap: SnapshotPoint) -> None:
        h, r = self.rules.handler, self.rules
        assert r.zone is not None
        when = extract_time(r.mode, snap, r.zone)
        if when is None:
            return
        if self.next_tag is None or when - r.delay >= h.next_tag_time(self.next_tag):
            this = h.normalize_to_previous_tag(when)
            if r.automatic_completion and self.next_tag is not None:
                this = self.next_tag
            name = h.time_to_tag(this)
            if name not in self.tags:
                self.tags[name] = TagPoint(name, snap.id)
            self.next_tag = h.next_tag_time(this)
            if r.num_retained_max is not None:
                auto = sorted((t for t in self.tags.values() if h.is_auto_tag(t.name)),
                              key=lambda t: t.snapshot_id)
                for t in auto[:max(0, len(auto) - r.num_retained_max)]:
                    del self.tags[t.name]


RULE_CASES = [
    ("daily", None, "with_dashes", timedelta(0), 5, False),
    ("daily", None, "without_dashes", timedelta(hours=2), None, False),
    ("hourly", None, "with_dashes", timedelta(minutes=10), 24, False),
    ("hourly", None, "without_dashes_and_spaces", timedelta(0), 48, True),
    ("two-hours", None, "with_dashes", timedelta(0), 10, False),
    (None, timedelta(minutes=90), None, timedelta(minutes=5), 20, False),
    ("daily", None, "with_dashes", timedelta(hours=1), 3, True),
]


@pytest.mark.parametrize(("period", "duration", "fmt", "delay", "maximum", "complete"), RULE_CASES)
@pytest.mark.parametrize(("seed", "keep"), [(1, None), (2, None), (3, 4), (4, 2)])
def test_periodic_runs_match_per_commit_java(period: str | None, duration: timedelta | None, fmt: str | None,
                                             delay: timedelta, maximum: int | None, complete: bool,
                                             seed: int, keep: int | None) -> None:
    """Three simulated weeks of commits with random gaps (idle hours, a stopped writer for a day),
    commit times in Asia/Shanghai wall clock. Java runs the rules after every commit (then expires
    snapshots down to ``keep``); tablekeeper runs them at random moments, every 1-40 hours (then
    expires snapshots down to ``keep``, as its own maintenance does after tagging). Both end with
    exactly the same tags at the same snapshots."""
    rnd = random.Random(seed)
    zone = ZoneInfo("Asia/Shanghai")
    rules = AutoTagRules("process-time", TagPeriodHandler.create(period, duration, fmt), zone, delay=delay,
                         num_retained_max=maximum, automatic_completion=complete)
    t = datetime(2024, 3, 1, 0, 7, tzinfo=UTC)
    java_snaps: list[SnapshotPoint] = []
    java_tags: dict[str, TagPoint] = {}
    tk_snaps: list[SnapshotPoint] = []
    tk_tags: dict[str, TagPoint] = {}
    writer = JavaTagAutoCreation(rules, java_snaps, java_tags)
    next_run = t + timedelta(hours=rnd.randint(1, 40))
    sid = 0
    end = t + timedelta(weeks=3)
    while t < end:
        t += timedelta(minutes=rnd.choice([7, 20, 45, 60, 95, 180, 600, 1440]))
        sid += 1
        snap = SnapshotPoint(sid, int(t.timestamp() * 1000))
        java_snaps.append(snap)
        tk_snaps.append(snap)
        if rnd.random() < 0.05:  # the writer restarts: state restored from the tags
            writer = JavaTagAutoCreation(rules, java_snaps, java_tags)
        writer.run()
        if keep is not None:
            del java_snaps[:-keep]
        if t >= next_run:
            plan = plan_auto_tags(tk_snaps, tk_tags.values(), rules)
            for c in plan.create:
                tk_tags[c.name] = TagPoint(c.name, c.snapshot_id)
            for e in plan.expire:
                del tk_tags[e.name]
            if keep is not None:
                del tk_snaps[:-keep]
            next_run = t + timedelta(hours=rnd.randint(1, 40))
    plan = plan_auto_tags(tk_snaps, tk_tags.values(), rules)
    for c in plan.create:
        tk_tags[c.name] = TagPoint(c.name, c.snapshot_id)
    for e in plan.expire:
        del tk_tags[e.name]
    assert {n: t.snapshot_id for n, t in tk_tags.items()} == {n: t.snapshot_id for n, t in java_tags.items()}
    if maximum is not None:
        assert len(tk_tags) <= maximum
    assert len(tk_tags) >= 3  # the simulation did create tags
