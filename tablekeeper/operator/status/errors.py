"""The one place where errors become Kopf retry semantics (style.md §2.9).

``tablekeeper.core`` raises Kopf-free exceptions that carry a ``reason``; the operator's own
resolution problems (a missing catalog, a namespace a cluster catalog does not allow) are
:class:`OperatorError`. :func:`classify` turns any exception into a :class:`Failure` (condition
reason, message, temporary or not); :func:`to_kopf` turns a failure into the Kopf exception that
carries the retry decision:

=============================================  ==========================  ===========================
error                                          reason                      Kopf
=============================================  ==========================  ===========================
``StorageError``, ``OSError``                  ``CatalogUnreachable``      ``TemporaryError(backoff)``
``TableLockedError`` (another lease holder)    ``TableLocked``             ``TemporaryError(backoff)``
``ConcurrentModificationError``                ``ReconcileError``          ``TemporaryError`` (short)
``IncompleteProtectionSetError``               ``MaintenanceFailed``       ``TemporaryError(backoff)``
``TableNotFoundError``                         ``TableNotFound``           ``TemporaryError(backoff)``
``SnapshotNotFoundError``                      ``SnapshotNotFound``        ``TemporaryError(backoff)``
``TagNotFoundError``                           ``TagNotFound``             ``TemporaryError(backoff)``
``TagConflictError``                           ``AlreadyExistsDifferentSnapshot``  ``PermanentError``
``AlreadyExistsError``                         ``AlreadyExists``           ``PermanentError``
``ProtectedObjectError``                       ``ProtectedByBranch``       ``PermanentError``
``UnsafePolicyError`` / policy violations      ``PolicyViolation``         ``PermanentError``
``PolicyNotFoundError``                        ``PolicyNotFound``          ``TemporaryError(backoff)``
``InvalidInputError`` (specs, names)           ``InvalidSpec``             ``PermanentError``
``FormatError``                                ``EngineError``             ``PermanentError``
anything else                                  ``EngineError``             ``TemporaryError(backoff)``
=============================================  ==========================  ===========================

Whether a reason is temporary is decided once, by its kind (:mod:`.reasons`): a ``Transient``
reason retries, a ``Permanent`` one stops Kopf's retries of that cause (the periodic level check
still looks again later).
"""

from __future__ import annotations

from dataclasses import dataclass

import kopf

from tablekeeper.core import errors as core_errors
from tablekeeper.core.policy import InvalidSpecError, UnsafeSpecError, effective
from tablekeeper.operator.status import reasons
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.reconcile.applier import ActionResult

__all__ = ["OperatorError", "Failure", "classify", "failure_of", "to_kopf", "SHORT_DELAY"]

#: Delay of retries after a lost race (another writer committed meanwhile).
SHORT_DELAY = 1.0


class OperatorError(Exception):
    """A problem found while resolving a CR against the cluster (not a storage error).

    ``temporary``: something else may fix it without a spec change soon (the referenced table
    is not created yet); the handler then retries with backoff. ``cause``: the reason the
    dependency itself reports, when the problem is a dependency's.
    """

    def __init__(self, reason: str, message: str, *, temporary: bool = False, cause: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.temporary = temporary
        #: the reason a dependency reports (``TableNotReady`` because the table is ``TableNotFound``)
        self.cause = cause


@dataclass(frozen=True)
class Failure:
    """A classified error: condition reason, message, and whether retrying may help."""

    reason: str
    message: str
    temporary: bool
    short: bool = False


_BY_TYPE: tuple[tuple[type[BaseException], str], ...] = (
    (core_errors.TableNotFoundError, Reason.TABLE_NOT_FOUND),
    (core_errors.SnapshotNotFoundError, Reason.SNAPSHOT_NOT_FOUND),
    (core_errors.TagNotFoundError, Reason.TAG_NOT_FOUND),
    (core_errors.TagConflictError, Reason.ALREADY_EXISTS_DIFFERENT_SNAPSHOT),
    (core_errors.AlreadyExistsError, Reason.ALREADY_EXISTS),
    (core_errors.ProtectedObjectError, Reason.PROTECTED_BY_BRANCH),
    (effective.PolicyNotFoundError, Reason.POLICY_NOT_FOUND),
    (UnsafeSpecError, Reason.POLICY_VIOLATION),
    (core_errors.UnsafePolicyError, Reason.POLICY_VIOLATION),
    (InvalidSpecError, Reason.INVALID_SPEC),
    (core_errors.InvalidInputError, Reason.INVALID_SPEC),
    (core_errors.FormatError, Reason.ENGINE_ERROR),
    (core_errors.NotFoundError, Reason.TABLE_NOT_FOUND),
    (core_errors.ConflictError, Reason.RESOURCE_CONFLICT),
)


def _message(error: BaseException) -> str:
    if isinstance(error, core_errors.TablekeeperError):
        return error.message + (f" (fix: {error.fix})" if error.fix else "")
    text = str(error) or type(error).__name__
    return text if isinstance(error, OperatorError) else f"{type(error).__name__}: {text}"


def classify(error: BaseException) -> Failure:
    """The condition reason and retry decision for ``error``."""
    if isinstance(error, OperatorError):
        return Failure(error.reason, error.message, error.temporary)
    if isinstance(error, core_errors.TableLockedError):  # another maintainer's lease (core/safety/concurrency/lease.py)
        return Failure(Reason.TABLE_LOCKED, _message(error), True)
    if isinstance(error, core_errors.ConcurrentModificationError):
        return Failure(Reason.RECONCILE_ERROR, _message(error), True, short=True)
    if isinstance(error, core_errors.IncompleteProtectionSetError):
        return Failure(Reason.MAINTENANCE_FAILED, _message(error), True)
    if isinstance(error, (core_errors.StorageError, OSError)) and not isinstance(error, FileNotFoundError):
        return Failure(Reason.CATALOG_UNREACHABLE, _message(error), True)
    for klass, reason in _BY_TYPE:
        if isinstance(error, klass):
            return Failure(reason, _message(error), reasons.is_transient(reason))
    return Failure(Reason.ENGINE_ERROR, _message(error), True)


def failure_of(result: ActionResult, *, reason: str | None = None) -> Failure:
    """The failure of a failed applier result: classified from the action's own error (reason,
    message with its fix, retry decision); ``reason`` overrides the condition reason (e.g.
    ``DeleteFailed``) and keeps the detail in the message."""
    if result.error is None:
        return Failure(reason or Reason.ENGINE_ERROR, result.message, True)
    failure = classify(result.error)
    if reason is None or reason == failure.reason:
        return failure
    return Failure(reason, f"{failure.reason}: {failure.message}", failure.temporary, failure.short)


def to_kopf(failure: Failure, delay: float) -> kopf.TemporaryError | kopf.PermanentError:
    """The Kopf exception for ``failure`` (``delay``: seconds until the retry)."""
    text = f"{failure.reason}: {failure.message}"
    if failure.temporary:
        return kopf.TemporaryError(text, delay=min(delay, SHORT_DELAY) if failure.short else delay)
    return kopf.PermanentError(text)
