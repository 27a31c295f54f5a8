"""Which listed candidate files the retained roots of a table reference: the used set of
orphan cleanup (paimon-semantics.md §5), restricted to names that were listed.

Every root (snapshot, tag, long-lived changelog of every branch) is walked: its manifest lists,
the manifests they name (ADD and DELETE entries, extra files, external paths), its index
manifest and index files, its statistics file. Immutable metadata is walked once, whichever root
reaches it first.

Manifests are not decoded but scanned for names (:mod:`tablekeeper.core.reclaim.orphans.name_scan`); a manifest
whose schema does not store names as plain strings, or any manifest when too many listed names
have an unusual shape, is decoded instead. The scan is CPU-bound and the regex engine holds the
GIL, so on local files it is shared with forked child processes (:mod:`tablekeeper.core.forked`).

Errors fail closed: a missing or damaged file under a root that still exists raises
IncompleteProtectionSetError naming the root and the file, unless Paimon lets that reference
dangle (:mod:`tablekeeper.core.reclaim.reach.guarantees`: a tag's changelog list, say): then the missing file
is ignored and reported (``References.ignored``). To attribute a manifest read error to its root, the fast path
(walk every root, then scan the manifests found) gives way to the careful one (scan each
manifest as its root reaches it) as soon as any manifest read fails."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from tablekeeper.core import errors
from tablekeeper.core.paimon import Snapshot, Table, manifests
from tablekeeper.core.reclaim import reach
from tablekeeper.core.reclaim.orphans import decision
from tablekeeper.core.reclaim.orphans.name_scan import NameScanner
from tablekeeper.core.reclaim.reach import (
    IgnoredReference,
    ListRole,
    Reachability,
    Reference,
    RootName,
    Rule,
    copied_lists,
    list_reference,
    missing_kept_file,
    reads_delta,
    rule_for,
)
from tablekeeper.core.storage import join

__all__ = ["Root", "References", "find_references", "default_processes"]

#: A root: (its branch, the path proving it still exists, its snapshot, what it is).
Root = tuple[Table, str, Snapshot, RootName]

#: Below this many listed data files, forking helpers costs more than it saves.
MIN_NAMES_TO_FORK: Final = 20_000
MAX_PROCESSES: Final = 4
#: A helper still running this long after the caller scanned its own share is given up on.
HELPER_TIMEOUT_FLOOR_S: Final = 30.0


def default_processes() -> int:
    """Processes for the manifest scan: the CPUs this process may use, at most 4."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_PROCESSES, cpus))


@dataclass(frozen=True)
class References:
    """What the roots of an orphan cleanup use, as names: the basis of the orphan verdicts."""

    #: listed metadata names (lists, manifests, index manifests and files, statistics) some root references
    used_meta: frozenset[str]
    #: listed data names no reachable manifest references
    unreferenced_data: frozenset[str]
    #: roots that vanished before they were walked (a concurrent expiration): roots created
    #: since may still need their files, so the caller walks the roots that appeared meanwhile
    vanished: tuple[str, ...] = ()
    #: missing files the roots name by a reference Paimon lets dangle (guarantees.RULES)
    ignored: tuple[IgnoredReference, ...] = ()


def copied_of(roots: list[Root]) -> frozenset[str]:
    """The changelog lists of copied snapshots among ``roots`` (``guarantees.copied_lists``)."""
    return copied_lists((r[3], r[2].changelog_manifest_list) for r in roots)


