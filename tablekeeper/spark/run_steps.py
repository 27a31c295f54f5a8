"""What the steps of one run share, for both evaluators (the in-process one in
:mod:`tablekeeper.spark.dispatch`, the distributed one in :mod:`tablekeeper.spark.job`): the
request turned into core's inputs (the table, its retention and configs, the orphan threshold)
and the step results summed into one artifact. No pyspark here."""

from __future__ import annotations

import contextlib
import importlib.metadata
import platform

from tablekeeper.core import plans, values
from tablekeeper.core.paimon import Table, open_table
from tablekeeper.core.reclaim import expire, orphans
from tablekeeper.core.reclaim.expire import Retention
from tablekeeper.core.safety import concurrency
from tablekeeper.spark import job_request, result_artifact

__all__ = ["versions", "orphan_threshold", "retention_of", "expire_config", "changelog_config", "changelog_range",
           "changelog_due", "merge_step", "open_request_table", "new_result", "BATCH_UNIT", "step_name",
           "merge_execution"]


def versions() -> dict[str, str]:
    """What ran the job, for the result artifact: tablekeeper, pypaimon, pyspark and the driver's Python."""
    out = {"python": platform.python_version()}
    for package in ("tablekeeper", "pypaimon", "pyspark"):
        try:
            out[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def orphan_threshold(request: job_request.JobRequest, now: int) -> int:
    """The orphan age threshold, parsed like the CLI's ``--older-than`` (an age such as
    ``2 d``, or a time as ISO-8601 / epoch ms) and checked by ``orphans.resolve_older_than``."""
    value = request.older_than
    at, age = values.parse_time_or_age(value, flag="--older-than") if value is not None else (None, None)
    return orphans.resolve_older_than(now, older_than_ms=at, older_than_age=age, force=request.force)


def retention_of(request: job_request.JobRequest, table: Table) -> Retention:
    """The retention ``request`` expires with: the one it carries (resolved and validated where
    the request was made), else the table's own options."""
    return request.retention if request.retention is not None else expire.from_options(table.options())


def expire_config(request: job_request.JobRequest, table: Table) -> expire.ExpireConfig:
    """Snapshot expiration of ``request``: its retention plus the table's facts."""
    return expire.expire_config(retention_of(request, table), table.options())


def changelog_config(request: job_request.JobRequest, table: Table) -> expire.ChangelogConfig:
    """Changelog expiration of ``request``: its retention's ``changelog_*`` values and expire limit."""
    return expire.changelog_config(retention_of(request, table), table.options())


#: The range rule of ``expire.plan_expire_changelog``, for the job's planning.
changelog_range = expire.changelog_range


def changelog_due(table: Table, config: expire.ChangelogConfig, now: int) -> bool:
    """Whether changelog expiration has anything to do now (the operator's planner proposes
    ``ExpireChangelog`` only then): changelogs past retention, or a missing hint to write."""
    if not table.changelog_ids():
        return False
    expiring, _ = changelog_range(table, config, now)
    return bool(expiring) or not expire.plan_expire_changelog(table, config, now).is_empty


def merge_step(result: result_artifact.RunResult, step: result_artifact.RunResult, name: str) -> None:
    """Add the counts of a second step of the same job (``with_changelog``) to ``result``; the
    step's details go under ``details[name]``, its notes are prefixed with ``name``."""
    for mine, theirs in ((result.planned_files, step.planned_files), (result.planned_bytes, step.planned_bytes),
                         (result.deleted, step.deleted), (result.deleted_bytes, step.deleted_bytes),
                         (result.missing, step.missing), (result.planned_unsized, step.planned_unsized),
                         (result.unsized, step.unsized)):
        for kind, n in theirs.items():
            mine[kind] = mine.get(kind, 0) + n
    result.failed_count += step.failed_count
    room = values.STATUS_SAMPLE_MAX - len(result.failure_sample)
    result.failure_sample.extend(step.failure_sample[:max(0, room)])
    result.written.extend(step.written)
    result.removed_dirs += step.removed_dirs
    room = values.STATUS_SAMPLE_MAX - len(result.sample)
    result.sample.extend(step.sample[:max(0, room)])
    result.details[name] = dict(step.details)
    result.notes.extend(step_note(name, note) for note in step.notes)
    for key, seconds in step.timings.items():
        if key in ("planSeconds", "deleteSeconds"):
            result.timings[key] = round(result.timings.get(key, 0.0) + seconds, 3)


def open_request_table(request: job_request.JobRequest) -> Table:
    return open_table(request.warehouse, request.table, branch=request.branch, options=request.storage_options())


def new_result(request: job_request.JobRequest, engine_name: str) -> result_artifact.RunResult:
    return result_artifact.RunResult(operation=request.operation, table=request.table, branch=request.branch,
                            dry_run=request.dry_run, engine=engine_name, run_name=request.run_name,
                            warehouse=request.warehouse, versions=versions())



#: What one batch of an operation expires, by planned file kind (``JobRequest.batches``).
BATCH_UNIT: dict[str, str] = {"expire": plans.FileKind.SNAPSHOT.value,
                              "expire-changelog": plans.FileKind.CHANGELOG_META.value}


#: The step name of an expiration's changelog step (``with_changelog``), the prefix of its notes.
CHANGELOG_STEP = "changelog"


def step_note(name: str, note: str) -> str:
    """A later step's note as the job's result carries it: prefixed with the step's name, so the
    operator's in-process runs say it in the same words."""
    return f"{name}: {note}"


def step_name(name: str, n: int) -> str:
    """Where a step's details go in the first step's result: ``batch N`` for snapshot batches
    2.., ``changelog`` / ``changelog batch N`` for the changelog's."""
    if name == "batch":
        return f"batch {n}"
    return name if n == 1 else f"{name} batch {n}"


def merge_execution(result: result_artifact.RunResult, executed: plans.ExecutionResult) -> None:
    """Add an in-process ExecutionResult to a run result."""
    for kind, n in executed.deleted.items():
        result.deleted[kind] = result.deleted.get(kind, 0) + n
    for kind, n in executed.deleted_bytes.items():
        result.deleted_bytes[kind] = result.deleted_bytes.get(kind, 0) + n
    for kind, n in executed.missing.items():
        result.missing[kind] = result.missing.get(kind, 0) + n
    for kind, n in executed.unsized.items():
        result.unsized[kind] = result.unsized.get(kind, 0) + n
    result.failed_count += len(executed.failed)
    for r in executed.failed:
        if len(result.failure_sample) < values.STATUS_SAMPLE_MAX:
            result.failure_sample.append({"path": r.path, "error": str(r.error)})
    result.written.extend(executed.written)
    result.removed_dirs += len(executed.removed_dirs)


def maintenance_lease(request: job_request.JobRequest) -> contextlib.AbstractContextManager[object]:
    """The table's maintenance lease (core/safety/concurrency/lease.py, one maintainer per table) for a run that
    changes the table; none for a dry run. Re-entrant per thread, so the driver may take it
    again inside the dispatcher's."""
    if request.dry_run:
        return contextlib.nullcontext()
    table = open_request_table(request)
    return concurrency.held(table.file_io, table.root, f"spark {request.operation}")
