"""``metav1.Condition`` building and the stable reason vocabulary (operator-design.md §3, §5).

Condition types: ``Ready`` (summary), ``Synced`` (last reconcile result), the domain conditions
``PolicyCompliant`` and ``MaintenanceHealthy`` (tables), ``ReconciliationPaused`` and ``Unmanaged``
(present only while annotated), ``Complete`` / ``Failed`` (maintenance runs), and kstatus's
``Reconciling`` / ``Stalled`` (present only while True, derived from the others by :func:`kstatus`).

Reasons are a stable API: CamelCase single words, never free text (details go into ``message``).
:class:`Reason` lists every reason the operator writes; ``docs/operator.md`` documents them.

:func:`merge` keeps ``lastTransitionTime`` of a condition whose ``status`` did not change, so a
reconcile that finds nothing new produces the exact same list and no status write.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from tablekeeper.core import values

__all__ = [
    "READY",
    "SYNCED",
    "POLICY_COMPLIANT",
    "MAINTENANCE_HEALTHY",
    "PAUSED",
    "UNMANAGED",
    "COMPLETE",
    "FAILED",
    "RECONCILING",
    "STALLED",
    "kstatus",
    "Reason",
    "REASONS",
    "Status",
    "condition",
    "merge",
    "find",
]

READY = "Ready"
SYNCED = "Synced"
POLICY_COMPLIANT = "PolicyCompliant"
MAINTENANCE_HEALTHY = "MaintenanceHealthy"
CONSUMERS_HEALTHY = "ConsumersHealthy"
PAUSED = "ReconciliationPaused"
UNMANAGED = "Unmanaged"
COMPLETE = "Complete"
FAILED = "Failed"
#: kstatus's "abnormal-true" conditions, present only while True (derived by :func:`kstatus`)
RECONCILING = "Reconciling"
STALLED = "Stalled"

Status = Literal["True", "False", "Unknown"]
_REASON_SHAPE = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


class Reason:
    """Every condition reason the operator writes (CamelCase, stable)."""

    # success / lifecycle
    RECONCILED = "Reconciled"
    RECONCILE_SUCCESS = "ReconcileSuccess"
    CREATED = "Created"
    ADOPTED = "Adopted"
    CONNECTED = "Connected"
    CREATING = "Creating"
    PENDING = "Pending"
    DELETING = "Deleting"
    ALL_JOBS_SUCCEEDED = "AllJobsSucceeded"
    COMPLIANT = "Compliant"
    SUCCEEDED = "Succeeded"
    RUNNING = "Running"
    # identity / spec
    RESOURCE_CONFLICT = "ResourceConflict"
    NOT_SUPPORTED = "NotSupported"
    INVALID_SPEC = "InvalidSpec"
    ALREADY_EXISTS_DIFFERENT_SNAPSHOT = "AlreadyExistsDifferentSnapshot"
    ALREADY_EXISTS = "AlreadyExists"
    ALREADY_EXISTS_DIFFERENT_HISTORY = "AlreadyExistsDifferentHistory"
    SNAPSHOT_ALREADY_AUTO_TAGGED = "SnapshotAlreadyAutoTagged"
    # Paimon state
    SNAPSHOT_NOT_FOUND = "SnapshotNotFound"
    SNAPSHOT_EXPIRED = "SnapshotExpired"
    TABLE_NOT_FOUND = "TableNotFound"
    TABLE_NOT_READY = "TableNotReady"
    TAG_NOT_FOUND = "TagNotFound"
    TAG_EXPIRED = "TagExpired"
    BRANCH_LOST = "BranchLost"
    BRANCH_NOT_FOUND = "BranchNotFound"
    BRANCH_EXPIRED = "BranchExpired"
    # connectivity
    CATALOG_UNREACHABLE = "CatalogUnreachable"
    AUTH_FAILED = "AuthFailed"
    ENGINE_ERROR = "EngineError"
    # policy
    CLAMPED = "Clamped"
    POLICY_VIOLATION = "PolicyViolation"
    POLICY_NOT_FOUND = "PolicyNotFound"
    RECONCILE_PAUSED = "ReconcilePaused"
    RECONCILE_ERROR = "ReconcileError"
    PAUSED = "Paused"
    UNMANAGED = "Unmanaged"
    # maintenance
    MAINTENANCE_FAILED = "MaintenanceFailed"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    TABLE_LOCKED = "TableLocked"
    DELETE_FAILED = "DeleteFailed"
    SPARK_SUBMISSION_FAILED = "SparkSubmissionFailed"
    SPARK_APPLICATION_MISSING = "SparkApplicationMissing"
    SPARK_JOB_FAILED = "SparkJobFailed"
    RESULT_ARTIFACT_MISSING = "ResultArtifactMissing"
    RESULT_ARTIFACT_INVALID = "ResultArtifactInvalid"
    # tablekeeper additions
    PROTECTED_BY_BRANCH = "ProtectedByBranch"
    BRANCH_IN_USE = "BranchInUse"
    BRANCH_PROTECTED = "BranchProtected"
    TAGS_STILL_NEEDED = "TagsStillNeeded"
    HAS_DEPENDENT_BRANCHES = "HasDependentBranches"
    TIME_ZONE_UNSET = "TimeZoneUnset"
    NAMESPACE_NOT_ALLOWED = "NamespaceNotAllowed"
    CATALOG_NOT_FOUND = "CatalogNotFound"
    CATALOG_NOT_READY = "CatalogNotReady"
    TABLE_OUTSIDE_WAREHOUSE = "TableOutsideWarehouse"
    CONFLICTING_TABLE_OPTION = "ConflictingTableOption"
    TABLE_OPTIONS_APPLIED = "TableOptionsApplied"
    DRIFT_CORRECTED = "DriftCorrected"
    TABLE_BROKEN = "TableBroken"
    CONSUMER_PINS_HISTORY = "ConsumerPinsHistory"
    CONSUMERS_WITHIN_LIMIT = "ConsumersWithinLimit"


#: Every reason, for documentation and tests.
REASONS: frozenset[str] = frozenset(v for k, v in vars(Reason).items() if k.isupper() and isinstance(v, str))


def condition(type_: str, status: Status | bool, reason: str, message: str = "", *,
              generation: int | None, now: datetime) -> dict[str, Any]:
    """One ``metav1.Condition``.

    Raises:
        ValueError: ``reason`` is not a CamelCase word (a programming error).
    """
    if not _REASON_SHAPE.match(reason):
        raise ValueError(f"condition reason {reason!r} is not a CamelCase word")
    if isinstance(status, bool):
        status = "True" if status else "False"
    out: dict[str, Any] = {"type": type_, "status": status, "reason": reason, "message": message[:32768],
                           "lastTransitionTime": values.rfc3339(now)}
    if generation is not None:
        out["observedGeneration"] = int(generation)
    return out


def find(conditions: Iterable[Mapping[str, Any]] | None, type_: str) -> Mapping[str, Any] | None:
    """The condition of ``type_``, if present."""
    for cond in conditions or ():
        if cond.get("type") == type_:
            return cond
    return None


def merge(old: Sequence[Mapping[str, Any]] | None, new: Sequence[Mapping[str, Any]],
          *, keep: Iterable[str] = ()) -> list[dict[str, Any]]:
    """``new`` with ``lastTransitionTime`` carried over from ``old`` for every condition whose
    ``status`` did not change; conditions of ``old`` whose type is in ``keep`` and not in ``new``
    are kept as they are. Order: ``new``'s, then the kept ones."""
    previous = {c.get("type"): c for c in old or ()}
    out: list[dict[str, Any]] = []
    for cond in new:
        item = dict(cond)
        before = previous.get(item["type"])
        if before is not None and before.get("status") == item["status"] and before.get("lastTransitionTime"):
            item["lastTransitionTime"] = before["lastTransitionTime"]
        out.append(item)
    types = {c["type"] for c in out}
    kept = set(keep)
    out.extend(dict(c) for t, c in previous.items() if t is not None and t in kept and t not in types)
    return out


