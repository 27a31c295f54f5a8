"""Status as data: what one reconcile concluded (:class:`Outcome`) and the minimal status patch
that records it (:func:`render`).

A reconcile returns an :class:`Outcome`: the status fields it owns, its conditions, labels to
mirror, Events to post, and an optional failure (raised as a Kopf error after patching). The
handlers turn it into a patch with :func:`render`, which writes **only what differs** from the
current status (conditions keep their ``lastTransitionTime`` while their status holds), so a
periodic check that finds nothing new writes nothing (operator-design.md §7.2).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tablekeeper.operator.status import conditions, reasons
from tablekeeper.operator.status.errors import Failure

__all__ = ["Event", "Outcome", "render", "merge_diff", "label_changes", "plain", "url_of", "conditions_of"]


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event to post about the object."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass
class Outcome:
    """What one reconcile of one object concluded.

    Attributes:
        fields: status keys this reconcile owns, with their new values (None removes the key).
        conditions: the conditions it decided (other condition types are dropped unless listed
            in ``keep``).
        keep: condition types of the current status to keep untouched.
        generation: the ``metadata.generation`` this outcome was computed for (written to
            ``status.observedGeneration``); None leaves it as it is.
        labels: labels to mirror onto the object.
        events: Events to post.
        failure: raised as a Kopf error after the status is written.
        delay: retry delay for a temporary failure.
    """

    fields: dict[str, Any] = field(default_factory=dict)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    keep: tuple[str, ...] = ()
    generation: int | None = None
    labels: dict[str, str] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    failure: Failure | None = None
    delay: float = 0.0

    def event(self, type_: Literal["Normal", "Warning"], reason: str, message: str) -> None:
        self.events.append(Event(type_, reason, message))


def plain(value: Any) -> Any:
    """JSON-ready copy (durations, schedules and other str subclasses become str)."""
    return json.loads(json.dumps(value, default=str))


def render(current: Mapping[str, Any] | None, outcome: Outcome) -> dict[str, Any]:
    """The status merge patch that records ``outcome`` (empty when nothing changes)."""
    current = current or {}
    patch: dict[str, Any] = {}
    for key, value in outcome.fields.items():
        value = plain(value) if value is not None else None
        if value is None:
            if key in current:
                patch[key] = None
        elif current.get(key) != value:
            before = current.get(key)
            patch[key] = (merge_diff(before, value) if isinstance(before, Mapping) and isinstance(value, Mapping)
                          else value)
    if outcome.conditions or outcome.keep:
        merged = conditions.merge(current.get("conditions"), outcome.conditions, keep=outcome.keep)
        merged = [c for c in merged if c["type"] not in (conditions.RECONCILING, conditions.STALLED)]
        derived = conditions.kstatus(merged, state=outcome.fields.get("state", current.get("state")),
                                     phase=outcome.fields.get("phase", current.get("phase")),
                                     transient=reasons.TRANSIENT)
        merged += conditions.merge(current.get("conditions"), derived)
        if merged != list(current.get("conditions") or []):
            patch["conditions"] = merged
    if outcome.generation is not None and current.get("observedGeneration") != outcome.generation:
        patch["observedGeneration"] = outcome.generation
    return patch


def merge_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The RFC 7386 merge patch turning ``old`` into ``new`` (removed keys become None)."""
    diff: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            sub = merge_diff(before, value)
            if sub:
                diff[key] = sub
        elif key not in old or before != value:
            diff[key] = value
    return diff


def label_changes(current: Mapping[str, str] | None, wanted: Mapping[str, str]) -> dict[str, str]:
    """Labels of ``wanted`` that differ from ``current``."""
    current = current or {}
    return {k: v for k, v in wanted.items() if v and current.get(k) != v}


def url_of(kind_plural: str, namespace: str | None, name: str, *, subresource: str | None = None) -> str:
    """API path of a tablekeeper object (or its ``/status``)."""
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"/apis/tablekeeper.io/v1alpha1{scope}/{kind_plural}/{name}" + (f"/{subresource}" if subresource else "")


def conditions_of(current: Mapping[str, Any] | None) -> Sequence[Mapping[str, Any]]:
    """The current conditions (possibly empty)."""
    return list((current or {}).get("conditions") or [])
