"""``PaimonMaintenanceRun`` spec: one auditable maintenance execution (operator-design.md §4.6).

Created by the operator's scheduler (with the effective policy frozen into ``parameters``) or by
hand for one-off work. The whole spec is immutable once created. One run does one ``type`` of
work; a table runs at most one at a time.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from tablekeeper.core import values
from tablekeeper.core.policy.common import ObjectReference, RunEngine, SpecModel
from tablekeeper.core.policy.specs.retention import RetentionSpec
from tablekeeper.core.policy.specs.tag import check_branch_ref, check_tag_name
from tablekeeper.core.policy.validation import InvalidSpecError

__all__ = ["RunType", "RollbackTarget", "RunParameters", "PaimonMaintenanceRunSpec"]

RunType = Literal[
    "ExpireSnapshots",
    "ExpirePartitions",
    "ExpireTags",
    "ExpireConsumers",
    "RemoveOrphanFiles",
    "Check",
    "RemoveMissingFiles",
    "Undo",
    "FastForward",
    "Rollback",
    "Compact",
]

class RollbackTarget(SpecModel):
    """Where a Rollback run moves the branch: exactly one of ``tag`` or ``snapshotId``. The run
    restores the target as the latest snapshot (Paimon's rollback_to_as_latest), deleting nothing."""

    tag: str | None = Field(default=None, description="Roll back to this tag.")
    snapshot_id: int | None = Field(default=None, ge=1, description="Roll back to this snapshot id.")
    keep_as_tag: str | None = Field(
        default=None, description="Tag the latest snapshot with this name before rolling back (kept until deleted).")

    @field_validator("tag", "keep_as_tag")
    @classmethod
    def _tag(cls, value: str | None) -> str | None:
        return None if value is None else check_tag_name(value)

    @model_validator(mode="after")
    def _one(self) -> RollbackTarget:
        if (self.tag is None) == (self.snapshot_id is None):
            raise InvalidSpecError("rollbackTo needs exactly one of tag or snapshotId",
                                   fix="keep exactly one of tag or snapshotId")
        return self


class RunParameters(SpecModel):
    """Inputs of the run, frozen at creation."""

    retention: RetentionSpec | None = Field(
        default=None,
        description="The effective retention policy frozen at creation (the operator fills it in). Absent = the "
        "table's effective policy when the run starts, recorded in status.",
    )
    dry_run: bool | None = Field(
        default=None,
        description="Plan and report only, change nothing. Absent = true for RemoveOrphanFiles (and the policy's "
        "orphanFiles.dryRun when retention is given) and RemoveMissingFiles, false for the other types.",
    )
    rollback_to: RollbackTarget | None = Field(default=None, description="Target of a Rollback run (required there).")
    undo_run: str | None = Field(
        default=None, min_length=1, max_length=200, pattern=r"^[0-9A-Za-z][0-9A-Za-z._-]*$",
        description="The trash run an Undo run puts back (required there): the id a run with a window reports in "
        "status.result.trash.run.")


class PaimonMaintenanceRunSpec(SpecModel):
    """One maintenance execution on one table and branch."""

    table_ref: ObjectReference = Field(description="The PaimonTable (same namespace) to maintain.")
    branch: str = Field(
        default=values.MAIN_BRANCH,
        description="Branch to maintain; for FastForward, the branch merged into main. Default main.",
    )
    type: RunType = Field(
        description="ExpireSnapshots (includes decoupled changelog expiry), ExpirePartitions, ExpireTags, "
        "ExpireConsumers (consumers.expiration), RemoveOrphanFiles, Check (every view's files exist; every branch), "
        "RemoveMissingFiles (drop missing data files from the latest snapshot; dry run unless dryRun: false), "
        "Undo (put back what a run with a trash window removed), FastForward, Rollback (restore as latest, "
        "deleting nothing) or Compact (reserved: Spark engines only)."
    )
    parameters: RunParameters = Field(default_factory=RunParameters, description="Inputs frozen at creation.")
    engine: RunEngine | None = Field(
        default=None,
        description="Python, SparkOperator or SparkJob. Absent = resolved from the table's maintenance.engine "
        "when the run starts.",
    )
    active_deadline_seconds: int | None = Field(
        default=None, ge=1, description="Fail the run after this many seconds. Absent = the table's setting."
    )
    backoff_limit: int | None = Field(default=None, ge=0, description="Retries of a failed attempt. Absent = 0.")
    ttl_seconds_after_finished: int | None = Field(
        default=None, ge=0, description="Delete the finished run after this many seconds, e.g. 604800."
    )

    @field_validator("branch")
    @classmethod
    def _branch(cls, value: str) -> str:
        return check_branch_ref(value)

    @model_validator(mode="after")
    def _check(self) -> PaimonMaintenanceRunSpec:
        if self.type == "Rollback" and self.parameters.rollback_to is None:
            raise InvalidSpecError("a Rollback run needs parameters.rollbackTo",
                                   fix="set parameters.rollbackTo.tag or parameters.rollbackTo.snapshotId")
        if self.type != "Rollback" and self.parameters.rollback_to is not None:
            raise InvalidSpecError(f"parameters.rollbackTo is only used by Rollback runs, not {self.type}",
                                   fix="remove parameters.rollbackTo")
        if (self.type == "Undo") != (self.parameters.undo_run is not None):
            raise InvalidSpecError("parameters.undoRun is required for Undo runs and not allowed for other types",
                                   fix="set parameters.undoRun to the trash run id (status.result.trash.run) on an "
                                       "Undo run only")
        if self.type == "FastForward" and self.branch == values.MAIN_BRANCH:
            raise InvalidSpecError("FastForward merges a branch into main; branch is main",
                                   fix="set branch to the branch to fast-forward into main", fields=("branch",))
        if self.type == "Check" and self.branch != values.MAIN_BRANCH:
            raise InvalidSpecError("a Check run reads every branch of the table: remove branch",
                                   fix="remove branch (the report names the branch of each broken view)",
                                   fields=("branch",))
        if self.type == "Compact" and self.engine == "Python":
            raise InvalidSpecError("Compact has no Python implementation",
                                   fix="use engine SparkOperator or SparkJob", fields=("engine",))
        return self

    @property
    def effective_dry_run(self) -> bool:
        """Whether the run must only plan: explicit ``dryRun``, else true for RemoveMissingFiles (a
        repair that drops rows is shown first, as the CLI's), else the frozen policy's orphan dry
        run for RemoveOrphanFiles (default true), else false."""
        if self.parameters.dry_run is not None:
            return self.parameters.dry_run
        if self.type == "RemoveMissingFiles":
            return True
        if self.type != "RemoveOrphanFiles":
            return False
        retention = self.parameters.retention
        if retention is not None and retention.orphan_files is not None and retention.orphan_files.dry_run is not None:
            return retention.orphan_files.dry_run
        return True
