"""Running beside writers, other maintainers and crashes: one maintainer per table (:mod:`.lease`),
EARLIEST/LATEST hints that stay monotonic (:mod:`.hint_writes`), failing closed on metadata
of a newer Paimon (:mod:`.format_guard`), what can be told about writers (:mod:`.writers`),
and the named phase points crash and interleaving tests stop at (:mod:`.seams`).

It decides when an operation may go on; what the operation deletes is its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "LEASE_DIR": "lease",
    "active": "seams",
    "check_formats": "format_guard",
    "check_latest": "format_guard",
    "forced_threshold_warning": "writers",
    "guarded": "seams",
    "held": "lease",
    "hint_target": "hint_writes",
    "point": "seams",
    "write_hint": "hint_writes",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.concurrency.format_guard import check_formats as check_formats
    from tablekeeper.core.concurrency.format_guard import check_latest as check_latest
    from tablekeeper.core.concurrency.hint_writes import hint_target as hint_target
    from tablekeeper.core.concurrency.hint_writes import write_hint as write_hint
    from tablekeeper.core.concurrency.lease import LEASE_DIR as LEASE_DIR
    from tablekeeper.core.concurrency.lease import held as held
    from tablekeeper.core.concurrency.seams import active as active
    from tablekeeper.core.concurrency.seams import guarded as guarded
    from tablekeeper.core.concurrency.seams import point as point
    from tablekeeper.core.concurrency.writers import forced_threshold_warning as forced_threshold_warning
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
