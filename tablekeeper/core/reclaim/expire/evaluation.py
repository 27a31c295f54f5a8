"""The in-process evaluator of an :class:`~tablekeeper.core.reclaim.expire.decision.ExpirationDecision`: reads
the manifests the decision's roots name and returns the frozen Plan (the Spark job evaluates the
same decision distributed; neither decides anything).

Cost grows with what expires, not with the table's history:

- data candidates come only from the *delta* lists of the expiring uses (plus the live sets of
  the tags before them and of the protecting roots); nothing walks the retained snapshots;
- the metadata of the expiring snapshots' *base* lists must still be looked at (a writer that
  merges manifests writes files that appear in base lists only), but those lists repeat each
  other block for block, and ``Reachability`` decodes and visits each distinct Avro block once
  (``MetaUnion``) instead of once per snapshot;
- on object stores the manifests every step will need are fetched and decoded ahead by a small
  thread pool (locally decoding holds the GIL and threads measured no faster).

Why this is still safe: a block is skipped only after its identical bytes were decoded and their
files considered for an earlier root (deletion is decided per path against the same kept set);
prefetching swallows every error so the sequential reads meet and raise them exactly as
:func:`expire_decisions.judge_missing` says; the protection sets are built in full before anything is
planned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tablekeeper.core import errors, plans
from tablekeeper.core.paimon import manifests
from tablekeeper.core.reclaim.expire import decision as expire_decisions
from tablekeeper.core.reclaim.expire.decision import ReadOutcome, RootUse
from tablekeeper.core.reclaim.reach import (
    DataKey,
    IgnoredReference,
    ListRole,
    MetaUnion,
    Missing,
    MissingFile,
    Reachability,
    details_of,
    notes_of,
)

__all__ = ["evaluate"]

_META_KINDS = {"manifest": plans.FileKind.MANIFEST, "index": plans.FileKind.INDEX}


def _missing(error: BaseException) -> tuple[str, str]:
    """(what the missing file is to its root, its name)."""
    if isinstance(error, MissingFile):
        return error.described()
    return ("a file", getattr(error, "filename", None) or str(error))


def _abort_if(use: RootUse, what: str, role: ListRole, error: BaseException,
              ignored: list[IgnoredReference]) -> frozenset[ReadOutcome]:
    outcomes = expire_decisions.judge_missing(use, what, role)
    if ReadOutcome.ABORT in outcomes:
        raise expire_decisions.abort_unreadable_protection(use, *_missing(error)) from error
    if ReadOutcome.DANGLING in outcomes and use.protects:  # (an expiring root's are no news)
        ignored.append(use.ignored(role, _missing(error)[1], getattr(error, "list_name", None)))
    return outcomes


def _told(use: RootUse, ignored: list[IgnoredReference]) -> Missing | None:
    """What a protecting use's reads tell of a dangling reference that is gone (None: it has none)."""
    if not use.dangling:
        return None

    def told(role: ListRole, file: str, via_list: str | None) -> None:
        ignored.append(use.ignored(role, file, via_list))

    return told


def _prefetch(reach: Reachability, roots: Sequence[RootUse]) -> None:
    """Warm ``reach``'s caches with the lists (and manifests) whose entries are read, then the
    lists whose names only are needed. Errors are swallowed: the sequential reads meet them."""
    if not reach.prefetches:
        return
    names: list[str | None] = []
    for use in roots:
        lists = {ListRole.BASE: use.snapshot.base_manifest_list, ListRole.DELTA: use.snapshot.delta_manifest_list,
                 ListRole.CHANGELOG: use.snapshot.changelog_manifest_list}
        names.extend(lists[role] for role in sorted(use.entry_roles))
    reach.prefetch(names, with_paths=any(use.cand_delta or use.cand_changelog for use in roots),
                   then_lists=[n for use in roots for n in use.snapshot.manifest_lists])


