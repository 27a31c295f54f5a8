"""Policy: the specs of tablekeeper's CRDs and YAML manifests (``specs``) and their field types,
which value applies to a table and from where (``effective``), the kinds and the spec errors;
what a value does is for the packages that maintain tables (docs/policy.md)."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"CatalogRef": "common", "NAMESPACE_NAME_PATTERN": "common", "OBJECT_NAME_PATTERN": "common",
    "ObjectReference": "common", "SpecModel": "common", "TimeZoneName": "common", "Duration": "duration_field",
    "to_timedelta": "duration_field", "cluster_source": "effective", "ClusterPolicy": "effective",
    "EffectivePolicy": "effective", "namespaced_source": "effective", "NamespacedPolicy": "effective",
    "policy_ref_source": "effective", "PolicyNotFoundError": "effective", "resolve_effective_policy": "effective",
    "TableContext": "effective", "API_GROUP": "kinds", "API_GROUP_VERSION": "kinds", "API_VERSION": "kinds",
    "CLUSTER_SCOPED": "kinds", "parse_spec": "kinds", "SPEC_MODELS": "kinds", "MACROS": "schedule",
    "MIN_INTERVAL": "schedule", "Schedule": "schedule", "LabelSelector": "selectors",
    "LabelSelectorRequirement": "selectors", "as_spec_error": "validation", "format_validation_error": "validation",
    "InvalidSpecError": "validation", "UnsafeSpecError": "validation"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .common import (CatalogRef as CatalogRef, NAMESPACE_NAME_PATTERN as NAMESPACE_NAME_PATTERN,
        OBJECT_NAME_PATTERN as OBJECT_NAME_PATTERN, ObjectReference as ObjectReference, SpecModel as SpecModel,
        TimeZoneName as TimeZoneName)
    from .duration_field import Duration as Duration, to_timedelta as to_timedelta
    from .effective import (cluster_source as cluster_source, ClusterPolicy as ClusterPolicy,
        EffectivePolicy as EffectivePolicy, namespaced_source as namespaced_source,
        NamespacedPolicy as NamespacedPolicy, policy_ref_source as policy_ref_source,
        PolicyNotFoundError as PolicyNotFoundError, resolve_effective_policy as resolve_effective_policy,
        TableContext as TableContext)
    from .kinds import (API_GROUP as API_GROUP, API_GROUP_VERSION as API_GROUP_VERSION, API_VERSION as API_VERSION,
        CLUSTER_SCOPED as CLUSTER_SCOPED, parse_spec as parse_spec, SPEC_MODELS as SPEC_MODELS)
    from .schedule import MACROS as MACROS, MIN_INTERVAL as MIN_INTERVAL, Schedule as Schedule
    from .selectors import LabelSelector as LabelSelector, LabelSelectorRequirement as LabelSelectorRequirement
    from .validation import (as_spec_error as as_spec_error, format_validation_error as format_validation_error,
        InvalidSpecError as InvalidSpecError, UnsafeSpecError as UnsafeSpecError)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
