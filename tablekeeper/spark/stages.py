"""What every stage of the Spark job is built with: the run's context (session, request, result,
the storage request tally), the I/O stage (an explicit partition count, then ``mapInArrow`` of an
executor function bound to a plain spec), the kept (materialised) frame, and the planning action
that fails closed. Nothing here decides anything: the operations (``spark/orphans``,
``spark/expire``) evaluate core's decisions with these helpers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from tablekeeper.core import errors, paimon, plans
from tablekeeper.core.paimon import Table
from tablekeeper.core.safety import trash
from tablekeeper.spark import executor as ex
from tablekeeper.spark import job_request, request_tally, result_artifact

__all__ = ["RunContext", "parallelism", "planning", "PHASES", "short_error", "is_null", "error_sentinel",
           "ERROR_NAME", "ERROR_COLLECT_MAX"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: A name no Paimon file can have: error rows carry it through the semi-join with candidates.
ERROR_NAME = "\x00tablekeeper-read-error"
#: Read errors collected to the driver per judgement, at most.
ERROR_COLLECT_MAX = 1_000


def parallelism(spark: SparkSession, request: job_request.JobRequest) -> int:
    """Partitions of every I/O stage: the request's, else the larger of the session's default
    parallelism and its shuffle partitions."""
    if request.parallelism:
        return request.parallelism
    try:
        default = int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext
        default = 0
    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions") or 200)
    return max(1, default, shuffle)


class RunContext:
    """One run of one operation on Spark: its session, request and result (filled as the run
    goes), the test hook for the delete stages, the partitions of an I/O stage, the frames it
    kept, and the storage request tally its executor functions count into."""

    def __init__(self, spark: SparkSession, request: job_request.JobRequest, result: result_artifact.RunResult,
                 fault: Mapping[str, Any] | None) -> None:
        self.spark = spark
        self.request = request
        self.result = result
        self.fault = dict(fault) if fault else None
        self.n = parallelism(spark, request)
        self._kept: list[DataFrame] = []
        self.tally = request_tally.active() or request_tally.Tally(spark)

    def df(self, rows: Iterable[Sequence[Any]], fields: ex.Fields) -> DataFrame:
        return self.spark.createDataFrame([tuple(r) for r in rows], ex.ddl(fields))

    def io(self, df: DataFrame, fn: Callable[..., Iterator[Any]], out: ex.Fields, spec: Mapping[str, Any],
           key: str | None = None) -> DataFrame:
        """An I/O stage: explicit partition count first (AQE would merge small I/O tasks)."""
        df = df.repartition(self.n, key) if key else df.repartition(self.n)
        return df.mapInArrow(self.tally.bind(fn, spec), ex.ddl(out))

    def keep(self, df: DataFrame) -> DataFrame:
        """Materialise once; never recomputed later (lost blocks fail the job, they are not
        silently re-derived from a newer table state)."""
        kept = df.localCheckpoint(eager=True)
        self._kept.append(kept)
        return kept

    def release(self) -> None:
        """Drop every frame kept so far (the run, or a step of it, is over)."""
        for df in self._kept:
            try:
                df.unpersist()
            except Exception:  # pragma: no cover - best effort
                pass
        self._kept.clear()

    def spec(self, table: Table, **extra: Any) -> dict[str, Any]:
        """The plain spec executor functions are bound to: storage, table root, manifest
        directory, delete batch size, and ``extra``."""
        main = table.on_branch(paimon.MAIN)
        return {"storage": {"uri": main.root,
                            "options": request_tally.executor_options(self.request.options, self.spark, self.n),
                            "env_options": list(self.request.env_options)}, "root": main.root,
                "manifest_dir": main.shared_dir(paimon.MANIFEST_DIR),
                "batch_size": plans.delete_batch_size(main.file_io, self.request.batch_size),
                **({"trash": kept.spec()} if (kept := trash.active()) is not None else {}), **extra}


def is_null(name: str) -> Column:
    return F.col(name).isNull()


def error_sentinel(name_col: str) -> Column:
    """``name_col``, or :data:`ERROR_NAME` on an error row (so the row survives a semi-join)."""
    return F.when(F.col("error_kind").isNotNull(), F.lit(ERROR_NAME)).otherwise(F.col(name_col))


def short_error(error: BaseException) -> str:
    """The line of a Spark error that names the executor's exception (at most 500 characters)."""
    text = str(error).strip().splitlines()
    tail = [line for line in text if "Error" in line or "Exception" in line]
    return (tail[-1] if tail else (text[0] if text else type(error).__name__))[:500]


#: Seconds per planning phase of the current run (copied into ``RunResult.timings``).
PHASES: dict[str, float] = {}


def _fix_for(error: BaseException) -> str:
    """What to do about a planning stage's failure: ship the package when the executors lack it,
    else look at storage access (the usual cause)."""
    if "No module named 'tablekeeper" in str(error):
        return ("nothing was deleted; the executors cannot import tablekeeper: ship it (spark-submit --py-files "
                "tablekeeper.zip, or an image with it installed; on Spark Connect the job adds it itself) and rerun")
    return "nothing was deleted; check storage access from the executors and rerun"


def planning(fn: Callable[[], _T], what: str) -> _T:
    """Run a planning action: an executor failure (after Spark's retries) fails closed."""
    t0 = time.perf_counter()
    try:
        return fn()
    except errors.TablekeeperError:
        raise
    except Exception as e:
        raise errors.IncompleteProtectionSetError(f"{what} failed in Spark: {short_error(e)}", fix=_fix_for(e)) from e
    finally:
        PHASES[what] = PHASES.get(what, 0.0) + time.perf_counter() - t0
        log.debug("%s: %.2fs", what, time.perf_counter() - t0)