def kstatus(conds: Sequence[Mapping[str, Any]], *, state: Any = None, phase: Any = None,
            transient: Container[str] = ()) -> list[dict[str, Any]]:
    """kstatus's abnormal-true conditions for ``conds`` (without any ``Reconciling``/``Stalled``).

    Why: Flux (kstatus) judges a custom resource by ``observedGeneration`` and these two
    conditions only; without them it calls a failed or still-working object ``Current``. They are
    derived here, in one place, from what the object already says (docs/health-checks.md):

    - ``Stalled=True``: a permanent failure: ``status.state`` or ``status.phase`` ``Failed``, or a
      run's ``Failed=True``; reason and message of the ``Ready`` (runs: ``Failed``) condition.
      Never for a reason in ``transient`` (a dependency not ready recovers by itself), except a
      run's: a failed run is over;
    - ``Reconciling=True``: otherwise, while ``Ready`` is not True (runs: neither ``Complete``
      nor ``Failed`` True): creating, retrying, waiting;
    - neither when the object is done (``Ready=True``, ``Complete=True``), nor while it is hands
      off (``ReconciliationPaused`` or ``Unmanaged`` True: nothing is in progress, by request).
    """
    by_type = {c.get("type"): c for c in conds}
    if any((by_type.get(t) or {}).get("status") == "True" for t in (PAUSED, UNMANAGED)):
        return []
    run = COMPLETE in by_type or FAILED in by_type
    source = by_type.get(FAILED if run else READY)
    if source is None:
        return []
    failed = (run and source.get("status") == "True") or "Failed" in (state, phase)
    if failed and not run and source.get("reason") in transient:
        failed = False
    if run and not failed and (by_type.get(COMPLETE) or {}).get("status") == "True":
        return []
    if not run and not failed and source.get("status") == "True":
        return []
    if run and not failed:
        source = by_type.get(COMPLETE) or source
    out = {"type": STALLED if failed else RECONCILING, "status": "True",
           "reason": source.get("reason") or ("Failed" if failed else "Progressing"),
           "message": source.get("message") or "", "lastTransitionTime": source.get("lastTransitionTime")}
    if source.get("observedGeneration") is not None:
        out["observedGeneration"] = source["observedGeneration"]
    return [out]
