"""Snapshot expiration (paimon-semantics.md §2) as a pure planner returning a frozen Plan.

Range: Java 2.0's ``ExpireSnapshotsImpl`` (retain min/max, time retention checked on the
*next* snapshot, expire limit, consumers). Deletion: Java's ``SnapshotDeletion`` order — data
files, changelog files, manifests/index/statistics, (changelog-N copies when decoupled),
snapshot files, EARLIEST. Protection is stronger than Java's: tags of *every* branch, every
snapshot and tag of every *other* branch, and long-lived changelogs are roots; any read error on
a protecting root aborts the plan (IncompleteProtectionSetError)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from tablekeeper.core import durations, errors, plans, safety
from tablekeeper.core.paimon import hints, layout, manifests
from tablekeeper.core.paimon.snapshot import Snapshot
from tablekeeper.core.paimon.table import Table
from tablekeeper.core.reachability import DataKey, MetaUnion, Reachability, gc_paused
from tablekeeper.core.storage import join

__all__ = ["ExpireConfig", "ExpireRange", "ChangelogConfig", "config_from_options", "changelog_config_from_options",
           "compute_range", "changelog_range", "plan_expire", "plan_expire_changelog"]

INT_MAX = 2**31 - 1


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
        if self.retain_min < safety.MIN_RETAIN_MIN:
            raise errors.UnsafePolicyError(
                f"snapshot.num-retained.min must be >= {safety.MIN_RETAIN_MIN}, got {self.retain_min}",
                fix="keep at least one snapshot (Paimon issue #10088)")
        if self.retain_max < self.retain_min:
            raise errors.InvalidInputError(
                f"snapshot.num-retained.max ({self.retain_max}) < snapshot.num-retained.min ({self.retain_min})",
                fix="raise the max or lower the min")
        if self.expire_limit < 1:
            raise errors.InvalidInputError("snapshot.expire.limit must be >= 1", fix="e.g. 50")
        if self.time_retained < timedelta(0):
            raise errors.InvalidInputError("snapshot.time-retained must not be negative", fix="e.g. '1 h'")


def _int(options: Mapping[str, str], key: str, default: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError as e:
        raise errors.InvalidInputError(f"{key} = {raw!r} is not an integer", fix=f"set {key} to a number") from e


def config_from_options(options: Mapping[str, str], **overrides: object) -> ExpireConfig:
    """The expiration config Paimon derives from table options (``snapshot.*``, ``changelog.*``,
    ``consumer.changelog-only``), with explicit overrides (None = keep)."""
    retain_min = _int(options, "snapshot.num-retained.min", 10)
    retain_max = _int(options, "snapshot.num-retained.max", INT_MAX)
    time_retained = durations.parse_duration(options.get("snapshot.time-retained", "1 h"),
                                             field="snapshot.time-retained")
    limit = _int(options, "snapshot.expire.limit", 50)
    clean = (options.get("snapshot.clean-empty-directories")
             or options.get("snapshot.expire.clean-empty-directories") or "false").lower() == "true"
    cl_min = _int(options, "changelog.num-retained.min", retain_min)
    cl_max = _int(options, "changelog.num-retained.max", retain_max)
    cl_time = durations.parse_duration(options.get("changelog.time-retained", "0 ms"), field="changelog.time-retained") \
        if "changelog.time-retained" in options else time_retained
    decoupled = cl_max > retain_max or cl_min > retain_min or cl_time > time_retained
    values: dict[str, object] = {
        "retain_min": retain_min, "retain_max": retain_max, "time_retained": time_retained,
        "expire_limit": limit, "clean_empty_directories": clean, "changelog_decoupled": decoupled,
        "changelog_producer": options.get("changelog-producer", "none"),
        "consumer_changelog_only": options.get("consumer.changelog-only", "false").lower() == "true",
    }
    values.update({k: v for k, v in overrides.items() if v is not None})
    config = ExpireConfig(**values)  # type: ignore[arg-type]
    config.validate()
    return config


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


def _roots(table: Table) -> tuple[list[Snapshot], list[Snapshot], list[Snapshot]]:
    """(tags of every branch, snapshots and tags of other branches, long-lived changelogs)."""
    tags: list[Snapshot] = []
    others: list[Snapshot] = []
    changelogs: list[Snapshot] = []
    for branch in table.all_branches():
        tags.extend(t.snapshot for t in branch.tags())
        if branch.branch != table.branch:
            others.extend(branch.snapshots())
            others.extend(t.snapshot for t in branch.tags())
        for cid in branch.changelog_ids():
            try:
                changelogs.append(branch.changelog(cid))
            except FileNotFoundError:
                continue
    return tags, others, changelogs


def _delta_deletions(reach: Reachability, snapshot: Snapshot) -> list[manifests.FileRef]:
    """DELETE entries of a delta, cancelled by an ADD of the same file in the same delta
    (upgrades: DELETE level L + ADD level L' of one file), regardless of order."""
    refs = reach.delta_refs(snapshot)
    added = {(r.partition, r.bucket, r.file_name) for r in refs if r.kind == manifests.ADD}
    return [r for r in refs if r.kind == manifests.DELETE and (r.partition, r.bucket, r.file_name) not in added]


def _prefetch(reach: Reachability, table: Table, config: ExpireConfig, expiring: list[Snapshot],
              end_snapshot: Snapshot, tag_roots: list[Snapshot], other_roots: list[Snapshot],
              changelog_roots: list[Snapshot]) -> None:
    """Warm ``reach``'s caches with what ``_plan_expire`` is about to read, in parallel (object
    stores only, see ``Reachability.prefetch``): the delta lists (and manifests) of ``(begin,
    end]``, the full state of each tag that is the nearest previous tag of one of them, other
    branches' roots and changelog roots, the changelog lists of the expiring snapshots; then,
    lists only, everything the manifest step and ``keep_meta`` walk. Errors are swallowed:
    the sequential reads meet them where they always did."""
    if not reach.prefetches:
        return
    try:
        own_tags = sorted((t.snapshot for t in table.tags()), key=lambda s: s.id)
    except Exception:
        return
    deltas = [*expiring[1:], end_snapshot]
    previous: dict[int, Snapshot] = {}
    for snap in deltas:
        tag = max((t for t in own_tags if t.id < snap.id), key=lambda t: t.id, default=None)
        if tag is not None:
            previous.setdefault(tag.id, tag)
    full_state = [*previous.values(), *other_roots]
    names: list[str | None] = [s.delta_manifest_list for s in deltas]
    names += [n for s in full_state for n in (s.base_manifest_list, s.delta_manifest_list)]
    names += [s.delta_manifest_list for s in changelog_roots]
    changelog_lists = [*tag_roots, *other_roots, *changelog_roots, end_snapshot]
    if not config.changelog_decoupled:
        changelog_lists += expiring
    names += [s.changelog_manifest_list for s in changelog_lists]
    reach.prefetch(names)
    reach.prefetch([n for s in [*expiring, end_snapshot, *tag_roots, *other_roots, *changelog_roots]
                    for n in s.manifest_lists], manifests_too=False)


def plan_expire(table: Table, config: ExpireConfig, now_ms: int) -> plans.Plan:
    """Plan snapshot expiration of ``table``'s branch. Pure: reads metadata, writes nothing.

    Cost grows with what expires, not with the table's history:

    - data files come only from the *delta* lists of ``(begin, end]`` (plus the live sets of
      the tags that precede them and of other branches' roots, which is what protects files);
      nothing walks the retained snapshots;
    - the manifests of the expiring snapshots' *base* lists must still be looked at (a writer
      that merges manifests writes files that appear in base lists only), but those lists
      repeat each other block for block, and ``Reachability`` decodes and visits each distinct
      Avro block once (``MetaUnion``) instead of once per snapshot: a pypaimon-written table
      (no manifest merging, ``base(s) = base(s-1) + delta(s-1)``) otherwise costs
      O(expiring x history) in list entries;
    - on object stores the manifests every step will need (deltas, tag and branch states,
      changelog lists) are fetched and decoded ahead by a small thread pool (locally decoding
      holds the GIL and threads measured no faster); the cyclic GC is paused while planning.

    Why this is still safe: the set of files planned is unchanged. A block is skipped only
    after its identical bytes were decoded and their files considered for an earlier snapshot
    (deletion is decided per path against the same ``keep_meta``); prefetching swallows every
    error so the sequential reads below meet and raise them exactly as before; the protection
    sets (other branches, tags of every branch, changelogs, the end snapshot) are built in
    full, as before, and any read error under them still aborts the plan."""
    with gc_paused():
        return _plan_expire(table, config, now_ms)


def _plan_expire(table: Table, config: ExpireConfig, now_ms: int) -> plans.Plan:
    rng = compute_range(table, config, now_ms)
    details: tuple[tuple[str, object], ...] = (
        ("branch", table.branch), ("earliest", rng.earliest), ("latest", rng.latest),
        ("end_exclusive", rng.end_exclusive), ("expired_snapshots", 0), ("stop_reason", rng.reason))
    snapshot_dir = table.dir(layout.SNAPSHOT_DIR)
    earliest_hint = join(snapshot_dir, hints.EARLIEST)
    if rng.earliest is None or rng.end_exclusive is None or rng.end_exclusive <= rng.earliest:
        hint_steps: tuple[plans.Step, ...] = ()
        current = table.read_hint(layout.SNAPSHOT_DIR, hints.EARLIEST)
        if rng.earliest is not None and current != rng.earliest:  # missing, or stale after a crash
            hint_steps = (plans.WriteStep(earliest_hint, hints.encode_hint(rng.earliest),
                                          "EARLIEST was missing" if current is None else
                                          f"EARLIEST named {current}, the earliest snapshot is {rng.earliest}"),)
        return plans.Plan("expire-snapshots", table.identifier, hint_steps, (f"nothing expires: {rng.reason}",), details)
    end = rng.end_exclusive
    expiring: list[Snapshot] = []
    missing: list[int] = []
    for sid in range(rng.earliest, end):
        try:
            expiring.append(table.snapshot(sid))
        except errors.SnapshotNotFoundError:
            missing.append(sid)  # a concurrent expiry removed it: tolerated (Paimon #4235)
    notes: list[str] = [f"expiring snapshots {rng.earliest}..{end - 1} (stop: {rng.reason})"]
    if missing:
        notes.append(f"snapshot files already gone (concurrent or earlier run): {missing[:10]}")
    if not expiring:
        return plans.Plan("expire-snapshots", table.identifier,
                          (plans.WriteStep(earliest_hint, hints.encode_hint(end), "advance EARLIEST"),),
                          tuple(notes), details)
    end_snapshot = table.snapshot(end)
    reach = Reachability(table)
    try:
        tag_roots, other_roots, changelog_roots = _roots(table)
        _prefetch(reach, table, config, expiring, end_snapshot, tag_roots, other_roots, changelog_roots)
        # Decoupled: the expiring snapshots live on as changelog-N (written by this plan), so
        # they protect what a changelog reads — for producer 'none' that is their delta files
        # (Java's "keep APPEND files" rule), otherwise their changelog files.
        changelog_like = [*changelog_roots, *(expiring if config.changelog_decoupled else [])]
        keep_data: set[DataKey] = reach.union_live(other_roots)
        keep_changelog: set[DataKey] = set()
        for root in [*tag_roots, *other_roots, end_snapshot]:
            keep_changelog.update((r.partition, r.bucket, r.file_name) for r in reach.changelog_refs(root))
        keep_meta = reach.union_meta([end_snapshot, *tag_roots, *other_roots])
        for log in changelog_like:
            log_data = reach.changelog_root_data(log)
            keep_data.update(log_data)
            keep_changelog.update(log_data)
            keep_meta.update(reach.changelog_root_meta(log))
        own_tags = sorted((t.snapshot for t in table.tags()), key=lambda s: s.id)
        tag_live: dict[int, set[DataKey]] = {}
    except FileNotFoundError as e:
        raise errors.IncompleteProtectionSetError(
            f"cannot read a protecting root while planning expiration: {e}",
            fix="a manifest of a retained snapshot/tag/branch is missing; repair it (nothing was deleted)") from e
    files: list[plans.PlannedFile] = []
    skipped: list[int] = []
    # 1. data files deleted in the deltas of (begin, end]
    for snap in [*expiring[1:], end_snapshot]:
        try:
            deletions = _delta_deletions(reach, snap)
        except FileNotFoundError:
            skipped.append(snap.id)  # an earlier run already removed this delta: its data went first
            continue
        previous_tag = max((t for t in own_tags if t.id < snap.id), key=lambda t: t.id, default=None)
        protected: set[DataKey] = set()
        if previous_tag is not None:
            try:
                if previous_tag.id not in tag_live:
                    tag_live[previous_tag.id] = set(reach.live_files(previous_tag))
            except FileNotFoundError as e:
                raise errors.IncompleteProtectionSetError(
                    f"cannot read tag at snapshot {previous_tag.id}: {e}", fix="repair the tag's manifests") from e
            protected = tag_live[previous_tag.id]
        for ref in deletions:
            key = (ref.partition, ref.bucket, ref.file_name)
            if key in protected or key in keep_data:
                continue
            reason = f"deleted in snapshot {snap.id}"
            for i, path in enumerate(reach.data_paths(ref)):
                files.append(plans.PlannedFile(path, plans.FileKind.DATA, ref.file_size if i == 0 else None, reason))
    if skipped:
        notes.append(f"deltas of snapshots {skipped[:10]} already cleaned by an earlier run")
    # 2. changelog files of [begin, end) (only when not decoupled)
    if not config.changelog_decoupled:
        for snap in expiring:
            try:
                refs = reach.changelog_refs(snap)
            except FileNotFoundError:
                continue
            for ref in refs:
                key = (ref.partition, ref.bucket, ref.file_name)
                if ref.kind == manifests.ADD and key not in keep_changelog:
                    for i, path in enumerate(reach.data_paths(ref)):
                        files.append(plans.PlannedFile(path, plans.FileKind.CHANGELOG_DATA,
                                                       ref.file_size if i == 0 else None,
                                                       f"changelog of snapshot {snap.id}"))
    # 3. manifests, index, statistics of [begin, end) not used by any root (each list block and
    #    index manifest shared by several expiring snapshots is looked at once)
    union = MetaUnion()
    for snap in expiring:
        try:
            metas = reach.meta_files(snap, include_changelog=not config.changelog_decoupled, tolerant=True,
                                     union=union)
        except FileNotFoundError:
            metas = set()  # partially cleaned by an earlier run: the rest is orphan-cleanup's
        for meta in metas:
            if meta.path in keep_meta:
                continue
            kind = {"manifest": plans.FileKind.MANIFEST, "index": plans.FileKind.INDEX}.get(
                meta.kind, plans.FileKind.STATISTICS)
            files.append(plans.PlannedFile(meta.path, kind, meta.size, "only expired snapshots used it"))
    data_kinds = (plans.FileKind.DATA, plans.FileKind.CHANGELOG_DATA)
    steps: list[plans.Step] = list(plans.Plan.ordered_deletes(f for f in files if f.kind in data_kinds))
    if config.clean_empty_directories:  # after data, before manifests (Java's order)
        dirs = sorted({f.path.rsplit("/", 1)[0] for f in files if f.kind in data_kinds})
        if dirs:
            steps.append(plans.RemoveEmptyDirsStep(tuple(dirs), depth=len(table.schema().partition_keys)))
    steps.extend(plans.Plan.ordered_deletes(f for f in files if f.kind not in data_kinds))
    # 4. decoupled: keep changelog-N copies before the snapshot files go
    if config.changelog_decoupled:
        for snap in expiring:
            steps.append(plans.WriteStep(table.changelog_path(snap.id), table.file_io.read_text(table.snapshot_path(snap.id)),
                                         "decoupled changelog lifecycle", create_only=True))
        steps.append(plans.WriteStep(join(table.dir(layout.CHANGELOG_DIR), hints.LATEST),
                                     hints.encode_hint(expiring[-1].id), "changelog LATEST"))
    # 5. snapshot files, oldest first, then EARLIEST
    steps.append(plans.DeleteStep(plans.FileKind.SNAPSHOT, tuple(
        plans.PlannedFile(table.snapshot_path(s.id), plans.FileKind.SNAPSHOT, s.file_size, "expired")
        for s in expiring)))
    steps.append(plans.WriteStep(earliest_hint, hints.encode_hint(end), "new earliest snapshot"))
    details = tuple((k, len(expiring) if k == "expired_snapshots" else v) for k, v in details)
    return plans.Plan("expire-snapshots", table.identifier, tuple(steps), tuple(notes), details)


@dataclass(frozen=True)
class ChangelogConfig:
    retain_min: int
    retain_max: int
    time_retained: timedelta
    expire_limit: int = 50
    changelog_producer: str = "none"


def changelog_config_from_options(options: Mapping[str, str]) -> ChangelogConfig:
    """``changelog.*`` options, falling back to the ``snapshot.*`` values as Paimon does."""
    snap = config_from_options(options)
    config = ChangelogConfig(
        retain_min=_int(options, "changelog.num-retained.min", snap.retain_min),
        retain_max=_int(options, "changelog.num-retained.max", snap.retain_max),
        time_retained=durations.parse_duration(options["changelog.time-retained"], field="changelog.time-retained")
        if "changelog.time-retained" in options else snap.time_retained,
        expire_limit=snap.expire_limit,
        changelog_producer=snap.changelog_producer,
    )
    if config.retain_min < safety.MIN_RETAIN_MIN or config.retain_max < config.retain_min:
        raise errors.UnsafePolicyError("changelog.num-retained.min must be >= 1 and <= changelog.num-retained.max",
                                       fix="fix the changelog.num-retained.* options")
    return config


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


def plan_expire_changelog(table: Table, config: ChangelogConfig, now_ms: int) -> plans.Plan:
    """Expire long-lived ``changelog-N`` files (decoupled lifecycle, Java's ExpireChangelogImpl):
    changelog files they added, delta files they deleted (producer ``none``), manifests no
    retained root uses, then the ``changelog-N`` files and the changelog EARLIEST hint. Tags of
    every branch, other branches, the earliest snapshot and the end changelog protect files."""
    ids = table.changelog_ids()
    latest = table.latest_snapshot_id()
    if not ids or latest is None:
        return plans.Plan("expire-changelog", table.identifier, (), ("no long-lived changelogs",))
    _expiring_ids, end = changelog_range(table, config, now_ms)
    expiring = [table.changelog(i) for i in ids if i < end]
    if not expiring:
        current = table.read_hint(layout.CHANGELOG_DIR, hints.EARLIEST)
        fix = () if current is None or current in ids else (plans.WriteStep(  # stale after a crash
            join(table.dir(layout.CHANGELOG_DIR), hints.EARLIEST), hints.encode_hint(ids[0]), "changelog EARLIEST"),)
        return plans.Plan("expire-changelog", table.identifier, fix, ("nothing expires",))
    reach = Reachability(table)
    try:
        tag_roots, other_roots, _logs = _roots(table)
        earliest_snapshot = table.snapshot(table.earliest_snapshot_id() or latest)
        kept_logs = [table.changelog(i) for i in ids if i >= end]
        keep_data: set[DataKey] = reach.union_live([*other_roots, *tag_roots, earliest_snapshot])
        keep_meta = reach.union_meta([earliest_snapshot, *tag_roots, *other_roots, *table.snapshots()])
        for log in kept_logs:
            keep_data.update(reach.changelog_root_data(log))
            keep_meta.update(reach.changelog_root_meta(log))
    except (FileNotFoundError, errors.SnapshotNotFoundError) as e:
        raise errors.IncompleteProtectionSetError(f"cannot read a protecting root: {e}",
                                                  fix="repair the table; nothing was deleted") from e
    files: list[plans.PlannedFile] = []
    for log in expiring:
        try:
            if log.changelog_manifest_list:
                refs = [r for r in reach.changelog_refs(log) if r.kind == manifests.ADD]
                kind = plans.FileKind.CHANGELOG_DATA
            else:
                refs = _delta_deletions(reach, log)
                kind = plans.FileKind.DATA
        except FileNotFoundError:
            continue
        for ref in refs:
            if (ref.partition, ref.bucket, ref.file_name) in keep_data:
                continue
            for path in reach.data_paths(ref):
                files.append(plans.PlannedFile(path, kind, None, f"changelog {log.id} expired"))
        try:
            metas = reach.meta_files(log, tolerant=True)
        except FileNotFoundError:
            metas = set()
        for meta in metas:
            if meta.path not in keep_meta:
                mkind = {"manifest": plans.FileKind.MANIFEST, "index": plans.FileKind.INDEX}.get(
                    meta.kind, plans.FileKind.STATISTICS)
                files.append(plans.PlannedFile(meta.path, mkind, meta.size, "only expired changelogs used it"))
    steps: list[plans.Step] = list(plans.Plan.ordered_deletes(files))
    steps.append(plans.DeleteStep(plans.FileKind.CHANGELOG_META, tuple(
        plans.PlannedFile(table.changelog_path(c.id), plans.FileKind.CHANGELOG_META, None, "expired")
        for c in expiring)))
    steps.append(plans.WriteStep(join(table.dir(layout.CHANGELOG_DIR), hints.EARLIEST), hints.encode_hint(end),
                                 "new earliest changelog"))
    return plans.Plan("expire-changelog", table.identifier, tuple(steps),
                      (f"expiring changelogs {expiring[0].id}..{expiring[-1].id}",),
                      (("expired_changelogs", len(expiring)),))
