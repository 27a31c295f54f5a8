"""Snapshot and changelog expiration (paimon-semantics.md §2), decided as data.

``decide_expire`` / ``decide_expire_changelog`` return a :class:`expire_decisions.ExpirationDecision`
(range, expiring ids, the roots with their uses, the tail); ``plan_expire`` /
``plan_expire_changelog`` evaluate it in process, the Spark job evaluates the same decision
distributed.

Range: Java 2.0's ``ExpireSnapshotsImpl`` (retain min/max, time retention checked on the
*next* snapshot, expire limit, consumers). Deletion: Java's ``SnapshotDeletion`` order — data
files, changelog files, manifests/index/statistics, (changelog-N copies when decoupled),
snapshot files, EARLIEST. Protection is stronger than Java's: tags of *every* branch, every
snapshot and tag of every *other* branch, and long-lived changelogs are roots; any read error on
a protecting root aborts the plan (IncompleteProtectionSetError)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from tablekeeper.core import errors, paimon, plans, values
from tablekeeper.core.paimon import Snapshot, Table
from tablekeeper.core.paimon.manifests import gc_paused
from tablekeeper.core.reclaim import reach
from tablekeeper.core.reclaim.expire import decision, evaluation, retention
from tablekeeper.core.reclaim.expire.retention import INT_MAX, Retention, RetentionFlags
from tablekeeper.core.reclaim.reach import Reachability
from tablekeeper.core.storage import join

__all__ = ["ExpireConfig", "ExpireRange", "ChangelogConfig", "expire_config", "changelog_config",
           "config_from_options", "changelog_config_from_options",
           "compute_range", "changelog_range", "NamedRoot", "protecting_roots", "expiring_snapshots", "previous_tag",
           "decide_expire", "decide_expire_changelog", "evaluate_expire", "plan_expire", "plan_expire_changelog"]



@dataclass(frozen=True)
class ExpireConfig:
    retain_min: int = 10
    retain_max: int = INT_MAX
    time_retained: timedelta = timedelta(hours=1)
    expire_limit: int = 50
    clean_empty_directories: bool = False
    changelog_decoupled: bool = False
    changelog_producer: str = "none"
    consumer_changelog_only: bool = False

    def validate(self) -> None:
        if self.retain_min < values.MIN_RETAIN_MIN:
            raise errors.UnsafePolicyError(
                f"snapshot.num-retained.min must be >= {values.MIN_RETAIN_MIN}, got {self.retain_min}",
                fix="keep at least one snapshot (Paimon issue #10088)")
        if self.retain_max < self.retain_min:
            raise errors.InvalidInputError(
                f"snapshot.num-retained.max ({self.retain_max}) < snapshot.num-retained.min ({self.retain_min})",
                fix="raise the max or lower the min")
        if self.expire_limit < 1:
            raise errors.InvalidInputError("snapshot.expire.limit must be >= 1", fix="e.g. 50")
        if self.time_retained < timedelta(0):
            raise errors.InvalidInputError("snapshot.time-retained must not be negative", fix="e.g. '1 h'")


def expire_config(retention: Retention, options: Mapping[str, str]) -> ExpireConfig:
    """The snapshot-expiration config of a resolved :class:`Retention` (its values, its decoupled
    rule) plus the table facts ``options`` hold (``changelog-producer``, ``consumer.changelog-only``)."""
    config = ExpireConfig(
        retain_min=retention.retain_min, retain_max=retention.retain_max, time_retained=retention.time_retained,
        expire_limit=retention.expire_limit, clean_empty_directories=retention.clean_empty_directories,
        changelog_decoupled=retention.changelog_decoupled,
        changelog_producer=options.get("changelog-producer", "none"),
        consumer_changelog_only=options.get("consumer.changelog-only", "false").lower() == "true")
    config.validate()
    return config


def config_from_options(options: Mapping[str, str], **overrides: Any) -> ExpireConfig:
    """The expiration config Paimon derives from table options, with explicit overrides (the
    fields of :class:`RetentionFlags`; None = keep): ``retention_settings.from_options``."""
    return expire_config(retention.from_options(options, RetentionFlags(**overrides)), options)


@dataclass(frozen=True)
class ExpireRange:
    earliest: int | None
    latest: int | None
    end_exclusive: int | None
    reason: str

    @property
    def count(self) -> int:
        if self.earliest is None or self.end_exclusive is None:
            return 0
        return max(0, self.end_exclusive - self.earliest)


def compute_range(table: Table, config: ExpireConfig, now_ms: int) -> ExpireRange:
    """Which snapshots expire: ``[earliest, end_exclusive)`` (Java 2.0 rules)."""
    config.validate()
    latest = table.latest_snapshot_id()
    earliest = table.earliest_snapshot_id()
    if latest is None or earliest is None:
        return ExpireRange(earliest, latest, None, "no snapshots")
    low = max(latest - config.retain_max + 1, earliest)
    end = latest - config.retain_min + 1
    reason = f"snapshot.num-retained.min={config.retain_min}"
    if not (config.consumer_changelog_only and config.changelog_decoupled):
        consumers = table.consumers()
        if consumers:
            nxt = min(c.next_snapshot for c in consumers)
            if nxt < end:
                end, reason = nxt, f"consumer {min(consumers, key=lambda c: c.next_snapshot).consumer_id} at {nxt}"
    if earliest + config.expire_limit < end:
        end, reason = earliest + config.expire_limit, f"snapshot.expire.limit={config.expire_limit}"
    older_than = now_ms - int(config.time_retained.total_seconds() * 1000)
    for sid in range(low, end):
        try:
            following = table.snapshot(sid + 1)
        except errors.SnapshotNotFoundError:
            continue  # missing (or removed meanwhile by a concurrent expiry): skipped, as Java
        if following.time_millis >= older_than:
            return ExpireRange(earliest, latest, sid,
                               f"snapshot {sid + 1} is younger than snapshot.time-retained")
    return ExpireRange(earliest, latest, end, reason)


#: A root and what it is.
NamedRoot = tuple[reach.RootName, Snapshot]


def _named(kind: str, branch: str, name: object, snapshot: Snapshot) -> NamedRoot:
    return reach.RootName(reach.root_kind(kind, branch), branch, str(name)), snapshot


def protecting_roots(table: Table) -> tuple[list[NamedRoot], list[NamedRoot], list[NamedRoot]]:
    """(tags of every branch, snapshots and tags of the other branches, long-lived changelogs of
    every branch): the roots that protect files from an expiration of ``table``'s branch."""
    tags: list[NamedRoot] = []
    others: list[NamedRoot] = []
    changelogs: list[NamedRoot] = []
    for branch in table.all_branches():
        own_tags = [_named("tag", branch.branch, t.name, t.snapshot) for t in branch.tags()]
        tags.extend(own_tags)
        if branch.branch != table.branch:
            others.extend(_named("snapshot", branch.branch, s.id, s) for s in branch.snapshots())
            others.extend(own_tags)
        for cid in branch.changelog_ids():
            try:
                changelogs.append(_named("changelog", branch.branch, cid, branch.changelog(cid)))
            except FileNotFoundError:
                continue
    return tags, others, changelogs


