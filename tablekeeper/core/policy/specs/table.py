"""``PaimonTable`` spec: one CR per Paimon table (``database.table``), the anchor of its policy,
enforcement and maintenance (operator-design.md §4.2). It does not create tables.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from tablekeeper.core.policy.common import CatalogRef, DeletionPolicy, Engine, ObjectReference, SpecModel, TimeZoneName
from tablekeeper.core.policy.schedule import Schedule
from tablekeeper.core.policy.specs.retention import RetentionSpec
from tablekeeper.core.policy.validation import InvalidSpecError

__all__ = [
    "Enforcement",
    "MaintenanceWindow",
    "SparkResources",
    "SparkExecutor",
    "SparkSpec",
    "MaintenanceSpec",
    "PaimonTableSpec",
    "DEFAULT_CATALOG_REF",
]

Enforcement = Literal["TableOptions", "Operator", "Both"]

#: Catalog used when ``catalogRef`` is omitted (Crossplane's default ProviderConfig pattern).
DEFAULT_CATALOG_REF = CatalogRef(kind="ClusterPaimonCatalog", name="default")

_CLOCK = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
_MEMORY = r"^[0-9]+[kmgtKMGT]?$"
_BAD_IDENTIFIER = re.compile(r"[/\\.$\s\x00-\x1f]")


def _check_identifier(value: str, what: str) -> str:
    if not value:
        raise InvalidSpecError(f"{what} name must not be empty", fix=f"give the Paimon {what} name")
    bad = _BAD_IDENTIFIER.search(value)
    if bad:
        raise InvalidSpecError(
            f"{what} name {value!r} contains {bad.group()!r}",
            fix=f"write the plain {what} name (no '/', '.', '$' or spaces); "
            "branches are addressed with PaimonBranch, not 'table$branch_x'",
        )
    return value


class MaintenanceWindow(SpecModel):
    """Daily time window in which scheduled runs may start; ``end`` before ``start`` spans midnight."""

    start: str = Field(pattern=_CLOCK, description="Window start, HH:MM (24 h).")
    end: str = Field(pattern=_CLOCK, description="Window end, HH:MM (24 h); earlier than start = next day.")
    time_zone: TimeZoneName = Field(default="UTC", description="Zone of start and end. Default UTC.")

    @model_validator(mode="after")
    def _check(self) -> MaintenanceWindow:
        if self.start == self.end:
            raise InvalidSpecError("window start and end are equal (an empty window)",
                                   fix="widen the window, or remove it to allow runs at any time",
                                   fields=("end",))
        return self


class SparkResources(SpecModel):
    """Resources of the Spark driver."""

    cores: int | None = Field(default=None, ge=1, description="CPU cores.")
    memory: str | None = Field(default=None, pattern=_MEMORY, description="Memory in Spark syntax, e.g. 4g.")


class SparkExecutor(SparkResources):
    """Resources and count of Spark executors."""

    instances: int | None = Field(default=None, ge=1, description="Number of executors.")


class SparkSpec(SpecModel):
    """Spark settings of this table's runs; override the catalog's sparkDefaults."""

    image: str | None = Field(default=None, min_length=1, description="Spark image with tablekeeper installed.")
    spark_version: str | None = Field(
        default=None, pattern=r"^[0-9]+\.[0-9]+(\.[0-9]+)?$", description="Spark version of the image."
    )
    driver: SparkResources | None = Field(default=None, description="Driver resources.")
    executor: SparkExecutor | None = Field(default=None, description="Executor count and resources.")
    conf: dict[str, str] = Field(default_factory=dict, description="Extra Spark configuration (spark.* keys).")


class MaintenanceSpec(SpecModel):
    """When and how the operator runs this table's maintenance."""

    schedule: Schedule | None = Field(
        default=None,
        description="When maintenance runs: cron ('0 3 * * *'), a macro ('@daily') or an interval "
        "('@every 6 h'); random jitter is added. Absent = only on demand (tablekeeper.io/run-now).",
    )
    window: MaintenanceWindow | None = Field(
        default=None, description="Daily window in which scheduled runs may start. Absent = any time."
    )
    engine: Engine = Field(
        default="Auto",
        description="Auto (Python below a size threshold, else Spark via the Spark operator if installed, else a "
        "Job), Python, SparkOperator or SparkJob.",
    )
    spark: SparkSpec | None = Field(default=None, description="Spark settings for Spark runs.")
    concurrency_policy: Literal["Forbid"] = Field(
        default="Forbid", description="Forbid: never two runs of this table at once (the only value for now)."
    )
    successful_runs_history_limit: int = Field(
        default=3, ge=0, description="Finished successful PaimonMaintenanceRuns kept. Default 3."
    )
    failed_runs_history_limit: int = Field(
        default=5, ge=0, description="Finished failed PaimonMaintenanceRuns kept. Default 5."
    )
    active_deadline_seconds: int = Field(
        default=7200, ge=1, description="A run still going after this many seconds is failed. Default 7200."
    )


