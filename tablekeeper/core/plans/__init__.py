"""Plans: what is deleted or written, in which order, why, and how many bytes (:mod:`.plan`), carried
out by the in-process executor (:mod:`.execution`), and the fewest requests an operation needs
(:mod:`.request_minimum`).

Planners return these frozen objects; dry run = the same plan, executed by nothing. What a
plan holds is decided by the planners (``expire``, ``orphans``, ``refs``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "DeleteStep": "plan",
    "ExecutionResult": "execution",
    "FileKind": "plan",
    "Plan": "plan",
    "PlannedFile": "plan",
    "Progress": "execution",
    "RemoveEmptyDirsStep": "plan",
    "SIZE_UNKNOWN": "execution",
    "STAGE_ORDER": "plan",
    "Step": "plan",
    "WriteStep": "plan",
    "delete_batch": "execution",
    "delete_batch_size": "execution",
    "execute": "execution",
    "sized": "execution",
    "stage_of": "plan",
    "stat_sizes": "execution",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.plans.execution import SIZE_UNKNOWN as SIZE_UNKNOWN
    from tablekeeper.core.plans.execution import ExecutionResult as ExecutionResult
    from tablekeeper.core.plans.execution import Progress as Progress
    from tablekeeper.core.plans.execution import delete_batch as delete_batch
    from tablekeeper.core.plans.execution import delete_batch_size as delete_batch_size
    from tablekeeper.core.plans.execution import execute as execute
    from tablekeeper.core.plans.execution import sized as sized
    from tablekeeper.core.plans.execution import stat_sizes as stat_sizes
    from tablekeeper.core.plans.plan import STAGE_ORDER as STAGE_ORDER
    from tablekeeper.core.plans.plan import DeleteStep as DeleteStep
    from tablekeeper.core.plans.plan import FileKind as FileKind
    from tablekeeper.core.plans.plan import Plan as Plan
    from tablekeeper.core.plans.plan import PlannedFile as PlannedFile
    from tablekeeper.core.plans.plan import RemoveEmptyDirsStep as RemoveEmptyDirsStep
    from tablekeeper.core.plans.plan import Step as Step
    from tablekeeper.core.plans.plan import WriteStep as WriteStep
    from tablekeeper.core.plans.plan import stage_of as stage_of
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