class _Uses:
    """Makes the RootUses of one decision: each names its root and carries the references of
    its root that may dangle (``guarantees.dangling_roles``, with the
    changelog lists of copied snapshots among ``roots``: ``guarantees.copied_lists``)."""

    def __init__(self, producer: str, roots: Sequence[NamedRoot]) -> None:
        self.producer = producer
        self.copied = reach.copied_lists((name, snap.changelog_manifest_list) for name, snap in roots)

    def __call__(self, named: NamedRoot, **uses: Any) -> decision.RootUse:
        name, snapshot = named
        dangling = reach.dangling_roles(name.kind, snapshot, producer=self.producer, copied=self.copied)
        return decision.RootUse(snapshot, root=name, dangling=dangling, **uses)


def _vanished_root(operation: str, e: FileNotFoundError) -> errors.TablekeeperError:
    what = getattr(e, "filename", None) or str(e)
    return errors.IncompleteProtectionSetError(
        f"{operation}: a snapshot, tag or changelog file vanished while the roots were read ({what})",
        fix="another process is changing the table (a concurrent expiration or tag deletion): rerun "
            "(nothing was deleted)")


def expiring_snapshots(table: Table, begin: int, end: int) -> tuple[list[Snapshot], list[int]]:
    """The snapshots of ``[begin, end)`` and the ids whose files are already gone (a concurrent
    expiration, or an earlier interrupted run: tolerated, Paimon #4235)."""
    expiring: list[Snapshot] = []
    missing: list[int] = []
    for sid in range(begin, end):
        try:
            expiring.append(table.snapshot(sid))
        except errors.SnapshotNotFoundError:
            missing.append(sid)
    return expiring, missing


def previous_tag(tags: Sequence[Snapshot], sid: int) -> int | None:
    """The id of the nearest tag before snapshot ``sid``: its live files protect the files that
    ``sid``'s delta deletes (Paimon's TagDeletion rule)."""
    before = [t.id for t in tags if t.id < sid]
    return max(before) if before else None


