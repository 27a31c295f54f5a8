"""The path of every storage request, shared by all stores: counted (and paced) by kind, retried
while it fails transiently, and missing or rejected credentials reported as bad input.

Counting is :mod:`.requests`' (at the HTTP level on S3/OSS, where the client's session counts
every request itself; one logical call here elsewhere), retrying is :mod:`.retry`'s. Local
files only count: they are never retried, so :mod:`.retry` and its jitter are imported on the
first remote request (start-up of local commands)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from tablekeeper.core import errors
from tablekeeper.core.storage.connections import Connection
from tablekeeper.core.storage.layers.requests import RequestKind, RequestLayer

if TYPE_CHECKING:
    from tablekeeper.core.storage.layers import retry as retries

__all__ = ["Calls", "retries_sleep"]

T = TypeVar("T")

_CREDENTIAL_FAILURES = ("NoCredentialsError", "PartialCredentialsError", "ClientAuthenticationError",
                        "DefaultCredentialsError", "CredentialUnavailableError", "RefreshError")
_CREDENTIAL_WORDS = ("unable to locate credentials", "invalidaccesskeyid", "signaturedoesnotmatch",
                     "authenticationfailed", "no credentials", "could not automatically determine credentials")


def _is_credentials_failure(error: BaseException) -> bool:
    current: BaseException | None = error
    for _ in range(6):
        if current is None:
            return False
        text = f"{type(current).__name__}: {current}".lower()
        if type(current).__name__ in _CREDENTIAL_FAILURES or any(w in text for w in _CREDENTIAL_WORDS):
            return True
        current = current.__cause__ or current.__context__
    return False


def retries_sleep(seconds: float) -> None:
    """The pause between attempts (a function, so tests can count or skip the waits)."""
    import time

    time.sleep(seconds)


class Calls:
    """The requests of one FileIO: its counts and pacer (``requests``), its retry policy, and
    how its store's errors are reported (``connection``: endpoint and credential options, the
    secrets to mask)."""

    def __init__(self, connection: Connection, requests: RequestLayer, retry: retries.RetryPolicy | None = None,
                 http_counted: bool = False) -> None:
        self.connection = connection
        self.requests = requests
        #: None: ``retry.DEFAULT_POLICY``, imported on first use (local files never retry: start-up)
        self._retry = retry
        #: requests are counted at the HTTP level (s3fs with the ``before-send`` hook), not here
        self.http_counted = http_counted

    @property
    def retry(self) -> retries.RetryPolicy:
        if self._retry is None:
            from tablekeeper.core.storage.layers import retry as retries

            self._retry = retries.DEFAULT_POLICY
        return self._retry

    @retry.setter
    def retry(self, policy: retries.RetryPolicy) -> None:
        self._retry = policy

    @property
    def counts_in_batches(self) -> bool:
        """Whether a batch of requests may be counted in one step: nothing counts them at the
        HTTP level and no pacer must see them one by one."""
        return not self.http_counted and self.requests.pacer is None

    def note(self, kind: RequestKind) -> None:
        """Count (and pace) one request of ``kind`` made by a call here; a no-op where the
        requests are counted at the HTTP level."""
        if not self.http_counted:
            self.requests.note(kind)

    def redact(self, text: str) -> str:
        """``text`` (an SDK's error message) without the connection's secrets."""
        from tablekeeper.core.storage import secrets  # error messages of remote stores only

        return secrets.redact_text(text, self.connection.kwargs)

    def call(self, fn: Callable[[], T], kind: RequestKind = RequestKind.OTHER) -> T:
        """One store request, retried while it fails transiently (:mod:`.retry`); every attempt
        is counted as ``kind`` (unless counted at the HTTP level). Missing or rejected credentials
        are bad input naming the options to set."""
        from tablekeeper.core.storage.layers import retry as retries

        def attempt() -> T:
            self.note(kind)
            return fn()

        try:
            return retries.call(attempt, policy=self.retry, endpoint=self.connection.endpoint,
                                endpoint_option=self.connection.endpoint_option)
        except errors.TablekeeperError:
            raise
        except Exception as e:
            if _is_credentials_failure(e):
                raise errors.InvalidInputError(
                    f"{self.connection.store.value} storage found no usable credentials: "
                    f"{self.redact(type(e).__name__ + ': ' + str(e))[:200]}",
                    fix=f"set {self.connection.credentials_option}") from e
            raise
