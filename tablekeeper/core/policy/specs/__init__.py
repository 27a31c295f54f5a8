"""The pydantic specs of the desired state, one kind each: catalogs, tables, tags, branches,
retention policies and maintenance runs, and the retention sections they share."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"BranchTTL": "branch", "PaimonBranchSpec": "branch", "ClusterPaimonCatalogSpec": "catalog",
    "PaimonCatalogSpec": "catalog", "ClusterPaimonRetentionPolicySpec": "policy", "DurationBound": "policy",
    "IntBound": "policy", "PaimonRetentionPolicySpec": "policy", "RetentionConstraints": "policy",
    "ChangelogRetention": "retention", "ConsumerRetention": "retention", "OrphanFileCleanup": "retention",
    "PAIMON_OPTIONS": "retention", "PartitionRetention": "retention", "period_length": "retention",
    "RetentionSpec": "retention", "SnapshotRetention": "retention", "TagAutoCreate": "retention",
    "TagRetention": "retention", "PaimonMaintenanceRunSpec": "run", "RollbackTarget": "run",
    "MaintenanceSpec": "table", "MaintenanceWindow": "table", "PaimonTableSpec": "table", "PaimonTagSpec": "tag",
    "RESERVED_TAG_NAMES": "tag"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .branch import BranchTTL as BranchTTL, PaimonBranchSpec as PaimonBranchSpec
    from .catalog import ClusterPaimonCatalogSpec as ClusterPaimonCatalogSpec, PaimonCatalogSpec as PaimonCatalogSpec
    from .policy import (ClusterPaimonRetentionPolicySpec as ClusterPaimonRetentionPolicySpec,
        DurationBound as DurationBound, IntBound as IntBound, PaimonRetentionPolicySpec as PaimonRetentionPolicySpec,
        RetentionConstraints as RetentionConstraints)
    from .retention import (ChangelogRetention as ChangelogRetention, ConsumerRetention as ConsumerRetention,
        OrphanFileCleanup as OrphanFileCleanup, PAIMON_OPTIONS as PAIMON_OPTIONS,
        PartitionRetention as PartitionRetention, period_length as period_length, RetentionSpec as RetentionSpec,
        SnapshotRetention as SnapshotRetention, TagAutoCreate as TagAutoCreate, TagRetention as TagRetention)
    from .run import PaimonMaintenanceRunSpec as PaimonMaintenanceRunSpec, RollbackTarget as RollbackTarget
    from .table import (MaintenanceSpec as MaintenanceSpec, MaintenanceWindow as MaintenanceWindow,
        PaimonTableSpec as PaimonTableSpec)
    from .tag import PaimonTagSpec as PaimonTagSpec, RESERVED_TAG_NAMES as RESERVED_TAG_NAMES
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
