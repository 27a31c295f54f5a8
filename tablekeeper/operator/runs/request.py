"""What a maintenance run asks an engine for and what it gets back (operator-design.md §7.7).

The run controller (:mod:`tablekeeper.operator.runs.controller`) hands a :class:`RunRequest` to an
:class:`Engine` and records the :class:`RunResult`. The in-process engines
(:mod:`tablekeeper.operator.runs.engines`, :mod:`tablekeeper.operator.runs.verbs`) and the Spark launch
(:mod:`tablekeeper.operator.runs.spark`) all depend on these types, never on each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from tablekeeper import reconcile
from tablekeeper.core.policy.specs import PaimonMaintenanceRunSpec
from tablekeeper.operator.cluster import scopes
from tablekeeper.operator.runs.report import RunReport

__all__ = ["RUN_KINDS", "RunRequest", "RunResult", "Engine", "dry_run_of"]

#: Run type -> the planner action kinds it carries out.
RUN_KINDS: Mapping[str, tuple[str, ...]] = {
    "ExpirePartitions": ("ExpirePartitions",),
    "ExpireConsumers": ("ExpireConsumers",),
    "ExpireSnapshots": ("ExpireSnapshots", "ExpireChangelog"),
    "ExpireTags": ("ExpireTags",),
    "RemoveOrphanFiles": ("CleanOrphans",),
}


@dataclass(frozen=True)
class RunRequest:
    """What one run asks for."""

    name: str
    spec: PaimonMaintenanceRunSpec
    scope: scopes.Scope
    opener: reconcile.Opener
    now: datetime
    #: None: the run's ``parameters.dryRun``, else for RemoveOrphanFiles the policy's ``orphanFiles.dryRun``.
    dry_run: bool | None = None


@dataclass
class RunResult:
    """How a run ended: its report (``status.result``, None when it did not get that far) plus a
    condition reason and message."""

    succeeded: bool
    reason: str
    message: str
    report: RunReport | None = None
    policy: dict[str, str] = field(default_factory=dict)


class Engine(Protocol):
    """Executes a run (blocking; called in a worker thread under the table's lock)."""

    name: str

    def run(self, request: RunRequest) -> RunResult: ...


def dry_run_of(spec: PaimonMaintenanceRunSpec, policy: Mapping[str, Any]) -> bool:
    """The run's dry run (:attr:`PaimonMaintenanceRunSpec.effective_dry_run`), where a
    RemoveOrphanFiles run without ``dryRun`` follows the table's effective ``orphanFiles.dryRun``
    (default true) rather than the policy frozen into the run."""
    if spec.parameters.dry_run is None and spec.type == "RemoveOrphanFiles":
        return bool(policy.get("orphanFiles.dryRun", True))
    return spec.effective_dry_run
