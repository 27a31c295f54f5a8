"""Safety rails as named constants. Each one has a test in tests/unit/test_safety.py."""

from __future__ import annotations

from datetime import timedelta

__all__ = [
    "DEFAULT_ORPHAN_MIN_AGE",
    "ORPHAN_AGE_FLOOR",
    "MIN_RETAIN_MIN",
    "UNKNOWN_ZONE_MARGIN",
    "STATUS_SAMPLE_MAX",
    "ARTIFACT_SAMPLE_MAX",
    "DELETE_BATCH_DEFAULT",
    "DELETE_BATCH_MAX",
    "SPARK_NAME_MAX",
    "PROTECTED_TAG_PREFIXES",
]

#: Orphan cleanup deletes only files older than this by default (Paimon's default).
DEFAULT_ORPHAN_MIN_AGE = timedelta(days=1)
#: Below this age orphan cleanup is refused unless explicitly forced (in-flight writes).
ORPHAN_AGE_FLOOR = timedelta(hours=1)
#: snapshot.num-retained.min must be at least this (Paimon SchemaValidation; #10088).
MIN_RETAIN_MIN = 1
#: Margin for wall clocks of unknown zone (most negative UTC offset is -12:00).
UNKNOWN_ZONE_MARGIN = timedelta(hours=12)
STATUS_SAMPLE_MAX = 20
ARTIFACT_SAMPLE_MAX = 20_000
DELETE_BATCH_DEFAULT = 250
DELETE_BATCH_MAX = 1_000
SPARK_NAME_MAX = 40
#: Tags tablekeeper never expires by TTL or count (Paimon pins these on purpose).
PROTECTED_TAG_PREFIXES = ("rollback-to-as-latest-", "savepoint-")