def decide_expire(table: Table, config: ExpireConfig, now_ms: int) -> decision.ExpirationDecision:
    """Decide a snapshot expiration of ``table``'s branch: range, roots and their uses, tail.

    Roots: tags of every branch and every snapshot and tag of every *other* branch protect
    (strictly); the first retained snapshot protects its changelog and metadata and its delta
    is a candidate; long-lived changelogs (and, decoupled, the expiring snapshots themselves,
    which live on as changelog-N) protect what a changelog reads; the expiring snapshots'
    deltas (all but the first), changelogs (unless decoupled) and metadata are candidates,
    each delta protected by the live files of the tag before it.

    Raises:
        IncompleteProtectionSetError: a protecting root cannot be enumerated.
    """
    rng = compute_range(table, config, now_ms)
    details: dict[str, object] = {
        "branch": table.branch, "earliest": rng.earliest, "latest": rng.latest, "end_exclusive": rng.end_exclusive,
        "expired_snapshots": 0, "stop_reason": rng.reason}
    earliest_hint = join(table.dir(paimon.SNAPSHOT_DIR), paimon.EARLIEST)

    def decided(expiring: Sequence[Snapshot], missing: Sequence[int], roots: Sequence[decision.RootUse],
                tail: Sequence[plans.Step], notes: Sequence[str]) -> decision.ExpirationDecision:
        details["expired_snapshots"] = len(expiring)
        depth = len(table.schema().partition_keys) if config.clean_empty_directories and roots else None
        return decision.ExpirationDecision(
            "expire-snapshots", table.identifier, table.branch, tuple(s.id for s in expiring), tuple(missing),
            tuple(roots), tuple(tail), tuple(notes), tuple(details.items()), empty_dirs_depth=depth)

    if rng.earliest is None or rng.end_exclusive is None or rng.end_exclusive <= rng.earliest:
        hint_steps: list[plans.Step] = []
        current = table.read_hint(paimon.SNAPSHOT_DIR, paimon.EARLIEST)
        if rng.earliest is not None and current != rng.earliest:  # missing, or stale after a crash (#12)
            hint_steps.append(plans.WriteStep(earliest_hint, paimon.encode_hint(rng.earliest),
                                              "EARLIEST was missing" if current is None else
                                              f"EARLIEST named {current}, the earliest snapshot is {rng.earliest}"))
        return decided((), (), (), hint_steps, (f"nothing expires: {rng.reason}",))
    end = rng.end_exclusive
    expiring, missing = expiring_snapshots(table, rng.earliest, end)
    notes = [f"expiring snapshots {rng.earliest}..{end - 1} (stop: {rng.reason})"]
    if missing:
        notes.append(f"snapshot files already gone (concurrent or earlier run): {missing[:10]}")
    if not expiring:
        return decided((), missing, (), (plans.WriteStep(earliest_hint, paimon.encode_hint(end), "advance EARLIEST"),),
                       notes)
    end_snapshot = table.snapshot(end)
    try:
        tag_roots, other_roots, changelog_roots = protecting_roots(table)
        own_tags = sorted((_named("tag", table.branch, t.name, t.snapshot) for t in table.tags()),
                          key=lambda r: r[1].id)
    except FileNotFoundError as e:
        raise _vanished_root("expiration", e) from e
    decoupled = config.changelog_decoupled
    data, changelog = plans.FileKind.DATA, plans.FileKind.CHANGELOG_DATA
    own = [_named("snapshot", table.branch, s.id, s) for s in expiring]
    end_root = _named("snapshot", table.branch, end_snapshot.id, end_snapshot)
    use = _Uses(config.changelog_producer, [*tag_roots, *other_roots, *changelog_roots, *own, end_root])
    tag_snapshots = [s for _n, s in own_tags]
    roots: list[decision.RootUse] = []
    roots.extend(use(r, keep_changelog=True, keep_meta=True) for r in tag_roots)
    roots.extend(use(r, keep_live=True, keep_changelog=True, keep_meta=True) for r in other_roots)
    roots.append(use(end_root, keep_changelog=True, keep_meta=True, cand_delta=data,
                     prev_tag=previous_tag(tag_snapshots, end_snapshot.id)))
    # decoupled: the expiring snapshots live on as changelog-N and protect what a changelog reads
    as_changelogs = [_named("changelog", table.branch, s.id, s) for s in expiring] if decoupled else []
    roots.extend(use(r, log_keep=True, log_reads=reach.changelog_reads(r[1], config.changelog_producer))
                 for r in [*changelog_roots, *as_changelogs])
    for i, r in enumerate(own):
        s = r[1]
        roots.append(use(r, cand_delta=data if i > 0 else None,
                         prev_tag=previous_tag(tag_snapshots, s.id) if i > 0 else None,
                         cand_changelog=None if decoupled else changelog,
                         cand_meta=True, cand_meta_changelog=not decoupled))
    used_tags = {r.prev_tag for r in roots if r.prev_tag is not None}
    seen: set[int] = set()
    for t in own_tags:
        if t[1].id in used_tags and t[1].id not in seen:
            seen.add(t[1].id)
            roots.append(use(t, tag_live=True))
    tail: list[plans.Step] = []
    if decoupled:  # keep changelog-N copies before the snapshot files go
        for snap in expiring:
            tail.append(plans.WriteStep(table.changelog_path(snap.id), table.file_io.read_text(
                table.snapshot_path(snap.id)), "decoupled changelog lifecycle", create_only=True))
        tail.append(plans.WriteStep(join(table.dir(paimon.CHANGELOG_DIR), paimon.LATEST),
                                    paimon.encode_hint(expiring[-1].id), "changelog LATEST"))
    tail.append(plans.DeleteStep(plans.FileKind.SNAPSHOT, tuple(
        plans.PlannedFile(table.snapshot_path(s.id), plans.FileKind.SNAPSHOT, s.file_size, "expired")
        for s in expiring)))
    tail.append(plans.WriteStep(earliest_hint, paimon.encode_hint(end), "new earliest snapshot"))
    return decided(expiring, missing, roots, tail, notes)


