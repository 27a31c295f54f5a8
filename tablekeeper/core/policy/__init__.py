"""Policy models: the specs of tablekeeper's CRDs and YAML manifests (catalogs, tables, tags,
branches, retention policies, maintenance runs), the Paimon duration and schedule types, and
effective-policy resolution with a per-field source.

Modules, one concept each: :mod:`duration_field` (``Duration``), :mod:`schedule` (``Schedule``),
:mod:`selectors` (label selectors), :mod:`catalog`, :mod:`table`, :mod:`tag`, :mod:`branch`,
:mod:`retention`, :mod:`policy`, :mod:`run`, :mod:`effective` (resolution), :mod:`validation`
(errors and human-readable reports), :mod:`kinds` (kind -> spec model). See docs/policy.md.
"""

from tablekeeper.core.policy.branch import BranchTTL, PaimonBranchSpec
from tablekeeper.core.policy.catalog import ClusterPaimonCatalogSpec, PaimonCatalogSpec
from tablekeeper.core.policy.common import CatalogRef, ObjectReference, SpecModel
from tablekeeper.core.policy.duration_field import Duration, to_timedelta
from tablekeeper.core.policy.effective import (
    ClusterPolicy,
    EffectivePolicy,
    NamespacedPolicy,
    PolicyNotFoundError,
    TableContext,
    resolve_effective_policy,
)
from tablekeeper.core.policy.kinds import API_GROUP_VERSION, SPEC_MODELS, parse_spec
from tablekeeper.core.policy.policy import ClusterPaimonRetentionPolicySpec, PaimonRetentionPolicySpec
from tablekeeper.core.policy.retention import RetentionSpec
from tablekeeper.core.policy.run import PaimonMaintenanceRunSpec
from tablekeeper.core.policy.schedule import Schedule
from tablekeeper.core.policy.table import PaimonTableSpec
from tablekeeper.core.policy.tag import PaimonTagSpec
from tablekeeper.core.policy.validation import (
    InvalidSpecError,
    UnsafeSpecError,
    as_spec_error,
    format_validation_error,
)

__all__ = [
    "API_GROUP_VERSION",
    "SPEC_MODELS",
    "BranchTTL",
    "CatalogRef",
    "ClusterPaimonCatalogSpec",
    "ClusterPaimonRetentionPolicySpec",
    "ClusterPolicy",
    "Duration",
    "EffectivePolicy",
    "InvalidSpecError",
    "NamespacedPolicy",
    "ObjectReference",
    "PaimonBranchSpec",
    "PaimonCatalogSpec",
    "PaimonMaintenanceRunSpec",
    "PaimonRetentionPolicySpec",
    "PaimonTableSpec",
    "PaimonTagSpec",
    "PolicyNotFoundError",
    "RetentionSpec",
    "Schedule",
    "SpecModel",
    "TableContext",
    "UnsafeSpecError",
    "as_spec_error",
    "format_validation_error",
    "parse_spec",
    "resolve_effective_policy",
    "to_timedelta",
]
