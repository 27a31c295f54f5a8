"""Storage requests of a Spark run, counted where they are made and summed on the driver.

Executors count with the same request layer as the in-process engine
(:mod:`tablekeeper.core.storage.layers.requests`); every executor function runs wrapped in
``executor.counted``, which adds the requests of its task, by kind, to one Spark accumulator per
kind. Spark merges the accumulators of successful tasks into the driver (a retried task's
requests are counted once per successful attempt; a failed attempt's are lost: a lower bound
when tasks fail). The driver's own requests (the plan's metadata reads, the lease, the
deletes it makes itself) are the difference of the process tally
(``requests.process_snapshot``) over the run: the driver of a Spark job runs one job at a time.

On Spark Connect there is no SparkContext and no accumulator: executor requests are then not
counted (``details["requestsCounted"]`` says ``driver``).

The request-rate cap (``tablekeeper.max-requests-per-second``) is per prefix and per FileIO;
every concurrent task has its own FileIO, so executors get the cap divided by the tasks that can
run at once: the task slots (``defaultParallelism``: executors x cores) or a stage's partitions,
whichever is smaller; on Connect, where the slots are unknown, the partitions. All of them
together stay under it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from tablekeeper.core import storage
from tablekeeper.spark import executor as ex

__all__ = ["Tally", "active", "executor_options", "slots"]

_ACTIVE: list[Tally] = []


class Tally:
    """The requests of one run: accumulators for the executors, the driver's process tally."""

    def __init__(self, spark: Any) -> None:
        self.accumulators: dict[str, Any] | None
        try:
            sc = spark.sparkContext
            self.accumulators = {k.value: sc.accumulator(0) for k in storage.RequestKind}
        except Exception:  # Spark Connect: no SparkContext
            self.accumulators = None
        self._driver_before = storage.process_snapshot()

    def __enter__(self) -> Tally:
        _ACTIVE.append(self)
        return self

    def __exit__(self, *_: object) -> None:
        _ACTIVE.remove(self)

    def bind(self, fn: Callable[..., Iterator[Any]], spec: Mapping[str, Any]) -> Callable[..., Iterator[Any]]:
        """``fn`` bound to ``spec`` for ``mapInArrow``, counting its task's requests."""
        if self.accumulators is None:
            return functools.partial(fn, dict(spec))
        return functools.partial(ex.counted, self.accumulators, fn, dict(spec))

    def executors(self) -> dict[str, int]:
        """Requests the executors' successful tasks made so far, by kind, plus ``total``."""
        out = {k: int(a.value) for k, a in sorted((self.accumulators or {}).items()) if a.value}
        out["total"] = sum(out.values())
        return out

    def driver(self) -> dict[str, int]:
        return storage.since(self._driver_before, storage.process_snapshot())

    def total(self) -> dict[str, int]:
        return storage.plus(self.driver(), self.executors())


def active() -> Tally | None:
    """The tally of the run in progress (None outside ``job.run``)."""
    return _ACTIVE[-1] if _ACTIVE else None


def slots(spark: Any) -> int | None:
    """Tasks that run at once (``defaultParallelism``), or None when the session cannot say
    (Spark Connect has no SparkContext; ``spark.default.parallelism`` when the server sets it)."""
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect
        try:
            configured = spark.conf.get("spark.default.parallelism", None)
        except Exception:
            configured = None
        return max(1, int(configured)) if configured else None


def executor_options(options: Mapping[str, str], spark: Any, partitions: int) -> dict[str, str]:
    """The storage options executors open their FileIO with: the request-rate cap divided by the
    task slots, so all tasks together stay under the run's cap (each has its own pacer). When the
    slots are unknown (Connect), by the stage's ``partitions``: no more tasks than that run at once."""
    out = dict(options)
    cap = storage.pacing_from_options(out)
    if cap is not None:
        known = slots(spark)
        out[storage.PACING_OPTION] = repr(cap / (min(known, partitions) if known else max(1, partitions)))
    return out