def _kept(reach: Reachability, roots: Sequence[RootUse], ignored: list[IgnoredReference]
          ) -> tuple[set[DataKey], set[DataKey], set[str]]:
    """(data files, changelog files, metadata paths) the protecting uses keep. Every read is
    strict (a missing file aborts, naming the root and the file: the protection set would be
    incomplete), except of the references a use's root lets dangle (``RootUse.dangling``): what
    they name is kept while they exist, and a missing one is reported in ``ignored``."""
    keep_data: set[DataKey] = set()
    keep_changelog: set[DataKey] = set()
    keep_meta: set[str] = set()
    union = MetaUnion()
    for use in roots:
        if not (use.keep_live or use.keep_changelog or use.keep_meta or use.log_keep):
            continue
        told = _told(use, ignored)
        try:
            if use.keep_live:
                keep_data.update(reach.live_files(use.snapshot))
            if use.keep_changelog:
                keep_changelog.update((r.partition, r.bucket, r.file_name) for r in reach.changelog_refs(
                    use.snapshot, missing=told if ListRole.CHANGELOG in use.dangling else None))
            if use.keep_meta:
                keep_meta.update(m.path for m in reach.meta_files(use.snapshot, union=union, dangling=use.dangling,
                                                                  missing=told))
            if use.log_keep:
                log_data = reach.changelog_root_data(use.snapshot, dangling=use.dangling, missing=told)
                keep_data |= log_data
                keep_changelog |= log_data
                keep_meta |= reach.changelog_root_meta(use.snapshot, dangling=use.dangling, missing=told)
        except FileNotFoundError as e:
            raise expire_decisions.abort_unreadable_protection(use, *_missing(e)) from e
        except errors.FormatError as e:  # a damaged file: named with the root that reads it
            raise errors.FormatError(f"{use.label}: {e.message}", fix=e.fix) from e
    return keep_data, keep_changelog, keep_meta


