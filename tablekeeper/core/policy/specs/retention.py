"""``RetentionSpec``: how long a table keeps snapshots, changelogs, partitions, tags, orphan
files and consumers. The same shape is used inline in ``PaimonTable.spec.retention``, as
``defaults`` of retention policies, as the operator defaults and as the resolved result.

Every field is optional and absent means "not set here": the value is then inherited from the
next level (operator-design.md §6; see :mod:`tablekeeper.core.policy.effective`). The defaults
quoted in the field descriptions are what applies when no level sets the field; they are not
filled in by the models. Each section has a tri-state ``state``: ``Enabled``, ``Disabled`` or
``Inherit`` (= absent); an explicit ``Disabled`` at a higher level wins over ``Enabled`` below.

Hard rails (paimon-semantics.md §9.4, §9.7) are checked here, per object: ``minRetained >= 1``,
``maxRetained >= minRetained``, orphan ``olderThan`` at least ``safety.ORPHAN_AGE_FLOOR``; the
resolver checks them again on the merged result.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, ClassVar, Literal, TypeVar

from pydantic import Field, field_validator, model_validator

from tablekeeper.core import values
from tablekeeper.core.policy.common import SectionState, SpecModel
from tablekeeper.core.policy.duration_field import Duration
from tablekeeper.core.policy.schedule import Schedule
from tablekeeper.core.policy.validation import InvalidSpecError, UnsafeSpecError

__all__ = [
    "SnapshotRetention",
    "ChangelogRetention",
    "PartitionRetention",
    "TagAutoCreate",
    "TagRetention",
    "OrphanFileCleanup",
    "ConsumerRetention",
    "TrashRetention",
    "RetentionSpec",
    "PartitionStrategy",
    "TagCreationMode",
    "TagPeriod",
    "TagNameFormat",
    "PERIODS",
    "PAIMON_OPTIONS",
    "period_length",
    "check_delay",
]

PartitionStrategy = Literal["values-time", "update-time"]
TagCreationMode = Literal["none", "process-time", "watermark", "batch"]
TagPeriod = Literal["daily", "hourly", "two-hours"]
TagNameFormat = Literal["with_dashes", "without_dashes", "without_dashes_and_spaces"]

#: Length of each named auto-tag period.
PERIODS: dict[str, timedelta] = {
    "daily": timedelta(days=1),
    "hourly": timedelta(hours=1),
    "two-hours": timedelta(hours=2),
}

#: Leaf path of the resolved spec -> Paimon table option(s) it maps to (first key is the
#: current name, later keys are fallback keys Paimon still reads). Fields not listed here
#: (``state``, ``orphanFiles.*``) have no table option: only the operator enforces them.
PAIMON_OPTIONS: dict[str, tuple[str, ...]] = {
    "snapshots.minRetained": ("snapshot.num-retained.min",),
    "snapshots.maxRetained": ("snapshot.num-retained.max",),
    "snapshots.maxAge": ("snapshot.time-retained",),
    "snapshots.expireLimit": ("snapshot.expire.limit",),
    "snapshots.cleanEmptyDirectories": (
        "snapshot.clean-empty-directories",
        "snapshot.expire.clean-empty-directories",
    ),
    "changelog.minRetained": ("changelog.num-retained.min",),
    "changelog.maxRetained": ("changelog.num-retained.max",),
    "changelog.maxAge": ("changelog.time-retained",),
    "partitions.expiration": ("partition.expiration-time",),
    "partitions.checkInterval": ("partition.expiration-check-interval",),
    "partitions.strategy": ("partition.expiration-strategy",),
    "partitions.timestampFormatter": ("partition.timestamp-formatter",),
    "partitions.timestampPattern": ("partition.timestamp-pattern",),
    "partitions.maxPerRun": ("partition.expiration-max-num",),
    "tags.defaultTimeRetained": ("tag.default-time-retained",),
    "tags.autoCreate.mode": ("tag.automatic-creation",),
    "tags.autoCreate.period": ("tag.creation-period",),
    "tags.autoCreate.periodDuration": ("tag.creation-period-duration",),
    "tags.autoCreate.delay": ("tag.creation-delay",),
    "tags.autoCreate.nameFormat": ("tag.period-formatter",),
    "tags.autoCreate.maxRetained": ("tag.num-retained-max",),
    "tags.autoCreate.catchUp": ("tag.automatic-completion",),
    "consumers.expiration": ("consumer.expiration-time",),
    # tablekeeper's own option: Paimon keeps it in the schema and ignores it; ad-hoc commands
    # (``tablekeeper expire ...``) read it, so a window written there covers them too
    "trash.keep": ("trash.keep",),
}

_STATE_DESCRIPTION = (
    "Enabled, Disabled or Inherit (= absent: take the state from the next policy level). An explicit Disabled "
    "here wins over Enabled in a lower level."
)


def _unsafe_min_retained(value: int | None, field: str) -> int | None:
    if value is not None and value < values.MIN_RETAIN_MIN:
        raise UnsafeSpecError(
            f"{field} must be at least {values.MIN_RETAIN_MIN}, got {value}: with 0 the latest snapshot could "
            "be expired and the table lost",
            fix=f"set {field} to {values.MIN_RETAIN_MIN} or more (Paimon's default is 10)",
        )
    return value


def _check_min_max(min_retained: int | None, max_retained: int | None, section: str) -> None:
    if min_retained is not None and max_retained is not None and min_retained > max_retained:
        raise UnsafeSpecError(
            f"{section}.minRetained ({min_retained}) is larger than {section}.maxRetained ({max_retained})",
            fix=f"raise maxRetained to at least {min_retained} or lower minRetained",
            fields=("minRetained",),
        )


def _positive(value: Duration | None, what: str, fix: str) -> Duration | None:
    if value is not None and value.to_timedelta() <= timedelta(0):
        raise InvalidSpecError(f"{what} must be longer than 0, got {value!r}", fix=fix)
    return value


def period_length(period: str | None, period_duration: Duration | None) -> timedelta:
    """The auto-tag period: ``periodDuration`` if set, else the named period (default daily)."""
    if period_duration is not None:
        return period_duration.to_timedelta()
    return PERIODS[period or "daily"]


_Counts = TypeVar("_Counts", bound="_RetainedCounts")  # typing.Self is 3.11+; core runs on 3.10


class _RetainedCounts(SpecModel):
    """The safety rails of a section with ``minRetained``/``maxRetained`` counts (snapshots,
    changelog): each at least ``safety.MIN_RETAIN_MIN``, ``maxRetained >= minRetained``.
    Subclasses declare both fields and name their section in ``_section``."""

    _section: ClassVar[str]
    if TYPE_CHECKING:  # declared by each subclass, with its own description (field order = CRD order)
        min_retained: int | None
        max_retained: int | None

    @field_validator("min_retained", check_fields=False)
    @classmethod
    def _min_retained(cls, value: int | None) -> int | None:
        return _unsafe_min_retained(value, "minRetained")

    @field_validator("max_retained", check_fields=False)
    @classmethod
    def _max_retained(cls, value: int | None) -> int | None:
        return _unsafe_min_retained(value, "maxRetained")

    @model_validator(mode="after")
    def _check(self: _Counts) -> _Counts:
        _check_min_max(self.min_retained, self.max_retained, self._section)
        return self


class SnapshotRetention(_RetainedCounts):
    """Snapshot expiration: a snapshot expires when it is older than ``maxAge`` and more than
    ``minRetained`` snapshots remain, or when more than ``maxRetained`` snapshots exist."""

    _section: ClassVar[str] = "snapshots"

    state: SectionState | None = Field(default=None, description=_STATE_DESCRIPTION)
    min_retained: int | None = Field(
        default=None,
        json_schema_extra={"minimum": 1},
        description="Snapshots always kept, newest first (snapshot.num-retained.min). At least 1. Default 10.",
    )
    max_retained: int | None = Field(
        default=None,
        json_schema_extra={"minimum": 1},
        description="Most snapshots kept regardless of age (snapshot.num-retained.max); at least minRetained. "
        "Default unlimited.",
    )
    max_age: Duration | None = Field(
        default=None,
        description="Snapshots older than this may expire (snapshot.time-retained), e.g. '7 d'. Default '1 h'.",
    )
    expire_limit: int | None = Field(
        default=None,
        ge=1,
        description="Most snapshots expired in one run (snapshot.expire.limit). Default 50.",
    )
    clean_empty_directories: bool | None = Field(
        default=None,
        description="Remove partition and bucket directories left empty by expiration "
        "(snapshot.clean-empty-directories). Default false.",
    )


class ChangelogRetention(_RetainedCounts):
    """Decoupled changelog retention (changelog.*). Unset fields follow the snapshot values, as in
    Paimon; setting them larger than the snapshot values keeps changelogs longer than snapshots."""

    _section: ClassVar[str] = "changelog"

    state: SectionState | None = Field(default=None, description=_STATE_DESCRIPTION)
    min_retained: int | None = Field(
        default=None,
        json_schema_extra={"minimum": 1},
        description="Changelogs always kept (changelog.num-retained.min). At least 1. Default: "
        "snapshots.minRetained.",
    )
    max_retained: int | None = Field(
        default=None,
        json_schema_extra={"minimum": 1},
        description="Most changelogs kept (changelog.num-retained.max); at least minRetained. Default: "
        "snapshots.maxRetained.",
    )
    max_age: Duration | None = Field(
        default=None,
        description="Changelogs older than this may expire (changelog.time-retained). Default: snapshots.maxAge.",
    )


class PartitionRetention(SpecModel):
    """Partition expiration: whole partitions older than ``expiration`` are dropped (an OVERWRITE
    commit; files are deleted later by snapshot expiration, and tags keep protecting them)."""

    state: SectionState | None = Field(default=None, description=_STATE_DESCRIPTION)
    expiration: Duration | None = Field(
        default=None,
        description="Partitions older than this are dropped (partition.expiration-time), e.g. '90 d'. Longer "
        "than 0. Default: never.",
    )
    check_interval: Duration | None = Field(
        default=None,
        description="How often writers check for expired partitions (partition.expiration-check-interval); "
        "'0 s' = every commit. Default '1 h'.",
    )
    strategy: PartitionStrategy | None = Field(
        default=None,
        description="values-time: age from the partition values (parsed with timestampFormatter / "
        "timestampPattern); update-time: age since the partition's last file was written. Default values-time.",
    )
    timestamp_formatter: str | None = Field(
        default=None,
        min_length=1,
        description="Java DateTimeFormatter pattern of the partition time, e.g. 'yyyyMMdd' "
        "(partition.timestamp-formatter). Default: 'yyyy-MM-dd[ HH:mm:ss]'-like lenient parsing.",
    )
    timestamp_pattern: str | None = Field(
        default=None,
        min_length=1,
        description="How to build the time string from partition fields, e.g. '$dt $hour:00:00' "
        "(partition.timestamp-pattern). Default: the first partition field.",
    )
    max_per_run: int | None = Field(
        default=None,
        ge=1,
        description="Most partitions dropped per run (partition.expiration-max-num). Default 100.",
    )

    @field_validator("expiration")
    @classmethod
    def _expiration(cls, value: Duration | None) -> Duration | None:
        return _positive(value, "partitions.expiration",
                         "use a positive age such as '90 d'; 0 would drop every partition")

    @field_validator("timestamp_pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None and "$" not in value:
            raise InvalidSpecError(
                f"timestampPattern {value!r} names no partition field",
                fix="reference partition fields with '$', e.g. '$dt' or '$dt $hour:00:00'",
            )
        return value


class TagAutoCreate(SpecModel):
    """Periodic tag creation (tag.automatic-creation and friends, paimon-semantics.md §3.4)."""

    mode: TagCreationMode | None = Field(
        default=None,
        description="none, process-time (snapshot commit time), watermark (snapshot watermark) or batch (one tag "
        "when a batch job ends). Default none.",
    )
    period: TagPeriod | None = Field(
        default=None,
        description="daily, hourly or two-hours (tag.creation-period). Mutually exclusive with periodDuration. "
        "Default daily.",
    )
    period_duration: Duration | None = Field(
        default=None,
        description="Custom period instead of period (tag.creation-period-duration), whole minutes, e.g. "
        "'30 min'; tag names then use yyyyMMddHHmm.",
    )
    delay: Duration | None = Field(
        default=None,
        description="Wait this long after a period ends before tagging it, for late data (tag.creation-delay). "
        "Shorter than the period. Default 0.",
    )
    name_format: TagNameFormat | None = Field(
        default=None,
        description="Tag name format: with_dashes (2024-07-10, 2024-07-10 09), without_dashes (20240710), "
        "without_dashes_and_spaces (2024071009) (tag.period-formatter). Default with_dashes.",
    )
    max_retained: int | None = Field(
        default=None,
        ge=1,
        description="Most auto-created tags kept, oldest deleted first (tag.num-retained-max). In batch mode "
        "Paimon counts all tags, manual ones included. Default unlimited.",
    )
    catch_up: bool | None = Field(
        default=None,
        description="Create a tag for every missed period, not just the latest (tag.automatic-completion). "
        "Default false.",
    )

    @field_validator("period_duration")
    @classmethod
    def _period_duration(cls, value: Duration | None) -> Duration | None:
        if value is None:
            return value
        amount = value.to_timedelta()
        if amount < timedelta(minutes=1) or amount % timedelta(minutes=1):
            raise InvalidSpecError(
                f"periodDuration {value!r} is not a whole number of minutes",
                fix="use whole minutes of at least '1 min' (tag names have minute precision: yyyyMMddHHmm)",
            )
        return value

    @model_validator(mode="after")
    def _check(self) -> TagAutoCreate:
        if self.period is not None and self.period_duration is not None:
            raise InvalidSpecError(
                "period and periodDuration are both set",
                fix="keep one: period (daily|hourly|two-hours) or periodDuration (a custom duration)",
                fields=("periodDuration",),
            )
        if self.delay is not None and (self.period is not None or self.period_duration is not None):
            check_delay(self.delay, self.period, self.period_duration)
        return self


def check_delay(delay: Duration, period: str | None, period_duration: Duration | None) -> None:
    """Paimon's ``validateDelay``: the creation delay must be shorter than one period.

    Raises:
        InvalidSpecError: naming ``delay`` when it is not.
    """
    length = period_length(period, period_duration)
    if delay.to_timedelta() >= length:
        what = f"periodDuration {period_duration}" if period_duration is not None else f"period {period or 'daily'}"
        raise InvalidSpecError(
            f"delay {delay!r} is not shorter than the {what}",
            fix="use a delay shorter than the period, or a longer period",
            fields=("delay",),
        )


class TagRetention(SpecModel):
    """Tag TTL and periodic tag creation."""

    state: SectionState | None = Field(default=None, description=_STATE_DESCRIPTION)
    default_time_retained: Duration | None = Field(
        default=None,
        description="TTL given to new tags that set none (tag.default-time-retained), e.g. '30 d'. Longer than "
        "0. Default: tags never expire by age.",
    )
    auto_create: TagAutoCreate | None = Field(default=None, description="Periodic tag creation.")

    @field_validator("default_time_retained")
    @classmethod
    def _ttl(cls, value: Duration | None) -> Duration | None:
        return _positive(value, "tags.defaultTimeRetained", "use a positive TTL such as '30 d'")


class OrphanFileCleanup(SpecModel):
    """Orphan file cleanup (operator only; paimon-semantics.md §5). Disabled by default; starts
    in dry run, which reports what would be deleted."""

    state: SectionState | None = Field(
        default=None, description=_STATE_DESCRIPTION + " Default Disabled: orphan cleanup must be enabled explicitly."
    )
    older_than: Duration | None = Field(
        default=None,
        description="Only files older than this are candidates (protects in-flight writes). At least the "
        "safety floor. Default '1 d'.",
    )
    dry_run: bool | None = Field(
        default=None,
        description="Report orphan files without deleting them. Default true; real deletion is an explicit "
        "dryRun: false.",
    )
    schedule: Schedule | None = Field(
        default=None,
        description="When cleanup runs: cron ('0 3 * * 0') or '@every 7 d'. Default: with the table's "
        "maintenance schedule.",
    )
    listing: str | None = Field(
        default=None,
        min_length=1,
        description="Take the candidates from a storage inventory instead of listing the store: the path of an "
        "S3 Inventory manifest.json (CSV, ORC or Parquet) or of a CSV/Parquet file list (key, size, "
        "last_modified), on the table's store (s3://...) or local to the operator. It must cover the table's "
        "bucket and prefix and predate olderThan, else the run is refused and nothing is deleted "
        "(docs/inventory.md). Roots are always read live. Default: list the store.",
    )

    @field_validator("older_than")
    @classmethod
    def _older_than(cls, value: Duration | None) -> Duration | None:
        if value is not None and value.to_timedelta() < values.ORPHAN_AGE_FLOOR:
            raise UnsafeSpecError(
                f"orphanFiles.olderThan {value!r} is below the safety floor "
                f"{Duration.from_timedelta(values.ORPHAN_AGE_FLOOR)}: files of commits in flight could be deleted",
                fix=f"use at least '{Duration.from_timedelta(values.ORPHAN_AGE_FLOOR)}' (the default is '1 d')",
            )
        return value


class ConsumerRetention(SpecModel):
    """Expiry of stale streaming consumers, which otherwise pin snapshots forever."""

    state: SectionState | None = Field(default=None, description=_STATE_DESCRIPTION)
    expiration: Duration | None = Field(
        default=None,
        description="Consumers not updated for this long are removed (consumer.expiration-time), e.g. '7 d'. "
        "Longer than 0. Default: never.",
    )
    warn_above_snapshots: int | None = Field(
        default=None, ge=1,
        description="Warn (condition ConsumersHealthy=False and a Warning Event naming the consumer and its age) "
        "when one consumer keeps more than this many snapshots from expiring. Default 1000.",
    )

    @field_validator("expiration")
    @classmethod
    def _expiration(cls, value: Duration | None) -> Duration | None:
        return _positive(value, "consumers.expiration", "use a positive age such as '7 d'")


class TrashRetention(SpecModel):
    """The undo window: what tablekeeper removes from the table is kept in its trash meanwhile."""

    keep: Duration | None = Field(
        default=None,
        description="Keep what tablekeeper removes from this table (snapshot, changelog, tag, consumer and orphan "
        "files of its runs; tags and branches it deletes) in the table's trash for this long, so that "
        "'tablekeeper undo' or an Undo run puts it back; purged afterwards. Written as the table option "
        "trash.keep under enforcement TableOptions or Both, which ad-hoc commands honour too. What the table's "
        "writers expire on commit (enforcement TableOptions, or Both while writers are active) Paimon deletes "
        "for good. Longer than 0. Default: no window (deleted at once).",
    )

    @field_validator("keep")
    @classmethod
    def _keep(cls, value: Duration | None) -> Duration | None:
        return _positive(value, "trash.keep", "use a positive duration such as '7 d', or leave it out")


class RetentionSpec(SpecModel):
    """Retention settings of a table; every absent field is inherited from the next level."""

    snapshots: SnapshotRetention | None = Field(default=None, description="Snapshot expiration.")
    changelog: ChangelogRetention | None = Field(default=None, description="Decoupled changelog expiration.")
    partitions: PartitionRetention | None = Field(default=None, description="Partition expiration.")
    tags: TagRetention | None = Field(default=None, description="Tag TTL and automatic tag creation.")
    orphan_files: OrphanFileCleanup | None = Field(default=None, description="Orphan file cleanup.")
    consumers: ConsumerRetention | None = Field(default=None, description="Consumer expiration.")
    trash: TrashRetention | None = Field(default=None, description="The undo window of what tablekeeper removes.")
