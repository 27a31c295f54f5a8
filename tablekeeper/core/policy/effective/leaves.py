"""The leaves of :class:`RetentionSpec` (one per field a level may set) and what applies when no
level sets one: Paimon's defaults, or tablekeeper's where Paimon has none."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from tablekeeper.core import values
from tablekeeper.core.policy.common import SpecModel
from tablekeeper.core.policy.duration_field import Duration
from tablekeeper.core.policy.effective.result import (
    SOURCE_PAIMON_DEFAULT,
    SOURCE_TABLEKEEPER_DEFAULT,
)
from tablekeeper.core.policy.schedule import Schedule
from tablekeeper.core.policy.specs import RetentionSpec

__all__ = ["LeafKind", "Leaf", "RETENTION_LEAVES", "LEAF_PATHS", "BUILTIN_DEFAULTS", "UNSET_MEANS_NONE"]


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
    "orphanFiles.olderThan": (Duration.from_timedelta(values.DEFAULT_ORPHAN_MIN_AGE), _P),
    "orphanFiles.dryRun": (True, _T),
    "orphanFiles.schedule": (None, _T),
    "orphanFiles.listing": (None, _T),
    "consumers.state": ("Enabled", _T),
    "consumers.expiration": (None, _P),
    "consumers.warnAboveSnapshots": (1000, _T),
    "trash.keep": (None, _T),
}

#: Leaves whose unset value means none of it (no undo window), not unlimited: a minimum bound
#: applies to them when unset.
UNSET_MEANS_NONE: frozenset[str] = frozenset({"trash.keep"})


if set(BUILTIN_DEFAULTS) != set(LEAF_PATHS):  # pragma: no cover - guards future edits
    raise RuntimeError(f"BUILTIN_DEFAULTS out of sync with RetentionSpec: {set(BUILTIN_DEFAULTS) ^ set(LEAF_PATHS)}")


_PERIOD = "tags.autoCreate.period"


_PERIOD_DURATION = "tags.autoCreate.periodDuration"
