"""The cluster constraints on resolved values (``Clamp``, ``Reject``, ``Warn``) and the hard
rails on the merged result (``minRetained >= 1``, ``maxRetained >= minRetained``, ``delay`` <
period, the orphan age floor)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from tablekeeper.core.policy.common import SpecModel
from tablekeeper.core.policy.duration_field import Duration
from tablekeeper.core.policy.effective.leaves import (
    _PERIOD,
    _PERIOD_DURATION,
    UNSET_MEANS_NONE,
)
from tablekeeper.core.policy.effective.result import (
    ClampRecord,
    PolicyWarning,
)
from tablekeeper.core.policy.specs import DurationBound, IntBound, RetentionConstraints, period_length
from tablekeeper.core.policy.validation import InvalidSpecError, UnsafeSpecError
from tablekeeper.core.values import MIN_RETAIN_MIN, ORPHAN_AGE_FLOOR

__all__ = ["Bound"]


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


def _violated(value: Any, bound: Bound, path: str) -> tuple[Literal["min", "max"], Any] | None:
    """Which side of ``bound`` ``value`` breaks (None = unset = unlimited, or none at all for the
    leaves of :data:`UNSET_MEANS_NONE`)."""
    if value is None:
        if path in UNSET_MEANS_NONE:
            return ("min", bound.min) if bound.min is not None else None
        return ("max", bound.max) if bound.max is not None else None
    if bound.min is not None and _amount(value) < _amount(bound.min):  # type: ignore[operator]
        return "min", bound.min
    if bound.max is not None and _amount(value) > _amount(bound.max):  # type: ignore[operator]
        return "max", bound.max
    return None


def _describe(value: Any, path: str = "") -> str:
    if value is None:
        return "unset (none)" if path in UNSET_MEANS_NONE else "unset (unlimited)"
    return str(value)


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
            broken = _violated(value, bound, path)
            if broken is None:
                continue
            side, limit = broken
            if value is None and side == "max":
                self.warnings.append(PolicyWarning(
                    path, "PolicyViolation",
                    f"{path} is unset (unlimited) (set by {source}), above the maximum {limit} of {policy}; Clamp "
                    f"does not impose a limit the table never set: put {path} into the policy's defaults to "
                    "enforce one", policy))
                continue
            value, source, last_side = limit, policy, side
        for policy, bound in clamps:
            broken = _violated(value, bound, path)
            if broken is not None and value is not None:
                self.warnings.append(PolicyWarning(
                    path, "PolicyViolation",
                    f"constraints conflict on {path}: {value} (from {source}) is outside the "
                    f"{broken[0]}imum {broken[1]} of {policy}", policy))
        if source != original_source:
            self.clamped[path] = ClampRecord(path, original, original_source, value, source, last_side)
        for policy, bound, action in judged:
            broken = _violated(value, bound, path)
            if broken is None:
                continue
            side, limit = broken
            relation = "below the minimum" if side == "min" else "above the maximum"
            what = f"{path} = {_describe(value, path)} (set by {source}) is {relation} {limit} of {policy}"
            if action == "Reject":
                self.rejections.append((what, policy))
            else:
                self.warnings.append(PolicyWarning(path, "PolicyViolation", what, policy))
        return value, source


def _check_rails(values: Mapping[str, Any], sources: Mapping[str, str], who: str) -> None:
    def at(path: str) -> str:
        return f"{path} = {_describe(values[path])} (from {sources[path]})"

    for section in ("snapshots", "changelog"):
        low, high = values[f"{section}.minRetained"], values[f"{section}.maxRetained"]
        if low < MIN_RETAIN_MIN:
            raise UnsafeSpecError(
                f"{who}: {at(section + '.minRetained')} is below {MIN_RETAIN_MIN}",
                fix=f"set {section}.minRetained to at least {MIN_RETAIN_MIN} where it comes from",
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
    if older_than.to_timedelta() < ORPHAN_AGE_FLOOR:
        raise UnsafeSpecError(
            f"{who}: {at('orphanFiles.olderThan')} is below the safety floor "
            f"{Duration.from_timedelta(ORPHAN_AGE_FLOOR)}",
            fix="raise orphanFiles.olderThan where it comes from (default '1 d')",
            fields=("orphanFiles.olderThan",))
