"""Paimon's tag auto-creation and tag expiry rules, as pure functions (paimon-semantics.md §3.3,
§3.4, §9.8, §9.11).

Ported from ``apache/paimon`` at ``5dacde516b``: ``TagPeriodHandler`` (periods, name formats,
STRICT name parsing), ``TagTimeExtractor`` (process-time / watermark), ``TagAutoCreation`` (the
walk over snapshots, delay, automatic completion, ``tag.num-retained-max``) and
``TagTimeExpire`` (``tagCreateTime + tagTimeRetained``). Nothing here reads storage or the
clock: snapshots and tags come in as values, ``now`` is passed in, and the writers' time zone
is explicit.

tablekeeper is stricter than Java where Java's rules can lose history:

- **Unknown writer zone.** Auto-tag names and ``tagCreateTime`` are wall clocks of the writers'
  zone. Without a configured zone, auto-creation is refused (``AutoTagPlan.refused``) and TTL
  expiry only acts when a tag is expired under every UTC offset (a 12 h margin).
- **Count-based expiry** (``tag.num-retained-max``) only ever counts and deletes auto-tag names of
  the configured period/formatter, also in batch mode (where Java counts every tag), and never
  a protected tag. A protected tag among the oldest is kept *without* deleting a newer tag in its
  place, so the tags kept are always a superset of what Java keeps.
- **Never expired**: ``rollback-to-as-latest-*`` and ``savepoint-*`` tags
  (``safety.PROTECTED_TAG_PREFIXES``) and fork-point tags of branches (passed in ``protected``).
- **Several auto tags on one snapshot** make Java's writer fail (``checkAndGetOneAutoTag``);
  here they are reported in ``notes`` and handled one by one.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone, tzinfo
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tablekeeper.core import errors, values
from tablekeeper.core.refs.tag_periods import _DAY_DASHES, LONG_MIN, CreationMode, TagPeriodHandler, _human

__all__ = ["SnapshotPoint", "TagPoint", "AutoTagRules", "PlannedAutoTag", "ExpiredTag", "AutoTagPlan",
    "BATCH_TAG_PREFIX", "extract_time", "local_wall_clock", "plan_auto_tags", "plan_ttl_expiry",
    "plan_batch_count_expiry", "is_batch_tag", "is_never_expired", "parse_zone_id"]


#: Name prefix of batch-mode tags (``TagBatchCreation``): ``batch-write-yyyy-MM-dd``.
BATCH_TAG_PREFIX = "batch-write-"


@dataclass(frozen=True)
class SnapshotPoint:
    """What the rules need of a snapshot."""

    id: int
    time_millis: int
    watermark: int | None = None


@dataclass(frozen=True)
class TagPoint:
    """What the rules need of a tag (``create_time`` is the writer-zone wall clock)."""

    name: str
    snapshot_id: int
    create_time: datetime | None = None
    time_retained: timedelta | None = None


@dataclass(frozen=True)
class AutoTagRules:
    """The auto-creation options of a table (``tag.*``, ``sink.*-time-zone``).

    ``zone`` is the zone the time source is read in: ``sink.process-time-zone`` (else the writers'
    zone) for process-time, ``sink.watermark-time-zone`` (default UTC) for watermark. ``None``
    means unknown: auto-creation is refused.
    """

    mode: CreationMode
    handler: TagPeriodHandler
    zone: tzinfo | None
    delay: timedelta = timedelta(0)
    num_retained_max: int | None = None
    default_time_retained: timedelta | None = None
    automatic_completion: bool = False

    def __post_init__(self) -> None:
        self.handler.validate_delay(self.delay)
        if self.num_retained_max is not None and self.num_retained_max < 1:
            raise errors.InvalidInputError("tag.num-retained-max must be at least 1", fix="e.g. 90")

    def is_auto_tag(self, name: str) -> bool:
        """Whether count-based expiry may count ``name`` (batch mode: ``batch-write-yyyy-MM-dd``)."""
        if self.mode == "batch":
            return is_batch_tag(name)
        return self.handler.is_auto_tag(name)


@dataclass(frozen=True)
class PlannedAutoTag:
    name: str
    snapshot_id: int
    tag_time: datetime
    snapshot_time: datetime


@dataclass(frozen=True)
class ExpiredTag:
    name: str
    snapshot_id: int
    rule: Literal["ttl", "num-retained-max"]
    reason: str


@dataclass(frozen=True)
class AutoTagPlan:
    """What one run of the rules decides: tags to create, auto tags to delete by count, and why
    anything was left alone. ``refused`` is set (and nothing planned) when the rules cannot be
    applied safely, e.g. ``TimeZoneUnset``."""

    create: tuple[PlannedAutoTag, ...] = ()
    expire: tuple[ExpiredTag, ...] = ()
    notes: tuple[str, ...] = ()
    refused: str | None = None
    kept_protected: tuple[str, ...] = field(default=())


def is_batch_tag(name: str) -> bool:
    """``batch-write-yyyy-MM-dd`` with a valid date (``TagBatchCreation``'s default name)."""
    if not name.startswith(BATCH_TAG_PREFIX):
        return False
    match = _DAY_DASHES.fullmatch(name[len(BATCH_TAG_PREFIX):])
    if match is None:
        return False
    try:
        date(*(int(g) for g in match.groups()))
    except ValueError:
        return False
    return True


def is_never_expired(name: str) -> bool:
    """Tags tablekeeper never expires by TTL or count (Paimon pins them on purpose)."""
    return name.startswith(values.PROTECTED_TAG_PREFIXES)


_OFFSET_ZONE = re.compile(r"(?:GMT|UTC|UT)?([+-])([0-9]{1,2})(?::?([0-9]{2}))?")


def parse_zone_id(text: str) -> tzinfo:
    """A Java ``ZoneId`` string as Paimon options hold it: an IANA name (``Asia/Shanghai``),
    ``UTC``/``GMT``/``Z``, or an offset id (``GMT-08:00``, ``UTC+8``, ``+05:30``).

    Raises:
        InvalidInputError: anything else.
    """
    value = text.strip()
    if value in ("Z", "UTC", "GMT", "UT"):
        return timezone.utc
    match = _OFFSET_ZONE.fullmatch(value)
    if match:
        hours, minutes = int(match.group(2)), int(match.group(3) or 0)
        if hours > 18 or minutes > 59:
            raise errors.InvalidInputError(f"zone offset {text!r} is out of range", fix="use -18:00..+18:00")
        offset = timedelta(hours=hours, minutes=minutes)
        return timezone(-offset if match.group(1) == "-" else offset)
    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise errors.InvalidInputError(f"unknown time zone {text!r}",
                                       fix="use an IANA zone such as 'Asia/Shanghai' or an offset such as "
                                           "'GMT+08:00'") from e


def local_wall_clock(instant: datetime, zone: tzinfo) -> datetime:
    """The naive wall clock of ``zone`` at ``instant`` (an aware datetime)."""
    if instant.tzinfo is None:
        raise ValueError("instant must be timezone-aware")
    return instant.astimezone(zone).replace(tzinfo=None)


def extract_time(mode: CreationMode, snapshot: SnapshotPoint, zone: tzinfo) -> datetime | None:
    """``TagTimeExtractor``: the snapshot's commit time (process-time) or watermark (watermark)
    as a wall clock of ``zone``; None for a watermark that is absent or ``Long.MIN_VALUE``."""
    if mode == "watermark":
        if snapshot.watermark is None or snapshot.watermark == LONG_MIN:
            return None
        millis = snapshot.watermark
    else:
        millis = snapshot.time_millis
    instant = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=millis)
    return local_wall_clock(instant, zone)


