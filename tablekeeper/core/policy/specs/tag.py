"""``PaimonTag`` spec: one Paimon tag, owned by the CR (operator-design.md §4.3).

The tag is created from exactly one of ``snapshotId``, ``fromTimestamp`` (the first snapshot
committed at or after it) or ``fromLatest: true`` (the latest snapshot when the tag is created,
then frozen in status). A tag is never moved: an existing tag of the same name at another
snapshot is a conflict, not an update.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field, field_validator, model_validator

from tablekeeper.core import errors, values
from tablekeeper.core.policy.common import AdoptionPolicy, DeletionPolicy, ObjectReference, SpecModel
from tablekeeper.core.policy.duration_field import Duration
from tablekeeper.core.policy.validation import InvalidSpecError

__all__ = ["PaimonTagSpec", "TagSource", "check_tag_name", "check_branch_ref", "RESERVED_TAG_NAMES"]

TagSource = Literal["snapshotId", "fromTimestamp", "fromLatest"]

#: ``tag/tag-success-file`` would collide with Paimon's ``tag/tag-success-file/`` directory.
RESERVED_TAG_NAMES = frozenset({"success-file"})


def check_tag_name(value: str) -> str:
    """``names.validate_tag_name`` plus the names Paimon reserves.

    Raises:
        InvalidNameError: for an unusable tag name.
    """
    values.validate_tag_name(value)
    if value in RESERVED_TAG_NAMES:
        raise errors.InvalidNameError(
            f"tag name {value!r} is reserved: its file would collide with Paimon's tag-success-file directory",
            fix="choose another name",
        )
    return value


def check_branch_ref(value: str) -> str:
    """A branch a tag or run lives on: ``main`` or a valid branch name.

    Raises:
        InvalidNameError: for an unusable branch name.
    """
    if value == values.MAIN_BRANCH:
        return value
    return values.validate_branch_name(value)


class PaimonTagSpec(SpecModel):
    """Desired state of one Paimon tag."""

    table_ref: ObjectReference = Field(description="The PaimonTable (same namespace) the tag belongs to. Immutable.")
    branch: str = Field(
        default=values.MAIN_BRANCH,
        description="Branch the tag lives on (tags are per branch). Default main. Immutable.",
    )
    tag_name: str | None = Field(
        default=None,
        description="Paimon tag name; default metadata.name. Not blank, no '/', ',' or '..', not all digits, "
        "not 'success-file'. Immutable.",
    )
    snapshot_id: int | None = Field(
        default=None, ge=1, description="Tag this snapshot id. One of snapshotId, fromTimestamp, fromLatest."
    )
    from_timestamp: AwareDatetime | None = Field(
        default=None,
        description="Tag the first snapshot committed at or after this RFC 3339 time (with zone, e.g. "
        "2024-07-11T10:00:00Z). One of snapshotId, fromTimestamp, fromLatest.",
    )
    from_latest: bool | None = Field(
        default=None,
        description="true: tag the latest snapshot at creation; the snapshot is then frozen in status. One of "
        "snapshotId, fromTimestamp, fromLatest.",
    )
    time_retained: Duration | None = Field(
        default=None,
        description="Tag TTL (Paimon time_retained), e.g. '30 d'; absent = the table's tags.defaultTimeRetained, "
        "if any. Immutable: Paimon stores it at creation.",
    )
    adoption_policy: AdoptionPolicy = Field(
        default="Adopt",
        description="Adopt: an existing tag of this name at the same snapshot is taken over; MustCreate: fail if "
        "the tag exists. A tag at a different snapshot is always a conflict.",
    )
    deletion_policy: DeletionPolicy | None = Field(
        default=None,
        description="Delete: deleting the CR deletes the tag (with its now unreferenced files); Retain: the tag "
        "stays. Absent = the operator default (Delete).",
    )
    backoff_limit: int = Field(
        default=6, ge=-1, description="Retries after a failure: -1 forever, 0 none. Default 6."
    )

    @field_validator("branch")
    @classmethod
    def _branch(cls, value: str) -> str:
        return check_branch_ref(value)

    @field_validator("tag_name")
    @classmethod
    def _tag_name(cls, value: str | None) -> str | None:
        return None if value is None else check_tag_name(value)

    @field_validator("time_retained")
    @classmethod
    def _ttl(cls, value: Duration | None) -> Duration | None:
        if value is not None and not value.to_timedelta():
            raise InvalidSpecError("timeRetained must be longer than 0", fix="use a TTL such as '30 d' or remove it")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> PaimonTagSpec:
        if self.from_latest is False:
            raise InvalidSpecError(
                "fromLatest: false selects no snapshot",
                fix="set fromLatest: true, or remove it and set snapshotId or fromTimestamp",
                fields=("fromLatest",),
            )
        chosen = [name for name, value in (("snapshotId", self.snapshot_id),
                                           ("fromTimestamp", self.from_timestamp),
                                           ("fromLatest", self.from_latest)) if value is not None]
        if len(chosen) != 1:
            problem = "none of" if not chosen else "more than one of (" + ", ".join(chosen) + ") among"
            raise InvalidSpecError(
                f"{problem} snapshotId, fromTimestamp, fromLatest is set; exactly one is required",
                fix="keep exactly one of snapshotId, fromTimestamp or fromLatest: true",
            )
        return self

    @property
    def source(self) -> TagSource:
        """Which of snapshotId / fromTimestamp / fromLatest selects the snapshot."""
        if self.snapshot_id is not None:
            return "snapshotId"
        if self.from_timestamp is not None:
            return "fromTimestamp"
        return "fromLatest"

    def resolved_tag_name(self, metadata_name: str) -> str:
        """``tagName``, or the CR's ``metadata.name`` when absent (validated as a tag name).

        Raises:
            InvalidNameError: when the fallback name is not a usable tag name (e.g. all digits).
        """
        return self.tag_name if self.tag_name is not None else check_tag_name(metadata_name)