def find_references(main: Table, roots: list[Root], meta_names: set[str], data_names: list[str],
                    prefixes: tuple[str, ...], *, processes: int | None = None,
                    copied: frozenset[str] | None = None) -> References:
    """The used set of ``roots``, restricted to the listed names.

    ``prefixes`` are the file-name prefixes of data and changelog files (see NameScanner);
    ``processes`` caps the processes of the manifest scan (None: :func:`default_processes`);
    ``copied``: the changelog lists of copied snapshots (default: among ``roots``).

    Raises:
        IncompleteProtectionSetError: a file a still existing root references is missing or damaged.
    """
    processes = default_processes() if processes is None else processes
    joined = "\n".join(data_names).encode("utf-8")
    helpers: list[reach.ForkedCall] = []
    claims: reach.SharedClaims | None = None
    # (the forking helpers, with mmap and signal, are loaded only when a scan forks)
    if processes > 1 and len(data_names) >= MIN_NAMES_TO_FORK and main.file_io.is_local and reach.available():
        # forked before this process builds its scanner: the first helper walks the roots
        # meanwhile and hands its walk over; then every process claims manifests as it goes
        claims = reach.SharedClaims()
        helpers = [reach.ForkedCall(functools.partial(_helper_scan, main, roots, meta_names, data_names, prefixes,
                                                      joined, claims, copied=copied)) for _ in range(processes - 1)]
    try:
        walk = _Walk(main, meta_names, NameScanner(data_names, prefixes, joined), data_names, copied)
        manifest_paths = walk.adopt_walk(helpers[0]) if helpers else None
        if manifest_paths is None:
            manifest_paths = []
            walk.walk(roots, manifest_paths.append)
        try:
            if claims is None:  # object stores: the manifests fetched 16 at a time
                for path in main.file_io.read_ahead(manifest_paths):
                    walk.mark_manifest(path)
            else:
                walk.scan_shared(manifest_paths, helpers, claims)
        except (FileNotFoundError, errors.FormatError):
            walk.walk(roots, walk.mark_manifest)  # the careful path attributes the error to its root
    finally:
        for helper in helpers:
            helper.cancel()
    return References(frozenset(walk.used), frozenset(walk.scanner.missing() - walk.used),
                      tuple(dict.fromkeys(walk.vanished)), tuple(dict.fromkeys(walk.ignored)))


#: Manifests a process claims at a time.
CLAIM_BATCH: Final = 8


def _digest(paths: list[str]) -> bytes:
    import hashlib  # (with pickle: loaded only when helpers are forked, ~10 ms of start-up)

    return hashlib.blake2b("\n".join(paths).encode("utf-8"), digest_size=16).digest()


def _helper_scan(main: Table, roots: list[Root], meta_names: set[str], data_names: list[str],
                 prefixes: tuple[str, ...], joined: bytes, claims: reach.SharedClaims,
                 send: reach.Send, *, copied: frozenset[str] | None = None) -> bytes:
    """In a forked helper: walk the roots as the caller does and send that walk (the manifests
    found, the metadata names marked); build the same name scanner as the caller; once the
    caller published the digest of the walk it uses, and only if this walk is the same, claim
    and scan manifests until none is left. Report the digest, the index ranges claimed, what the
    scanner did not see and the manifests whose names are not plain strings (the caller decodes
    those)."""
    import pickle

    walk = _Walk(main, meta_names, None, [], copied)
    paths: list[str] = []
    walk.walk(roots, paths.append)
    send(pickle.dumps((paths, sorted(walk.used), walk.vanished, walk.ignored), protocol=pickle.HIGHEST_PROTOCOL))
    scanner = NameScanner(data_names, prefixes, joined)
    digest = _digest(paths)
    claimed: list[tuple[int, int]] = []
    deferred: list[str] = []
    if scanner.usable and claims.wait_published(HELPER_TIMEOUT_FLOOR_S) == digest:
        while batch := claims.claim(len(paths), CLAIM_BATCH):
            for path in paths[batch.start:batch.stop]:
                payload = manifests.read_manifest_payload(main.file_io, path)
                if payload is None:
                    deferred.append(path)
                    continue
                for block in payload:
                    scanner.feed(block)
            claimed.append((batch.start, batch.stop))
    return pickle.dumps((digest, claimed, scanner.export_state(), deferred), protocol=pickle.HIGHEST_PROTOCOL)


