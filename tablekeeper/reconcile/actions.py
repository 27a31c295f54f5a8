"""Actions: what reconciliation decided to do, as data.

Each action is a small frozen pydantic model with a ``kind`` discriminator and a ``reason``
(style.md §2.8, pyiceberg's ``TableUpdate``). A plan is an ordered list of them; ``apply``
carries the *changes* out through the core planners/executors, re-planning each maintenance
step against the table's current state (the estimate shown in a plan is what the planner saw
then). Reported actions (``TagConflict``, ``BranchConflict``, ``Skipped``, and a dry-run
``CleanOrphans``) are never applied: they explain why storage will not match the manifests.

Every action names its table by ``warehouse`` (normalised URI) and ``table`` (``db.table``);
``resource`` is the manifest object it serves (``PaimonTag demo/baseline``) and ``policy`` the
effective-policy values it was built from, each with its source (``7 d (policy/demo/gold)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, WithJsonSchema

from tablekeeper.core.reclaim.expire import Retention

__all__ = [
    "Estimate",
    "ExpiringTag",
    "CreateTag",
    "AdoptTag",
    "DeleteTag",
    "TagConflict",
    "ExpireTags",
    "CreateBranch",
    "AdoptBranch",
    "DropBranch",
    "BranchConflict",
    "ReleaseObject",
    "SetTableOptions",
    "ExpireConsumers",
    "ExpireSnapshots",
    "ExpireChangelog",
    "ExpirePartitions",
    "CleanOrphans",
    "Skipped",
    "SkipCause",
    "Action",
    "ACTION_TYPES",
    "MAINTENANCE_KINDS",
    "Engine",
]

Engine = Literal["in-process", "spark"]
#: Maintenance kinds: scheduled, recorded as runs, sized and given an engine.
MAINTENANCE_KINDS = ("ExpirePartitions", "ExpireConsumers", "ExpireSnapshots", "ExpireChangelog", "CleanOrphans")


def _retention(value: Any) -> Retention:
    if isinstance(value, Retention):
        return value
    if isinstance(value, Mapping):
        return Retention.from_dict(value)
    raise ValueError(f"not a retention value: {value!r}")


#: The resolved retention an expiration action was planned with and is applied with
#: (``core.retention_settings``); JSON: ``Retention.to_dict()``.
RetentionField = Annotated[Retention, PlainValidator(_retention),
                           PlainSerializer(lambda r: r.to_dict(), return_type=dict), WithJsonSchema({"type": "object"})]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Estimate(_Model):
    """Plan size: files and bytes a step deletes (``partial``: only the first batch was sized)."""

    files: int = 0
    bytes: int = 0
    by_kind: dict[str, int] = Field(default_factory=dict)
    partial: bool = False
    note: str | None = None

    def __add__(self, other: Estimate) -> Estimate:
        kinds = dict(self.by_kind)
        for key, value in other.by_kind.items():
            kinds[key] = kinds.get(key, 0) + value
        return Estimate(files=self.files + other.files, bytes=self.bytes + other.bytes, by_kind=kinds,
                        partial=self.partial or other.partial)


class _Action(_Model):
    warehouse: str
    table: str
    branch: str = "main"
    reason: str
    resource: str | None = None
    source: str | None = None
    policy: dict[str, str] = Field(default_factory=dict)

    @property
    def is_change(self) -> bool:
        """Whether applying this action changes storage or ownership records."""
        return True

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class CreateTag(_Action):
    """Create ``tag`` at ``snapshot_id`` (with a TTL); for a manifest tag, record ownership first."""

    kind: Literal["CreateTag"] = "CreateTag"
    tag: str
    snapshot_id: int
    time_retained: str | None = None
    auto: bool = False
    deletion_policy: str | None = None


class AdoptTag(_Action):
    """An existing tag at the same snapshot becomes managed by its manifest (storage unchanged)."""

    kind: Literal["AdoptTag"] = "AdoptTag"
    tag: str
    snapshot_id: int
    deletion_policy: str | None = None


class DeleteTag(_Action):
    """Delete an owned tag whose manifest was removed (deletionPolicy Delete), with Paimon's
    tag-deletion cleanup."""

    kind: Literal["DeleteTag"] = "DeleteTag"
    tag: str
    snapshot_id: int | None = None
    estimate: Estimate = Field(default_factory=Estimate)


class TagConflict(_Action):
    """Reported, never applied: the tag cannot be brought to the desired state without a human."""

    kind: Literal["TagConflict"] = "TagConflict"
    tag: str
    conflict: str  # CamelCase condition reason, e.g. AlreadyExistsDifferentSnapshot

    @property
    def is_change(self) -> bool:
        return False


class ExpiringTag(_Model):
    tag: str
    snapshot_id: int
    rule: Literal["ttl", "num-retained-max"]
    detail: str
    owned_by: str | None = None
    estimate: Estimate = Field(default_factory=Estimate)


class ExpireTags(_Action):
    """Tags expired by Paimon's rules: TTL (``tagCreateTime + tagTimeRetained``) and
    ``tag.num-retained-max`` over auto tags. Never fork points, savepoints or rollback tags."""

    kind: Literal["ExpireTags"] = "ExpireTags"
    tags: tuple[ExpiringTag, ...]
    estimate: Estimate = Field(default_factory=Estimate)


class CreateBranch(_Action):
    """Create a branch (from a tag, a snapshot via a protected fork tag, or empty)."""

    kind: Literal["CreateBranch"] = "CreateBranch"
    name: str
    from_tag: str | None = None
    from_snapshot_id: int | None = None
    empty: bool = False
    protected: bool = False
    deletion_policy: str | None = None


class AdoptBranch(_Action):
    """An existing branch matching the manifest becomes managed (storage unchanged)."""

    kind: Literal["AdoptBranch"] = "AdoptBranch"
    name: str
    deletion_policy: str | None = None


class DropBranch(_Action):
    """Drop an owned branch (no longer declared, or its TTL reached). Never a protected branch,
    never one whose tags are still declared or forked from. ``fork_tag``: the fork tag
    tablekeeper created for it in the source branch, deleted afterwards if nothing else uses it."""

    kind: Literal["DropBranch"] = "DropBranch"
    name: str
    fork_tag: str | None = None
    metadata_files: int = 0
    ttl_expired: bool = False


class BranchConflict(_Action):
    """Reported, never applied."""

    kind: Literal["BranchConflict"] = "BranchConflict"
    name: str
    conflict: str

    @property
    def is_change(self) -> bool:
        return False


class ReleaseObject(_Action):
    """Forget ownership of a tag or branch without touching storage (deletionPolicy Retain, or
    the object is already gone)."""

    kind: Literal["ReleaseObject"] = "ReleaseObject"
    object_kind: Literal["tag", "branch"]
    name: str


class SetTableOptions(_Action):
    """Write the policy's managed fields as Paimon table options (``enforcement: TableOptions`` /
    ``Both``): a new schema file, as ``ALTER TABLE ... SET`` does. ``previous``: the values the
    table had (None = unset); ``options``: every managed option with its desired value (what
    ``appliedTableOptions`` records), ``changed`` the ones this action writes."""

    kind: Literal["SetTableOptions"] = "SetTableOptions"
    options: dict[str, str]
    changed: dict[str, str]
    previous: dict[str, str | None] = Field(default_factory=dict)


class _Maintenance(_Action):
    engine: Engine = "in-process"
    estimate: Estimate = Field(default_factory=Estimate)
    #: the core plan's notes, as the CLI prints them (``note: ...``): why the plan stops where it
    #: does; front ends show these, never a rule of their own
    notes: tuple[str, ...] = ()


class ExpireConsumers(_Maintenance):
    """Delete the consumers not updated for longer than ``expiration`` (``consumers.expiration``,
    Paimon's ``consumer.expiration-time``: by the consumer file's modification time), planned
    before snapshot expiration so that it reclaims what they held, as Paimon's commit does."""

    kind: Literal["ExpireConsumers"] = "ExpireConsumers"
    expiration: str
    consumers: tuple[str, ...] = ()


