"""What tablekeeper uses of Python 3.11 that 3.10 lacks, in one place: ``StrEnum`` and the ISO-8601
forms of ``datetime.fromisoformat``.

The Spark job runs core on the Python of a cluster's image; the official Spark images and several
managed runtimes ship 3.10. ``scripts/job-python-check`` holds the rest of the job's import path to
3.10 (vermin); what a 3.10 call accepts differently is answered here."""

from __future__ import annotations

import enum
import re
import sys
from datetime import datetime

__all__ = ["StrEnum", "StrValueEnum", "fromisoformat"]

class StrValueEnum(str, enum.Enum):
    """3.10's stand-in for ``enum.StrEnum``: a member is its value (``str(m)``, ``f"{m}"`` and
    ``m == "value"`` all give the value), as 3.11's members are."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, format_spec: str) -> str:
        return str(self.value).__format__(format_spec)


if sys.version_info >= (3, 11):
    from enum import StrEnum  # novermin (3.11+ only, guarded)
else:  # the Python 3.10 tier runs this (tests/spark_versions)
    StrEnum = StrValueEnum


_FRACTION = re.compile(r"(?<=\d\d:\d\d:\d\d)[.,](\d+)")


def fromisoformat(text: str) -> datetime:
    """``datetime.fromisoformat`` with the forms 3.10 refuses and 3.11 reads: a trailing ``Z`` (UTC)
    and a fraction of seconds of any length (Java's nanoseconds; cut to microseconds).

    Raises:
        ValueError: not an ISO-8601 date and time.
    """
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), text, count=1)
    return datetime.fromisoformat(text)
