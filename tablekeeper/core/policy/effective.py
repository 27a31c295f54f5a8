"""Effective-policy resolution: which retention value applies to a table, and where it came from.

Per leaf field of :class:`RetentionSpec` the first level that sets it wins (operator-design.md §6):

1. the table's inline ``spec.retention`` (source ``inline``);
2. its ``policyRefs``, in list order (``policyRef/<name>``);
3. ``PaimonRetentionPolicy`` objects of the table's namespace whose selector matches, by
   ``priority`` (higher first; ties by name) (``policy/<namespace>/<name>``);
4. matching ``ClusterPaimonRetentionPolicy`` objects by priority (``cluster/<name>``);
5. the operator defaults (``operator-default``);
6. Paimon's defaults: the table's own Paimon options where set (``table-option/<key>``), else
   Paimon's built-in default (``paimon-default``), or tablekeeper's where Paimon has none
   (``tablekeeper-default``: section states, orphan cleanup switches).

A section ``state`` of ``Inherit`` counts as unset. ``tags.autoCreate.period`` and
``periodDuration`` resolve together (the level that sets either decides both), so a custom
period below can never override a named period above. Unset ``changelog.*`` values follow the
resolved ``snapshots.*`` values, as in Paimon.

Then the ``constraints`` of every matching cluster policy apply to the resolved values:
``Clamp`` moves a value to the nearest bound (recorded in ``clamped``; the source becomes the
clamping policy), ``Reject`` raises :class:`UnsafeSpecError` naming the policy, ``Warn`` adds a
warning. Clamps are applied first, lowest precedence first, so the highest-precedence bound
wins a conflict (which is reported as a warning); Reject and Warn then judge the clamped value.
Clamp never turns an unset (unlimited) value into a limit; it warns instead. Finally the hard rails are checked on the result
(``minRetained >= 1``, ``maxRetained >= minRetained``, ``delay`` < period, orphan age floor); a
violation raises naming every field involved and its source.

Everything here is a pure function of its inputs; nothing reads storage or the clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import ValidationError

from tablekeeper.core import durations, errors, safety
from tablekeeper.core.policy.common import SpecModel
from tablekeeper.core.policy.duration_field import Duration
from tablekeeper.core.policy.policy import (
    ClusterPaimonRetentionPolicySpec,
    DurationBound,
    IntBound,
    PaimonRetentionPolicySpec,
    RetentionConstraints,
)
from tablekeeper.core.policy.retention import PAIMON_OPTIONS, RetentionSpec, period_length
from tablekeeper.core.policy.schedule import Schedule
from tablekeeper.core.policy.table import PaimonTableSpec
from tablekeeper.core.policy.validation import InvalidSpecError, UnsafeSpecError, format_path

__all__ = [
    "TableContext",
    "NamespacedPolicy",
    "ClusterPolicy",
    "ClampRecord",
    "PolicyWarning",
    "EffectivePolicy",
    "PolicyNotFoundError",
    "Leaf",
    "RETENTION_LEAVES",
    "LEAF_PATHS",
    "BUILTIN_DEFAULTS",
    "SOURCE_INLINE",
    "SOURCE_OPERATOR_DEFAULT",
    "SOURCE_PAIMON_DEFAULT",
    "SOURCE_TABLEKEEPER_DEFAULT",
    "policy_ref_source",
    "namespaced_source",
    "cluster_source",
    "table_option_source",
    "matching_policies",
    "matching_cluster_policies",
    "resolve_effective_policy",
]

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


# --------------------------------------------------------------------------------------------
# Inputs and result


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


# --------------------------------------------------------------------------------------------
# Leaves of RetentionSpec

LeafKind = Literal["state", "int", "bool", "duration", "schedule", "str", "choice"]


@dataclass(frozen=True)
class Leaf:
    """One leaf field of :class:`RetentionSpec`: camelCase path, attribute chain, value kind."""

    path: str
    attrs: tuple[str, ...]
    kind: LeafKind
    choices: tuple[str, ...] = ()


def _strip_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _leaf_kind(name: str, annotation: Any) -> tuple[LeafKind, tuple[str, ...]]:
    if name == "state":
        return "state", ("Enabled", "Disabled")
    if get_origin(annotation) is Literal:
        return "choice", tuple(str(a) for a in get_args(annotation))
    for kind, cls in (("duration", Duration), ("schedule", Schedule), ("bool", bool), ("int", int), ("str", str)):
        if annotation is cls:
            return kind, ()  # type: ignore[return-value]
    raise TypeError(f"unsupported retention leaf type {annotation!r} for {name}")


def _walk(model: type[SpecModel], path: tuple[str, ...] = (), attrs: tuple[str, ...] = ()) -> Iterable[Leaf]:
    for name, info in model.model_fields.items():
        annotation = _strip_optional(info.annotation)
        alias = info.alias or name
        if isinstance(annotation, type) and issubclass(annotation, SpecModel):
            yield from _walk(annotation, (*path, alias), (*attrs, name))
        else:
            kind, choices = _leaf_kind(name, annotation)
            yield Leaf(".".join((*path, alias)), (*attrs, name), kind, choices)


#: Every leaf of RetentionSpec, in declaration order (snapshots before changelog).
RETENTION_LEAVES: tuple[Leaf, ...] = tuple(_walk(RetentionSpec))
LEAF_PATHS: tuple[str, ...] = tuple(leaf.path for leaf in RETENTION_LEAVES)
_LEAVES = {leaf.path: leaf for leaf in RETENTION_LEAVES}


@dataclass(frozen=True)
class _Follow:
    """Default = the resolved value of another leaf (changelog.* follow snapshots.*)."""

    path: str


_P, _T = SOURCE_PAIMON_DEFAULT, SOURCE_TABLEKEEPER_DEFAULT
#: What applies when no level sets a leaf: (value, source). None = unset (unlimited / off).
BUILTIN_DEFAULTS: dict[str, tuple[Any, str]] = {
    "snapshots.state": ("Enabled", _T),
    "snapshots.minRetained": (10, _P),
    "snapshots.maxRetained": (None, _P),
    "snapshots.maxAge": (Duration("1 h"), _P),
    "snapshots.expireLimit": (50, _P),
    "snapshots.cleanEmptyDirectories": (False, _P),
    "changelog.state": ("Enabled", _T),
    "changelog.minRetained": (_Follow("snapshots.minRetained"), _P),
    "changelog.maxRetained": (_Follow("snapshots.maxRetained"), _P),
    "changelog.maxAge": (_Follow("snapshots.maxAge"), _P),
    "partitions.state": ("Enabled", _T),
    "partitions.expiration": (None, _P),
    "partitions.checkInterval": (Duration("1 h"), _P),
    "partitions.strategy": ("values-time", _P),
    "partitions.timestampFormatter": (None, _P),
    "partitions.timestampPattern": (None, _P),
    "partitions.maxPerRun": (100, _P),
    "tags.state": ("Enabled", _T),
    "tags.defaultTimeRetained": (None, _P),
    "tags.autoCreate.mode": ("none", _P),
    "tags.autoCreate.period": ("daily", _P),
    "tags.autoCreate.periodDuration": (None, _P),
    "tags.autoCreate.delay": (Duration("0 s"), _P),
    "tags.autoCreate.nameFormat": ("with_dashes", _P),
    "tags.autoCreate.maxRetained": (None, _P),
    "tags.autoCreate.catchUp": (False, _P),
    "orphanFiles.state": ("Disabled", _T),
    "orphanFiles.olderThan": (Duration.from_timedelta(safety.DEFAULT_ORPHAN_MIN_AGE), _P),
    "orphanFiles.dryRun": (True, _T),
    "orphanFiles.schedule": (None, _T),
    "orphanFiles.listing": (None, _T),
    "consumers.state": ("Enabled", _T),
    "consumers.expiration": (None, _P),
}
if set(BUILTIN_DEFAULTS) != set(LEAF_PATHS):  # pragma: no cover - guards future edits
    raise RuntimeError(f"BUILTIN_DEFAULTS out of sync with RetentionSpec: {set(BUILTIN_DEFAULTS) ^ set(LEAF_PATHS)}")

_PERIOD = "tags.autoCreate.period"
_PERIOD_DURATION = "tags.autoCreate.periodDuration"


# --------------------------------------------------------------------------------------------
# Levels


def _get(spec: SpecModel | None, attrs: Sequence[str]) -> Any:
    current: Any = spec
    for attr in attrs:
        if current is None:
            return None
        current = getattr(current, attr)
    return current


@dataclass(frozen=True)
class _SpecLevel:
    spec: RetentionSpec | None
    source: str

    def lookup(self, leaf: Leaf) -> tuple[Any, str] | None:
        value = _get(self.spec, leaf.attrs)
        if value is None or (leaf.kind == "state" and value == "Inherit"):
            return None
        return value, self.source


@dataclass(frozen=True)
class _OptionsLevel:
    options: Mapping[str, str]

    def lookup(self, leaf: Leaf) -> tuple[Any, str] | None:
        for key in PAIMON_OPTIONS.get(leaf.path, ()):
            raw = self.options.get(key)
            if raw is not None and raw.strip():
                return _parse_option(leaf, key, raw.strip()), table_option_source(key)
        return None


_Level = _SpecLevel | _OptionsLevel


def _parse_option(leaf: Leaf, key: str, raw: str) -> Any:
    """A Paimon table option value as the leaf's type (parsed only when that level decides)."""
    fix = f"correct the table option {key!r} (ALTER TABLE ... SET), or set {leaf.path} in a policy"
    if leaf.kind == "int":
        try:
            return int(raw)
        except ValueError:
            raise errors.InvalidInputError(f"table option {key}={raw!r} is not an integer", fix=fix) from None
    if leaf.kind == "bool":
        if raw.lower() in ("true", "false"):
            return raw.lower() == "true"
        raise errors.InvalidInputError(f"table option {key}={raw!r} is not true or false", fix=fix)
    if leaf.kind == "duration":
        try:
            return Duration.from_timedelta(durations.parse_duration(raw, field=key))
        except errors.InvalidDurationError as exc:
            raise errors.InvalidInputError(f"table option {key}={raw!r} is not a duration", fix=fix) from exc
    if leaf.kind == "choice":
        for choice in leaf.choices:
            if raw.lower() == choice.lower():
                return choice
        raise errors.InvalidInputError(
            f"table option {key}={raw!r} is not one of {', '.join(leaf.choices)}", fix=fix
        )
    return raw


