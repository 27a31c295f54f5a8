"""What every part of planning shares: the knobs (``ReconcileConfig``), the context of one table's
plan (``PlanContext``: target, observed state, records, effective policy, now, the writers' zone),
the writers' wall clock and plan sizes read from storage.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from tablekeeper.core import errors, paimon, plans, refs
from tablekeeper.core.policy import Duration
from tablekeeper.core.policy.effective import EffectivePolicy
from tablekeeper.core.reclaim import expire
from tablekeeper.core.storage import FileIO
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.state.desired import TableTarget, describe
from tablekeeper.reconcile.state.observe import TableState
from tablekeeper.reconcile.state.records import TableRecords

__all__ = ["INT_MAX", "POLICY_TRIGGER_LABEL", "ReconcileConfig", "PlanContext", "writer_zone", "wall_clock", "td", "with_sizes", "estimate_plan", "invalid_reason"]


INT_MAX = expire.INT_MAX
#: The label of PaimonTags the operator materialised for policy auto tags (value ``Policy``):
#: the policy still expires those tags; other declared tags are never count-expired.
POLICY_TRIGGER_LABEL = "tablekeeper.io/trigger-type"


@dataclass(frozen=True)
class ReconcileConfig:
    """Knobs of planning and applying.

    Attributes:
        spark_threshold_files: ``engine: Auto`` picks Spark for a maintenance step that deletes at
            least this many files (operator-design.md §7.7); in-process below.
        ignore_schedules: treat every maintenance step as due (a manual run).
        estimate: size maintenance steps and tag deletions (reads manifests); off = faster plans.
        max_batches: most expiration batches (``expireLimit`` snapshots / ``maxPerRun``
            partitions each) one apply runs for one table.
        table_options: plan ``SetTableOptions`` for ``enforcement: TableOptions|Both`` (the GitOps
            CLI; the operator's table controller enforces options itself, with drift status).
    """

    spark_threshold_files: int = 100_000
    ignore_schedules: bool = False
    estimate: bool = True
    max_batches: int = 100
    table_options: bool = False


def writer_zone(target: TableTarget) -> tzinfo | None:
    zone = target.writer_zone
    return ZoneInfo(zone) if zone else None


def wall_clock(now: datetime, zone: tzinfo | None) -> datetime:
    """The writers' wall clock at ``now``; UTC's when their zone is unknown."""
    return refs.local_wall_clock(now, zone or timezone.utc)


def td(value: Duration | None) -> timedelta | None:
    return None if value is None else value.to_timedelta()


def with_sizes(plan: plans.Plan, file_io: FileIO) -> plans.Plan:
    """``plan`` with the sizes the core planner did not know (data files) filled in, by listing
    each parent directory once; files that cannot be listed keep ``size=None``."""
    unknown: dict[str, set[str]] = {}
    for f in plan.files:
        if f.size is None:
            parent, _, name = f.path.rpartition("/")
            unknown.setdefault(parent, set()).add(name)
    if not unknown:
        return plan
    sizes: dict[str, int] = {}
    for parent, names in unknown.items():
        try:
            listing = file_io.list_dir(parent)
        except (FileNotFoundError, OSError):
            continue
        for status in listing:
            if not status.is_dir and status.name in names:
                sizes[status.path] = status.size
                sizes[f"{parent}/{status.name}"] = status.size
    steps: list[plans.Step] = []
    for step in plan.steps:
        if isinstance(step, plans.DeleteStep):
            steps.append(replace(step, files=tuple(
                replace(f, size=sizes.get(f.path)) if f.size is None and f.path in sizes else f
                for f in step.files)))
        else:
            steps.append(step)
    return replace(plan, steps=tuple(steps))


def estimate_plan(plan: plans.Plan, file_io: FileIO) -> A.Estimate:
    """Files and bytes a core plan deletes (sizes looked up where the planner had none)."""
    sized = with_sizes(plan, file_io)
    by_kind: dict[str, int] = {}
    for f in sized.files:
        by_kind[f.kind.value] = by_kind.get(f.kind.value, 0) + 1
    return A.Estimate(files=len(sized.files), bytes=sum(f.size or 0 for f in sized.files), by_kind=by_kind)


def invalid_reason(e: Exception) -> str:
    if isinstance(e, errors.TablekeeperError):
        return e.message + (f" (fix: {e.fix})" if e.fix else "")
    return f"{type(e).__name__}: {e}"


@dataclass
class PlanContext:
    target: TableTarget
    state: TableState
    records: TableRecords
    policy: EffectivePolicy
    now: datetime
    zone: tzinfo | None

    def base(self, branch: str = paimon.MAIN, resource: Any = None, owner: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"warehouse": self.target.location.warehouse,
                               "table": self.target.location.identifier, "branch": branch}
        if resource is not None:
            out["resource"] = resource.ref
            out["source"] = resource.file
        elif owner is not None:
            out["resource"] = owner
        return out

    def policy_of(self, *paths: str) -> dict[str, str]:
        return describe(self.policy.values, self.policy.sources, paths)