class _Walk:
    def __init__(self, main: Table, meta_names: set[str], scanner: NameScanner | None, data_names: list[str],
                 copied: frozenset[str] | None = None) -> None:
        self.main = main
        self.reach = Reachability(main)
        self.meta_names = meta_names
        self.data_names = data_names
        self._data_name_set: set[str] | None = None  # built only if some manifest must be decoded
        self.used: set[str] = set()  # metadata names, and data names marked by decoding entries
        self.vanished: list[str] = []  # roots gone before they were walked
        self.ignored: list[IgnoredReference] = []  # missing files by design
        self.copied = copied
        self._scanner = scanner

    @property
    def scanner(self) -> NameScanner:
        assert self._scanner is not None, "a helper's walk has no scanner"
        return self._scanner

    def adopt_walk(self, helper: reach.ForkedCall) -> list[str] | None:
        """The manifests of the helper's walk, its marks taken over; None if it sent none in
        time (this process then walks itself, and meets any error there)."""
        try:
            final, message = helper.receive(HELPER_TIMEOUT_FLOOR_S)
        except reach.ForkedCallError:
            return None
        if final:
            return None
        import pickle

        paths, used, vanished, ignored = pickle.loads(message)  # noqa: S301 - our own child's bytes
        self.used.update(used)
        self.vanished.extend(vanished)
        self.ignored.extend(ignored)
        return list(paths)

    def mark(self, name: str | None) -> None:
        if name and name in self.meta_names:
            self.used.add(name)

    def mark_manifest(self, path: str) -> None:
        """Mark what one manifest references: by a byte scan when the scanner can, else by
        decoding its entries."""
        payload = manifests.read_manifest_payload(self.main.file_io, path) if self.scanner.usable else None
        if payload is not None:
            for block in payload:
                self.scanner.feed(block)
            return
        if self._data_name_set is None:
            self._data_name_set = set(self.data_names)
        _mark_refs(manifests.read_manifest_refs(self.main.file_io, path), self._data_name_set, self.used)

    def walk(self, roots: list[Root], visit_manifest: Callable[[str], None]) -> None:
        """Mark the metadata of every root; hand each distinct manifest to ``visit_manifest``.

        A list, a list block, a manifest or an index manifest is recorded as done only after
        all of it was marked, so a read error part-way leaves it to be walked (and to fail)
        again for the next root. A missing file a root names by a reference Paimon lets dangle
        (``guarantees.rule_for``) is recorded in ``ignored`` instead, and not as done: a root
        that names the same file by a kept reference still fails on it."""
        reads, mark = self.reach, self.mark
        copied = self.copied if self.copied is not None else copied_of(roots)

        def rule_of(root: RootName, snap: Snapshot, reference: Reference) -> Rule:
            """(asked only for a missing file: the producer is read then, a request on a store)"""
            return rule_for(root.kind, reference, reads_delta=reads_delta(
                root.kind, snap, reads.changelog_producer()))
        done_lists: set[str] = set()
        done_blocks: set[int] = set()
        done_manifests: set[str] = set()
        done_index: set[str] = set()
        for branch, root_path, snap, root in roots:
            reading = ("its snapshot file", root_path)
            try:
                for role, list_name in ((ListRole.BASE, snap.base_manifest_list),
                                        (ListRole.DELTA, snap.delta_manifest_list),
                                        (ListRole.CHANGELOG, snap.changelog_manifest_list)):
                    if not list_name:
                        continue
                    reference = list_reference(role)
                    mark(list_name)
                    if list_name in done_lists:
                        continue
                    reading = (f"its {reference}", list_name)
                    try:
                        blocks = reads.manifest_list_names(list_name)
                    except FileNotFoundError:
                        rule = rule_of(root, snap, reference)
                        if not rule.dangles(copied=list_name in copied):
                            raise
                        self.ignored.append(IgnoredReference(root, reference, list_name, rule))
                        continue
                    whole = True
                    for block_id, block in blocks:
                        if block_id in done_blocks:
                            continue
                        block_whole = True
                        for manifest_name, extra_files in block:
                            mark(manifest_name)
                            for extra in extra_files:
                                mark(extra)
                            if manifest_name in done_manifests:
                                continue
                            reading = (f"a manifest of its {reference} {list_name}:", manifest_name)
                            try:
                                visit_manifest(join(reads.manifest_dir, manifest_name))
                            except FileNotFoundError:
                                rule = rule_of(root, snap, reference)
                                if not rule.dangles(copied=list_name in copied):
                                    raise
                                self.ignored.append(IgnoredReference(root, reference, manifest_name, rule,
                                                                                via_list=list_name))
                                block_whole = False
                                continue
                            done_manifests.add(manifest_name)
                        if block_whole:
                            done_blocks.add(block_id)
                        whole = whole and block_whole
                    if whole:
                        done_lists.add(list_name)
                if snap.index_manifest:
                    mark(snap.index_manifest)
                    if snap.index_manifest not in done_index:
                        reading = ("its index manifest", snap.index_manifest)
                        try:
                            entries = reads.index_entries(snap.index_manifest)
                        except FileNotFoundError:
                            rule = rule_of(root, snap, Reference.INDEX_MANIFEST)
                            if not rule.dangles():
                                raise
                            self.ignored.append(IgnoredReference(
                                root, Reference.INDEX_MANIFEST, snap.index_manifest, rule))
                            entries = None
                        for entry in entries or ():
                            mark(entry.file_name)
                        if entries is not None:
                            done_index.add(snap.index_manifest)
                mark(snap.statistics)
            except FileNotFoundError as e:
                if not decision.missing_reference_aborts(branch.file_io.exists(root_path)):
                    self.vanished.append(root_path)  # concurrent expiry: see References.vanished
                    continue
                raise missing_kept_file(root, reading[0], reading[1], operation="orphan cleanup") from e
            except errors.FormatError as e:
                raise errors.IncompleteProtectionSetError(
                    f"orphan cleanup: cannot read {reading[0]} {reading[1]} of {root}: {e}",
                    fix=f"restore or repair {reading[1]} (nothing was deleted)") from e

    def scan_shared(self, paths: list[str], helpers: list[reach.ForkedCall], claims: reach.SharedClaims) -> None:
        """Mark what the manifests at ``paths`` reference, claiming them batch by batch against
        the helpers; then merge what each helper's scanner did not see. Whatever a helper claimed
        but did not deliver (it failed, ended early, took too long or walked other manifests) is
        scanned here.

        Raises:
            FileNotFoundError, FormatError: a manifest read failed here.
        """
        import pickle

        digest = _digest(paths)
        claims.publish(digest)
        started = time.monotonic()
        covered = bytearray(len(paths))  # 1: scanned here or by a helper whose result was merged
        while batch := claims.claim(len(paths), CLAIM_BATCH):
            for i in batch:
                self.mark_manifest(paths[i])
                covered[i] = 1
        # every manifest is claimed now; a helper still busy far longer than this took is stuck
        # (a lock another thread held at fork time, say): it is killed, its claims redone here
        timeout = max(HELPER_TIMEOUT_FLOOR_S, 10 * (time.monotonic() - started))
        for helper in helpers:
            try:
                helper_digest, claimed, state, deferred = pickle.loads(helper.result(timeout))  # noqa: S301 - our child
            except reach.ForkedCallError:
                continue
            if helper_digest != digest or not self.scanner.merge_state(state):
                continue  # (a helper with another walk claims nothing)
            for start, stop in claimed:
                covered[start:stop] = b"\x01" * (stop - start)
            for path in deferred:
                self.mark_manifest(path)
        for i in range(len(paths)):
            if not covered[i]:
                self.mark_manifest(paths[i])

def _mark_refs(refs: list[manifests.FileRef], names: set[str], used: set[str]) -> None:
    """Mark the data files (and their extra files) of one manifest's entries, ADD and DELETE."""
    add = used.add
    for ref in refs:
        if ref.file_name and ref.file_name in names:
            add(ref.file_name)
        if ref.external_path:
            name = ref.external_path.rsplit("/", 1)[-1]
            if name and name in names:
                add(name)
        for extra in ref.extra_files:
            if extra and extra in names:
                add(extra)
