"""Writing EARLIEST/LATEST hints so they stay monotonic and true, whoever planned the write.

A plan computes a hint value when it is made; by the time the executor reaches the hint step,
another maintainer (a second tablekeeper, Paimon's own ``expire_snapshots``) may have moved the
hint further, or removed the snapshot the value names. Writing the planned value blindly then
moves EARLIEST backwards, or leaves it naming a deleted snapshot (paimon-semantics.md §1.2:
readers trust EARLIEST only if that snapshot exists, so a stale hint costs every reader a
listing, and pypaimon without a usable hint probes ids 1..301 and may fail).

So every hint write goes through :func:`write_hint`, called by the executor for every
``WriteStep`` that targets a ``snapshot/`` or ``changelog/`` hint (core's planners and the
Spark job alike, see ``core/plans/execution.py``). At write time it re-reads the current hint and the
directory listing:

- EARLIEST = the smallest existing id >= max(planned, current hint): never smaller than what is
  there (monotonic), always naming a file that exists at write time (true);
- LATEST is never moved below the current hint (Java trusts LATEST only when LATEST+1 is absent,
  so a small value would merely cost readers a listing; a larger one could hide snapshots);
- after writing, the hint and the named file are read again; if a concurrent change invalidated
  the value (the snapshot was expired meanwhile, or another process wrote a smaller value),
  the write is redone, a bounded number of times.

Storage offers no compare-and-swap for an overwrite, so a process that does not take the lease
(core/safety/concurrency/lease.py) and writes between our re-read and our write can still win; the verify pass
catches the common case. Tablekeeper processes hold the table lease while they write hints."""

from __future__ import annotations

from dataclasses import dataclass

from tablekeeper.core import paimon
from tablekeeper.core.storage import FileIO, basename, join, parent

__all__ = ["HintTarget", "hint_target", "write_hint", "VERIFY_ATTEMPTS"]

#: How often a hint write is redone when a concurrent change invalidated it.
VERIFY_ATTEMPTS = 3

_PREFIXES = {paimon.SNAPSHOT_DIR: paimon.SNAPSHOT_PREFIX, paimon.CHANGELOG_DIR: paimon.CHANGELOG_PREFIX}


@dataclass(frozen=True)
class HintTarget:
    """A hint file and what it indexes: ``<dir>/EARLIEST`` over the ``snapshot-N`` files."""

    path: str
    directory: str
    name: str  # EARLIEST | LATEST
    prefix: str  # snapshot- | changelog-


def hint_target(path: str) -> HintTarget | None:
    """The hint ``path`` is, or None for any other file (changelog-N copies, tags ...)."""
    name = basename(path)
    if name not in (paimon.EARLIEST, paimon.LATEST):
        return None
    directory = parent(path)
    prefix = _PREFIXES.get(basename(directory))
    if prefix is None:
        return None
    return HintTarget(path, directory, name, prefix)


def _read(io: FileIO, path: str) -> int | None:
    try:
        return paimon.decode_hint(io.read_bytes(path))
    except FileNotFoundError:
        return None


def _ids(io: FileIO, target: HintTarget) -> list[int]:
    out = []
    for status in io.list_dir(target.directory):
        if status.is_dir:
            continue
        n = paimon.parse_versioned_name(status.name, target.prefix)
        if n is not None:
            out.append(n)
    return sorted(out)


def _value(io: FileIO, target: HintTarget, planned: int) -> int | None:
    """The value to write now, or None to leave the hint alone."""
    current = _read(io, target.path)
    if target.name == paimon.LATEST:
        return None if current is not None and current >= planned else planned
    ids = _ids(io, target)
    if current is not None and ids and current > ids[-1]:
        current = None  # names no file and nothing above it exists: garbage, not progress
    floor = planned if current is None else max(planned, current)
    value = next((i for i in ids if i >= floor), None)
    if value is None:
        return None  # nothing at or above the floor exists: no value would be true
    return None if value == current else value


def write_hint(io: FileIO, path: str, planned: int) -> int | None:
    """Write hint ``path`` (see the module docstring); returns the value written last, or None
    when the hint was left as it was. ``path`` must be a hint (:func:`hint_target`)."""
    target = hint_target(path)
    if target is None:
        raise ValueError(f"{path} is not a snapshot/changelog hint")
    written: int | None = None
    for _ in range(VERIFY_ATTEMPTS):
        value = _value(io, target, planned)
        if value is None:
            return written
        io.overwrite(target.path, paimon.encode_hint(value))
        written = value
        if target.name == paimon.LATEST:
            return written
        now = _read(io, target.path)
        if now == value and io.exists(join(target.directory, f"{target.prefix}{value}")):
            return written
        planned = max(planned, value)
    return written
