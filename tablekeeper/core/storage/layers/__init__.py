"""The layers every store shares, outside in: one decision's view of the store
(:mod:`.views`), immutable files kept and bytes read ahead (:mod:`.read_cache`), and the
path of every request (:mod:`.calls`): counted and paced (:mod:`.requests`), retried on
transient failures (:mod:`.retry`).

They decide what a request costs and when it is repeated; what is read is the store's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "Calls": "calls",
    "PACING_OPTION": "requests",
    "Pacer": "requests",
    "ReadCache": "read_cache",
    "RequestKind": "requests",
    "RequestLayer": "requests",
    "RetryPolicy": "retry",
    "TRANSIENT_CODES": "retry",
    "Views": "views",
    "is_transient": "retry",
    "pacing_from_options": "requests",
    "plus": "requests",
    "process_snapshot": "requests",
    "retries_sleep": "calls",
    "since": "requests",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.storage.layers.calls import Calls as Calls
    from tablekeeper.core.storage.layers.calls import retries_sleep as retries_sleep
    from tablekeeper.core.storage.layers.read_cache import ReadCache as ReadCache
    from tablekeeper.core.storage.layers.requests import PACING_OPTION as PACING_OPTION
    from tablekeeper.core.storage.layers.requests import Pacer as Pacer
    from tablekeeper.core.storage.layers.requests import RequestKind as RequestKind
    from tablekeeper.core.storage.layers.requests import RequestLayer as RequestLayer
    from tablekeeper.core.storage.layers.requests import pacing_from_options as pacing_from_options
    from tablekeeper.core.storage.layers.requests import plus as plus
    from tablekeeper.core.storage.layers.requests import process_snapshot as process_snapshot
    from tablekeeper.core.storage.layers.requests import since as since
    from tablekeeper.core.storage.layers.retry import TRANSIENT_CODES as TRANSIENT_CODES
    from tablekeeper.core.storage.layers.retry import RetryPolicy as RetryPolicy
    from tablekeeper.core.storage.layers.retry import is_transient as is_transient
    from tablekeeper.core.storage.layers.views import Views as Views
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