def plan_expire(table: Table, config: ExpireConfig, now_ms: int, reach: Reachability | None = None) -> plans.Plan:
    """Plan snapshot expiration of ``table``'s branch in process: :func:`decide_expire`,
    evaluated by :func:`tablekeeper.core.reclaim.expire.evaluation.evaluate`. Pure: reads metadata,
    writes nothing (see that module for why its cost grows with what expires, not with the
    table's history). ``reach``: cached manifest reads to reuse (expire_commit's second plan)."""
    return evaluate_expire(table, decide_expire(table, config, now_ms), reach)


def evaluate_expire(table: Table, decision: decision.ExpirationDecision, reach: Reachability | None = None
                    ) -> plans.Plan:
    """The in-process plan of a decided snapshot expiration (GC paused while planning)."""
    with gc_paused():
        return evaluation.evaluate(table, decision, reach)


@dataclass(frozen=True)
class ChangelogConfig:
    retain_min: int
    retain_max: int
    time_retained: timedelta
    expire_limit: int = 50
    changelog_producer: str = "none"


def changelog_config(retention: Retention, options: Mapping[str, str]) -> ChangelogConfig:
    """The changelog-expiration config of a resolved :class:`Retention`: its ``changelog_*``
    values and its ``expire_limit`` (the same limit the plan was sized with)."""
    return ChangelogConfig(retain_min=retention.changelog_retain_min, retain_max=retention.changelog_retain_max,
                           time_retained=retention.changelog_time_retained, expire_limit=retention.expire_limit,
                           changelog_producer=options.get("changelog-producer", "none"))


def changelog_config_from_options(options: Mapping[str, str]) -> ChangelogConfig:
    """``changelog.*`` options, falling back to the ``snapshot.*`` values as Paimon does."""
    return changelog_config(retention.from_options(options), options)


def changelog_range(table: Table, config: ChangelogConfig, now_ms: int) -> tuple[list[int], int]:
    """(ids of the long-lived changelogs that expire, the first one kept): the first
    ``changelog-N`` kept by retain-max/min, the expire limit, consumers or the time retention
    (metadata only: changelog and consumer files). Shared with the Spark job."""
    ids = table.changelog_ids()
    latest = table.latest_snapshot_id()
    if not ids or latest is None:
        return [], 0
    earliest_log, latest_log = ids[0], ids[-1]
    low = max(latest - config.retain_max + 1, earliest_log)
    end = min(latest - config.retain_min + 1, earliest_log + config.expire_limit, latest_log)
    consumers = table.consumers()
    if consumers:
        end = min(end, min(c.next_snapshot for c in consumers))
    older_than = now_ms - int(config.time_retained.total_seconds() * 1000)
    for cid in [i for i in ids if i < end]:
        if cid >= low and table.changelog(cid).time_millis >= older_than:
            end = cid
            break
    return [i for i in ids if i < end], end


