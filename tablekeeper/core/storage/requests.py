"""Storage requests: counted by kind, and paced below a per-prefix rate.

On object stores maintenance is paid per request and throttled per prefix (S3: 3,500 writes and
5,500 reads per second per prefix), so the number of requests an operation makes is a quantity
to measure and minimise (docs/storage.md, "Request cost"). Every request a :class:`FileIO` makes
is recorded here, in one place:

- S3 and OSS (s3fs): at the HTTP level, by botocore's ``before-send`` event on the client's
  session, so a LIST page is a real page and a retried request counts twice;
- every other store: one logical call of :class:`FileIO` (an ``ls``, a ``cat``, a delete) is one
  request of its kind (fsspec paginates HDFS/GCS/Azure listings inside one call: a lower bound
  there).

:class:`Pacer` keeps the requests of one FileIO (one table's prefix: a run touches one table)
below ``max_per_second`` with a token bucket; the clock is injected, so tests count waits
instead of measuring them.
"""

from __future__ import annotations

import asyncio
import enum
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from tablekeeper.core import errors

__all__ = ["RequestKind", "RequestCounts", "TokenBucket", "Pacer", "RequestLayer", "PACING_OPTION",
           "S3_OPERATION_KINDS", "kind_of_s3_operation", "pacing_from_options", "since"]


class RequestKind(enum.StrEnum):
    LIST = "list"
    GET = "get"
    HEAD = "head"
    PUT = "put"
    BULK_DELETE = "bulk_delete"
    DELETE = "delete"
    COPY = "copy"
    OTHER = "other"


#: botocore operation names of the S3 API -> request kind (the rest: ``other``).
S3_OPERATION_KINDS: Mapping[str, RequestKind] = {
    "ListObjectsV2": RequestKind.LIST, "ListObjects": RequestKind.LIST, "ListObjectVersions": RequestKind.LIST,
    "GetObject": RequestKind.GET,
    "HeadObject": RequestKind.HEAD, "HeadBucket": RequestKind.HEAD,
    "PutObject": RequestKind.PUT, "CreateMultipartUpload": RequestKind.PUT, "UploadPart": RequestKind.PUT,
    "CompleteMultipartUpload": RequestKind.PUT,
    "DeleteObjects": RequestKind.BULK_DELETE,
    "DeleteObject": RequestKind.DELETE,
    "CopyObject": RequestKind.COPY, "UploadPartCopy": RequestKind.COPY,
}

#: The storage option (catalog options, ``--option``, ``--max-requests-per-second``) that caps
#: the request rate of one run; unset: no cap.
PACING_OPTION = "tablekeeper.max-requests-per-second"


def kind_of_s3_operation(name: str) -> RequestKind:
    return S3_OPERATION_KINDS.get(name, RequestKind.OTHER)


class RequestCounts:
    """Requests by kind, thread-safe (s3fs sends from its event-loop thread, deletes run in pools)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, kind: RequestKind, n: int = 1) -> None:
        with self._lock:
            self._counts[kind.value] += n

    def snapshot(self) -> dict[str, int]:
        """Counts by kind (only kinds seen), plus ``total``."""
        with self._lock:
            out = {k: v for k, v in sorted(self._counts.items()) if v}
        out["total"] = sum(out.values())
        return out


def since(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """The requests made between two snapshots (per kind, ``total`` recomputed)."""
    out = {k: v - before.get(k, 0) for k, v in after.items() if k != "total" and v - before.get(k, 0)}
    out["total"] = sum(out.values())
    return out


class TokenBucket:
    """``rate`` requests a second on average, bursts up to ``burst``. :meth:`reserve` takes one
    token and returns how long the caller must wait before sending (0 when a token was there);
    the debt is booked at once, so concurrent callers queue behind each other."""

    def __init__(self, rate: float, burst: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0:
            raise errors.InvalidInputError(f"max requests per second must be positive, not {rate}",
                                           fix="give a positive number, or leave the cap unset")
        self.rate = rate
        self.burst = max(1.0, burst if burst is not None else rate)
        self._clock = clock
        self._tokens = self.burst
        self._last = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.rate


class Pacer:
    """One token bucket per prefix (``prefix_of(path)``; default: all requests of this FileIO
    share one, the run's table prefix)."""

    def __init__(self, max_per_second: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.max_per_second = max_per_second
        self._clock = clock
        self.sleep = sleep
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()
        self.waits = 0

    def delay(self, prefix: str = "") -> float:
        with self._lock:
            bucket = self._buckets.get(prefix)
            if bucket is None:
                bucket = self._buckets[prefix] = TokenBucket(self.max_per_second, clock=self._clock)
        wait = bucket.reserve()
        if wait > 0:
            self.waits += 1
        return wait


def pacing_from_options(options: Mapping[str, Any] | None) -> float | None:
    """The request-rate cap in ``options`` (:data:`PACING_OPTION`), None when unset.

    Raises:
        InvalidInputError: not a positive number.
    """
    raw = (options or {}).get(PACING_OPTION)
    if raw in (None, ""):
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = 0.0
    if value <= 0:
        raise errors.InvalidInputError(f"{PACING_OPTION}={raw!r} is not a positive number",
                                       fix="give requests per second, e.g. 500, or leave it unset")
    return value


class RequestLayer:
    """The counts and the optional pacer of one FileIO."""

    def __init__(self, pacer: Pacer | None = None) -> None:
        self.counts = RequestCounts()
        self.pacer = pacer

    def note(self, kind: RequestKind, prefix: str = "") -> None:
        """A request about to be sent from a caller's thread: count it, wait if paced."""
        self.counts.add(kind)
        if self.pacer is not None:
            wait = self.pacer.delay(prefix)
            if wait > 0:
                self.pacer.sleep(wait)

    def botocore_hook(self) -> Callable[..., Any]:
        """A ``before-send`` handler for an aiobotocore session: counts every HTTP request
        (retries and pages included) by its operation; paces without blocking s3fs's loop."""

        async def before_send(event_name: str = "", **_: Any) -> None:
            kind = kind_of_s3_operation(event_name.rsplit(".", 1)[-1])
            self.counts.add(kind)
            if self.pacer is not None:
                wait = self.pacer.delay("")
                if wait > 0:
                    await asyncio.sleep(wait)
            return None

        return before_send
