"""Decoding an expiration's manifests on two cores: a forked helper decodes a share of the
manifests the plan will read while this process decodes the rest, and hands its decoded entries
back to warm the caller's cache (issue 13: expiration on local files is mostly manifest decoding,
which holds the GIL, so threads cannot share it).

Purely an optimisation, like the thread-pool prefetch on object stores: the helper uses the very
reader the sequential path uses (:func:`~tablekeeper.core.paimon.manifests.read_manifest_refs`),
so a cached result equals a fresh read (Paimon never rewrites a manifest under the same name);
a manifest the helper could not read (missing, damaged) is simply not handed back, and any
failure of the helper (an exception, a signal, a timeout, a result that does not parse) is
ignored: the planner's own sequential reads then meet every file not cached, and raise exactly
what they always raised. Nothing here decides what is kept or deleted.

Only for local files on Linux (fork is well defined and cheap there, see
:mod:`~tablekeeper.core.reclaim.reach.child_process`) and only for plans of at least
:data:`MIN_MANIFESTS_TO_FORK` manifests, where the fork pays for itself.
"""

from __future__ import annotations

import functools
import marshal
import os
import time
from collections.abc import Callable, Sequence
from typing import Final

from tablekeeper.core.paimon import manifests
from tablekeeper.core.paimon.manifests import gc_paused
from tablekeeper.core.reclaim.reach import child_process
from tablekeeper.core.storage import FileIO, RequestKind, join

__all__ = ["MIN_MANIFESTS_TO_FORK", "usable", "decode_shared"]

#: Below this many manifests one process decodes them faster than a fork is set up.
MIN_MANIFESTS_TO_FORK: Final = 64
#: Manifests a process claims at a time (the faster process simply claims more).
CLAIM_BATCH: Final = 8
#: How long the caller waits for the helper's result once its own share is done, at least; the
#: wait is also at least twice what the caller's own share took (the helper then decodes at most
#: one batch). On a timeout (say, a lock another thread held at the fork) it is killed and the
#: caller's sequential reads decode what it did not hand back: slower, never different.
RESULT_TIMEOUT_S: Final = 10.0


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def usable(file_io: FileIO) -> bool:
    """Whether :func:`decode_shared` can fork here: local files, Linux, two or more CPUs."""
    return file_io.is_local and child_process.available() and _cpus() > 1


def decode_shared(file_io: FileIO, manifest_dir: str, names: Sequence[str],
                  decode_here: Callable[[str], object],
                  store: Callable[[str, list[manifests.FileRef]], None],
                  meanwhile: Callable[[], None] | None = None) -> int:
    """Decode the planning entries of the manifests ``names`` (in ``manifest_dir``) in this
    process and one forked helper. ``decode_here(name)`` decodes one manifest into the caller's
    cache (its errors are swallowed: the sequential reads meet them); ``store(name, refs)``
    caches what the helper decoded; ``meanwhile()``, if given, runs in this process once the
    helper is decoding, before this process claims manifests (other start-up work of the plan
    that then overlaps the helper's decoding; not run when no helper is used; it must swallow
    its own errors). Returns how
    many manifests the helper handed back (0 when it was not used or failed).
    """
    if len(names) < MIN_MANIFESTS_TO_FORK or not usable(file_io):
        return 0
    claims = child_process.SharedClaims()
    try:
        helper = child_process.ForkedCall(lambda _send: _helper(file_io, manifest_dir, names, claims))
    except OSError:
        return 0  # no fork possible (limits): the sequential path decodes everything
    started = time.monotonic()
    try:
        if meanwhile is not None:
            meanwhile()
        while batch := claims.claim(len(names), CLAIM_BATCH):
            for i in batch:
                try:
                    decode_here(names[i])
                except Exception:  # noqa: BLE001 - the sequential read meets and raises it
                    pass
        try:
            payload = helper.result(timeout=max(RESULT_TIMEOUT_S, 2 * (time.monotonic() - started)))
            rows = marshal.loads(payload)
        except (child_process.ForkedCallError, ValueError, EOFError, TypeError):
            return 0
    finally:
        helper.cancel()
    handed, make = 0, functools.partial(tuple.__new__, manifests.FileRef)  # FileRef._make without its checks
    with gc_paused():
        for i, refs in rows:
            store(names[i], list(map(make, refs)))
            handed += 1
    for _ in range(handed):  # the helper's reads count as this command's requests
        file_io._note(RequestKind.GET)
    return handed


def _helper(file_io: FileIO, manifest_dir: str, names: Sequence[str],
            claims: child_process.SharedClaims) -> bytes:
    """In the forked helper: claim and decode manifests until none is left; return the
    decoded ones as marshalled ``(index, [ref tuple, ...])`` pairs (plain tuples of ints,
    bytes, strings and None, which marshal round-trips exactly). Equal partition bytes are
    handed back as one object (marshal then writes each once: a smaller payload, and the
    caller hashes each partition once)."""
    out: list[tuple[int, list[tuple[object, ...]]]] = []
    partitions: dict[bytes, bytes] = {}
    canonical = partitions.setdefault
    while batch := claims.claim(len(names), CLAIM_BATCH):
        for i in batch:
            try:
                refs = manifests.read_manifest_refs(file_io, join(manifest_dir, names[i]))
            except Exception:  # noqa: BLE001 - not handed back: the caller's sequential read decides
                continue
            out.append((i, [(r[0], canonical(r[1], r[1]), *r[2:]) for r in refs]))
    return marshal.dumps(out)