def evaluate(table: object, decision: expire_decisions.ExpirationDecision, reach: Reachability | None = None) -> plans.Plan:
    """The plan of ``decision`` on ``table`` (a :class:`~tablekeeper.core.paimon.table.Table`).
    ``reach``: the metadata reads to use (``Reachability.sharing_reads`` of an earlier plan of
    the same table, whose manifests need not be decoded again); default a fresh one.

    Raises:
        IncompleteProtectionSetError: a protecting read failed (nothing is planned).
        FormatError: a manifest is damaged, or adds a file twice.
    """
    from tablekeeper.core.paimon import Table

    assert isinstance(table, Table)
    if not decision.reads_manifests:
        return plans.Plan(decision.operation, decision.table, decision.tail, decision.notes, decision.details)
    roots = decision.roots
    reach = reach if reach is not None else Reachability(table)
    _prefetch(reach, roots)
    ignored: list[IgnoredReference] = []
    keep_data, keep_changelog, keep_meta = _kept(reach, roots, ignored)
    tags = {u.sid: u for u in roots if u.tag_live}
    tag_live: dict[int, set[DataKey]] = {}
    by_snapshot = decision.operation == "expire-snapshots"
    files: list[plans.PlannedFile] = []
    skipped: list[int] = []

    planned, append = plans.PlannedFile, files.append
    sole_path: Callable[[manifests.FileRef], str | None]
    data_paths: Callable[[manifests.FileRef], list[str]]

    def resolve(ref: manifests.FileRef) -> str | None:
        """The first call builds the path resolver (only plans that delete data need it) and
        rebinds ``sole_path`` and ``data_paths`` to its own functions."""
        nonlocal sole_path, data_paths
        sole_path, data_paths = reach.path_functions()
        return sole_path(ref)

    sole_path, data_paths = resolve, reach.data_paths

    def add(ref: manifests.FileRef, kind: plans.FileKind, use: RootUse, reason: str) -> None:
        path = sole_path(ref)
        if path is not None:
            append(planned(path, kind, ref.file_size if use.cand_sizes else None, reason))
            return
        paths = data_paths(ref)
        append(planned(paths[0], kind, ref.file_size if use.cand_sizes else None, reason))
        for path in paths[1:]:
            append(planned(path, kind, None, reason))

    # 1. files the candidate deltas delete, unless a protecting root or the previous tag uses them
    for use in roots:
        if not use.cand_delta:
            continue
        try:
            refs = reach.delta_refs(use.snapshot)
        except FileNotFoundError as e:
            outcomes = _abort_if(use, "manifest", ListRole.DELTA, e, ignored)
            if ReadOutcome.SKIP_DELTA in outcomes and ReadOutcome.DANGLING not in outcomes:
                skipped.append(use.sid)  # an earlier run already removed this delta: its data went first
            continue
        protected: set[DataKey] = set()
        if use.prev_tag is not None:
            if use.prev_tag not in tag_live:
                tag = tags[use.prev_tag]
                try:
                    tag_live[use.prev_tag] = set(reach.live_files(tag.snapshot))
                except FileNotFoundError as e:
                    raise expire_decisions.abort_unreadable_protection(tag, *_missing(e)) from e
            protected = tag_live[use.prev_tag]
        reason = f"deleted in snapshot {use.sid}" if by_snapshot else f"changelog {use.sid} expired"
        for ref in expire_decisions.effectively_deleted(refs):
            key = (ref.partition, ref.bucket, ref.file_name)
            if key in protected or key in keep_data:
                continue
            add(ref, use.cand_delta, use, reason)
    # 2. changelog files the candidates added, unless kept
    for use in roots:
        if not use.cand_changelog:
            continue
        try:
            refs = reach.changelog_refs(use.snapshot)
        except FileNotFoundError as e:
            _abort_if(use, "manifest", ListRole.CHANGELOG, e, ignored)
            continue
        against = keep_data if use.changelog_vs_data else keep_changelog
        reason = f"changelog of snapshot {use.sid}" if by_snapshot else f"changelog {use.sid} expired"
        for ref in refs:
            if ref.kind == manifests.ADD and (ref.partition, ref.bucket, ref.file_name) not in against:
                add(ref, use.cand_changelog, use, reason)
    # 3. metadata of the candidates that no protecting root uses (each shared list block and
    #    index manifest looked at once)
    union = MetaUnion()
    for use in roots:
        if not use.cand_meta:
            continue
        try:
            metas = reach.meta_files(use.snapshot, include_changelog=use.cand_meta_changelog, tolerant=True,
                                     union=union)
        except FileNotFoundError:
            metas = set()  # partially cleaned by an earlier run: the rest is orphan cleanup's
        reason = "only expired snapshots used it" if by_snapshot else "only expired changelogs used it"
        for meta in metas:
            if meta.path not in keep_meta:
                files.append(plans.PlannedFile(meta.path, _META_KINDS.get(meta.kind, plans.FileKind.STATISTICS),
                                               meta.size, reason))
    data_kinds = (plans.FileKind.DATA, plans.FileKind.CHANGELOG_DATA)
    steps: list[plans.Step] = list(plans.Plan.ordered_deletes(f for f in files if f.kind in data_kinds))
    if decision.empty_dirs_depth is not None:  # after data, before manifests (Java's order)
        dirs = sorted({f.path.rsplit("/", 1)[0] for f in files if f.kind in data_kinds})
        if dirs:
            steps.append(plans.RemoveEmptyDirsStep(tuple(dirs), depth=decision.empty_dirs_depth))
    steps.extend(plans.Plan.ordered_deletes(f for f in files if f.kind not in data_kinds))
    steps.extend(decision.tail)
    notes = list(decision.notes)
    if skipped:
        notes.append(f"deltas of snapshots {skipped[:10]} already cleaned by an earlier run")
    notes.extend(notes_of(ignored))
    return plans.Plan(decision.operation, decision.table, tuple(steps), tuple(notes),
                      (*decision.details, ("ignored_references", details_of(ignored))))
