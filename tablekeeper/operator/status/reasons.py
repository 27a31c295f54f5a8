"""What every condition reason means for the user: its kind and what to do (docs/operator.md's
table of reasons is this table; a test keeps them equal).

Kinds, as kstatus and Argo CD read an object:

- ``Success``: the object is as declared (``Ready=True``, a run ``Complete=True``);
- ``Progress``: work under way or held on purpose (creating, a run pending or running, paused);
- ``Transient``: something outside the object is not there yet or not reachable (its catalog,
  its table, a tag it starts from, the warehouse); the operator retries and the periodic check
  keeps looking, so the object is ``Reconciling=True`` and recovers by itself: never ``Stalled``;
- ``Permanent``: only an edit by the user changes it (the field to change is named); the object
  is ``Stalled=True`` (``state: Failed``), or ``Lost`` for a tag or branch that cannot come back.

A maintenance run is a job: once its ``Failed`` condition is True it is over whatever the
reason (create a new run); the kinds describe tags, branches, tables, catalogs and policies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tablekeeper.operator.status.conditions import Reason

__all__ = ["Kind", "ReasonGuide", "GUIDE", "TRANSIENT", "PERMANENT", "is_transient"]

Kind = Literal["Success", "Progress", "Transient", "Permanent"]


@dataclass(frozen=True)
class ReasonGuide:
    """A reason's kind and what the user does about it."""

    kind: Kind
    what_to_do: str


def _g(kind: Kind, what_to_do: str) -> ReasonGuide:
    return ReasonGuide(kind, what_to_do)


