"""A maintenance run's context, resolved once per step and handed down.

Every step of a ``PaimonMaintenanceRun`` (``start``, ``execute``, the periodic check) needs the
same facts about the run's table: the PaimonTable as indexed, the engine asked for (the run's
``engine``, else the table's ``maintenance.engine``, else ``Auto``), the deadline (the run's
``activeDeadlineSeconds``, else the table's ``maintenance.activeDeadlineSeconds``, else 2 h) and,
where the step works on storage, the table resolved to its catalog, credentials and warehouse
connection (:class:`~tablekeeper.operator.context.TableContext`). :func:`resolve` gathers them
into one frozen :class:`RunContext`; the controller, the Spark launch and the in-process engine
read it, and none of them asks the view again.

A table that cannot be resolved (missing, invalid, its catalog not ready) is not an error here:
the context carries the reason (:attr:`RunContext.problem`), and each step decides what it means
for it (``start`` waits, ``execute`` fails or retries, the check retries reading the artifact).
The effective policy is read with the table's observation, never ahead of it: by the engine
under the table's lock when the run changes the table, outside the lock only for decisions that
change nothing (work left to the writers, what a Spark job is asked to do).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tablekeeper.core import errors as core_errors
from tablekeeper.core.policy.specs import PaimonMaintenanceRunSpec, PaimonTableSpec
from tablekeeper.operator.cluster.view import Obj, View, parse
from tablekeeper.operator.context import TableContext, child_context
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import OperatorError

__all__ = ["RunContext", "DEFAULT_DEADLINE_SECONDS", "of_view", "with_table", "resolve"]

#: ``activeDeadlineSeconds`` when neither the run nor its table sets one.
DEFAULT_DEADLINE_SECONDS = 7200


@dataclass(frozen=True)
class RunContext:
    """What a run's step knows about the run and its table (see the module docstring)."""

    run: Obj
    spec: PaimonMaintenanceRunSpec
    #: The run's PaimonTable as indexed (None: it does not exist).
    table_obj: Obj | None
    #: Its validated spec (None: no table, or an invalid spec, which the table reports itself).
    table_spec: PaimonTableSpec | None
    #: The engine asked for: ``Python``, ``Auto``, ``SparkOperator`` or ``SparkJob``.
    engine: str
    deadline_seconds: int
    #: The table resolved for storage work (None until :func:`with_table`, or when it cannot be).
    table: TableContext | None = None
    #: Why ``table`` could not be resolved.
    problem: OperatorError | None = None

    @property
    def table_name(self) -> str:
        return self.spec.table_ref.name

    @property
    def table_label(self) -> str:
        """``namespace/table``: the metrics' table label."""
        return f"{self.run.namespace}/{self.table_name}"

    def require_table(self) -> TableContext:
        """The resolved table.

        Raises:
            OperatorError: ``TableNotReady`` (temporary): why it could not be resolved.
        """
        if self.table is None:
            raise self.problem or OperatorError(Reason.TABLE_NOT_READY, "the run's table was not resolved",
                                                 temporary=True)
        return self.table


def of_view(view: View, run: Obj, spec: PaimonMaintenanceRunSpec) -> RunContext:
    """The run's context from the view alone (no credentials, no storage connection)."""
    table = view.get("PaimonTable", run.namespace, spec.table_ref.name)
    maintenance = (table.spec.get("maintenance") or {}) if table is not None else {}
    deadline = spec.active_deadline_seconds
    if deadline is None:
        table_deadline = maintenance.get("activeDeadlineSeconds")
        deadline = int(table_deadline) if isinstance(table_deadline, int) else DEFAULT_DEADLINE_SECONDS
    engine = spec.engine if spec.engine is not None else str(maintenance.get("engine") or "Auto")
    table_spec: PaimonTableSpec | None = None
    if table is not None:
        try:
            parsed = parse(table)
        except core_errors.InvalidInputError:
            parsed = None  # the table reports that itself
        table_spec = parsed if isinstance(parsed, PaimonTableSpec) else None
    return RunContext(run, spec, table, table_spec, engine, deadline)


async def with_table(rt: Runtime, view: View, ctx: RunContext) -> RunContext:
    """``ctx`` with its table resolved for storage work (or the reason it cannot be)."""
    try:
        return replace(ctx, table=await child_context(rt, view, ctx.run, ctx.table_name), problem=None)
    except OperatorError as e:
        return replace(ctx, table=None, problem=e)


async def resolve(rt: Runtime, view: View, run: Obj, spec: PaimonMaintenanceRunSpec) -> RunContext:
    """The run's whole context: :func:`of_view`, then :func:`with_table`."""
    return await with_table(rt, view, of_view(view, run, spec))
