"""Effective-policy resolution: which retention value applies to a table, and where it came
from (the levels, the cluster constraints and the rails; :mod:`.resolution` states the
rules). A pure function of its inputs: nothing reads storage or the clock."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "ClusterPolicy": "result",
    "EffectivePolicy": "result",
    "NamespacedPolicy": "result",
    "PolicyNotFoundError": "result",
    "TableContext": "result",
    "cluster_source": "result",
    "namespaced_source": "result",
    "policy_ref_source": "result",
    "resolve_effective_policy": "resolution",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.policy.effective.resolution import resolve_effective_policy as resolve_effective_policy
    from tablekeeper.core.policy.effective.result import ClusterPolicy as ClusterPolicy
    from tablekeeper.core.policy.effective.result import EffectivePolicy as EffectivePolicy
    from tablekeeper.core.policy.effective.result import NamespacedPolicy as NamespacedPolicy
    from tablekeeper.core.policy.effective.result import PolicyNotFoundError as PolicyNotFoundError
    from tablekeeper.core.policy.effective.result import TableContext as TableContext
    from tablekeeper.core.policy.effective.result import cluster_source as cluster_source
    from tablekeeper.core.policy.effective.result import namespaced_source as namespaced_source
    from tablekeeper.core.policy.effective.result import policy_ref_source as policy_ref_source
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
