"""Tag deletion as unpublish, verify, then delete (issue #12).

``tags.plan_delete_tag`` decides which files only the tag reaches. Executed as one plan, the
decision is taken before a gap: a ``branch create --from-tag T`` or a new tag on the same
snapshot made in between would be left reading deleted files. So the deletion runs in phases:

1. **intent**: the tag's bytes are saved in ``<table>/.tablekeeper/pending/`` (create-if-absent;
   a directory Paimon and orphan cleanup never look at, see core/safety/concurrency/lease.py);
2. **unpublish**: the tag file is deleted. From here no new reader can start from the tag, and a
   branch or tag created from it meanwhile already holds its own copy of the snapshot;
3. **verify**: the cleanup is planned again from the saved tag against the roots as they are now
   (``tags.plan_tag_cleanup``: every tag, snapshot and changelog of every branch). Only files
   that *both* plans found unreferenced are deleted; files the first plan wanted and the second
   keeps are left (their roots appeared meanwhile), and the run says so;
4. **delete** (data, then changelog, index, statistics, manifests, in Paimon's order), then the
   intent is removed.

Resumable after a crash at any point: a rerun of ``tag delete T`` finds the intent and continues
at step 3 (re-planned from the saved tag, so it is right for the table as it is then). A crash
that is never rerun leaves garbage for orphan cleanup, never a missing file.

Every phase ends at a ``seams`` point (``tag-delete:intent``, ``tag-delete:unpublished``,
``tag-delete:verified``) for crash and interleaving tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tablekeeper.core import errors, plans
from tablekeeper.core.paimon import Table, Tag
from tablekeeper.core.refs import tags
from tablekeeper.core.safety import concurrency
from tablekeeper.core.storage import join

__all__ = ["TagDeletion", "intent_path", "delete_tag"]

Runner = Callable[[plans.Plan], plans.ExecutionResult]


@dataclass(frozen=True)
class TagDeletion:
    """What a deletion did: the plan made before unpublishing, the plan executed after the
    re-check, its result, and notes (files kept because a root appeared meanwhile ...)."""

    planned: plans.Plan
    executed: plans.Plan
    result: plans.ExecutionResult
    notes: tuple[str, ...]


def intent_path(table: Table, name: str) -> str:
    return join(table.root, concurrency.LEASE_DIR, "pending", f"delete-tag--{table.branch}--{name}")


def _saved(table: Table, name: str) -> Tag | None:
    try:
        path = intent_path(table, name)
        return Tag.from_json(name, table.file_io.read_bytes(path), what=path)
    except FileNotFoundError:
        return None


def delete_tag(table: Table, name: str, *, force: bool = False, run: Runner | None = None) -> TagDeletion:
    """Delete tag ``name`` of ``table``'s branch with cleanup, in the phases above.

    ``run`` executes a plan (default: ``execution.execute`` on the table's FileIO).

    Raises:
        TagNotFoundError (neither the tag nor an interrupted deletion of it), ProtectedObjectError
        (a fork tag, unless ``force``), IncompleteProtectionSetError (a root could not be read:
        nothing is deleted after the tag file).
    """
    with table.file_io.immutable_reads():  # the verify plan reuses the manifests the first plan read
        return _delete_tag(table, name, force, run or (lambda p: plans.execute(p, table.file_io)))


def _delete_tag(table: Table, name: str, force: bool, runner: Runner) -> TagDeletion:
    io = table.file_io
    notes: list[str] = []
    saved = _saved(table, name)
    if table.tag_exists(name):
        # one plan is one view (FileIO.one_view): each tag, snapshot and hint read once, and the
        # intent saves the very bytes of the tag the plan read
        with io.one_view():
            first = tags.plan_delete_tag(table, name, force=force)
            raw = io.read_bytes(table.tag_path(name))
        data_files = [f for f in first.files if f.kind != plans.FileKind.TAG]
        if not data_files and saved is None:  # only the tag file goes: nothing to verify
            return TagDeletion(first, first, runner(first), first.notes)
        tag = Tag.from_json(name, raw, what=table.tag_path(name))
        if saved is not None and saved.snapshot.identity() != tag.snapshot.identity():
            raise errors.ConcurrentModificationError(
                f"an interrupted deletion of tag {name!r} at snapshot {saved.snapshot_id} is pending, but the tag "
                f"now points at snapshot {tag.snapshot_id}",
                fix=f"inspect the table; remove {intent_path(table, name)} to let orphan cleanup reclaim the files "
                    "of the old tag")
        if saved is None:
            io.write_new(intent_path(table, name), raw)
        concurrency.point("tag-delete:intent")
        unpublished = runner(plans.Plan("delete-tag", table.identifier, plans.Plan.ordered_deletes(
            [f for f in first.files if f.kind == plans.FileKind.TAG])))
        if unpublished.failed:
            return TagDeletion(first, first, unpublished, ("the tag file could not be deleted; nothing else was",))
        concurrency.point("tag-delete:unpublished")
    elif saved is not None:
        tag = saved
        first = plans.Plan("delete-tag", table.identifier)
        unpublished = plans.ExecutionResult()
        notes.append(f"resuming an interrupted deletion of tag {name!r} (snapshot {tag.snapshot_id})")
    else:
        table.tag(name)  # raises TagNotFoundError with its fix
        raise AssertionError("unreachable")
    # verify: re-plan against the roots as they are now; delete what both plans agree on
    with io.one_view():  # a view of its own: the roots as they are now, each read once
        again = tags.plan_tag_cleanup(table, tag)
    if first.steps and not saved:
        agreed = {f.path for f in first.files} & {f.path for f in again.files}
        kept = [f for f in first.files if f.kind != plans.FileKind.TAG and f.path not in agreed]
        if kept:
            notes.append(f"{len(kept)} file(s) the first plan found unreferenced are kept: a root appeared while "
                         "the tag was being deleted (e.g. a branch or tag from it)")
        executed = plans.Plan(again.operation, again.table,
                              plans.Plan.ordered_deletes(f for f in again.files if f.path in agreed),
                              (*again.notes, *notes), again.details)
    else:
        executed = plans.Plan(again.operation, again.table,
                              tuple(s for s in again.steps if not (isinstance(s, plans.DeleteStep)
                                                                   and s.kind == plans.FileKind.TAG)),
                              (*again.notes, *notes), again.details)
    concurrency.point("tag-delete:verified")
    result = runner(executed)
    if not result.failed:
        io.delete_files([intent_path(table, name)], tell_missing=False)  # ours: no listing to tell it missing
    tag_steps = tuple(s for s in first.steps if isinstance(s, plans.DeleteStep) and s.kind == plans.FileKind.TAG)
    reported = plans.Plan(executed.operation, executed.table, (*tag_steps, *executed.steps), executed.notes,
                          executed.details)
    return TagDeletion(first, reported, _merged(unpublished, result), executed.notes)


def _merged(a: plans.ExecutionResult, b: plans.ExecutionResult) -> plans.ExecutionResult:
    return plans.ExecutionResult(a.deleted + b.deleted, a.deleted_bytes + b.deleted_bytes, a.missing + b.missing,
                                     [*a.failed, *b.failed], [*a.written, *b.written],
                                     [*a.removed_dirs, *b.removed_dirs], [*a.order, *b.order], a.unsized + b.unsized)
