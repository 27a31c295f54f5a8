"""``explain``: the pins of every branch, from expiration's decision data.

Snapshot pins (they stop snapshot expiration): ``snapshot.num-retained.min``,
``snapshot.time-retained``, ``snapshot.expire.limit`` and each consumer. For each, the snapshots
it alone holds = how much further ``expire.compute_range`` would reach without it (with the
other pins in place). File pins (they keep files, never snapshots): tags, branches forked from
the branch, kept ``changelog-N`` files; listed with what they name."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from tablekeeper.core import paimon, refs
from tablekeeper.core.paimon import Table
from tablekeeper.core.reclaim import expire
from tablekeeper.core.refs import consumers

__all__ = ["Pin", "BranchPins", "OldestPin", "oldest_pin", "explain_branch", "explain_table"]


@dataclass(frozen=True)
class Pin:
    #: retain-min | time-retained | expire-limit | consumer | tag | fork point | changelog
    kind: str
    name: str
    #: The snapshot id the pin names (a consumer's next snapshot, a tag's snapshot ...).
    snapshot_id: int | None
    #: Snapshots expiration would remove now if only this pin were gone (0 for file pins).
    snapshots_held: int
    #: This pin is where expiration's range stops now.
    holds_oldest: bool = False
    detail: str = ""
    #: Bytes the next ``expire`` (snapshot pins) or a deletion of the tag (tags) would reclaim
    #: if only this pin were gone: the difference of expiration's own plans, or the tag
    #: deletion's plan. None where it is not computed (fork points, changelogs).
    bytes_held: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _end(r: expire.ExpireRange) -> int | None:
    if r.earliest is None or r.end_exclusive is None:
        return r.earliest
    return max(r.earliest, r.end_exclusive)


@dataclass(frozen=True)
class OldestPin:
    """The short answer: where expiration stops on one branch, and why."""

    branch: str
    earliest: int | None
    latest: int | None
    #: Snapshots the next expiration removes.
    expirable_now: int
    #: The oldest snapshot left after it (None: no snapshot).
    oldest_retained: int | None
    #: What holds it: expiration's own stop reason (``consumer job-1 at 4``, ``snapshot.num-retained.min=10``...).
    held_by: str


@dataclass(frozen=True)
class BranchPins(OldestPin):
    """The short answer of a branch with every pin on it."""

    pins: tuple[Pin, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["pins"] = [p.as_dict() for p in self.pins]
        return out


def oldest_pin(table: Table, config: expire.ExpireConfig, now_ms: int) -> OldestPin:
    """Where expiration by ``config`` stops on ``table``'s branch (reads only; no sizes)."""
    real = expire.compute_range(table, config, now_ms)
    return OldestPin(table.branch, real.earliest, real.latest, real.count, _end(real), real.reason)


def _plan_bytes(table: Table, config: expire.ExpireConfig, now_ms: int) -> int:
    """What expiration's own plan would delete, in bytes (sized as a dry run sizes it)."""
    from tablekeeper.core import plans

    return int(plans.sized(expire.plan_expire(table, config, now_ms), table.file_io).summary()["total_bytes"])


def explain_branch(table: Table, now_ms: int) -> BranchPins:
    """The pins of ``table``'s branch (reads only)."""
    options = table.options()
    config = expire.expire_config(expire.from_options(options, expire.RetentionFlags()),
                                  options)
    head = oldest_pin(table, config, now_ms)
    oldest = head.oldest_retained

    def held(other: expire.ExpireRange) -> int:
        end = _end(other)
        return 0 if end is None or oldest is None else max(0, end - oldest)

    pins: list[Pin] = []
    base_bytes: list[int] = []

    def bytes_without(other_table: Table, other_config: expire.ExpireConfig) -> int:
        if not base_bytes:
            base_bytes.append(_plan_bytes(table, config, now_ms))
        return max(0, _plan_bytes(other_table, other_config, now_ms) - base_bytes[0])

    for kind, name, changed in (
            ("retain-min", f"snapshot.num-retained.min={config.retain_min}", dataclasses.replace(config, retain_min=1)),
            ("time-retained", f"snapshot.time-retained={config.time_retained}",
             dataclasses.replace(config, time_retained=timedelta(0))),
            ("expire-limit", f"snapshot.expire.limit={config.expire_limit}",
             dataclasses.replace(config, expire_limit=expire.INT_MAX))):
        n = held(expire.compute_range(table, changed, now_ms))
        if n:
            pins.append(Pin(kind, name, None, n, detail="a table option (or its default)",
                            bytes_held=bytes_without(table, changed)))
    for c in table.consumers():
        without = consumers.without_consumers(table, [c.consumer_id])
        n = held(expire.compute_range(without, config, now_ms))
        pins.append(Pin("consumer", c.consumer_id, c.next_snapshot, n, detail=f"next snapshot {c.next_snapshot}",
                        bytes_held=bytes_without(without, config) if n else 0))
    snapshot_ids = set(table.snapshot_ids())
    for tag in table.tags():
        state = "its snapshot exists" if tag.snapshot_id in snapshot_ids else "its snapshot expired: the tag keeps its files"
        summary = refs.plan_delete_tag(table, tag.name, force=True).summary()
        pins.append(Pin("tag", tag.name, tag.snapshot_id, 0, detail=state,
                        bytes_held=int(summary["total_bytes"]) - int(summary["bytes"].get("tag", 0))))
    if table.branch == paimon.MAIN:
        for point in refs.fork_points(table):
            if point.snapshot_id is not None:
                pins.append(Pin("fork point", point.branch, point.snapshot_id, 0,
                                detail=f"branch {point.branch} was created from "
                                       + (f"tag {point.from_tag}" if point.from_tag else f"snapshot {point.snapshot_id}")))
    changelogs = table.changelog_ids()
    if changelogs:
        pins.append(Pin("changelog", f"changelog-{changelogs[0]}..{changelogs[-1]}", changelogs[0], 0,
                        detail=f"{len(changelogs)} decoupled changelog file(s) kept by changelog.num-retained.*"))
    reason = head.held_by
    for i, pin in enumerate(pins):
        binding = (pin.kind == "consumer" and reason.startswith(f"consumer {pin.name} ")) or (
            pin.kind != "consumer" and pin.name in reason) or (
            pin.kind == "time-retained" and "snapshot.time-retained" in reason)
        if binding and pin.snapshots_held:
            pins[i] = dataclasses.replace(pin, holds_oldest=True)
    return BranchPins(**dataclasses.asdict(head), pins=tuple(pins))


def explain_table(table: Table, now_ms: int) -> list[BranchPins]:
    """:func:`explain_branch` for main and every branch."""
    return [explain_branch(b, now_ms) for b in table.all_branches()]
