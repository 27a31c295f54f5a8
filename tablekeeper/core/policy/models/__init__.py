"""The pydantic models of the desired state, one concept each: the field types (duration,
schedule, label selectors, names and references) and the specs of catalogs, tables, tags,
branches, retention policies and maintenance runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "BranchTTL": "branch",
    "CatalogRef": "common",
    "ChangelogRetention": "retention",
    "ClusterPaimonCatalogSpec": "catalog",
    "ClusterPaimonRetentionPolicySpec": "policy",
    "ConsumerRetention": "retention",
    "Duration": "duration_field",
    "DurationBound": "policy",
    "IntBound": "policy",
    "LabelSelector": "selectors",
    "LabelSelectorRequirement": "selectors",
    "MACROS": "schedule",
    "MIN_INTERVAL": "schedule",
    "MaintenanceSpec": "table",
    "MaintenanceWindow": "table",
    "NAMESPACE_NAME_PATTERN": "common",
    "OBJECT_NAME_PATTERN": "common",
    "ObjectReference": "common",
    "OrphanFileCleanup": "retention",
    "PAIMON_OPTIONS": "retention",
    "PaimonBranchSpec": "branch",
    "PaimonCatalogSpec": "catalog",
    "PaimonMaintenanceRunSpec": "run",
    "PaimonRetentionPolicySpec": "policy",
    "PaimonTableSpec": "table",
    "PaimonTagSpec": "tag",
    "PartitionRetention": "retention",
    "RESERVED_TAG_NAMES": "tag",
    "RetentionConstraints": "policy",
    "RetentionSpec": "retention",
    "RollbackTarget": "run",
    "Schedule": "schedule",
    "SnapshotRetention": "retention",
    "SpecModel": "common",
    "TagAutoCreate": "retention",
    "TagRetention": "retention",
    "TimeZoneName": "common",
    "period_length": "retention",
    "to_timedelta": "duration_field",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.policy.models.branch import BranchTTL as BranchTTL
    from tablekeeper.core.policy.models.branch import PaimonBranchSpec as PaimonBranchSpec
    from tablekeeper.core.policy.models.catalog import ClusterPaimonCatalogSpec as ClusterPaimonCatalogSpec
    from tablekeeper.core.policy.models.catalog import PaimonCatalogSpec as PaimonCatalogSpec
    from tablekeeper.core.policy.models.common import NAMESPACE_NAME_PATTERN as NAMESPACE_NAME_PATTERN
    from tablekeeper.core.policy.models.common import OBJECT_NAME_PATTERN as OBJECT_NAME_PATTERN
    from tablekeeper.core.policy.models.common import CatalogRef as CatalogRef
    from tablekeeper.core.policy.models.common import ObjectReference as ObjectReference
    from tablekeeper.core.policy.models.common import SpecModel as SpecModel
    from tablekeeper.core.policy.models.common import TimeZoneName as TimeZoneName
    from tablekeeper.core.policy.models.duration_field import Duration as Duration
    from tablekeeper.core.policy.models.duration_field import to_timedelta as to_timedelta
    from tablekeeper.core.policy.models.policy import (
        ClusterPaimonRetentionPolicySpec as ClusterPaimonRetentionPolicySpec,
    )
    from tablekeeper.core.policy.models.policy import DurationBound as DurationBound
    from tablekeeper.core.policy.models.policy import IntBound as IntBound
    from tablekeeper.core.policy.models.policy import PaimonRetentionPolicySpec as PaimonRetentionPolicySpec
    from tablekeeper.core.policy.models.policy import RetentionConstraints as RetentionConstraints
    from tablekeeper.core.policy.models.retention import PAIMON_OPTIONS as PAIMON_OPTIONS
    from tablekeeper.core.policy.models.retention import ChangelogRetention as ChangelogRetention
    from tablekeeper.core.policy.models.retention import ConsumerRetention as ConsumerRetention
    from tablekeeper.core.policy.models.retention import OrphanFileCleanup as OrphanFileCleanup
    from tablekeeper.core.policy.models.retention import PartitionRetention as PartitionRetention
    from tablekeeper.core.policy.models.retention import RetentionSpec as RetentionSpec
    from tablekeeper.core.policy.models.retention import SnapshotRetention as SnapshotRetention
    from tablekeeper.core.policy.models.retention import TagAutoCreate as TagAutoCreate
    from tablekeeper.core.policy.models.retention import TagRetention as TagRetention
    from tablekeeper.core.policy.models.retention import period_length as period_length
    from tablekeeper.core.policy.models.run import PaimonMaintenanceRunSpec as PaimonMaintenanceRunSpec
    from tablekeeper.core.policy.models.run import RollbackTarget as RollbackTarget
    from tablekeeper.core.policy.models.schedule import MACROS as MACROS
    from tablekeeper.core.policy.models.schedule import MIN_INTERVAL as MIN_INTERVAL
    from tablekeeper.core.policy.models.schedule import Schedule as Schedule
    from tablekeeper.core.policy.models.selectors import LabelSelector as LabelSelector
    from tablekeeper.core.policy.models.selectors import LabelSelectorRequirement as LabelSelectorRequirement
    from tablekeeper.core.policy.models.table import MaintenanceSpec as MaintenanceSpec
    from tablekeeper.core.policy.models.table import MaintenanceWindow as MaintenanceWindow
    from tablekeeper.core.policy.models.table import PaimonTableSpec as PaimonTableSpec
    from tablekeeper.core.policy.models.tag import RESERVED_TAG_NAMES as RESERVED_TAG_NAMES
    from tablekeeper.core.policy.models.tag import PaimonTagSpec as PaimonTagSpec
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