# --------------------------------------------------------------------------------------------
# Matching


def _precedence(priority: int, name: str) -> tuple[int, str]:
    return (-priority, name)


def matching_policies(table: TableContext, policies: Iterable[NamespacedPolicy]) -> list[NamespacedPolicy]:
    """Namespaced policies that apply to ``table`` by selector, highest precedence first.

    Policies of other namespaces and policies already named in ``policyRefs`` are left out.
    """
    referenced = {ref.name for ref in table.spec.policy_refs}
    matched = [
        policy for policy in policies
        if policy.namespace == table.namespace
        and policy.name not in referenced
        and (policy.spec.selector is None or policy.spec.selector.matches_table(
            database=table.spec.database, table=table.spec.table, labels=table.labels))
    ]
    return sorted(matched, key=lambda p: _precedence(p.spec.priority, p.name))


def matching_cluster_policies(table: TableContext, policies: Iterable[ClusterPolicy]) -> list[ClusterPolicy]:
    """Cluster policies that apply to ``table``, highest precedence first."""
    matched = [
        policy for policy in policies
        if policy.spec.selector is None or policy.spec.selector.matches(
            namespace=table.namespace, namespace_labels=table.namespace_labels,
            database=table.spec.database, table=table.spec.table, labels=table.labels)
    ]
    return sorted(matched, key=lambda p: _precedence(p.spec.priority, p.name))


