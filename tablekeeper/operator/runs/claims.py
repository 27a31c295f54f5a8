"""Which run holds a table: the in-process claim that makes ``concurrencyPolicy: Forbid`` hold
(one active run per table; a second waits, ``TableLocked``), and the Spark runs whose job may be
changing the table now (tag and branch changes, and policy tags, wait for those, as they wait for
the table's lock during an in-process run).

Claims live in the operator process (:attr:`Runtime.run_claims`): a start step claims the table
without an ``await`` between its check and the claim, so the claim is atomic in the event loop.
"""

from __future__ import annotations

from tablekeeper.operator.cluster.view import Obj, View
from tablekeeper.operator.runtime import Runtime

__all__ = ["SPARK_LOCKING_RUN_TYPES", "holder", "claim", "release", "spark_run_in_flight"]

#: Run types whose Spark job decides from the tags and branches it read what to delete: while one
#: is in flight, tag and branch changes of its table wait (in process, the table's lock does it).
SPARK_LOCKING_RUN_TYPES = frozenset({"ExpireSnapshots", "RemoveOrphanFiles"})
#: ``status.engine`` of a Running run that launches (or may launch) Spark: the start step records
#: the requested engine; an in-process run records ``Python``.
_SPARK_ENGINES = frozenset({"Auto", "SparkOperator", "SparkJob"})
_OVER = frozenset({"Succeeded", "Failed"})


def holder(rt: Runtime, namespace: str | None, table: str) -> str | None:
    """The uid of the run that claimed PaimonTable ``namespace/table``, if any."""
    return rt.run_claims.get((namespace, table))


def claim(rt: Runtime, run: Obj, table: str) -> None:
    """``run`` holds its table from now on (until :func:`release`)."""
    rt.run_claims[(run.namespace, table)] = run.uid


def release(rt: Runtime, run: Obj, table: str) -> None:
    """``run`` no longer holds its table (no-op when another run holds it)."""
    key = (run.namespace, table)
    if rt.run_claims.get(key) == run.uid:
        del rt.run_claims[key]


def spark_run_in_flight(rt: Runtime, view: View, namespace: str | None, table: str) -> Obj | None:
    """The run of PaimonTable ``namespace/table`` whose Spark job may be changing the table now:
    an ``ExpireSnapshots`` / ``RemoveOrphanFiles`` run that is ``Running`` with a launched
    SparkApplication or Job, or with a Spark engine not yet resolved (``Auto`` may still launch),
    or that holds the table's run claim while Spark runs are on (started, status not seen yet)."""
    claimed = holder(rt, namespace, table)
    for run in view.children("PaimonMaintenanceRun", namespace, table):
        status = run.status
        if run.spec.get("type") not in SPARK_LOCKING_RUN_TYPES or status.get("phase") in _OVER:
            continue
        if status.get("phase") == "Running" and (status.get("sparkApplicationRef") or status.get("jobRef")
                                                 or status.get("engine") in _SPARK_ENGINES):
            return run
        if run.uid == claimed and rt.config.spark.enabled and run.spec.get("engine") != "Python":
            return run
    return None