R = Reason
#: Every reason the operator writes -> its kind and what to do (docs/operator.md, "Reasons").
GUIDE: dict[str, ReasonGuide] = {
    # success
    R.RECONCILED: _g("Success", "nothing: the object is as declared"),
    R.RECONCILE_SUCCESS: _g("Success", "nothing: the last reconcile worked (`Synced=True`)"),
    R.CREATED: _g("Success", "nothing: the operator created the tag or branch"),
    R.ADOPTED: _g("Success", "nothing: an identical existing tag or branch is now managed"),
    R.CONNECTED: _g("Success", "nothing: the catalog's warehouse answers"),
    R.COMPLIANT: _g("Success", "nothing: the table's policy is within every constraint"),
    R.ALL_JOBS_SUCCEEDED: _g("Success", "nothing: the table's last maintenance runs succeeded"),
    R.SUCCEEDED: _g("Success", "nothing: the maintenance run succeeded"),
    R.TABLE_OPTIONS_APPLIED: _g("Success", "nothing: the managed table options were written"),
    R.DRIFT_CORRECTED: _g("Success", "nothing: an out-of-band change of a managed table option was reverted"),
    R.CONSUMERS_WITHIN_LIMIT: _g("Success", "nothing: no consumer holds more snapshots than "
                                            "`consumers.warnAboveSnapshots`"),
    # progress
    R.CREATING: _g("Progress", "wait: ownership is recorded and the change follows"),
    R.PENDING: _g("Progress", "wait: the object cannot be worked on yet; the message says what it waits for"),
    R.RUNNING: _g("Progress", "wait: the maintenance run is running"),
    R.DELETING: _g("Progress", "wait: the object's storage is being removed"),
    R.PAUSED: _g("Progress", "remove the `tablekeeper.io/paused` annotation to resume"),
    R.RECONCILE_PAUSED: _g("Progress", "remove the `tablekeeper.io/paused` annotation to resume"),
    R.UNMANAGED: _g("Progress", "remove the `tablekeeper.io/managed` annotation (or set it to \"true\") to "
                                 "manage the object again"),
    # transient: recovers by itself
    R.CATALOG_NOT_FOUND: _g("Transient", "create the catalog `spec.catalogRef` names (or fix `spec.catalogRef`)"),
    R.CATALOG_NOT_READY: _g("Transient", "fix the catalog: its own `Ready` condition says why; the table "
                                         "follows within seconds"),
    R.CATALOG_UNREACHABLE: _g("Transient", "make the warehouse reachable (path, endpoint, network); retried "
                                           "with backoff"),
    R.AUTH_FAILED: _g("Transient", "create or fix the Secret `spec.credentialsSecretRef` names"),
    R.TABLE_NOT_READY: _g("Transient", "fix the PaimonTable `spec.tableRef` names: its own `Ready` condition "
                                       "says why; the object follows within seconds"),
    R.TABLE_NOT_FOUND: _g("Transient", "create the Paimon table (or fix `spec.database`/`spec.table`); a "
                                       "maintenance run whose PaimonTable does not exist fails after a minute"),
    R.TAG_NOT_FOUND: _g("Transient", "create the tag `spec.fromTag` names (a PaimonTag); the branch follows"),
    R.BRANCH_NOT_FOUND: _g("Transient", "create the branch `spec.branch` names; the object follows"),
    R.SNAPSHOT_NOT_FOUND: _g("Transient", "wait for the snapshot to be committed, or edit `spec.snapshotId` "
                                          "(the message names the snapshots there are)"),
    R.POLICY_NOT_FOUND: _g("Transient", "create the policy `spec.policyRefs` names (or remove it from the list)"),
    R.TABLE_LOCKED: _g("Transient", "wait: another maintainer or run holds the table"),
    R.RECONCILE_ERROR: _g("Transient", "wait: retried; `Ready` names the cause"),
    R.ENGINE_ERROR: _g("Transient", "retried with backoff; if it stays, the message and the operator's log "
                                    "say what failed"),
    R.MAINTENANCE_FAILED: _g("Transient", "see the failed run (`kubectl get paimonmaintenanceruns`); the next "
                                          "scheduled run tries again"),
    R.DELETE_FAILED: _g("Transient", "make the warehouse reachable; the deletion is retried and the finalizer "
                                     "stays until it succeeds"),
    R.BRANCH_IN_USE: _g("Transient", "stop the writers or consumers of the branch; the drop is retried"),
    R.TAGS_STILL_NEEDED: _g("Transient", "delete the tags that still need the branch first"),
    R.HAS_DEPENDENT_BRANCHES: _g("Transient", "delete the branches created from this one first"),
    # permanent: needs an edit
    R.INVALID_SPEC: _g("Permanent", "edit the field the message names"),
    R.NOT_SUPPORTED: _g("Permanent", "edit the field the message names: the setting is not implemented"),
    R.RESOURCE_CONFLICT: _g("Permanent", "delete one of the two objects: the older one manages the table, tag "
                                         "or branch"),
    R.NAMESPACE_NOT_ALLOWED: _g("Permanent", "edit the ClusterPaimonCatalog's `spec.allowedNamespaces` or the "
                                             "table's `spec.catalogRef`"),
    R.TABLE_OUTSIDE_WAREHOUSE: _g("Permanent", "edit `spec.database`/`spec.table`: the table resolves outside "
                                               "the catalog's warehouse (a symbolic link)"),
    R.ALREADY_EXISTS: _g("Permanent", "edit `spec.tagName`/`spec.branchName`, or delete the existing object "
                                      "outside tablekeeper"),
    R.ALREADY_EXISTS_DIFFERENT_SNAPSHOT: _g("Permanent", "edit `spec.snapshotId` to the existing tag's snapshot, "
                                                         "or `spec.tagName`"),
    R.ALREADY_EXISTS_DIFFERENT_HISTORY: _g("Permanent", "edit `spec.branchName` or the branch's origin "
                                                        "(`spec.fromTag`/`spec.fromSnapshotId`)"),
    R.SNAPSHOT_ALREADY_AUTO_TAGGED: _g("Permanent", "edit `spec.snapshotId` or `spec.tagName`: the snapshot "
                                                    "already has an automatic tag"),
    R.SNAPSHOT_EXPIRED: _g("Permanent", "edit `spec.snapshotId` to a retained snapshot, or delete the object "
                                        "(the snapshot is gone: a tag is never recreated elsewhere)"),
    R.TAG_EXPIRED: _g("Permanent", "delete the object: its tag expired by its TTL (`spec.timeRetained`)"),
    R.BRANCH_LOST: _g("Permanent", "delete the object: the branch was dropped out of band and cannot be "
                                   "recreated as it was"),
    R.BRANCH_EXPIRED: _g("Permanent", "delete the object: its branch expired by its TTL"),
    R.PROTECTED_BY_BRANCH: _g("Permanent", "nothing is deleted: a branch forks from the tag, so it stays in "
                                           "storage; delete those branches first, then the tag"),
    R.BRANCH_PROTECTED: _g("Permanent", "remove the branch from the table's protected branches to drop it"),
    R.CLAMPED: _g("Permanent", "edit the table's `spec.retention` within the cluster policy's `constraints` "
                               "(the clamped value is in effect meanwhile)"),
    R.POLICY_VIOLATION: _g("Permanent", "edit `spec.retention` (or the policy) within the cluster policy's "
                                        "`constraints`"),
    R.CONFLICTING_TABLE_OPTION: _g("Permanent", "edit the policy or `spec.protectedOptions`: a managed option is "
                                                "protected"),
    R.TABLE_BROKEN: _g("Permanent", "restore the files the message names, or run a `RemoveMissingFiles` run "
                                    "(docs/bad-days.md); a tag that reads them must be deleted first"),
    R.CONSUMER_PINS_HISTORY: _g("Permanent", "stop or delete the consumer the message names "
                                             "(`tablekeeper consumer expire/clear/reset`), or set "
                                             "`consumers.expiration`"),
    R.TIME_ZONE_UNSET: _g("Permanent", "set `spec.timeZone` (table) or `spec.writerTimeZone` (catalog)"),
    R.DEADLINE_EXCEEDED: _g("Permanent", "raise `spec.activeDeadlineSeconds` and create a new run"),
    R.SPARK_SUBMISSION_FAILED: _g("Permanent", "fix the Spark settings the message names and create a new run"),
    R.SPARK_APPLICATION_MISSING: _g("Permanent", "create a new run: its SparkApplication or Job was deleted"),
    R.SPARK_JOB_FAILED: _g("Permanent", "read the Spark driver's log and create a new run"),
    R.RESULT_ARTIFACT_MISSING: _g("Permanent", "read the Spark driver's log and create a new run"),
    R.RESULT_ARTIFACT_INVALID: _g("Permanent", "read the Spark driver's log and create a new run"),
}

TRANSIENT: frozenset[str] = frozenset(r for r, g in GUIDE.items() if g.kind == "Transient")
PERMANENT: frozenset[str] = frozenset(r for r, g in GUIDE.items() if g.kind == "Permanent")


def is_transient(reason: str | None) -> bool:
    """Whether ``reason`` recovers without an edit (never ``Stalled``)."""
    return reason in TRANSIENT