def _referenced(table: TableContext, policies: Sequence[NamespacedPolicy]) -> list[NamespacedPolicy]:
    by_name = {p.name: p for p in policies if p.namespace == table.namespace}
    out = []
    for ref in table.spec.policy_refs:
        if ref.name not in by_name:
            raise PolicyNotFoundError(
                f"PaimonTable {table.namespace}/{table.name} references PaimonRetentionPolicy {ref.name!r}, "
                f"which does not exist in namespace {table.namespace!r}",
                fix=f"create PaimonRetentionPolicy {ref.name!r} in {table.namespace!r} or remove it from policyRefs",
            )
        out.append(by_name[ref.name])
    return out


# --------------------------------------------------------------------------------------------
# Constraints

Bound = IntBound | DurationBound


def _bounds(constraints: RetentionConstraints | None) -> dict[str, Bound]:
    out: dict[str, Bound] = {}

    def walk(model: SpecModel | None, prefix: tuple[str, ...]) -> None:
        if model is None:
            return
        for name, info in type(model).model_fields.items():
            value = getattr(model, name)
            path = (*prefix, info.alias or name)
            if isinstance(value, IntBound | DurationBound):
                out[".".join(path)] = value
            elif isinstance(value, SpecModel):
                walk(value, path)

    walk(constraints, ())
    return out


