"""What users write and the named rails: durations in Paimon's syntax, timestamps and ages, tag
and branch names, the safety rails. It decides how a value is spelled and checked; what a
value means is for the packages that use it."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"format_duration": "durations", "parse_duration": "durations", "MAIN_BRANCH": "names",
    "validate_branch_name": "names", "validate_tag_name": "names", "DEFAULT_ORPHAN_MIN_AGE": "rails",
    "DELETE_BATCH_DEFAULT": "rails", "DELETE_BATCH_MAX": "rails", "MIN_RETAIN_MIN": "rails",
    "ORPHAN_AGE_FLOOR": "rails", "PROTECTED_TAG_PREFIXES": "rails", "SPARK_NAME_MAX": "rails",
    "STATUS_SAMPLE_MAX": "rails", "UNKNOWN_ZONE_MARGIN": "rails", "epoch_ms": "timestamps", "iso_ms": "timestamps",
    "now_ms": "timestamps", "parse_instant_ms": "timestamps", "parse_rfc3339": "timestamps",
    "parse_rfc3339_ms": "timestamps", "parse_time_or_age": "timestamps", "rfc3339": "timestamps",
    "rfc3339_ms": "timestamps"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .durations import format_duration as format_duration, parse_duration as parse_duration
    from .names import (MAIN_BRANCH as MAIN_BRANCH, validate_branch_name as validate_branch_name,
        validate_tag_name as validate_tag_name)
    from .rails import (DEFAULT_ORPHAN_MIN_AGE as DEFAULT_ORPHAN_MIN_AGE,
        DELETE_BATCH_DEFAULT as DELETE_BATCH_DEFAULT, DELETE_BATCH_MAX as DELETE_BATCH_MAX,
        MIN_RETAIN_MIN as MIN_RETAIN_MIN, ORPHAN_AGE_FLOOR as ORPHAN_AGE_FLOOR,
        PROTECTED_TAG_PREFIXES as PROTECTED_TAG_PREFIXES, SPARK_NAME_MAX as SPARK_NAME_MAX,
        STATUS_SAMPLE_MAX as STATUS_SAMPLE_MAX, UNKNOWN_ZONE_MARGIN as UNKNOWN_ZONE_MARGIN)
    from .timestamps import (epoch_ms as epoch_ms, iso_ms as iso_ms, now_ms as now_ms,
        parse_instant_ms as parse_instant_ms, parse_rfc3339 as parse_rfc3339, parse_rfc3339_ms as parse_rfc3339_ms,
        parse_time_or_age as parse_time_or_age, rfc3339 as rfc3339, rfc3339_ms as rfc3339_ms)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
