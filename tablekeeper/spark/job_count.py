"""The Spark jobs one run starts, for the result artifact's ``sparkJobs``: what a run costs on
Spark besides its storage requests (each job is a scheduling round trip; small tables spend most
of their time in them).

A run tags its jobs with a job group of its own (restoring the caller's group afterwards) and
counts the group's jobs from the status tracker at the end. Spark Connect has no SparkContext:
there the count is None."""

from __future__ import annotations

import uuid
from typing import Any

__all__ = ["JobCount"]


class JobCount:
    """A context that groups the Spark jobs started inside it; :meth:`total` counts them."""

    def __init__(self, spark: Any, label: str) -> None:
        self._group = f"tablekeeper-{label}-{uuid.uuid4().hex[:8]}"
        try:
            self._sc: Any = spark.sparkContext
        except Exception:  # Spark Connect
            self._sc = None
        self._previous: tuple[str | None, str | None] = (None, None)

    def __enter__(self) -> JobCount:
        if self._sc is not None:
            self._previous = (self._sc.getLocalProperty("spark.jobGroup.id"),
                              self._sc.getLocalProperty("spark.job.description"))
            self._sc.setJobGroup(self._group, "tablekeeper maintenance run")
        return self

    def __exit__(self, *_: object) -> None:
        if self._sc is not None:
            group, description = self._previous
            self._sc.setLocalProperty("spark.jobGroup.id", group)  # type: ignore[arg-type]  # None clears it
            self._sc.setLocalProperty("spark.job.description", description)  # type: ignore[arg-type]

    def total(self) -> int | None:
        """Jobs of the run so far (None on Spark Connect)."""
        if self._sc is None:
            return None
        return len(self._sc.statusTracker().getJobIdsForGroup(self._group))
