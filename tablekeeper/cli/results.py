"""The one shape of ``--output json`` for every command that changes a table (docs/output.md).

Every such command prints one document with the same keys, whatever it did and whichever engine
ran it:

- ``operation``, ``table``, ``branch``, ``engine`` (``local`` | ``spark``), ``dry_run``,
  ``action`` (what happened to the tag or branch: ``created``, ``dropped``, ...; null for
  maintenance);
- ``files`` / ``bytes``: the planned deletions per file kind, ``total_files`` / ``total_bytes``,
  ``unsized``: planned files whose size is not known (their bytes count 0);
- ``writes``: files written (or to be written); ``notes``;
- ``result``: null for a dry run, else what ran: ``deleted`` / ``deleted_bytes`` per kind,
  ``already_gone`` (planned files that were gone already: counted, not a problem), ``unsized``,
  ``failed`` (a sample), ``failed_count``, ``written``, ``removed_dirs``;
- ``requests``: storage requests by kind (added when the command's store is known);

plus operation-specific keys (``snapshot_id``, ``ignored_references``, ...). Bytes come from
the manifests or a listing, never from a guess. An error is ``{"error": {"message", "fix",
"kind"}}`` (:func:`error`); with a partial result it carries that too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # types only: a command imports what it runs (start-up)
    from tablekeeper.core import plans, refs
    from tablekeeper.spark.result_artifact import RunResult

__all__ = ["document", "of_plan", "of_execution", "of_change", "of_run", "error", "file_kind_of"]


def document(operation: str, table: str, branch: str, *, dry_run: bool, engine: str = "local",
             action: str | None = None, files: Mapping[str, int] | None = None,
             nbytes: Mapping[str, int] | None = None, unsized: Mapping[str, int] | None = None,
             writes: Iterable[str] = (), notes: Iterable[str] = (), result: Mapping[str, Any] | None = None,
             fields: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """The document; ``fields`` and ``extra``: the operation's own keys (never one of the
    common ones)."""
    files, nbytes = dict(files or {}), dict(nbytes or {})
    out: dict[str, Any] = {
        "operation": operation, "table": table, "branch": branch, "engine": engine, "dry_run": dry_run,
        "action": action, "files": files, "bytes": nbytes, "total_files": sum(files.values()),
        "total_bytes": sum(nbytes.values()), "unsized": dict(unsized or {}), "writes": list(writes),
        "notes": list(notes), "result": None if result is None else dict(result),
    }
    for key, value in {**(fields or {}), **extra}.items():
        if key not in out:
            out[key] = value
    return out


def of_execution(result: plans.ExecutionResult) -> dict[str, Any]:
    return result.as_dict()


def of_plan(plan: plans.Plan, *, branch: str, dry_run: bool, result: plans.ExecutionResult | None = None,
            action: str | None = None, **extra: Any) -> dict[str, Any]:
    """A plan (and what ran of it)."""
    summary = plan.summary()
    common = ("operation", "table", "files", "bytes", "total_files", "total_bytes", "unsized", "writes", "notes")
    details = {k: v for k, v in summary.items() if k not in common and k != "branch"}
    return document(plan.operation, plan.table, str(summary.get("branch", branch)), dry_run=dry_run, action=action,
                    files=summary["files"], nbytes=summary["bytes"], unsized=summary["unsized"],
                    writes=summary["writes"], notes=summary["notes"],
                    result=None if result is None else of_execution(result), fields={**details, **extra})


_DIR_KINDS = {"snapshot": "snapshot", "tag": "tag", "changelog": "changelog-meta", "schema": "schema",
              "consumer": "consumer"}


def file_kind_of(path: str) -> str:
    """The kind of a metadata file a branch command deletes, by its directory."""
    parts = path.rstrip("/").rsplit("/", 2)
    return _DIR_KINDS.get(parts[-2], "other") if len(parts) == 3 else "other"


def of_change(operation: str, table: str, change: refs.BranchChange, *, dry_run: bool,
              branch: str = "main", **extra: Any) -> dict[str, Any]:
    """A tag or branch command: the files it deleted by kind, sized as listed before."""
    files: Counter[str] = Counter()
    nbytes: Counter[str] = Counter()
    unsized: Counter[str] = Counter()
    for i, path in enumerate(change.deleted):
        kind = file_kind_of(path)
        files[kind] += 1
        size = change.size_of(i)
        if size is None:
            unsized[kind] += 1
        else:
            nbytes[kind] += size
    result = None if dry_run else {"deleted": dict(files), "deleted_bytes": dict(nbytes), "already_gone": {},
                                   "unsized": dict(unsized), "failed": [], "failed_count": 0,
                                   "written": list(change.written), "removed_dirs": 0}
    return document(operation, table, branch, dry_run=dry_run, action=change.action, files=files, nbytes=nbytes,
                    unsized=unsized, writes=change.written, notes=change.notes, result=result,
                    fields={"target": change.branch, "written": list(change.written), "deleted": list(change.deleted),
                            **extra})


def of_run(run: RunResult) -> dict[str, Any]:
    """A run of a Spark job (or the in-process engine behind it)."""
    result = None if run.dry_run else {
        "deleted": dict(run.deleted), "deleted_bytes": dict(run.deleted_bytes), "already_gone": dict(run.missing),
        "unsized": dict(run.unsized), "failed": list(run.failure_sample), "failed_count": run.failed_count,
        "written": list(run.written), "removed_dirs": run.removed_dirs}
    details = {k: v for k, v in run.details.items() if k != "ignoredReferences"}
    return document(run.operation, run.table, run.branch, dry_run=run.dry_run, engine=run.engine,
                    files=run.planned_files, nbytes=run.planned_bytes, unsized=run.planned_unsized,
                    writes=[], notes=run.notes, result=result, status=run.status, sample=list(run.sample),
                    timings=dict(run.timings), errors=list(run.errors),
                    ignored_references=run.details.get("ignoredReferences", []),
                    fields={**details, "details": details})  # (the run's details, also at the top as locally)


def error(e: BaseException, *, partial: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``{"error": {"message", "fix", "kind"}}`` of a failed command (``partial``: what it did)."""
    from tablekeeper.core import errors

    if isinstance(e, errors.TablekeeperError):
        body = {"message": e.message, "fix": e.fix, "kind": e.reason}
        if isinstance(e, errors.CatalogError) and e.option:  # the catalog option to set or check
            body["option"] = e.option
    else:  # click's usage errors
        body = {"message": getattr(e, "format_message", lambda: str(e))(), "fix": "see --help",
                "kind": "InvalidInput"}
    out: dict[str, Any] = {"error": body}
    if partial is not None:
        out["result"] = dict(partial)
    return out
