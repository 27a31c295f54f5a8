"""Fork points, derived from storage on every call (Paimon persists no fork relation).

A branch created from tag T holds a byte copy of ``tag-T`` and of ``snapshot-<id>``. Its fork
snapshot is its lowest snapshot (from its tags or snapshots) whose identity — snapshot id plus
base/delta manifest list names — also exists in main as a snapshot or a tag. Identity by
content, not by name, so detection survives ``rename_tag`` in main (paimon-semantics.md §9.1).
"""

from __future__ import annotations

from dataclasses import dataclass

from tablekeeper.core.paimon import layout
from tablekeeper.core.paimon.snapshot import Snapshot
from tablekeeper.core.paimon.table import Table

__all__ = ["ForkPoint", "fork_point", "fork_points", "fork_tags_of"]

Identity = tuple[int, str | None, str | None]


@dataclass(frozen=True)
class ForkPoint:
    branch: str
    snapshot_id: int | None
    identity: Identity | None
    from_tag: str | None


def _main_identities(main: Table) -> set[Identity]:
    ids: set[Identity] = {t.snapshot.identity() for t in main.tags()}
    for sid in main.snapshot_ids():
        try:
            ids.add(main.snapshot(sid).identity())
        except Exception:  # vanished meanwhile
            continue
    return ids


def fork_point(branch: Table, main_identities: set[Identity] | None = None) -> ForkPoint:
    """The fork point of ``branch`` (snapshot_id None for a branch created empty)."""
    main = branch.on_branch(layout.MAIN)
    known = main_identities if main_identities is not None else _main_identities(main)
    candidates: list[tuple[int, Snapshot, str | None]] = []
    for tag in branch.tags():
        candidates.append((tag.snapshot_id, tag.snapshot, tag.name))
    earliest = branch.earliest_snapshot_id()
    if earliest is not None:
        try:
            candidates.append((earliest, branch.snapshot(earliest), None))
        except Exception:
            pass
    for sid, snap, _ in sorted(candidates, key=lambda c: (c[0], c[2] is None)):
        if snap.identity() in known:
            tag_name = next((n for i, s, n in candidates if n and s.identity() == snap.identity()), None)
            return ForkPoint(branch.branch, sid, snap.identity(), tag_name)
    return ForkPoint(branch.branch, None, None, None)


def fork_points(table: Table) -> list[ForkPoint]:
    main = table.on_branch(layout.MAIN)
    known = _main_identities(main)
    return [fork_point(main.on_branch(b), known) for b in main.branch_names()]


def fork_tags_of(table: Table) -> dict[str, list[str]]:
    """Tags of ``table``'s branch that some other branch forked from: {tag name: [branches]}.

    For main: main tags whose snapshot identity is a branch's fork identity. For a branch X:
    X's tags are fork points of branches whose fork identity equals them (branches of
    branches share the same storage)."""
    out: dict[str, list[str]] = {}
    forks = [f for f in fork_points(table) if f.identity is not None and f.branch != table.branch]
    for tag in table.tags():
        users = [f.branch for f in forks if f.identity == tag.snapshot.identity()]
        if users:
            out[tag.name] = sorted(users)
    return out