def _amount(value: Any) -> int | timedelta:
    return value.to_timedelta() if isinstance(value, Duration) else int(value)


def _violated(value: Any, bound: Bound) -> tuple[Literal["min", "max"], Any] | None:
    """Which side of ``bound`` ``value`` breaks (None = unset = unlimited)."""
    if value is None:
        return ("max", bound.max) if bound.max is not None else None
    if bound.min is not None and _amount(value) < _amount(bound.min):  # type: ignore[operator]
        return "min", bound.min
    if bound.max is not None and _amount(value) > _amount(bound.max):  # type: ignore[operator]
        return "max", bound.max
    return None


def _describe(value: Any) -> str:
    return "unset (unlimited)" if value is None else str(value)


@dataclass
class _Constrainer:
    policies: list[tuple[str, str, dict[str, Bound]]]  # (source, default action, bounds), precedence order
    clamped: dict[str, ClampRecord] = field(default_factory=dict)
    warnings: list[PolicyWarning] = field(default_factory=list)
    rejections: list[tuple[str, str]] = field(default_factory=list)  # (message, policy)

    def apply(self, path: str, value: Any, source: str) -> tuple[Any, str]:
        """Clamp first (every Clamp bound, lowest precedence first so the highest applies last),
        then judge Reject and Warn bounds on the clamped value."""
        clamps: list[tuple[str, Bound]] = []
        judged: list[tuple[str, Bound, str]] = []
        for policy, default_action, bounds in self.policies:
            bound = bounds.get(path)
            if bound is not None:
                action = bound.enforcement or default_action
                if action == "Clamp":
                    clamps.append((policy, bound))
                else:
                    judged.append((policy, bound, action))
        original, original_source = value, source
        last_side: Literal["min", "max"] = "min"
        for policy, bound in reversed(clamps):
            broken = _violated(value, bound)
            if broken is None:
                continue
            side, limit = broken
            if value is None:
                self.warnings.append(PolicyWarning(
                    path, "PolicyViolation",
                    f"{path} is unset (unlimited) (set by {source}), above the maximum {limit} of {policy}; Clamp "
                    f"does not impose a limit the table never set: put {path} into the policy's defaults to "
                    "enforce one", policy))
                continue
            value, source, last_side = limit, policy, side
        for policy, bound in clamps:
            broken = _violated(value, bound)
            if broken is not None and value is not None:
                self.warnings.append(PolicyWarning(
                    path, "PolicyViolation",
                    f"constraints conflict on {path}: {value} (from {source}) is outside the "
                    f"{broken[0]}imum {broken[1]} of {policy}", policy))
        if source != original_source:
            self.clamped[path] = ClampRecord(path, original, original_source, value, source, last_side)
        for policy, bound, action in judged:
            broken = _violated(value, bound)
            if broken is None:
                continue
            side, limit = broken
            relation = "below the minimum" if side == "min" else "above the maximum"
            what = f"{path} = {_describe(value)} (set by {source}) is {relation} {limit} of {policy}"
            if action == "Reject":
                self.rejections.append((what, policy))
            else:
                self.warnings.append(PolicyWarning(path, "PolicyViolation", what, policy))
        return value, source


