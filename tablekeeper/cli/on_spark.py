"""``--engine spark``: a maintenance command run through ``tablekeeper.spark`` (local Spark unless
configured), its result printed as the in-process engine's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from tablekeeper.cli import catalog_tables, common, printer, results
from tablekeeper.core import errors

if TYPE_CHECKING:
    from tablekeeper.core.paimon import Table

__all__ = ["run"]


def run(operation: str, t: Table, options: tuple[str, ...], dry_run: bool, output: str,
                  **params: Any) -> None:
    """Run a maintenance command through ``tablekeeper.spark`` (local Spark unless configured)."""
    from tablekeeper.core import storage
    from tablekeeper.core.safety import trash
    from tablekeeper.spark import dispatch, job_request

    catalog_tables.refuse_on_spark()
    kept = trash.active()  # the job's deletes move into this command's trash run
    if "." not in t.identifier or not t.root.rstrip("/").rsplit("/", 2)[-2].endswith(".db"):
        raise errors.InvalidInputError(f"--engine spark needs a warehouse table, not {t.root}",
                                       fix="pass --warehouse URI and the table as database.table")
    request = job_request.JobRequest(operation=operation,  # type: ignore[arg-type]
                                warehouse=t.root.rstrip("/").rsplit("/", 2)[0], table=t.identifier,
                                branch=t.branch, options=common.parse_options(options), dry_run=dry_run,
                                trash_run=None if kept is None else kept.spec(), **params)
    io_before, process_before = t.file_io.requests.counts.snapshot(), storage.process_snapshot()
    result = dispatch.run(request, engine="spark")
    if kept is not None and any(result.deleted.values()):
        kept.started, kept.moved, kept.moved_bytes = True, sum(result.deleted.values()), sum(result.deleted_bytes.values())
    payload = results.of_run(result)
    # this command's requests: the table opened here (format guard, lease), the driver's during
    # dispatch (its lease, the job's planning) and the executors' (counted there, summed by Spark)
    io_after = t.file_io.requests.counts.snapshot()
    driver = storage.since(storage.since(io_before, io_after),  # not t's twice
                                    storage.since(process_before, storage.process_snapshot()))
    payload["requests"] = storage.plus(io_after, driver, result.details.get("executorRequests") or {})

    def text() -> None:
        verb = "would delete" if dry_run else "deleted"
        click.echo(f"{operation} on {t.identifier} (engine spark): status {result.status}")
        for kind, n in sorted(result.planned_files.items()):
            done = "" if dry_run else f", {verb} {result.deleted.get(kind, 0)}"
            unsized = result.planned_unsized.get(kind, 0)
            size = f"{result.planned_bytes.get(kind, 0)} bytes" + (f", {unsized} of unknown size" if unsized else "")
            click.echo(f"  {kind}: {n} planned ({size}){done}")
        gone = sum(result.missing.values())
        if gone and not dry_run:
            click.echo(f"  {gone} file(s) were already gone (counted, not an error)")
        for note in result.notes:
            click.echo(f"  note: {note}")
        for path in result.sample:
            click.echo(f"  - {path}")

    printer.emit(output, payload, text)
    if result.errors:
        raise errors.TablekeeperError(result.errors[0]["message"], fix=result.errors[0].get("fix"))
    if result.failed_count:
        raise errors.StorageError(f"{result.failed_count} file(s) could not be deleted",
                                  fix="check permissions and rerun the same command; it resumes")
