"""The only modules of tablekeeper that import pypaimon: partition paths as pypaimon renders
them (the reference), the commits of partition expiration and of the missing-file repair and
their file IO, and the demo's sample tables."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"PartitionPathResolver": "adapter", "drop_partitions": "commit", "remove_data_files": "commit", "commit_rows": "sample_data",
    "create_events_table": "sample_data", "create_orders_table": "sample_data", "EVENTS": "sample_data",
    "table_views": "sample_data"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .adapter import PartitionPathResolver as PartitionPathResolver
    from .commit import drop_partitions as drop_partitions, remove_data_files as remove_data_files
    from .sample_data import (commit_rows as commit_rows, create_events_table as create_events_table,
        create_orders_table as create_orders_table, EVENTS as EVENTS, table_views as table_views)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
