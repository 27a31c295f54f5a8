"""Timestamps and ages: epoch milliseconds, RFC 3339 / ISO-8601 text, in one place.

Paimon records times as epoch milliseconds (snapshot ``timeMillis``, tag create times, file
mtimes); Kubernetes status fields are RFC 3339 in UTC with second precision (``metav1.Time``);
the result artifact and CLI output use ISO-8601 with milliseconds; users write a time on the
command line as epoch ms or ISO-8601. Every front end converts through these functions, so a
time read back is the time written (no local-time surprises: naive input is read as UTC only
where the docstring says so).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Any

from tablekeeper.core import errors, pycompat

__all__ = ["now_ms", "epoch_ms", "from_epoch_ms", "iso_ms", "rfc3339", "rfc3339_ms", "parse_rfc3339",
           "parse_rfc3339_ms", "parse_instant_ms", "parse_time_or_age"]


def now_ms() -> int:
    """The current time in epoch milliseconds."""
    return int(time.time() * 1000)


def epoch_ms(when: datetime) -> int:
    """Epoch milliseconds of ``when`` (a naive value is local time, as ``datetime.timestamp``)."""
    return int(when.timestamp() * 1000)


def from_epoch_ms(ms: float) -> datetime:
    """The UTC datetime of epoch milliseconds."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def iso_ms(ms: float) -> str:
    """ISO-8601 in UTC with milliseconds and a ``Z`` (``2026-01-31T23:00:00.000Z``)."""
    return from_epoch_ms(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def rfc3339(when: datetime) -> str:
    """RFC 3339 in UTC with second precision (``metav1.Time``); a naive ``when`` is UTC."""
    aware = when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)
    return aware.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_ms(ms: int | None) -> str | None:
    """:func:`rfc3339` of epoch milliseconds (None stays None)."""
    return None if ms is None else rfc3339(from_epoch_ms(ms))


def parse_rfc3339(text: Any) -> datetime | None:
    """An aware datetime of an RFC 3339 status time (no offset = UTC), or None for anything else."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = pycompat.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def parse_rfc3339_ms(text: Any) -> int | None:
    """Epoch milliseconds of an RFC 3339 status time, or None."""
    parsed = parse_rfc3339(text)
    return None if parsed is None else epoch_ms(parsed)


def parse_instant_ms(value: str, *, flag: str) -> int:
    """A point in time a user wrote: epoch milliseconds or ISO-8601 (naive = this machine's zone).

    Raises:
        InvalidInputError: neither (names ``flag`` and shows both forms in the fix).
    """
    if value.isdigit():
        return int(value)
    try:
        return epoch_ms(pycompat.fromisoformat(value))
    except ValueError as e:
        raise errors.InvalidInputError(f"{flag} {value!r} is neither epoch ms nor ISO-8601",
                                       fix="write e.g. 2026-01-31T23:00:00 or 1769900400000") from e


def parse_time_or_age(value: str, *, flag: str) -> tuple[int | None, timedelta | None]:
    """``(at_ms, None)`` for a point in time (epoch ms, ISO-8601), ``(None, age)`` for an age in
    Paimon's duration syntax (``'2 d'``): how ``--older-than`` is read by the CLI and the Spark job.

    Raises:
        InvalidInputError / InvalidDurationError: neither form.
    """
    if value.isdigit() or "T" in value or value.count("-") >= 2:
        return parse_instant_ms(value, flag=flag), None
    from tablekeeper.core.values import durations  # an age (a point in time, the bench's form, needs no parser)

    return None, durations.parse_duration(value, field=flag)