class PaimonTableSpec(SpecModel):
    """Desired management of one Paimon table."""

    catalog_ref: CatalogRef = Field(
        default=DEFAULT_CATALOG_REF,
        description="Catalog holding the table; default ClusterPaimonCatalog/default. Immutable.",
    )
    database: str = Field(description="Paimon database name. Immutable.")
    table: str = Field(description="Paimon table name (the external name). Immutable.")
    deletion_policy: DeletionPolicy = Field(
        default="Retain",
        description="What deleting this CR does to the table: Retain (nothing). Delete (drop the table) is "
        "reserved for a later version and rejected for now.",
    )
    enforcement: Enforcement = Field(
        default="Both",
        description="TableOptions: write the policy as Paimon table options and let writers enforce it; Operator: "
        "tablekeeper runs maintenance; Both: write options and run only what writers cannot (write-only and "
        "idle tables, orphan cleanup).",
    )
    time_zone: TimeZoneName | None = Field(
        default=None,
        description="Time zone of the table's writers (tag TTL, auto-tag names, update-time partition expiry); "
        "overrides the catalog's writerTimeZone.",
    )
    policy_refs: tuple[ObjectReference, ...] = Field(
        default=(),
        description="PaimonRetentionPolicies of this namespace to apply, in order: the first one that sets a "
        "field wins. Below inline retention, above selector-matched policies.",
    )
    retention: RetentionSpec | None = Field(
        default=None, description="Inline retention; wins over every policy. Absent fields are inherited."
    )
    maintenance: MaintenanceSpec | None = Field(default=None, description="Schedule and engine of maintenance.")
    protected_options: tuple[str, ...] = Field(
        default=(), description="Paimon table options tablekeeper must never write."
    )

    @field_validator("database")
    @classmethod
    def _database(cls, value: str) -> str:
        return _check_identifier(value, "database")

    @field_validator("table")
    @classmethod
    def _table(cls, value: str) -> str:
        return _check_identifier(value, "table")

    @field_validator("deletion_policy")
    @classmethod
    def _deletion_policy(cls, value: str) -> str:
        if value == "Delete":
            raise InvalidSpecError(
                "deletionPolicy Delete (drop the table with the CR) is not supported yet",
                fix="use Retain (the default); drop tables with Paimon itself",
            )
        return value

    @field_validator("policy_refs")
    @classmethod
    def _policy_refs(cls, value: tuple[ObjectReference, ...]) -> tuple[ObjectReference, ...]:
        seen: set[str] = set()
        for ref in value:
            if ref.name in seen:
                raise InvalidSpecError(f"policy {ref.name!r} is referenced twice", fix="remove the duplicate")
            seen.add(ref.name)
        return value

    @field_validator("protected_options")
    @classmethod
    def _protected(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not key.strip() for key in value):
            raise InvalidSpecError("protectedOptions contains an empty key", fix="remove it")
        return value

    @property
    def qualified_name(self) -> str:
        """``database.table``."""
        return f"{self.database}.{self.table}"
