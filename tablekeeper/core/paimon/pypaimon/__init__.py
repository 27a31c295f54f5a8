"""The adapters over pypaimon, the only modules of tablekeeper that import it: partition paths
as pypaimon renders them (the reference), the partition-overwrite commit of partition
expiration, its file IO on stores pypaimon cannot reach, and the demo's sample tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "EVENTS": "sample_data",
    "PartitionPathResolver": "adapter",
    "commit_rows": "sample_data",
    "create_events_table": "sample_data",
    "create_orders_table": "sample_data",
    "drop_partitions": "commit",
    "table_views": "sample_data",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.paimon.pypaimon.adapter import PartitionPathResolver as PartitionPathResolver
    from tablekeeper.core.paimon.pypaimon.commit import drop_partitions as drop_partitions
    from tablekeeper.core.paimon.pypaimon.sample_data import EVENTS as EVENTS
    from tablekeeper.core.paimon.pypaimon.sample_data import commit_rows as commit_rows
    from tablekeeper.core.paimon.pypaimon.sample_data import create_events_table as create_events_table
    from tablekeeper.core.paimon.pypaimon.sample_data import create_orders_table as create_orders_table
    from tablekeeper.core.paimon.pypaimon.sample_data import table_views as table_views
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
