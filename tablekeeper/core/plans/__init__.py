"""Plans: what is deleted or written, in which order and why (frozen), the in-process executor
that carries them out, and the fewest requests an operation needs. What a plan holds is
decided by the planners (``expire``, ``orphans``, ``refs``)."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"delete_batch": "execution", "delete_batch_size": "execution", "execute": "execution",
    "ExecutionResult": "execution", "Progress": "execution", "SIZE_UNKNOWN": "execution", "sized": "execution",
    "stat_sizes": "execution", "DeleteStep": "plan", "FileKind": "plan", "Plan": "plan", "PlannedFile": "plan",
    "RemoveEmptyDirsStep": "plan", "stage_of": "plan", "STAGE_ORDER": "plan", "Step": "plan", "WriteStep": "plan"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .execution import (delete_batch as delete_batch, delete_batch_size as delete_batch_size, execute as execute,
        ExecutionResult as ExecutionResult, Progress as Progress, SIZE_UNKNOWN as SIZE_UNKNOWN, sized as sized,
        stat_sizes as stat_sizes)
    from .plan import (DeleteStep as DeleteStep, FileKind as FileKind, Plan as Plan, PlannedFile as PlannedFile,
        RemoveEmptyDirsStep as RemoveEmptyDirsStep, stage_of as stage_of, STAGE_ORDER as STAGE_ORDER, Step as Step,
        WriteStep as WriteStep)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
