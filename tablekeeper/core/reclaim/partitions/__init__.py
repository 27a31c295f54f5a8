"""Partition expiration: partitions whose time is past, dropped by a Paimon OVERWRITE commit;
their files are reclaimed later by snapshot expiration (``expire``)."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"apply_partition_expiry": "expiration", "config_from_options": "expiration",
    "list_partitions": "expiration", "PartitionConfig": "expiration", "PartitionPlan": "expiration",
    "plan_partition_expiry": "expiration"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .expiration import (apply_partition_expiry as apply_partition_expiry,
        config_from_options as config_from_options, list_partitions as list_partitions,
        PartitionConfig as PartitionConfig, PartitionPlan as PartitionPlan,
        plan_partition_expiry as plan_partition_expiry)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