class ExpireSnapshots(_Maintenance):
    """Snapshot expiration of main (paimon-semantics.md §2), in batches of
    ``retention.expire_limit``; ``retention`` is what the plan was made with and what runs."""

    kind: Literal["ExpireSnapshots"] = "ExpireSnapshots"
    retention: RetentionField
    first_snapshot: int | None = None
    last_snapshot: int | None = None
    snapshots: int = 0
    batches: int = 1


class ExpireChangelog(_Maintenance):
    """Expiration of long-lived ``changelog-N`` files (decoupled changelog.* retention), in
    batches of ``retention.expire_limit`` (the limit the plan was sized with)."""

    kind: Literal["ExpireChangelog"] = "ExpireChangelog"
    retention: RetentionField
    changelogs: int = 0


class ExpirePartitions(_Maintenance):
    """Drop expired partitions with an OVERWRITE commit; their files are reclaimed by snapshot
    expiration once no retained snapshot, tag or branch reads them."""

    kind: Literal["ExpirePartitions"] = "ExpirePartitions"
    expiration: str
    strategy: str
    timestamp_formatter: str | None = None
    timestamp_pattern: str | None = None
    max_per_run: int
    zone_known: bool
    partitions: tuple[str, ...] = ()
    more: int = 0


class CleanOrphans(_Maintenance):
    """Orphan file cleanup; with ``dry_run`` only reported (never applied)."""

    kind: Literal["CleanOrphans"] = "CleanOrphans"
    older_than: str
    older_than_ms: int
    dry_run: bool = True
    #: a storage inventory the candidates come from (``orphanFiles.listing``), else None
    listing: str | None = None

    @property
    def is_change(self) -> bool:
        return not self.dry_run


#: Why a declared tag is not created now, as data for front ends (the operator's conditions):
#: ``TagExpired`` its TTL ended (or a policy expired a policy tag), never recreated;
#: ``BranchNotFound`` its branch does not exist yet or has no snapshot; ``SnapshotNotFound`` the
#: snapshot it asks for is not there yet.
SkipCause = Literal["TagExpired", "BranchNotFound", "SnapshotNotFound"]


class Skipped(_Action):
    """Reported, never applied: something the manifests ask for that is not done now, and why
    (not due by schedule, writers own auto-tags, time zone unknown, expired before creation...).
    ``cause``: the typed reason where a front end acts on it (never parsed out of ``reason``)."""

    kind: Literal["Skipped"] = "Skipped"
    what: str
    cause: SkipCause | None = None

    @property
    def is_change(self) -> bool:
        return False


Action = Annotated[
    CreateTag | AdoptTag | DeleteTag | TagConflict | ExpireTags | CreateBranch | AdoptBranch | DropBranch
    | BranchConflict | ReleaseObject | SetTableOptions | ExpireConsumers | ExpireSnapshots | ExpireChangelog | ExpirePartitions | CleanOrphans
    | Skipped,
    Field(discriminator="kind"),
]

ACTION_TYPES: tuple[type[_Action], ...] = (
    CreateTag, AdoptTag, DeleteTag, TagConflict, ExpireTags, CreateBranch, AdoptBranch, DropBranch,
    BranchConflict, ReleaseObject, SetTableOptions, ExpireConsumers, ExpireSnapshots, ExpireChangelog, ExpirePartitions, CleanOrphans, Skipped,
)
