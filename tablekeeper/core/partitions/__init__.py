"""Partition expiration (paimon-semantics.md §6): the partitions whose time is past, dropped by a
Paimon OVERWRITE commit; their files are reclaimed later by snapshot expiration."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "PartitionConfig": "expiration",
    "apply_partition_expiry": "expiration",
    "config_from_options": "expiration",
    "plan_partition_expiry": "expiration",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.partitions.expiration import PartitionConfig as PartitionConfig
    from tablekeeper.core.partitions.expiration import apply_partition_expiry as apply_partition_expiry
    from tablekeeper.core.partitions.expiration import config_from_options as config_from_options
    from tablekeeper.core.partitions.expiration import plan_partition_expiry as plan_partition_expiry
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