def decide_expire_changelog(table: Table, config: ChangelogConfig, now_ms: int) -> decision.ExpirationDecision:
    """Decide an expiration of long-lived ``changelog-N`` files (decoupled lifecycle, Java's
    ExpireChangelogImpl): the changelog files they added (producer other than ``none``) or the
    files their delta deleted (producer ``none``) and metadata no retained root uses are
    candidates; tags of every branch, other branches and the earliest snapshot protect live
    files, every snapshot, tag and other branch protects metadata, kept changelogs protect what
    they read. The tail deletes the ``changelog-N`` files, then writes the changelog EARLIEST.

    Raises:
        IncompleteProtectionSetError: a protecting root cannot be enumerated.
    """
    ids = table.changelog_ids()
    latest = table.latest_snapshot_id()

    def decided(roots: Sequence[decision.RootUse], expiring: Sequence[int], tail: Sequence[plans.Step],
                notes: Sequence[str]) -> decision.ExpirationDecision:
        return decision.ExpirationDecision(
            "expire-changelog", table.identifier, table.branch, tuple(expiring), (), tuple(roots), tuple(tail),
            tuple(notes), (("expired_changelogs", len(expiring)),))

    if not ids or latest is None:
        return decided((), (), (), ("no long-lived changelogs",))
    expiring_ids, end = changelog_range(table, config, now_ms)
    if not expiring_ids:
        current = table.read_hint(paimon.CHANGELOG_DIR, paimon.EARLIEST)
        fix: tuple[plans.Step, ...] = () if current is None or current in ids else (plans.WriteStep(
            join(table.dir(paimon.CHANGELOG_DIR), paimon.EARLIEST), paimon.encode_hint(ids[0]),
            "changelog EARLIEST named a removed changelog"),)  # stale after a crash (#12)
        return decided((), (), fix, ("nothing expires",))
    try:
        expiring = [table.changelog(i) for i in expiring_ids]
        tag_roots, other_roots, _logs = protecting_roots(table)
        earliest_snapshot = table.snapshot(table.earliest_snapshot_id() or latest)
        kept_logs = [_named("changelog", table.branch, i, table.changelog(i)) for i in ids if i >= end]
        all_snapshots = [_named("snapshot", table.branch, s.id, s) for s in table.snapshots()]
    except errors.SnapshotNotFoundError as e:
        raise errors.IncompleteProtectionSetError(
            f"changelog expiration: {e.message}", fix="another process is changing the table (a concurrent "
                                                     "expiration): rerun (nothing was deleted)") from e
    except FileNotFoundError as e:
        raise _vanished_root("changelog expiration", e) from e
    earliest = _named("snapshot", table.branch, earliest_snapshot.id, earliest_snapshot)
    use = _Uses(config.changelog_producer, [*tag_roots, *other_roots, *kept_logs, *all_snapshots, earliest,
                                            *_logs])
    roots: list[decision.RootUse] = []
    roots.extend(use(r, keep_live=True) for r in [*other_roots, *tag_roots, earliest])
    roots.extend(use(r, keep_meta=True) for r in [earliest, *tag_roots, *other_roots, *all_snapshots])
    roots.extend(use(r, log_keep=True, log_reads=reach.changelog_reads(r[1], config.changelog_producer))
                 for r in kept_logs)
    for log in expiring:
        named = _named("changelog", table.branch, log.id, log)
        if log.changelog_manifest_list:
            roots.append(use(named, cand_changelog=plans.FileKind.CHANGELOG_DATA, changelog_vs_data=True,
                             cand_meta=True))
        else:
            roots.append(use(named, cand_delta=plans.FileKind.DATA, cand_meta=True))
    tail = (
        plans.DeleteStep(plans.FileKind.CHANGELOG_META, tuple(
            plans.PlannedFile(table.changelog_path(c.id), plans.FileKind.CHANGELOG_META, c.file_size, "expired")
            for c in expiring)),
        plans.WriteStep(join(table.dir(paimon.CHANGELOG_DIR), paimon.EARLIEST), paimon.encode_hint(end),
                        "new earliest changelog"))
    return decided(roots, expiring_ids, tail, (f"expiring changelogs {expiring[0].id}..{expiring[-1].id}",))


def plan_expire_changelog(table: Table, config: ChangelogConfig, now_ms: int) -> plans.Plan:
    """Plan a changelog expiration in process: :func:`decide_expire_changelog`, evaluated by
    :func:`tablekeeper.core.reclaim.expire.evaluation.evaluate`."""
    with gc_paused():
        return evaluation.evaluate(table, decide_expire_changelog(table, config, now_ms))