# --------------------------------------------------------------------------------------------
# Rails on the merged result


def _check_rails(values: Mapping[str, Any], sources: Mapping[str, str], who: str) -> None:
    def at(path: str) -> str:
        return f"{path} = {_describe(values[path])} (from {sources[path]})"

    for section in ("snapshots", "changelog"):
        low, high = values[f"{section}.minRetained"], values[f"{section}.maxRetained"]
        if low < safety.MIN_RETAIN_MIN:
            raise UnsafeSpecError(
                f"{who}: {at(section + '.minRetained')} is below {safety.MIN_RETAIN_MIN}",
                fix=f"set {section}.minRetained to at least {safety.MIN_RETAIN_MIN} where it comes from",
                fields=(f"{section}.minRetained",))
        if high is not None and low > high:
            raise UnsafeSpecError(
                f"{who}: {at(section + '.minRetained')} is larger than {at(section + '.maxRetained')}",
                fix=f"raise {section}.maxRetained or lower {section}.minRetained at one of those sources",
                fields=(f"{section}.minRetained", f"{section}.maxRetained"))
    delay = values["tags.autoCreate.delay"]
    period, period_duration = values[_PERIOD], values[_PERIOD_DURATION]
    if delay is not None and delay.to_timedelta() >= period_length(period, period_duration):
        period_path = _PERIOD_DURATION if period_duration is not None else _PERIOD
        raise InvalidSpecError(
            f"{who}: {at('tags.autoCreate.delay')} is not shorter than {at(period_path)}",
            fix="use a delay shorter than the period, or a longer period",
            fields=("tags.autoCreate.delay", period_path))
    older_than = values["orphanFiles.olderThan"]
    if older_than.to_timedelta() < safety.ORPHAN_AGE_FLOOR:
        raise UnsafeSpecError(
            f"{who}: {at('orphanFiles.olderThan')} is below the safety floor "
            f"{Duration.from_timedelta(safety.ORPHAN_AGE_FLOOR)}",
            fix="raise orphanFiles.olderThan where it comes from (default '1 d')",
            fields=("orphanFiles.olderThan",))


def _build(values: Mapping[str, Any], sources: Mapping[str, str], who: str) -> RetentionSpec:
    nested: dict[str, Any] = {}
    for leaf in RETENTION_LEAVES:
        value = values[leaf.path]
        if value is None:
            continue
        node = nested
        for attr in leaf.attrs[:-1]:
            node = node.setdefault(attr, {})
        node[leaf.attrs[-1]] = value
    try:
        return RetentionSpec.model_validate(nested)
    except ValidationError as err:  # a value from table options that no spec would accept
        problems = []
        unsafe = False
        for error in err.errors(include_url=False):
            exc = (error.get("ctx") or {}).get("error")
            unsafe = unsafe or isinstance(exc, errors.UnsafePolicyError)
            path = format_path(error["loc"])
            origin = sources.get(path)
            problems.append(f"{path}: {getattr(exc, 'message', error['msg'])}"
                            + (f" (from {origin})" if origin else ""))
        cls = UnsafeSpecError if unsafe else InvalidSpecError
        raise cls(f"{who}: " + "; ".join(problems),
                  fix="correct the value at the source named") from err


# --------------------------------------------------------------------------------------------
# Resolution


