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
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from tablekeeper.core import errors, values
from tablekeeper.core.policy.common import SpecModel
from tablekeeper.core.policy.duration_field import Duration
from tablekeeper.core.policy.effective.constraints import _bounds, _check_rails, _Constrainer
from tablekeeper.core.policy.effective.leaves import (
    _LEAVES,
    _PERIOD,
    _PERIOD_DURATION,
    BUILTIN_DEFAULTS,
    RETENTION_LEAVES,
    Leaf,
    _Follow,
)
from tablekeeper.core.policy.effective.result import (
    SOURCE_INLINE,
    SOURCE_OPERATOR_DEFAULT,
    ClusterPolicy,
    EffectivePolicy,
    NamespacedPolicy,
    PolicyNotFoundError,
    TableContext,
    cluster_source,
    namespaced_source,
    policy_ref_source,
    table_option_source,
)
from tablekeeper.core.policy.specs import PAIMON_OPTIONS, RetentionSpec
from tablekeeper.core.policy.validation import InvalidSpecError, UnsafeSpecError, format_path

__all__ = ["matching_policies", "matching_cluster_policies", "resolve_effective_policy"]


# --------------------------------------------------------------------------------------------
# Inputs and result


# --------------------------------------------------------------------------------------------
# Leaves of RetentionSpec


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
            return Duration.from_timedelta(values.parse_duration(raw, field=key))
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


# --------------------------------------------------------------------------------------------
# Rails on the merged result


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
