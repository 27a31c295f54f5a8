"""The two hands-off modes every managed kind reports the same way: ``tablekeeper.io/paused``
(spec changes wait, deletion is still processed) and ``tablekeeper.io/managed: "false"``
(detached: storage is never touched).

Both say so where people look: ``Ready`` is ``Unknown`` with reason ``Paused`` / ``Unmanaged``
(``kubectl get``'s READY and REASON), and a tag's or branch's ``status.state`` is ``Paused`` /
``Unmanaged`` (STATE). Nothing is verified while hands off, so ``Ready`` cannot stay ``True``;
the next pass after the mode ends reports the object as storage has it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tablekeeper.operator.cluster.view import Obj
from tablekeeper.operator.status import conditions
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.outcome import Outcome

__all__ = ["paused_outcome", "unmanaged_outcome"]

#: Kinds whose ``status.state`` is a lifecycle state (the STATE column of tags).
_STATEFUL = frozenset({"PaimonTag", "PaimonBranch"})


def paused_outcome(obj: Obj, now: datetime) -> Outcome:
    """``tablekeeper.io/paused``: nothing changes in storage; deletion is still processed."""
    return _hands_off(obj, now, "Paused", [
        conditions.condition(conditions.READY, "Unknown", Reason.PAUSED,
                             "tablekeeper.io/paused is set: the object is not reconciled until it is removed",
                             generation=obj.generation, now=now),
        conditions.condition(conditions.SYNCED, False, Reason.RECONCILE_PAUSED, "tablekeeper.io/paused is set",
                             generation=obj.generation, now=now),
        conditions.condition(conditions.PAUSED, True, Reason.PAUSED, "spec changes are not applied while paused",
                             generation=obj.generation, now=now),
    ])


def unmanaged_outcome(obj: Obj, now: datetime) -> Outcome:
    """``tablekeeper.io/managed: "false"``: detached; storage is never touched, not even on deletion."""
    return _hands_off(obj, now, "Unmanaged", [
        conditions.condition(conditions.READY, "Unknown", Reason.UNMANAGED,
                             "tablekeeper.io/managed is false: storage is neither checked nor changed",
                             generation=obj.generation, now=now),
        conditions.condition(conditions.SYNCED, False, Reason.UNMANAGED, "tablekeeper.io/managed is false",
                             generation=obj.generation, now=now),
        conditions.condition(conditions.UNMANAGED, True, Reason.UNMANAGED,
                             "detached: storage is not changed, not even when the CR is deleted",
                             generation=obj.generation, now=now),
    ])


def _hands_off(obj: Obj, now: datetime, state: str, conds: list[dict[str, Any]]) -> Outcome:
    outcome = Outcome(generation=None)
    outcome.conditions = conds
    if obj.kind in _STATEFUL:
        outcome.fields["state"] = state
    return outcome
