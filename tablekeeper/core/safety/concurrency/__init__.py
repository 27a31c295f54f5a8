"""Beside writers, other maintainers and crashes: one maintainer per table (the lease), hints
that stay monotonic, failing closed on a newer Paimon's metadata, what can be told about
writers, and the named phase points crash tests stop at. It decides when an operation
may go on; what the operation deletes is its own."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"check_formats": "format_guard", "check_latest": "format_guard", "hint_target": "hint_writes",
    "write_hint": "hint_writes", "held": "lease", "LEASE_DIR": "lease", "active": "seams", "guarded": "seams",
    "point": "seams", "forced_threshold_warning": "writers"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .format_guard import check_formats as check_formats, check_latest as check_latest
    from .hint_writes import hint_target as hint_target, write_hint as write_hint
    from .lease import held as held, LEASE_DIR as LEASE_DIR
    from .seams import active as active, guarded as guarded, point as point
    from .writers import forced_threshold_warning as forced_threshold_warning
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