def resolve_effective_policy(
    table: TableContext,
    *,
    policies: Sequence[NamespacedPolicy] = (),
    cluster_policies: Sequence[ClusterPolicy] = (),
    operator_defaults: RetentionSpec | None = None,
    table_options: Mapping[str, str] | None = None,
) -> EffectivePolicy:
    """Resolve the effective retention of ``table`` (see the module docstring for the rules).

    Args:
        table: the PaimonTable (name, namespace, spec, labels, its namespace's labels).
        policies: PaimonRetentionPolicies (any namespace; others are ignored).
        cluster_policies: ClusterPaimonRetentionPolicies.
        operator_defaults: the operator's configured defaults (Helm values).
        table_options: the table's current Paimon options (``snapshot.num-retained.min``, ...).

    Returns:
        The resolved policy with a source for every leaf.

    Raises:
        PolicyNotFoundError: a ``policyRefs`` entry does not exist.
        UnsafeSpecError: a ``Reject`` constraint is violated (naming the policy), or the merged
            result breaks a safety rail (naming the fields and their sources).
        InvalidSpecError: the merged result is inconsistent (e.g. delay not shorter than period).
        InvalidInputError: a table option that decides a field cannot be parsed.
    """
    who = f"PaimonTable {table.namespace}/{table.name}"
    referenced = _referenced(table, policies)
    namespaced = matching_policies(table, policies)
    clustered = matching_cluster_policies(table, cluster_policies)

    levels: list[_Level] = [_SpecLevel(table.spec.retention, SOURCE_INLINE)]
    levels += [_SpecLevel(p.spec.defaults, policy_ref_source(p.name)) for p in referenced]
    levels += [_SpecLevel(p.spec.defaults, namespaced_source(p.namespace, p.name)) for p in namespaced]
    levels += [_SpecLevel(p.spec.defaults, cluster_source(p.name)) for p in clustered]
    levels.append(_SpecLevel(operator_defaults, SOURCE_OPERATOR_DEFAULT))
    levels.append(_OptionsLevel(table_options or {}))

    constrainer = _Constrainer([
        (cluster_source(p.name), p.spec.enforcement, _bounds(p.spec.constraints)) for p in clustered
    ])
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}

    for leaf in RETENTION_LEAVES:
        if leaf.path in values:
            continue
        if leaf.path in (_PERIOD, _PERIOD_DURATION):
            for path, (value, source) in _resolve_period(levels).items():
                values[path], sources[path] = constrainer.apply(path, value, source)
            continue
        hit = next((found for level in levels if (found := level.lookup(leaf)) is not None), None)
        if hit is None:
            default, source = BUILTIN_DEFAULTS[leaf.path]
            value = values[default.path] if isinstance(default, _Follow) else default
        else:
            value, source = hit
        values[leaf.path], sources[leaf.path] = constrainer.apply(leaf.path, value, source)

    if constrainer.rejections:
        policies_named = sorted({policy for _, policy in constrainer.rejections})
        raise UnsafeSpecError(
            f"{who}: rejected by cluster constraints: " + "; ".join(m for m, _ in constrainer.rejections),
            fix="change each value where it is set so it lies within the bounds, or ask the cluster "
            "administrator to relax " + ", ".join(policies_named),
        )
    _check_rails(values, sources, who)
    retention = _build(values, sources, who)
    applied = tuple([policy_ref_source(p.name) for p in referenced]
                    + [namespaced_source(p.namespace, p.name) for p in namespaced]
                    + [cluster_source(p.name) for p in clustered])
    return EffectivePolicy(
        retention=retention,
        sources=sources,
        values=values,
        clamped=dict(constrainer.clamped),
        warnings=tuple(constrainer.warnings),
        policies=applied,
    )


def _resolve_period(levels: Sequence[_Level]) -> dict[str, tuple[Any, str]]:
    """period and periodDuration: the first level that sets either decides both."""
    period_leaf, duration_leaf = _LEAVES[_PERIOD], _LEAVES[_PERIOD_DURATION]
    for level in levels:
        period, duration = level.lookup(period_leaf), level.lookup(duration_leaf)
        if duration is not None:  # a custom duration overrides the named period (as in Paimon)
            return {_PERIOD: (None, duration[1]), _PERIOD_DURATION: duration}
        if period is not None:
            return {_PERIOD: period, _PERIOD_DURATION: (None, period[1])}
    return {_PERIOD: BUILTIN_DEFAULTS[_PERIOD], _PERIOD_DURATION: BUILTIN_DEFAULTS[_PERIOD_DURATION]}
