"""Retention policies: reusable retention defaults (``PaimonRetentionPolicy``, namespaced) and
cluster defaults with guardrails (``ClusterPaimonRetentionPolicy``), operator-design.md §4.5, §6.

A policy applies to a table when the table names it in ``policyRefs`` or when the policy's
``selector`` matches the table. All parts of a selector must hold (Kubernetes semantics); an
absent selector matches every table in scope (the namespace, or the cluster).

Cluster ``constraints`` bound the *resolved* value of a field, whatever level set it:
``Clamp`` moves it to the nearest bound, ``Reject`` refuses the table's policy, ``Warn`` keeps it
and reports a violation. ``enforcement`` sets the action for all bounds; a bound's own
``enforcement`` overrides it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from fnmatch import fnmatchcase
from typing import Literal, TypeVar

from pydantic import Field, field_validator, model_validator

from tablekeeper.core.policy.common import NamespaceName, SpecModel
from tablekeeper.core.policy.duration_field import Duration
from tablekeeper.core.policy.selectors import LabelSelector
from tablekeeper.core.policy.specs.retention import RetentionSpec
from tablekeeper.core.policy.validation import InvalidSpecError

__all__ = [
    "ConstraintAction",
    "PolicySelector",
    "ClusterPolicySelector",
    "PaimonRetentionPolicySpec",
    "IntBound",
    "DurationBound",
    "SnapshotConstraints",
    "ChangelogConstraints",
    "PartitionConstraints",
    "TagAutoCreateConstraints",
    "TagConstraints",
    "OrphanFileConstraints",
    "ConsumerConstraints",
    "RetentionConstraints",
    "ClusterPaimonRetentionPolicySpec",
]

ConstraintAction = Literal["Clamp", "Reject", "Warn"]

_PRIORITY_BOUND = 1_000_000
_T = TypeVar("_T")


class PolicySelector(SpecModel):
    """Which tables of the namespace a ``PaimonRetentionPolicy`` applies to."""

    table_selector: LabelSelector | None = Field(
        default=None, description="Tables whose PaimonTable labels match. Absent = any labels."
    )
    table_names: tuple[str, ...] = Field(
        default=(),
        description="Glob patterns (fnmatch: *, ?, [abc]) matched case-sensitively against 'database.table', "
        "e.g. 'sales.*'. A table matches if any pattern matches. Empty = any name.",
    )

    @field_validator("table_names")
    @classmethod
    def _patterns(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            if not pattern.strip():
                raise InvalidSpecError("tableNames contains an empty pattern", fix="remove it, or write e.g. 'sales.*'")
        return value

    def matches_table(self, *, database: str, table: str, labels: Mapping[str, str]) -> bool:
        """Whether a table (its Paimon name and its PaimonTable labels) is selected."""
        if self.table_selector is not None and not self.table_selector.matches(labels):
            return False
        qualified = f"{database}.{table}"
        return not self.table_names or any(fnmatchcase(qualified, pattern) for pattern in self.table_names)


class ClusterPolicySelector(PolicySelector):
    """Which tables, in which namespaces, a ``ClusterPaimonRetentionPolicy`` applies to."""

    namespace_selector: LabelSelector | None = Field(
        default=None, description="Namespaces whose labels match. Absent = any labels."
    )
    namespaces: tuple[NamespaceName, ...] = Field(
        default=(), description="Namespaces by name. Empty = any namespace (subject to namespaceSelector)."
    )

    def matches(self, *, namespace: str, namespace_labels: Mapping[str, str], database: str, table: str,
                labels: Mapping[str, str]) -> bool:
        """Whether a table in ``namespace`` is selected (every given criterion must hold)."""
        if self.namespaces and namespace not in self.namespaces:
            return False
        if self.namespace_selector is not None and not self.namespace_selector.matches(namespace_labels):
            return False
        return self.matches_table(database=database, table=table, labels=labels)


class PaimonRetentionPolicySpec(SpecModel):
    """Reusable retention defaults for tables of one namespace."""

    selector: PolicySelector | None = Field(
        default=None,
        description="Tables this policy applies to without being referenced. Absent = every table in the "
        "namespace. Tables naming the policy in policyRefs get it regardless.",
    )
    priority: int = Field(
        default=0,
        ge=-_PRIORITY_BOUND,
        le=_PRIORITY_BOUND,
        description="Among selector-matched policies of a namespace, higher priority wins per field; equal "
        "priorities are ordered by name. Default 0.",
    )
    defaults: RetentionSpec = Field(
        default_factory=RetentionSpec, description="Retention values this policy contributes; absent fields add nothing."
    )


def _check_bound(low: _T | None, high: _T | None, *, exceeds: Callable[[_T, _T], bool], comparative: str) -> None:
    """The rule of every bound: it sets min and/or max, and min does not exceed max."""
    if low is None and high is None:
        raise InvalidSpecError("bound sets neither min nor max", fix="set min and/or max, or remove the bound")
    if low is not None and high is not None and exceeds(low, high):
        raise InvalidSpecError(f"bound min ({low}) is {comparative} than max ({high})",
                               fix="swap them or correct one", fields=("min",))


def _longer(a: Duration, b: Duration) -> bool:
    return a.to_timedelta() > b.to_timedelta()


class IntBound(SpecModel):
    """Lower and/or upper bound of an integer field."""

    min: int | None = Field(default=None, description="Smallest allowed value.")
    max: int | None = Field(default=None, description="Largest allowed value; an unset (unlimited) value exceeds it.")
    enforcement: ConstraintAction | None = Field(
        default=None, description="Action for this bound; absent = the policy's enforcement."
    )

    @model_validator(mode="after")
    def _check(self) -> IntBound:
        _check_bound(self.min, self.max, exceeds=operator.gt, comparative="larger")
        return self


class DurationBound(SpecModel):
    """Lower and/or upper bound of a duration field."""

    min: Duration | None = Field(default=None, description="Shortest allowed duration.")
    max: Duration | None = Field(
        default=None, description="Longest allowed duration; an unset (unlimited) value exceeds it."
    )
    enforcement: ConstraintAction | None = Field(
        default=None, description="Action for this bound; absent = the policy's enforcement."
    )

    @model_validator(mode="after")
    def _check(self) -> DurationBound:
        _check_bound(self.min, self.max, exceeds=_longer, comparative="longer")
        return self


class SnapshotConstraints(SpecModel):
    """Bounds on snapshots.*."""

    min_retained: IntBound | None = Field(default=None, description="Bounds on snapshots.minRetained.")
    max_retained: IntBound | None = Field(default=None, description="Bounds on snapshots.maxRetained.")
    max_age: DurationBound | None = Field(default=None, description="Bounds on snapshots.maxAge.")
    expire_limit: IntBound | None = Field(default=None, description="Bounds on snapshots.expireLimit.")


class ChangelogConstraints(SpecModel):
    """Bounds on changelog.*."""

    min_retained: IntBound | None = Field(default=None, description="Bounds on changelog.minRetained.")
    max_retained: IntBound | None = Field(default=None, description="Bounds on changelog.maxRetained.")
    max_age: DurationBound | None = Field(default=None, description="Bounds on changelog.maxAge.")


class PartitionConstraints(SpecModel):
    """Bounds on partitions.*."""

    expiration: DurationBound | None = Field(default=None, description="Bounds on partitions.expiration.")
    check_interval: DurationBound | None = Field(default=None, description="Bounds on partitions.checkInterval.")
    max_per_run: IntBound | None = Field(default=None, description="Bounds on partitions.maxPerRun.")


class TagAutoCreateConstraints(SpecModel):
    """Bounds on tags.autoCreate.*."""

    max_retained: IntBound | None = Field(default=None, description="Bounds on tags.autoCreate.maxRetained.")


class TagConstraints(SpecModel):
    """Bounds on tags.*."""

    default_time_retained: DurationBound | None = Field(
        default=None, description="Bounds on tags.defaultTimeRetained."
    )
    auto_create: TagAutoCreateConstraints | None = Field(default=None, description="Bounds on tags.autoCreate.*.")


class OrphanFileConstraints(SpecModel):
    """Bounds on orphanFiles.*."""

    older_than: DurationBound | None = Field(default=None, description="Bounds on orphanFiles.olderThan.")


class ConsumerConstraints(SpecModel):
    """Bounds on consumers.*."""

    expiration: DurationBound | None = Field(default=None, description="Bounds on consumers.expiration.")


class TrashConstraints(SpecModel):
    """Bounds on trash.*."""

    keep: DurationBound | None = Field(
        default=None, description="Bounds on trash.keep. A minimum also applies to a table that sets no window "
        "(unset counts as 0 here): Clamp gives it the minimum, Reject refuses it.")


class RetentionConstraints(SpecModel):
    """Per-field bounds, shaped like RetentionSpec; each leaf is {min, max, enforcement}."""

    snapshots: SnapshotConstraints | None = Field(default=None, description="Bounds on snapshot retention.")
    changelog: ChangelogConstraints | None = Field(default=None, description="Bounds on changelog retention.")
    partitions: PartitionConstraints | None = Field(default=None, description="Bounds on partition expiration.")
    tags: TagConstraints | None = Field(default=None, description="Bounds on tag retention.")
    orphan_files: OrphanFileConstraints | None = Field(default=None, description="Bounds on orphan cleanup.")
    consumers: ConsumerConstraints | None = Field(default=None, description="Bounds on consumer expiration.")
    trash: TrashConstraints | None = Field(default=None, description="Bounds on the undo window.")


class ClusterPaimonRetentionPolicySpec(SpecModel):
    """Cluster-wide retention defaults and guardrails."""

    selector: ClusterPolicySelector | None = Field(
        default=None,
        description="Tables (and namespaces) this policy applies to. Absent = every table in the cluster.",
    )
    priority: int = Field(
        default=0,
        ge=-_PRIORITY_BOUND,
        le=_PRIORITY_BOUND,
        description="Among matching cluster policies, higher priority wins per field; equal priorities are "
        "ordered by name. Default 0.",
    )
    defaults: RetentionSpec = Field(
        default_factory=RetentionSpec,
        description="Retention values this policy contributes, below every namespaced policy.",
    )
    constraints: RetentionConstraints | None = Field(
        default=None,
        description="Bounds applied to the resolved value of each field, whichever level set it.",
    )
    enforcement: ConstraintAction = Field(
        default="Clamp",
        description="What a violated bound does: Clamp (use the nearest bound and report it), Reject (refuse the "
        "table's policy: Ready=False, PolicyViolation) or Warn (keep the value, report a violation). Clamp never "
        "turns an unset, unlimited value into a limit: it warns instead. Default Clamp.",
    )
