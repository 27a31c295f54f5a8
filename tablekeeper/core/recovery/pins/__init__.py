"""What pins a table's history: for each branch, which rule or reference holds the oldest
retained snapshot, and how many snapshots each one alone keeps (``explain``). Computed by
running expiration's own range rule (``expire.compute_range``) with that one pin taken away:
no second rule set."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"explain_table": "explain", "oldest_pin": "explain", "OldestPin": "explain"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .explain import explain_table as explain_table, oldest_pin as oldest_pin, OldestPin as OldestPin
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
