"""Reserved metadata keys under ``tablekeeper.io/`` (operator-design.md §2) and the predicates
the handlers' filters use.

Annotations steer the operator: ``paused`` freezes spec→storage but deletion is still processed;
``managed: "false"`` detaches completely (finalizer removed, storage never touched);
``run-now: <run type>`` asks for one maintenance run (the operator clears it); ``force-delete``
drops the finalizer without touching storage. Labels mirror state for cheap selectors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tablekeeper.core.policy import API_GROUP

__all__ = [
    "API_GROUP",
    "FINALIZER",
    "PAUSED",
    "MANAGED",
    "RUN_NOW",
    "FORCE_DELETE",
    "TABLE_LABEL",
    "TAG_STATE_LABEL",
    "BRANCH_STATE_LABEL",
    "TRIGGER_TYPE_LABEL",
    "RUN_LABEL",
    "TYPE_LABEL",
    "TRIGGER_LABEL",
    "MANAGED_BY_LABEL",
    "OWN_LABELS",
    "is_paused",
    "is_unmanaged",
    "is_force_delete",
    "label_value",
]

FINALIZER = f"{API_GROUP}/finalizer"
PAUSED = f"{API_GROUP}/paused"
MANAGED = f"{API_GROUP}/managed"
RUN_NOW = f"{API_GROUP}/run-now"
FORCE_DELETE = f"{API_GROUP}/force-delete"

TABLE_LABEL = f"{API_GROUP}/table"
TAG_STATE_LABEL = f"{API_GROUP}/tag-state"
BRANCH_STATE_LABEL = f"{API_GROUP}/branch-state"
TRIGGER_TYPE_LABEL = f"{API_GROUP}/trigger-type"
RUN_LABEL = f"{API_GROUP}/run"
TYPE_LABEL = f"{API_GROUP}/type"
TRIGGER_LABEL = f"{API_GROUP}/trigger"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
#: Labels the operator maintains itself (a change of only these is not a new cause to reconcile).
OWN_LABELS = frozenset({TABLE_LABEL, TAG_STATE_LABEL, BRANCH_STATE_LABEL, TRIGGER_TYPE_LABEL, RUN_LABEL,
                        TYPE_LABEL, TRIGGER_LABEL, MANAGED_BY_LABEL})


def _annotations(meta: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (meta or {}).get("annotations") or {}


def is_paused(meta: Mapping[str, Any] | None) -> bool:
    """``tablekeeper.io/paused: "true"``."""
    return str(_annotations(meta).get(PAUSED, "")).lower() == "true"


def is_unmanaged(meta: Mapping[str, Any] | None) -> bool:
    """``tablekeeper.io/managed: "false"``."""
    return str(_annotations(meta).get(MANAGED, "")).lower() == "false"


def is_force_delete(meta: Mapping[str, Any] | None) -> bool:
    """``tablekeeper.io/force-delete: "true"``."""
    return str(_annotations(meta).get(FORCE_DELETE, "")).lower() == "true"


def label_value(text: str) -> str:
    """``text`` made a valid label value (≤ 63 characters of ``[A-Za-z0-9._-]``, alphanumeric ends)."""
    cleaned = "".join(c if c.isalnum() or c in "._-" else "-" for c in text)[:63]
    return cleaned.strip("._-")
