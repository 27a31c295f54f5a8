"""Fork points, derived from storage on every call (Paimon persists no fork relation).

A branch created from tag T holds a byte copy of ``tag-T`` and of ``snapshot-<id>``. Its fork
snapshot is its lowest snapshot (from its tags or snapshots) whose identity — snapshot id plus
base/delta manifest list names — also exists in main as a snapshot or a tag. Identity by
content, not by name, so detection survives ``rename_tag`` in main (paimon-semantics.md §9.1).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tablekeeper.core import paimon
from tablekeeper.core.paimon import Snapshot, Table, Tag

__all__ = ["ForkPoint", "fork_point", "fork_points", "fork_tags_of", "identities_of", "main_identities", "fork_users"]

Identity = tuple[int, str | None, str | None]


@dataclass(frozen=True)
class ForkPoint:
    branch: str
    snapshot_id: int | None
    identity: Identity | None
    from_tag: str | None


def identities_of(tags: Iterable[Tag], snapshots: Iterable[Snapshot]) -> set[Identity]:
    """Identities of main's ``tags`` and ``snapshots``: what a branch's fork point is matched
    against (:func:`main_identities` reads them; a caller that has read them already passes them)."""
    return {t.snapshot.identity() for t in tags} | {s.identity() for s in snapshots}


def main_identities(main: Table) -> set[Identity]:
    """Identities of main's tags and snapshots (what a branch's fork point is matched against)."""
    snapshots = []
    for sid in main.snapshot_ids():
        try:
            snapshots.append(main.snapshot(sid))
        except Exception:  # vanished meanwhile
            continue
    return identities_of(main.tags(), snapshots)


def fork_point(branch: Table, known_identities: set[Identity] | None = None) -> ForkPoint:
    """The fork point of ``branch`` (snapshot_id None for a branch created empty);
    ``known_identities``: :func:`main_identities`, when the caller has them already."""
    main = branch.on_branch(paimon.MAIN)
    known = known_identities if known_identities is not None else main_identities(main)
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
    main = table.on_branch(paimon.MAIN)
    known = main_identities(main)
    return [fork_point(main.on_branch(b), known) for b in main.branch_names()]


def fork_users(branch: str, identity: Identity, points: Iterable[ForkPoint], main_ids: set[Identity]) -> list[str]:
    """Branches forked from a tag of ``branch`` whose snapshot identity is ``identity``.

    On main: every branch whose fork identity equals it. On another branch X: a tag X holds is
    usually the byte copy of the main tag X was created from; a sibling created from the same
    main tag forked from *main's* tag, not from X's copy (main's tag protects it, and dropping X
    or deleting its copy never touches the sibling's files). So X's tags protect only forks main
    does not know (branches created from X itself)."""
    if branch != paimon.MAIN and identity in main_ids:
        return []
    return sorted(f.branch for f in points if f.identity == identity and f.branch != branch)


def fork_tags_of(table: Table) -> dict[str, list[str]]:
    """Tags of ``table``'s branch that some other branch forked from: {tag name: [branches]}
    (see :func:`fork_users`)."""
    main = table.on_branch(paimon.MAIN)
    main_ids = main_identities(main)
    points = [f for f in fork_points(table) if f.identity is not None]
    out: dict[str, list[str]] = {}
    for tag in table.tags():
        users = fork_users(table.branch, tag.snapshot.identity(), points, main_ids)
        if users:
            out[tag.name] = users
    return out
