"""The two hands-off modes every managed kind reports the same way: ``tablekeeper.io/paused``
(spec changes wait, deletion is still processed) and ``tablekeeper.io/managed: "false"``
(detached: storage is never touched). ``Ready`` is kept as it was in both.
"""

from __future__ import annotations

from datetime import datetime

from tablekeeper.operator.cluster.view import Obj
from tablekeeper.operator.status import conditions
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.outcome import Outcome

__all__ = ["paused_outcome", "unmanaged_outcome"]


def paused_outcome(obj: Obj, now: datetime) -> Outcome:
    """``tablekeeper.io/paused``: nothing changes in storage; deletion is still processed."""
    outcome = Outcome(generation=None, keep=(conditions.READY,))
    outcome.conditions = [
        conditions.condition(conditions.SYNCED, False, Reason.RECONCILE_PAUSED, "tablekeeper.io/paused is set",
                             generation=obj.generation, now=now),
        conditions.condition(conditions.PAUSED, True, Reason.PAUSED, "spec changes are not applied while paused",
                             generation=obj.generation, now=now),
    ]
    return outcome


def unmanaged_outcome(obj: Obj, now: datetime) -> Outcome:
    """``tablekeeper.io/managed: "false"``: detached; storage is never touched, not even on deletion."""
    outcome = Outcome(generation=None, keep=(conditions.READY,))
    outcome.conditions = [
        conditions.condition(conditions.SYNCED, False, Reason.UNMANAGED, "tablekeeper.io/managed is false",
                             generation=obj.generation, now=now),
        conditions.condition(conditions.UNMANAGED, True, Reason.UNMANAGED,
                             "detached: storage is not changed, not even when the CR is deleted",
                             generation=obj.generation, now=now),
    ]
    return outcome