def _count_expiry(auto: Sequence[tuple[TagPoint, datetime]], maximum: int, protected: Collection[str],
                  rule_text: str) -> tuple[list[ExpiredTag], list[str]]:
    """Oldest auto tags beyond ``maximum`` (by snapshot id, then tag time, as Java's sorted map);
    protected ones among them are kept, and no newer tag is deleted in their place."""
    ordered = sorted(auto, key=lambda item: (item[0].snapshot_id, item[1]))
    excess = len(ordered) - maximum
    expired: list[ExpiredTag] = []
    kept: list[str] = []
    for tag, _time in ordered[:max(0, excess)]:
        if tag.name in protected or is_never_expired(tag.name):
            kept.append(tag.name)
            continue
        expired.append(ExpiredTag(tag.name, tag.snapshot_id, "num-retained-max",
                                  f"more than {rule_text} auto tags; oldest first"))
    return expired, kept


def plan_auto_tags(snapshots: Iterable[SnapshotPoint], tags: Iterable[TagPoint], rules: AutoTagRules, *,
                   protected: Collection[str] = ()) -> AutoTagPlan:
    """Run ``TagAutoCreation`` once over the table's current snapshots and tags.

    Equivalent to Java running it at every commit: the restart state comes from the latest auto
    tag (``nextSnapshot = tag.id + 1``, ``nextTag = tagTime + period``), the walk jumps to the
    earliest snapshot when the next one expired, a snapshot is tagged when
    ``time - delay >= nextTag + period`` (or when no auto tag exists yet), and the name is the
    period before the snapshot's (``automatic_completion``: the next missing period instead).
    ``num_retained_max`` is applied to the final set (Java applies it after each creation, which
    ends in the same set): tags that would be created and deleted again are not planned at all.

    Args:
        snapshots: the branch's existing snapshots (any order).
        tags: every tag of the branch.
        rules: the table's auto-creation options.
        protected: tag names that must never be deleted (fork points of branches).

    Returns:
        The plan; ``refused`` when the writers' zone is unknown (process-time/watermark).
    """
    snaps = {s.id: s for s in snapshots}
    all_tags = list(tags)
    handler = rules.handler
    notes: list[str] = []
    if rules.mode == "batch":
        return AutoTagPlan(notes=("batch mode: the batch writer creates its tag when the job ends",))
    if rules.zone is None:
        return AutoTagPlan(refused="TimeZoneUnset: the writers' time zone is unknown, so auto-tag names "
                                   "cannot be computed; set spec.timeZone of the PaimonTable or writerTimeZone "
                                   "of its catalog (or the table option sink.process-time-zone)")
    existing = {t.name: t for t in all_tags}
    auto_by_snapshot: dict[int, list[str]] = {}
    auto: list[tuple[TagPoint, datetime]] = []
    for tag in all_tags:
        if handler.is_auto_tag(tag.name):
            auto.append((tag, handler.tag_to_time(tag.name)))
            auto_by_snapshot.setdefault(tag.snapshot_id, []).append(tag.name)
    for sid, names in sorted(auto_by_snapshot.items()):
        if len(names) > 1:
            notes.append(f"snapshot {sid} carries several auto tags {sorted(names)}: Java writers fail on this "
                         "(checkAndGetOneAutoTag); tablekeeper handles them one by one")
    earliest = min(snaps) if snaps else None
    next_tag: datetime | None
    if not auto:
        next_snapshot = earliest if earliest is not None else 1
        next_tag = None
    else:
        latest_tag, latest_time = max(auto, key=lambda item: item[1])
        next_snapshot = latest_tag.snapshot_id + 1
        next_tag = handler.next_tag_time(latest_time)
    created: list[PlannedAutoTag] = []
    while True:
        if next_snapshot in snaps:
            snap = snaps[next_snapshot]
            when = extract_time(rules.mode, snap, rules.zone)
            if when is not None and (next_tag is None or when - rules.delay >= handler.next_tag_time(next_tag)):
                this_tag = handler.normalize_to_previous_tag(when)
                if rules.automatic_completion and next_tag is not None:
                    this_tag = next_tag
                name = handler.time_to_tag(this_tag)
                if name not in existing:
                    if auto_by_snapshot.get(snap.id):
                        notes.append(f"not creating {name!r}: snapshot {snap.id} is already auto-tagged with "
                                     f"{auto_by_snapshot[snap.id]} (Java's validateNoAutoTag)")
                    else:
                        planned = PlannedAutoTag(name, snap.id, this_tag, when)
                        created.append(planned)
                        point = TagPoint(name, snap.id)
                        existing[name] = point
                        auto.append((point, this_tag))
                        auto_by_snapshot.setdefault(snap.id, []).append(name)
                next_tag = handler.next_tag_time(this_tag)
            next_snapshot += 1
        elif earliest is not None and earliest > next_snapshot:
            next_snapshot = earliest
        else:
            break
    expired: list[ExpiredTag] = []
    kept: list[str] = []
    if rules.num_retained_max is not None:
        expired, kept = _count_expiry(auto, rules.num_retained_max, protected,
                                      f"tag.num-retained-max={rules.num_retained_max}")
    dropped = {e.name for e in expired}
    return AutoTagPlan(
        create=tuple(c for c in created if c.name not in dropped),
        expire=tuple(e for e in expired if e.name not in {c.name for c in created}),
        notes=tuple(notes),
        kept_protected=tuple(kept),
    )


