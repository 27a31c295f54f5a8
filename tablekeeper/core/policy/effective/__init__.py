"""Effective-policy resolution: which retention value applies to a table and where it came
from (levels, cluster constraints, rails; the rules in :mod:`.resolution`). A pure
function of its inputs: nothing reads storage or the clock."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"resolve_effective_policy": "resolution", "cluster_source": "result", "ClusterPolicy": "result",
    "EffectivePolicy": "result", "namespaced_source": "result", "NamespacedPolicy": "result",
    "policy_ref_source": "result", "PolicyNotFoundError": "result", "TableContext": "result"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .resolution import resolve_effective_policy as resolve_effective_policy
    from .result import (cluster_source as cluster_source, ClusterPolicy as ClusterPolicy,
        EffectivePolicy as EffectivePolicy, namespaced_source as namespaced_source,
        NamespacedPolicy as NamespacedPolicy, policy_ref_source as policy_ref_source,
        PolicyNotFoundError as PolicyNotFoundError, TableContext as TableContext)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
