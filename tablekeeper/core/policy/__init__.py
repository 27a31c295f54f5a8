"""Policy models: the specs of tablekeeper's CRDs and YAML manifests (catalogs, tables, tags,
branches, retention policies, maintenance runs), the Paimon duration and schedule types, and
effective-policy resolution with a per-field source (docs/policy.md).

It decides what a spec may say and which value applies to a table; what a value does is
decided by the packages that maintain tables. :mod:`.models` holds the specs, :mod:`.effective`
the resolution, :mod:`.kinds` the kind -> model map, :mod:`.validation` the errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "API_GROUP": "kinds",
    "API_GROUP_VERSION": "kinds",
    "API_VERSION": "kinds",
    "BranchTTL": "models",
    "CLUSTER_SCOPED": "kinds",
    "CatalogRef": "models",
    "ChangelogRetention": "models",
    "ClusterPaimonCatalogSpec": "models",
    "ClusterPaimonRetentionPolicySpec": "models",
    "ClusterPolicy": "effective",
    "ConsumerRetention": "models",
    "Duration": "models",
    "DurationBound": "models",
    "EffectivePolicy": "effective",
    "IntBound": "models",
    "InvalidSpecError": "validation",
    "LabelSelector": "models",
    "LabelSelectorRequirement": "models",
    "MACROS": "models",
    "MIN_INTERVAL": "models",
    "MaintenanceSpec": "models",
    "MaintenanceWindow": "models",
    "NAMESPACE_NAME_PATTERN": "models",
    "NamespacedPolicy": "effective",
    "OBJECT_NAME_PATTERN": "models",
    "ObjectReference": "models",
    "OrphanFileCleanup": "models",
    "PAIMON_OPTIONS": "models",
    "PaimonBranchSpec": "models",
    "PaimonCatalogSpec": "models",
    "PaimonMaintenanceRunSpec": "models",
    "PaimonRetentionPolicySpec": "models",
    "PaimonTableSpec": "models",
    "PaimonTagSpec": "models",
    "PartitionRetention": "models",
    "PolicyNotFoundError": "effective",
    "RESERVED_TAG_NAMES": "models",
    "RetentionSpec": "models",
    "RollbackTarget": "models",
    "SPEC_MODELS": "kinds",
    "Schedule": "models",
    "SnapshotRetention": "models",
    "SpecModel": "models",
    "TableContext": "effective",
    "TagAutoCreate": "models",
    "TagRetention": "models",
    "TimeZoneName": "models",
    "UnsafeSpecError": "validation",
    "as_spec_error": "validation",
    "cluster_source": "effective",
    "format_validation_error": "validation",
    "namespaced_source": "effective",
    "parse_spec": "kinds",
    "policy_ref_source": "effective",
    "resolve_effective_policy": "effective",
    "to_timedelta": "models",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.policy.effective import ClusterPolicy as ClusterPolicy
    from tablekeeper.core.policy.effective import EffectivePolicy as EffectivePolicy
    from tablekeeper.core.policy.effective import NamespacedPolicy as NamespacedPolicy
    from tablekeeper.core.policy.effective import PolicyNotFoundError as PolicyNotFoundError
    from tablekeeper.core.policy.effective import TableContext as TableContext
    from tablekeeper.core.policy.effective import cluster_source as cluster_source
    from tablekeeper.core.policy.effective import namespaced_source as namespaced_source
    from tablekeeper.core.policy.effective import policy_ref_source as policy_ref_source
    from tablekeeper.core.policy.effective import resolve_effective_policy as resolve_effective_policy
    from tablekeeper.core.policy.kinds import API_GROUP as API_GROUP
    from tablekeeper.core.policy.kinds import API_GROUP_VERSION as API_GROUP_VERSION
    from tablekeeper.core.policy.kinds import API_VERSION as API_VERSION
    from tablekeeper.core.policy.kinds import CLUSTER_SCOPED as CLUSTER_SCOPED
    from tablekeeper.core.policy.kinds import SPEC_MODELS as SPEC_MODELS
    from tablekeeper.core.policy.kinds import parse_spec as parse_spec
    from tablekeeper.core.policy.models import MACROS as MACROS
    from tablekeeper.core.policy.models import MIN_INTERVAL as MIN_INTERVAL
    from tablekeeper.core.policy.models import NAMESPACE_NAME_PATTERN as NAMESPACE_NAME_PATTERN
    from tablekeeper.core.policy.models import OBJECT_NAME_PATTERN as OBJECT_NAME_PATTERN
    from tablekeeper.core.policy.models import PAIMON_OPTIONS as PAIMON_OPTIONS
    from tablekeeper.core.policy.models import RESERVED_TAG_NAMES as RESERVED_TAG_NAMES
    from tablekeeper.core.policy.models import BranchTTL as BranchTTL
    from tablekeeper.core.policy.models import CatalogRef as CatalogRef
    from tablekeeper.core.policy.models import ChangelogRetention as ChangelogRetention
    from tablekeeper.core.policy.models import ClusterPaimonCatalogSpec as ClusterPaimonCatalogSpec
    from tablekeeper.core.policy.models import ClusterPaimonRetentionPolicySpec as ClusterPaimonRetentionPolicySpec
    from tablekeeper.core.policy.models import ConsumerRetention as ConsumerRetention
    from tablekeeper.core.policy.models import Duration as Duration
    from tablekeeper.core.policy.models import DurationBound as DurationBound
    from tablekeeper.core.policy.models import IntBound as IntBound
    from tablekeeper.core.policy.models import LabelSelector as LabelSelector
    from tablekeeper.core.policy.models import LabelSelectorRequirement as LabelSelectorRequirement
    from tablekeeper.core.policy.models import MaintenanceSpec as MaintenanceSpec
    from tablekeeper.core.policy.models import MaintenanceWindow as MaintenanceWindow
    from tablekeeper.core.policy.models import ObjectReference as ObjectReference
    from tablekeeper.core.policy.models import OrphanFileCleanup as OrphanFileCleanup
    from tablekeeper.core.policy.models import PaimonBranchSpec as PaimonBranchSpec
    from tablekeeper.core.policy.models import PaimonCatalogSpec as PaimonCatalogSpec
    from tablekeeper.core.policy.models import PaimonMaintenanceRunSpec as PaimonMaintenanceRunSpec
    from tablekeeper.core.policy.models import PaimonRetentionPolicySpec as PaimonRetentionPolicySpec
    from tablekeeper.core.policy.models import PaimonTableSpec as PaimonTableSpec
    from tablekeeper.core.policy.models import PaimonTagSpec as PaimonTagSpec
    from tablekeeper.core.policy.models import PartitionRetention as PartitionRetention
    from tablekeeper.core.policy.models import RetentionSpec as RetentionSpec
    from tablekeeper.core.policy.models import RollbackTarget as RollbackTarget
    from tablekeeper.core.policy.models import Schedule as Schedule
    from tablekeeper.core.policy.models import SnapshotRetention as SnapshotRetention
    from tablekeeper.core.policy.models import SpecModel as SpecModel
    from tablekeeper.core.policy.models import TagAutoCreate as TagAutoCreate
    from tablekeeper.core.policy.models import TagRetention as TagRetention
    from tablekeeper.core.policy.models import TimeZoneName as TimeZoneName
    from tablekeeper.core.policy.models import to_timedelta as to_timedelta
    from tablekeeper.core.policy.validation import InvalidSpecError as InvalidSpecError
    from tablekeeper.core.policy.validation import UnsafeSpecError as UnsafeSpecError
    from tablekeeper.core.policy.validation import as_spec_error as as_spec_error
    from tablekeeper.core.policy.validation import format_validation_error as format_validation_error
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
