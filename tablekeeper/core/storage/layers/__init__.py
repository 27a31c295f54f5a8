"""The layers every store shares, outside in: one decision's view of the store, immutable
files kept and bytes read ahead, and the path of every request (counted, paced,
retried). They decide what a request costs and when it is repeated; what is read is
the store's."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"Calls": "calls", "retries_sleep": "calls", "ReadCache": "read_cache", "Pacer": "requests",
    "pacing_from_options": "requests", "PACING_OPTION": "requests", "plus": "requests",
    "process_snapshot": "requests", "RequestKind": "requests", "RequestLayer": "requests", "since": "requests",
    "is_transient": "retry", "RetryPolicy": "retry", "TRANSIENT_CODES": "retry", "Views": "views"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .calls import Calls as Calls, retries_sleep as retries_sleep
    from .read_cache import ReadCache as ReadCache
    from .requests import (Pacer as Pacer, pacing_from_options as pacing_from_options, PACING_OPTION as PACING_OPTION,
        plus as plus, process_snapshot as process_snapshot, RequestKind as RequestKind, RequestLayer as RequestLayer,
        since as since)
    from .retry import is_transient as is_transient, RetryPolicy as RetryPolicy, TRANSIENT_CODES as TRANSIENT_CODES
    from .views import Views as Views
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
