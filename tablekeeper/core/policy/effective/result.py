"""The inputs and the result of effective-policy resolution: the table and the policies it is
resolved against, the resolved :class:`EffectivePolicy` with a source label per leaf, and the
clamps and warnings the cluster constraints left on it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tablekeeper.core import errors
from tablekeeper.core.policy.specs import (
    ClusterPaimonRetentionPolicySpec,
    PaimonRetentionPolicySpec,
    PaimonTableSpec,
    RetentionSpec,
)

__all__ = ["SOURCE_INLINE", "SOURCE_OPERATOR_DEFAULT", "SOURCE_PAIMON_DEFAULT", "SOURCE_TABLEKEEPER_DEFAULT",
    "DEFAULT_SOURCES", "policy_ref_source", "namespaced_source", "cluster_source", "table_option_source",
    "PolicyNotFoundError", "TableContext", "NamespacedPolicy", "ClusterPolicy", "ClampRecord", "PolicyWarning",
    "EffectivePolicy"]


SOURCE_INLINE = "inline"


SOURCE_OPERATOR_DEFAULT = "operator-default"


SOURCE_PAIMON_DEFAULT = "paimon-default"


SOURCE_TABLEKEEPER_DEFAULT = "tablekeeper-default"


#: Sources meaning "nobody asked for this value": not written as table options.
DEFAULT_SOURCES = frozenset({SOURCE_PAIMON_DEFAULT, SOURCE_TABLEKEEPER_DEFAULT})


def policy_ref_source(name: str) -> str:
    """Source label of a policy named in the table's ``policyRefs``."""
    return f"policyRef/{name}"


def namespaced_source(namespace: str, name: str) -> str:
    """Source label of a selector-matched ``PaimonRetentionPolicy``."""
    return f"policy/{namespace}/{name}"


def cluster_source(name: str) -> str:
    """Source label of a ``ClusterPaimonRetentionPolicy``."""
    return f"cluster/{name}"


def table_option_source(key: str) -> str:
    """Source label of a value read from the table's own Paimon options."""
    return f"table-option/{key}"


class PolicyNotFoundError(errors.NotFoundError):
    """A ``policyRefs`` entry names a policy that does not exist in the table's namespace."""

    reason = "PolicyNotFound"


@dataclass(frozen=True)
class TableContext:
    """The table being resolved: its CR identity, spec and the labels selectors look at."""

    name: str
    namespace: str
    spec: PaimonTableSpec
    labels: Mapping[str, str] = field(default_factory=dict)
    namespace_labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NamespacedPolicy:
    """A ``PaimonRetentionPolicy`` object (name, namespace, spec)."""

    name: str
    namespace: str
    spec: PaimonRetentionPolicySpec


@dataclass(frozen=True)
class ClusterPolicy:
    """A ``ClusterPaimonRetentionPolicy`` object (name, spec)."""

    name: str
    spec: ClusterPaimonRetentionPolicySpec


@dataclass(frozen=True)
class ClampRecord:
    """A value moved into bounds by a cluster constraint."""

    path: str
    original: Any
    original_source: str
    value: Any
    policy: str
    bound: Literal["min", "max"]

    @property
    def message(self) -> str:
        """e.g. ``snapshots.maxAge 1 h raised to cluster minimum 24 h (cluster/prod)``."""
        verb = "raised to cluster minimum" if self.bound == "min" else "lowered to cluster maximum"
        return f"{self.path} {self.original} {verb} {self.value} ({self.policy})"


@dataclass(frozen=True)
class PolicyWarning:
    """A constraint violation that did not stop resolution (``reason`` is a condition reason)."""

    path: str
    reason: str
    message: str
    policy: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class EffectivePolicy:
    """The resolved retention of one table.

    Attributes:
        retention: every leaf resolved (fields with no value anywhere stay None = unlimited/off).
        sources: leaf path (camelCase, e.g. ``snapshots.maxAge``) -> source label, for every leaf.
        values: leaf path -> resolved value (the same values as ``retention``).
        clamped: leaf path -> how a Clamp constraint changed it.
        warnings: Warn violations, unset values under a Clamp maximum, conflicting constraints.
        policies: source labels of the policies that applied, highest precedence first.
    """

    retention: RetentionSpec
    sources: dict[str, str]
    values: dict[str, Any]
    clamped: dict[str, ClampRecord]
    warnings: tuple[PolicyWarning, ...]
    policies: tuple[str, ...]

    @property
    def notes(self) -> tuple[str, ...]:
        """One human-readable line per clamp."""
        return tuple(record.message for record in self.clamped.values())

    def explicit_paths(self) -> tuple[str, ...]:
        """Leaves some level asked for (not a built-in default nor the table's own option): the
        fields tablekeeper manages and may write as table options."""
        return tuple(path for path, source in self.sources.items()
                     if source not in DEFAULT_SOURCES and not source.startswith("table-option/"))

    def to_status(self) -> dict[str, dict[str, Any]]:
        """``status.effectivePolicy``: ``{path: {value, source[, clampedFrom]}}``, JSON-ready."""
        status: dict[str, dict[str, Any]] = {}
        for path, source in self.sources.items():
            entry: dict[str, Any] = {"source": source}
            value = self.values[path]
            if value is not None:
                entry["value"] = str(value) if isinstance(value, str) else value
            if path in self.clamped:
                entry["clampedFrom"] = _plain(self.clamped[path].original)
            status[path] = entry
        return status


def _plain(value: Any) -> Any:
    return str(value) if isinstance(value, str) else value
