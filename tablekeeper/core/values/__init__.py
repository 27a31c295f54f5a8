"""What users write and the named rails: durations in Paimon's syntax, timestamps and ages, tag and branch names, and the safety rails as named constants.

It decides how a value is spelled and checked; what the value means is its user's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "DEFAULT_ORPHAN_MIN_AGE": "rails",
    "DELETE_BATCH_DEFAULT": "rails",
    "DELETE_BATCH_MAX": "rails",
    "MAIN_BRANCH": "names",
    "MIN_RETAIN_MIN": "rails",
    "ORPHAN_AGE_FLOOR": "rails",
    "PROTECTED_TAG_PREFIXES": "rails",
    "SPARK_NAME_MAX": "rails",
    "STATUS_SAMPLE_MAX": "rails",
    "UNKNOWN_ZONE_MARGIN": "rails",
    "epoch_ms": "timestamps",
    "format_duration": "durations",
    "iso_ms": "timestamps",
    "now_ms": "timestamps",
    "parse_duration": "durations",
    "parse_instant_ms": "timestamps",
    "parse_rfc3339": "timestamps",
    "parse_rfc3339_ms": "timestamps",
    "parse_time_or_age": "timestamps",
    "rfc3339": "timestamps",
    "rfc3339_ms": "timestamps",
    "validate_branch_name": "names",
    "validate_tag_name": "names",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.values.durations import format_duration as format_duration
    from tablekeeper.core.values.durations import parse_duration as parse_duration
    from tablekeeper.core.values.names import MAIN_BRANCH as MAIN_BRANCH
    from tablekeeper.core.values.names import validate_branch_name as validate_branch_name
    from tablekeeper.core.values.names import validate_tag_name as validate_tag_name
    from tablekeeper.core.values.rails import DEFAULT_ORPHAN_MIN_AGE as DEFAULT_ORPHAN_MIN_AGE
    from tablekeeper.core.values.rails import DELETE_BATCH_DEFAULT as DELETE_BATCH_DEFAULT
    from tablekeeper.core.values.rails import DELETE_BATCH_MAX as DELETE_BATCH_MAX
    from tablekeeper.core.values.rails import MIN_RETAIN_MIN as MIN_RETAIN_MIN
    from tablekeeper.core.values.rails import ORPHAN_AGE_FLOOR as ORPHAN_AGE_FLOOR
    from tablekeeper.core.values.rails import PROTECTED_TAG_PREFIXES as PROTECTED_TAG_PREFIXES
    from tablekeeper.core.values.rails import SPARK_NAME_MAX as SPARK_NAME_MAX
    from tablekeeper.core.values.rails import STATUS_SAMPLE_MAX as STATUS_SAMPLE_MAX
    from tablekeeper.core.values.rails import UNKNOWN_ZONE_MARGIN as UNKNOWN_ZONE_MARGIN
    from tablekeeper.core.values.timestamps import epoch_ms as epoch_ms
    from tablekeeper.core.values.timestamps import iso_ms as iso_ms
    from tablekeeper.core.values.timestamps import now_ms as now_ms
    from tablekeeper.core.values.timestamps import parse_instant_ms as parse_instant_ms
    from tablekeeper.core.values.timestamps import parse_rfc3339 as parse_rfc3339
    from tablekeeper.core.values.timestamps import parse_rfc3339_ms as parse_rfc3339_ms
    from tablekeeper.core.values.timestamps import parse_time_or_age as parse_time_or_age
    from tablekeeper.core.values.timestamps import rfc3339 as rfc3339
    from tablekeeper.core.values.timestamps import rfc3339_ms as rfc3339_ms
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