def plan_batch_count_expiry(tags: Iterable[TagPoint], maximum: int, *,
                            protected: Collection[str] = ()) -> tuple[list[ExpiredTag], list[str]]:
    """``tag.num-retained-max`` in batch mode, counting only ``batch-write-yyyy-MM-dd`` tags
    (Java's ``TagBatchCreation`` counts every tag; tablekeeper never deletes manual tags)."""
    auto = []
    for tag in tags:
        if is_batch_tag(tag.name):
            auto.append((tag, datetime.strptime(tag.name[len(BATCH_TAG_PREFIX):], "%Y-%m-%d")))
    return _count_expiry(auto, maximum, protected, f"tag.num-retained-max={maximum} (batch)")


def plan_ttl_expiry(tags: Iterable[TagPoint], now: datetime, zone: tzinfo | None, *,
                    protected: Collection[str] = ()) -> tuple[list[ExpiredTag], list[str]]:
    """``TagTimeExpire``: a tag with both ``tagCreateTime`` and ``tagTimeRetained`` expires once
    the writers' wall clock is after ``createTime + timeRetained`` (strictly).

    Args:
        tags: every tag of the branch.
        now: an aware instant.
        zone: the writers' zone; None = unknown: a tag expires only when it is expired under every
            UTC offset (the wall clock is taken as ``UTC - 12 h``).
        protected: tag names never deleted (fork points).

    Returns:
        (expired tags, names of expired tags that were kept because they are protected).
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    if zone is None:
        wall = local_wall_clock(now, timezone.utc) - values.UNKNOWN_ZONE_MARGIN
        clock = "UTC - 12 h (writer zone unknown)"
    else:
        wall = local_wall_clock(now, zone)
        clock = f"{zone}"
    expired: list[ExpiredTag] = []
    kept: list[str] = []
    for tag in sorted(tags, key=lambda t: (t.snapshot_id, t.name)):
        if tag.create_time is None or tag.time_retained is None:
            continue
        deadline = tag.create_time + tag.time_retained
        if not wall > deadline:
            continue
        if tag.name in protected or is_never_expired(tag.name):
            kept.append(tag.name)
            continue
        expired.append(ExpiredTag(tag.name, tag.snapshot_id, "ttl",
                                  f"created {tag.create_time:%Y-%m-%d %H:%M:%S} + {_human(tag.time_retained)} "
                                  f"passed at {deadline:%Y-%m-%d %H:%M:%S} ({clock})"))
    return expired, kept


