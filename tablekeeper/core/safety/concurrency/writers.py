"""What tablekeeper can tell about writers committing beside it (issue #12).

Writers (Flink, Spark, pypaimon, Paimon's own procedures) never take tablekeeper's lease. Their
protection during orphan cleanup is the age threshold alone: a file written by a commit that has
not landed yet is referenced by nothing, and only its age keeps it from being deleted. Paimon's
``remove_orphan_files`` defaults to ``older_than`` = 1 day for that reason; below one hour
tablekeeper refuses unless forced (``safety.ORPHAN_AGE_FLOOR``). When forced, the user is told,
before anything is deleted, how recently the table was last committed to: a recent commit means
a writer is probably running and its in-flight files are at risk."""

from __future__ import annotations

from datetime import timedelta

from tablekeeper.core import values
from tablekeeper.core.paimon import Table

__all__ = ["latest_commit_ms", "forced_threshold_warning"]


def latest_commit_ms(table: Table) -> int | None:
    """The newest ``timeMillis`` of the latest snapshot of any branch (None: no snapshot)."""
    newest: int | None = None
    for branch in table.all_branches():
        snap = branch.latest_snapshot()
        if snap is not None and (newest is None or snap.time_millis > newest):
            newest = snap.time_millis
    return newest


def forced_threshold_warning(table: Table, older_than_ms: int, now_ms: int) -> str | None:
    """The warning to print before an orphan cleanup whose threshold is closer than
    ``ORPHAN_AGE_FLOOR`` to now (only possible with ``--force``), else None."""
    window = timedelta(milliseconds=now_ms - older_than_ms)
    if window >= values.ORPHAN_AGE_FLOOR:
        return None
    # forced thresholds only (start-up)

    latest = latest_commit_ms(table)
    if latest is None:
        recent = "the table has no commit yet"
    else:
        age = values.format_duration(timedelta(milliseconds=max(0, now_ms - latest)))
        recent = f"the latest commit to {table.identifier} was {age} ago"
    return (f"--force: deleting unreferenced files older than {values.format_duration(window)}, less than "
            f"{values.format_duration(values.ORPHAN_AGE_FLOOR)}; {recent}. Files of commits still in flight "
            "(a writer that has written data files but not yet committed its snapshot) look unreferenced and "
            "can be lost: make sure no writer is running.")
