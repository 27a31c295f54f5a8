"""Storage requests: counted by kind, and paced below a per-prefix rate.

On object stores maintenance is paid per request and throttled per prefix (S3: 3,500 writes and
5,500 reads per second per prefix), so the number of requests an operation makes is a quantity
to measure and minimise (docs/storage-internals.md, "Request cost"). Every request a :class:`FileIO` makes
is recorded here, in one place:

- S3 and OSS (s3fs): at the HTTP level, by botocore's ``before-send`` event on the client's
  session, so a LIST page is a real page and a retried request counts twice;
- every other store: one logical call of :class:`FileIO` (an ``ls``, a ``cat``, a delete) is one
  request of its kind (fsspec paginates HDFS/GCS/Azure listings inside one call: a lower bound
  there).

:class:`Pacer` keeps the requests to each prefix below ``max_per_second`` with one token bucket
per prefix. On S3 and OSS the prefix of a request is its object key's parent "directory"
(:func:`prefix_of_request`: the listed prefix of a LIST, the common parent of a DeleteObjects'
keys), the unit S3 partitions its request rate by once a prefix is busy; on other stores every
request of a FileIO shares one bucket. The clock is injected, so tests count waits instead of
measuring them.

Every count also goes to a per-process tally (:func:`process_snapshot`), so a Spark Python
worker can report the requests of one task (it runs one task at a time) whatever FileIO made them.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from tablekeeper.core import errors
from tablekeeper.core.pycompat import StrEnum

__all__ = ["RequestKind", "RequestCounts", "TokenBucket", "Pacer", "RequestLayer", "PACING_OPTION",
           "S3_OPERATION_KINDS", "kind_of_s3_operation", "pacing_from_options", "since", "plus", "process_snapshot",
           "prefix_of_request"]


class RequestKind(StrEnum):
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


_PROCESS_LOCK = threading.Lock()
_PROCESS_COUNTS: Counter[str] = Counter()


def process_snapshot() -> dict[str, int]:
    """Requests of every FileIO of this process so far, by kind, plus ``total`` (a Spark worker
    subtracts two snapshots to get one task's requests)."""
    with _PROCESS_LOCK:
        out = {k: v for k, v in sorted(_PROCESS_COUNTS.items()) if v}
    out["total"] = sum(out.values())
    return out


class RequestCounts:
    """Requests by kind, thread-safe (s3fs sends from its event-loop thread, deletes run in pools)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, kind: RequestKind, n: int = 1) -> None:
        with self._lock:
            self._counts[kind.value] += n
        with _PROCESS_LOCK:
            _PROCESS_COUNTS[kind.value] += n

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


def plus(*counts: Mapping[str, int]) -> dict[str, int]:
    """Counts by kind summed (``total`` recomputed)."""
    out: Counter[str] = Counter()
    for c in counts:
        out.update({k: v for k, v in c.items() if k != "total"})
    summed = {k: v for k, v in sorted(out.items()) if v}
    summed["total"] = sum(summed.values())
    return summed


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
    """One token bucket per prefix (:func:`prefix_of_request` on S3/OSS; on other stores all
    requests of the FileIO share the bucket of prefix ``""``)."""

    def __init__(self, max_per_second: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.max_per_second = max_per_second
        self._clock = clock
        self.sleep = sleep
        #: how the botocore hook waits (inside s3fs's event loop); tests inject a recorder
        self.async_sleep: Callable[[float], Any] = _async_sleep
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


async def _async_sleep(seconds: float) -> None:
    """``asyncio.sleep``, imported when s3fs's loop first waits: local commands never load asyncio."""
    import asyncio

    await asyncio.sleep(seconds)


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

        async def before_send(event_name: str = "", request: Any = None, **_: Any) -> None:
            kind = kind_of_s3_operation(event_name.rsplit(".", 1)[-1])
            self.counts.add(kind)
            if self.pacer is not None:
                prefix = "" if request is None else prefix_of_request(
                    str(getattr(request, "url", "")), getattr(request, "body", None))
                wait = self.pacer.delay(prefix)
                if wait > 0:
                    await self.pacer.async_sleep(wait)
            return None

        return before_send


_DELETE_KEY = re.compile(rb"<Key>([^<]*)</Key>")


def prefix_of_request(url: str, body: Any = None) -> str:
    """The prefix an S3-style request is paced under: the parent "directory" of its object key,
    of the ``prefix`` a LIST asks for, or of the first key of a DeleteObjects body (tablekeeper's
    bulk deletes group keys by directory). With path-style addressing the bucket leads
    (``bucket/db.db/t/dt=1/bucket-0/``); virtual-hosted, the key alone (the bucket is the host);
    either way one FileIO's prefixes are consistent."""
    import urllib.parse  # remote stores only (start-up of local commands)

    parts = urllib.parse.urlsplit(url)
    path = urllib.parse.unquote(parts.path).strip("/")
    query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
    key = path
    if "list-type" in query or "prefix" in query:
        key = f"{path}/{query.get('prefix', [''])[0]}" if path else query.get("prefix", [""])[0]
    elif "delete" in query and isinstance(body, (bytes, str)):
        found = _DELETE_KEY.search(body if isinstance(body, bytes) else body.encode())
        if found:
            first = found.group(1).decode()
            key = f"{path}/{first}" if path else first
    return key.rsplit("/", 1)[0] + "/" if "/" in key else ""
