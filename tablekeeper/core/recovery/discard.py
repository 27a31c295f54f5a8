"""Rollback with ``--discard-later``: Paimon's ``rollback_to``, through expiration's protection.

Paimon's ``rollback_to`` deletes every snapshot after the target (their snapshot files first,
then the data files their deltas and changelogs added, then their manifests), every tag after
the target with the files only it reached, the long-lived changelogs after it, and moves LATEST
back. Here the same roots are discarded, but the files deleted are those the discarded roots
reach and **no remaining root** reaches: every snapshot, tag and kept changelog of every branch
protects its files (fail closed on a root that cannot be read), and the rollback is refused when
a branch was created from a discarded snapshot or tag, or a consumer already read past the
target.

Phases (as expiration and tag deletion): **intent** (the discarded files' bytes saved under
``.tablekeeper/pending/``), **unpublish** (snapshot files from the latest down, changelog and tag
files, then LATEST = target), **verify** (the cleanup planned from the saved roots against the
roots as they are *now*, so a commit or tag made meanwhile protects its files), **delete** (data,
changelog, index, statistics, manifests in Paimon's order), then the intent is removed. A rerun
after a crash finds the intent and continues from it: the same end state."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from tablekeeper.core import errors, paimon, plans, refs
from tablekeeper.core.paimon import Consumer, Snapshot, Table, Tag, manifests
from tablekeeper.core.reclaim.reach import (
    ListRole,
    RootKind,
    RootName,
    copied_lists,
    dangling_roles,
    missing_kept_file,
    root_kind,
)
from tablekeeper.core.recovery import catalog_writes, check
from tablekeeper.core.recovery.rollback import RollbackFacts, RollbackRequest, read_facts, resolve_target
from tablekeeper.core.safety import concurrency
from tablekeeper.core.storage import join

__all__ = ["DiscardDecision", "DiscardResult", "decide_discard", "discard_later", "intent_path"]

Runner = Callable[[plans.Plan], plans.ExecutionResult]


@dataclass(frozen=True)
class DiscardDecision:
    """What a ``rollback_to`` to ``target_id`` discards on one branch."""

    target_id: int
    target_source: str
    previous_latest_id: int
    snapshot_ids: tuple[int, ...]
    tag_names: tuple[str, ...]
    changelog_ids: tuple[int, ...]


@dataclass(frozen=True)
class DiscardResult:
    decision: DiscardDecision
    #: The files deleted (or with ``dry_run``, that would be), unpublished metadata included.
    plan: plans.Plan
    result: plans.ExecutionResult | None
    notes: tuple[str, ...] = ()


def intent_path(table: Table) -> str:
    return join(table.root, concurrency.LEASE_DIR, "pending", f"rollback-discard--{table.branch}")


def decide_discard(request: RollbackRequest, facts: RollbackFacts, *, changelog_ids: Iterable[int],
                   consumers: Iterable[Consumer], forks: Iterable[refs.ForkPoint]) -> DiscardDecision:
    """Pure: what is discarded, or why the rollback is refused.

    Raises:
        InvalidInputError: no latest snapshot, a bad target (see ``rollback.resolve_target``), a
            target that is a tag of an expired snapshot, ``keep_as_tag``, a branch other than main.
        ProtectedObjectError: a branch forked from a discarded snapshot or tag, or a consumer
            past the target.
    """
    latest = facts.latest
    if latest is None:
        raise errors.SnapshotNotFoundError(f"branch {facts.branch!r} of {facts.identifier} has no snapshot",
                                           fix="there is nothing to roll back")
    if facts.branch != paimon.MAIN:
        raise errors.InvalidInputError("--discard-later rolls back main only",
                                       fix="roll the branch back without --discard-later (nothing is deleted)")
    if request.keep_as_tag is not None:
        raise errors.InvalidInputError("--keep-as-tag cannot be combined with --discard-later (the tag would be "
                                       "discarded with the snapshots after the target)",
                                       fix="drop one of the two flags")
    target, source = resolve_target(request, facts, latest)
    if target.id not in facts.snapshots:
        raise errors.InvalidInputError(
            f"snapshot {target.id} has expired (only a tag keeps it): --discard-later needs an existing snapshot",
            fix="roll back to it without --discard-later, or pick a snapshot that still exists")
    snapshot_ids = tuple(sorted((s for s in facts.snapshots if s > target.id), reverse=True))
    discarded_tags = {n: s for n, s in facts.tags.items() if s.id > target.id}
    identities = {facts.snapshots[s].identity() for s in snapshot_ids} | {s.identity() for s in discarded_tags.values()}
    forked = sorted(f.branch for f in forks if f.identity in identities or (f.from_tag in discarded_tags))
    if forked:
        raise errors.ProtectedObjectError(
            f"cannot discard the history after snapshot {target.id}: branch(es) {', '.join(forked)} were created "
            "from a snapshot or tag after it",
            fix="drop or fast-forward those branches first, or roll back without --discard-later (nothing is deleted)")
    ahead = sorted((c for c in consumers if c.next_snapshot > target.id + 1), key=lambda c: c.consumer_id)
    if ahead:
        names = ", ".join(f"{c.consumer_id} (next snapshot {c.next_snapshot})" for c in ahead)
        raise errors.ProtectedObjectError(
            f"cannot discard the history after snapshot {target.id}: consumer(s) {names} already read past it",
            fix="stop those jobs and clear or reset their consumers ('tablekeeper consumer clear'), or roll back "
                "without --discard-later")
    return DiscardDecision(target.id, source, latest.id, snapshot_ids, tuple(sorted(discarded_tags)),
                           tuple(sorted((c for c in changelog_ids if c > target.id), reverse=True)))


@dataclass(frozen=True)
class _Intent:
    decision: DiscardDecision
    snapshots: Mapping[int, str]
    tags: Mapping[str, str]
    changelogs: Mapping[int, str]

    def to_json(self) -> str:
        d = self.decision
        return json.dumps({"target": d.target_id, "source": d.target_source, "previous": d.previous_latest_id,
                           "snapshots": {str(k): v for k, v in self.snapshots.items()}, "tags": dict(self.tags),
                           "changelogs": {str(k): v for k, v in self.changelogs.items()}})

    @classmethod
    def from_json(cls, text: str) -> _Intent:
        raw = json.loads(text)
        snaps = {int(k): v for k, v in raw["snapshots"].items()}
        logs = {int(k): v for k, v in raw["changelogs"].items()}
        decision = DiscardDecision(int(raw["target"]), str(raw["source"]), int(raw["previous"]),
                                   tuple(sorted(snaps, reverse=True)), tuple(sorted(raw["tags"])),
                                   tuple(sorted(logs, reverse=True)))
        return cls(decision, snaps, dict(raw["tags"]), logs)


def _read(io_read: Callable[[str], bytes], path: str) -> str | None:
    try:
        return io_read(path).decode("utf-8")
    except FileNotFoundError:
        return None


def _intent_of(table: Table, decision: DiscardDecision) -> _Intent:
    read = table.file_io.read_bytes
    snaps = {s: t for s in decision.snapshot_ids if (t := _read(read, table.snapshot_path(s))) is not None}
    tags = {n: t for n in decision.tag_names if (t := _read(read, table.tag_path(n))) is not None}
    logs = {c: t for c in decision.changelog_ids if (t := _read(read, table.changelog_path(c))) is not None}
    return _Intent(decision, snaps, tags, logs)


def _discarded_roots(table: Table, intent: _Intent) -> list[tuple[RootName, Snapshot]]:
    b = table.branch
    out = [(RootName(root_kind("snapshot", b), b, str(s)),
            Snapshot.from_json(text, what=f"saved snapshot {s}")) for s, text in intent.snapshots.items()]
    out += [(RootName(root_kind("tag", b), b, n), Tag.from_json(n, text).snapshot)
            for n, text in intent.tags.items()]
    out += [(RootName(RootKind.CHANGELOG, b, str(c)),
             Snapshot.from_json(text, what=f"saved changelog {c}")) for c, text in intent.changelogs.items()]
    return out


def _cleanup(table: Table, intent: _Intent, *, exclude: set[RootName]) -> tuple[plans.Plan, list[str]]:
    """The files only the discarded roots reach, against every other root as it is now."""
    from tablekeeper.core.reclaim.reach import MissingFile, Reachability

    reach = Reachability(table)
    producer = reach.changelog_producer()
    discarded = _discarded_roots(table, intent)
    names = {n for n, _ in discarded} | exclude
    kept_roots = [(n, s) for n, s in check.retained_views(table) if n not in names]
    copied = copied_lists((n, s.changelog_manifest_list) for n, s in [*kept_roots, *discarded])
    ignored: list[str] = []
    keep_data: set[tuple[bytes, int, str]] = set()
    keep_meta: set[str] = set()
    for root, snap in kept_roots:
        dangling = dangling_roles(root.kind, snap, producer=producer, copied=copied)

        def told(_role: ListRole, file: str, _via: str | None, root: RootName = root) -> None:
            ignored.append(f"{root}: {file}")

        def refs(name: str | None, role: ListRole, dangling: frozenset[ListRole] = dangling,
                 told: Callable[[ListRole, str, str | None], None] = told) -> list[manifests.FileRef]:
            return reach.refs_of_list(name, role, missing=told if role in dangling else None)

        try:
            if root.kind == RootKind.CHANGELOG:
                keep_data |= reach.changelog_root_data(snap, dangling=dangling, missing=told)
                keep_meta |= reach.changelog_root_meta(snap, dangling=dangling, missing=told)
                continue
            live = manifests.merge_live(refs(snap.base_manifest_list, ListRole.BASE)
                                        + refs(snap.delta_manifest_list, ListRole.DELTA))
            keep_data |= {(r.partition, r.bucket, r.file_name) for r in live}
            keep_data |= {(r.partition, r.bucket, r.file_name) for r in refs(snap.changelog_manifest_list,
                                                                          ListRole.CHANGELOG) if r.kind == manifests.ADD}
            keep_meta |= {m.path for m in reach.meta_files(snap, dangling=dangling, missing=told)}
        except MissingFile as e:
            raise missing_kept_file(root, *e.described(), operation="rolling back") from e
        except errors.FormatError as e:
            raise errors.IncompleteProtectionSetError(
                f"rolling back: cannot read the metadata of {root}: {e}", fix="repair the damaged file") from e
    files: dict[str, plans.PlannedFile] = {}
    for root, snap in discarded:
        why = f"only the discarded {root} reached it"
        try:  # (a root whose manifests are gone: an interrupted run already passed its data stage)
            if root.kind == RootKind.CHANGELOG:
                role = reach.changelog_role(snap)
                name = snap.changelog_manifest_list if role == "changelog" else snap.delta_manifest_list
                data = [] if role == "empty" else [
                    r for r in reach.refs_of_list(name, ListRole.CHANGELOG if role == "changelog" else ListRole.DELTA)
                    if r.kind == manifests.ADD]
                kinds = plans.FileKind.CHANGELOG_DATA
            else:
                added = [r for r in reach.delta_refs(snap) if r.kind == manifests.ADD]  # Paimon's deleteAddedDataFiles
                data = [*reach.live_files(snap).values(), *added]
                kinds = plans.FileKind.DATA
                for ref in reach.changelog_refs(snap, missing=lambda *_a: None):
                    if ref.kind == manifests.ADD and (ref.partition, ref.bucket, ref.file_name) not in keep_data:
                        _add_data(files, reach.data_paths(ref), ref.file_size, plans.FileKind.CHANGELOG_DATA, why)
        except MissingFile:
            data = []
            kinds = plans.FileKind.DATA
        for ref in data:
            if (ref.partition, ref.bucket, ref.file_name) not in keep_data:
                _add_data(files, reach.data_paths(ref), ref.file_size, kinds, why)
        for meta in reach.meta_files(snap, tolerant=True):
            if meta.path not in keep_meta:
                kind = {"manifest": plans.FileKind.MANIFEST, "index": plans.FileKind.INDEX}.get(
                    meta.kind, plans.FileKind.STATISTICS)
                files.setdefault(meta.path, plans.PlannedFile(meta.path, kind, meta.size, why))
    d = intent.decision
    plan = plans.Plan("rollback", table.identifier, plans.Plan.ordered_deletes(files.values()) if files else (),
                      tuple(f"{len(ignored)} reference(s) gone by design were not counted" for _ in ignored[:1]),
                      (("target_snapshot_id", d.target_id), ("previous_snapshot_id", d.previous_latest_id),
                       ("discarded_snapshots", list(d.snapshot_ids)), ("discarded_tags", list(d.tag_names)),
                       ("discarded_changelogs", list(d.changelog_ids))))
    return plan, ignored


def _add_data(files: dict[str, plans.PlannedFile], paths: list[str], size: int | None, kind: plans.FileKind,
              why: str) -> None:
    for i, path in enumerate(paths):
        files.setdefault(path, plans.PlannedFile(path, kind, size if i == 0 else None, why))


def _unpublished_files(table: Table, intent: _Intent) -> list[plans.PlannedFile]:
    out = [plans.PlannedFile(table.snapshot_path(s), plans.FileKind.SNAPSHOT, len(t.encode()), "discarded snapshot")
           for s, t in intent.snapshots.items()]
    out += [plans.PlannedFile(table.changelog_path(c), plans.FileKind.CHANGELOG_META, len(t.encode()),
                              "discarded changelog") for c, t in intent.changelogs.items()]
    out += [plans.PlannedFile(table.tag_path(n), plans.FileKind.TAG, len(t.encode()), "discarded tag")
            for n, t in intent.tags.items()]
    return out


def _unpublish(table: Table, intent: _Intent) -> tuple[list[str], list[tuple[str, int]]]:
    """Remove the saved snapshot, changelog and tag files (latest first) that still hold the saved
    bytes (a file with other bytes was written after an earlier run unpublished it: kept).
    Returns the notes and (file kind, bytes) of every file removed."""
    notes = []
    removed: list[tuple[str, int]] = []
    read = table.file_io.read_bytes
    steps: list[tuple[str, str, str, str]] = []  # (path, saved bytes, kind, key)
    steps += [(table.snapshot_path(s), intent.snapshots[s], "snapshot", str(s))
              for s in sorted(intent.snapshots, reverse=True)]
    steps += [(table.changelog_path(c), intent.changelogs[c], "changelog", str(c))
              for c in sorted(intent.changelogs, reverse=True)]
    steps += [(table.tag_path(n), intent.tags[n], "tag", n) for n in sorted(intent.tags)]
    for path, saved, kind, key in steps:
        now = _read(read, path)
        if now is None:
            continue
        if now != saved:
            notes.append(f"{path} was written again after the rollback began: kept")
            continue
        removed.append(({"snapshot": plans.FileKind.SNAPSHOT, "changelog": plans.FileKind.CHANGELOG_META}.get(
            kind, plans.FileKind.TAG).value, len(saved.encode())))
        if kind == "snapshot":
            catalog_writes.unpublish_snapshot(table, int(key))
        elif kind == "changelog":
            catalog_writes.unpublish_changelog(table, int(key))
        else:
            catalog_writes.delete_tag_file(table, key)
    catalog_writes.reset_latest(table, intent.decision.target_id)
    return notes, removed


def discard_later(table: Table, request: RollbackRequest, *, dry_run: bool = False,
                  run: Runner | None = None) -> DiscardResult:
    """Roll ``table`` back to the target, discarding the later history (see the module docstring)."""
    runner = run or (lambda p: plans.execute(p, table.file_io))
    path = intent_path(table)
    saved = _read(table.file_io.read_bytes, path)
    notes: list[str] = []
    if saved is None:
        facts = read_facts(table)
        decision = decide_discard(request, facts, changelog_ids=table.changelog_ids(), consumers=table.consumers(),
                                  forks=refs.fork_points(table))
        intent = _intent_of(table, decision)
        if dry_run:
            plan, _ignored = _cleanup(table, intent, exclude=set())
            shown = plans.Plan(plan.operation, plan.table,
                               plans.Plan.ordered_deletes([*plan.files, *_unpublished_files(table, intent)]),
                               plan.notes, plan.details)
            return DiscardResult(decision, shown, None)
        table.file_io.write_new(path, intent.to_json())
        concurrency.point("rollback-discard:intent")
    else:
        intent = _Intent.from_json(saved)
        notes.append(f"resuming an interrupted rollback to snapshot {intent.decision.target_id}")
        if dry_run:
            plan, _ignored = _cleanup(table, intent, exclude=set())
            return DiscardResult(intent.decision, plan, None, tuple(notes))
    unpublish_notes, removed = _unpublish(table, intent)
    notes += unpublish_notes
    concurrency.point("rollback-discard:unpublished")
    with table.file_io.one_view():
        plan, _ignored = _cleanup(table, intent, exclude=set())
    concurrency.point("rollback-discard:verified")
    result = runner(plan)
    for kind, size in removed:  # (counted with the run's own deletions)
        result.deleted[kind] += 1
        result.deleted_bytes[kind] += size
    if not result.failed:
        table.file_io.delete_files([path], tell_missing=False)
    shown = plans.Plan(plan.operation, plan.table,
                       plans.Plan.ordered_deletes([*plan.files, *_unpublished_files(table, intent)]),
                       (*plan.notes, *notes), plan.details)
    return DiscardResult(intent.decision, shown, result, tuple(notes))
