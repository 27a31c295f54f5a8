"""Retries of storage requests: which failures are transient, and how long to wait.

Object stores throttle (S3 ``503 SlowDown``, GCS/Azure ``429``/``503``) and fail now and then
(``500``, connection resets). Every request tablekeeper makes goes through :func:`call`, which
retries those with bounded exponential backoff and full jitter; anything else (missing,
already-exists, denied, bad request) is raised at once. Bulk deletes retry per key (see
``FileIO``): only the keys a store reported as failed go again, never the whole batch.

A connection that cannot be made at all (refused, unknown host) after the budget is spent is
reported as :class:`UnreachableError`, which names the option that sets the endpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from tablekeeper.core import errors

if TYPE_CHECKING:
    import random

__all__ = [
    "RetryPolicy",
    "DEFAULT_POLICY",
    "TRANSIENT_CODES",
    "is_transient",
    "is_unreachable",
    "call",
    "UnreachableError",
]

T = TypeVar("T")

#: Error codes (S3 XML codes, HTTP statuses as text) that mean "try again later".
TRANSIENT_CODES = frozenset({
    "SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout", "RequestTimeTooSkewed", "Throttling",
    "ThrottlingException", "TooManyRequests", "RequestLimitExceeded", "OperationAborted", "ServerBusy",
    "InternalServerError", "500", "502", "503", "504", "429",
})
_TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})
_TRANSIENT_WORDS = (
    "slowdown", "slow down", "throttl", "too many requests", "service unavailable", "internal error",
    "internalerror", "serverbusy", "server busy", "connection reset", "connection aborted", "connectionreset",
    "remotedisconnected", "remote end closed", "server disconnected", "serverdisconnected", "broken pipe",
    "timed out", "timeout", "reset by peer", "incompleteread", "response ended prematurely",
    "connection was closed", "protocol error", "503", "500 internal", "(500)", "(502)", "(503)", "(504)",
    "(429)", "status 500", "status 503", "status 429", " 429 ", "bad gateway",
)
_UNREACHABLE_WORDS = (
    "connection refused", "connectionrefused", "could not connect to the endpoint", "name or service not known",
    "nodename nor servname", "temporary failure in name resolution", "no address associated", "cannot connect to host",
    "failed to establish a new connection", "getaddrinfo failed", "connect call failed",
)


class UnreachableError(errors.InvalidInputError):
    """The store's endpoint cannot be reached at all (refused, unknown host): most likely a
    wrong endpoint option, so bad input; ``fix`` names the option."""


@dataclass(frozen=True)
class RetryPolicy:
    """At most ``attempts`` tries; before try ``n`` (from 1) a random wait in
    ``[0, min(cap_s, base_s * 2**n))`` (AWS's "full jitter": racing clients spread out)."""

    attempts: int = 6
    base_s: float = 0.1
    cap_s: float = 5.0

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        bound = min(self.cap_s, self.base_s * (2 ** attempt))
        if rng is None:  # imported on the first retry: most processes never wait
            import random

            return random.uniform(0.0, bound)
        return rng.uniform(0.0, bound)


DEFAULT_POLICY = RetryPolicy()


def _status(error: BaseException) -> int | None:
    for attr in ("status", "status_code", "code"):
        value = getattr(error, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        meta = response.get("ResponseMetadata") or {}
        status = meta.get("HTTPStatusCode")
        if isinstance(status, int):
            return status
        code = (response.get("Error") or {}).get("Code")
        if isinstance(code, str) and code.isdigit():
            return int(code)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _chain(error: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(out) < 8 and current not in out:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def is_unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the endpoint could not be connected to at all."""
    for e in _chain(error):
        if isinstance(e, ConnectionRefusedError):
            return True
        text = f"{type(e).__name__}: {e}".lower()
        if any(word in text for word in _UNREACHABLE_WORDS):
            return True
    return False


def is_transient(error: BaseException) -> bool:
    """Whether retrying ``error`` may succeed: throttling, 5xx, resets, timeouts, refused
    connections (a server restarting). Never for missing/existing files or denied access."""
    if isinstance(error, (FileNotFoundError, FileExistsError, PermissionError, NotADirectoryError,
                          IsADirectoryError, errors.TablekeeperError)):
        return False
    for e in _chain(error):
        if isinstance(e, (ConnectionError, TimeoutError)):
            return True
        status = _status(e)
        if status in _TRANSIENT_STATUS:
            return True
        if status is not None and 400 <= status < 500:
            return False
        text = f"{type(e).__name__}: {e}".lower()
        if any(word in text for word in _TRANSIENT_WORDS):
            return True
    return is_unreachable(error)


def call(fn: Callable[[], T], *, policy: RetryPolicy = DEFAULT_POLICY, endpoint: str = "",
         endpoint_option: str = "", sleep: Callable[[float], None] = time.sleep) -> T:
    """``fn()``, retried while it fails transiently and the budget lasts.

    Raises:
        UnreachableError: the endpoint never answered (wrong endpoint option).
        Exception: whatever ``fn`` raised last.
    """
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as e:
            attempt += 1
            if not is_transient(e) or attempt >= policy.attempts:
                if is_unreachable(e) and endpoint_option:
                    raise UnreachableError(f"cannot reach the storage endpoint {endpoint or '(default)'}",
                                           fix=f"check {endpoint_option}") from e
                raise
            sleep(policy.delay(attempt))
