"""``PaimonBranch`` spec: one Paimon branch, owned by the CR (operator-design.md §4.4).

A branch starts from exactly one of ``fromTag``, ``fromSnapshotId`` (tablekeeper first creates a
protected fork tag, because Paimon has no create-from-snapshot since 0.8) or ``empty: true``
(schema only, no data). Requiring ``empty: true`` explicitly means a forgotten ``fromTag`` is an
error, not an empty branch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from tablekeeper.core import values
from tablekeeper.core.policy.common import AdoptionPolicy, DeletionPolicy, ObjectReference, SpecModel
from tablekeeper.core.policy.duration_field import Duration
from tablekeeper.core.policy.specs.tag import check_tag_name
from tablekeeper.core.policy.validation import InvalidSpecError

__all__ = ["PaimonBranchSpec", "BranchTTL", "BranchSource"]

BranchSource = Literal["fromTag", "fromSnapshotId", "empty"]


class BranchTTL(SpecModel):
    """Branch lifetime (lakeFS branch lifecycle): the branch and its CR are deleted once either
    limit is reached, but only with ``deletionPolicy: Delete`` and never when ``protected``."""

    max_age: Duration | None = Field(default=None, description="Delete the branch this long after its creation.")
    max_idle: Duration | None = Field(
        default=None, description="Delete the branch when it has had no commit for this long."
    )

    @model_validator(mode="after")
    def _check(self) -> BranchTTL:
        if self.max_age is None and self.max_idle is None:
            raise InvalidSpecError("ttl sets neither maxAge nor maxIdle",
                                   fix="set maxAge and/or maxIdle, or remove ttl")
        for field, value in (("maxAge", self.max_age), ("maxIdle", self.max_idle)):
            if value is not None and not value.to_timedelta():
                raise InvalidSpecError(f"ttl.{field} must be longer than 0", fix="use a duration such as '30 d'",
                                       fields=(field,))
        return self


class PaimonBranchSpec(SpecModel):
    """Desired state of one Paimon branch."""

    table_ref: ObjectReference = Field(description="The PaimonTable (same namespace) of the branch. Immutable.")
    branch_name: str | None = Field(
        default=None,
        description="Paimon branch name; default metadata.name. Not 'main', not blank, not all digits, no '/', "
        "'.', ',' or '$'. Immutable.",
    )
    from_tag: str | None = Field(
        default=None, description="Create the branch from this tag of main. One of fromTag, fromSnapshotId, empty."
    )
    from_snapshot_id: int | None = Field(
        default=None,
        ge=1,
        description="Create the branch from this snapshot of main (via a protected fork tag). One of fromTag, "
        "fromSnapshotId, empty.",
    )
    empty: bool | None = Field(
        default=None, description="true: create an empty branch (schema only). One of fromTag, fromSnapshotId, empty."
    )
    protected: bool = Field(
        default=False,
        description="Refuse deletion by policy or TTL, rollback and fast-forward into this branch. Default false.",
    )
    ttl: BranchTTL | None = Field(default=None, description="Delete the branch after an age or idle time.")
    deletion_policy: DeletionPolicy | None = Field(
        default=None,
        description="Delete: deleting the CR drops the branch; Retain: it stays. Absent = the operator default "
        "(Delete).",
    )
    adoption_policy: AdoptionPolicy = Field(
        default="Adopt",
        description="Adopt: an existing branch of this name is taken over; MustCreate: fail if it exists.",
    )

    @field_validator("branch_name")
    @classmethod
    def _branch_name(cls, value: str | None) -> str | None:
        return None if value is None else values.validate_branch_name(value)

    @field_validator("from_tag")
    @classmethod
    def _from_tag(cls, value: str | None) -> str | None:
        return None if value is None else check_tag_name(value)

    @model_validator(mode="after")
    def _one_source(self) -> PaimonBranchSpec:
        if self.empty is False:
            raise InvalidSpecError("empty: false selects no starting point",
                                   fix="set empty: true, or remove it and set fromTag or fromSnapshotId",
                                   fields=("empty",))
        chosen = [name for name, value in (("fromTag", self.from_tag),
                                           ("fromSnapshotId", self.from_snapshot_id),
                                           ("empty", self.empty)) if value is not None]
        if len(chosen) != 1:
            problem = "none of" if not chosen else "more than one of (" + ", ".join(chosen) + ") among"
            raise InvalidSpecError(
                f"{problem} fromTag, fromSnapshotId, empty is set; exactly one is required",
                fix="keep exactly one of fromTag, fromSnapshotId or empty: true",
            )
        return self

    @property
    def source(self) -> BranchSource:
        """Which of fromTag / fromSnapshotId / empty the branch starts from."""
        if self.from_tag is not None:
            return "fromTag"
        if self.from_snapshot_id is not None:
            return "fromSnapshotId"
        return "empty"

    def resolved_branch_name(self, metadata_name: str) -> str:
        """``branchName``, or the CR's ``metadata.name`` when absent (validated as a branch name).

        Raises:
            InvalidNameError: when the fallback name is not a usable branch name (e.g. contains '.').
        """
        return self.branch_name if self.branch_name is not None else values.validate_branch_name(metadata_name)
