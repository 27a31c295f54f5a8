"""Reconciliation: desired state (manifests / CRs) + actual table state + now -> ordered actions
-> apply. Shared by the CLI's ``plan``/``apply -f DIR`` and the operator; neither re-implements
decisions. Sits between the front ends and ``tablekeeper.core`` (import-linter: it never imports
``tablekeeper.cli`` or ``tablekeeper.operator``; core never imports it).

Packages: :mod:`state` (``documents``: YAML documents -> validated objects; ``desired``: objects
-> per-table targets; ``observe``: storage -> table state; ``records``: ownership and run records),
:mod:`planners` (one module per topic: ``context``, ``tags``, ``branches``, ``auto_tags``,
``objects``, ``maintenance`` with ``enabled_jobs`` and ``schedules``, ``table_options``) and
:mod:`applier` (``results``, ``steps``: one handler per action kind, ``passes``: apply and
converge). Modules: :mod:`actions` (the action models), :mod:`planner` (the entry: plan and
plan_table), :mod:`opener` (one FileIO per warehouse). See docs/gitops.md.
"""

from tablekeeper.reconcile import actions
from tablekeeper.reconcile.applier import ActionResult, ApplyResult, ConvergeResult, apply, converge
from tablekeeper.reconcile.opener import Opener
from tablekeeper.reconcile.planner import ReconcilePlan, TablePlan, plan
from tablekeeper.reconcile.planners.context import ReconcileConfig
from tablekeeper.reconcile.planners.objects import plan_objects
from tablekeeper.reconcile.state.desired import DesiredState, TableLocation, TableTarget, build_desired_state
from tablekeeper.reconcile.state.documents import ManifestError, Resource, collect_manifests, load_manifests
from tablekeeper.reconcile.state.observe import TableState, observe
from tablekeeper.reconcile.state.records import MemoryRecordStore, RecordStore, TableRecords, WarehouseRecordStore

__all__ = [
    "actions",
    "ActionResult",
    "ApplyResult",
    "ConvergeResult",
    "DesiredState",
    "ManifestError",
    "MemoryRecordStore",
    "Opener",
    "ReconcileConfig",
    "ReconcilePlan",
    "RecordStore",
    "Resource",
    "TableLocation",
    "TableRecords",
    "TableState",
    "TablePlan",
    "TableTarget",
    "WarehouseRecordStore",
    "apply",
    "build_desired_state",
    "converge",
    "load",
    "load_manifests",
    "observe",
    "plan",
    "plan_objects",
]


def load(paths: list[str], *, base_dir: str | None = None, relative_to_manifests: bool = False) -> DesiredState:
    """Read manifests and build the desired state.

    Raises:
        ManifestError: listing every problem of every file at once (syntax, fields, references).
        InvalidInputError: a path does not exist.
    """
    loaded = collect_manifests(paths, base_dir=base_dir, relative_to_manifests=relative_to_manifests)
    return build_desired_state(loaded.resources, problems=loaded.problems, invalid=loaded.invalid)
