"""Typed, framework-free errors. Every public error derives from TablekeeperError and says
what to do about it (``fix``). Front ends map these to exit codes / Kopf retry semantics."""

from __future__ import annotations

__all__ = [
    "TablekeeperError",
    "InvalidInputError",
    "InvalidNameError",
    "InvalidDurationError",
    "NotFoundError",
    "TableNotFoundError",
    "SnapshotNotFoundError",
    "TagNotFoundError",
    "BranchNotFoundError",
    "ConflictError",
    "TagConflictError",
    "AlreadyExistsError",
    "ProtectedObjectError",
    "DivergedBranchError",
    "UnsafePolicyError",
    "IncompleteProtectionSetError",
    "ConcurrentModificationError",
    "TableLockedError",
    "CatalogError",
    "StorageError",
    "FormatError",
]


class TablekeeperError(Exception):
    """Base of every error tablekeeper raises on purpose.

    ``reason`` is a stable machine-readable word (used for CR conditions); ``fix`` tells the
    user what to do.
    """

    reason = "Error"

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message} ({self.fix})" if self.fix else self.message


class InvalidInputError(TablekeeperError, ValueError):
    reason = "InvalidInput"


class InvalidNameError(InvalidInputError):
    reason = "InvalidName"


class InvalidDurationError(InvalidInputError):
    reason = "InvalidDuration"


class UnsafePolicyError(InvalidInputError):
    """A request that would break a safety rail (retain-min < 1, older-than in the future...)."""

    reason = "UnsafePolicy"


class NotFoundError(TablekeeperError, LookupError):
    reason = "NotFound"


class TableNotFoundError(NotFoundError):
    reason = "TableNotFound"


class SnapshotNotFoundError(NotFoundError):
    reason = "SnapshotNotFound"


class TagNotFoundError(NotFoundError):
    reason = "TagNotFound"


class BranchNotFoundError(NotFoundError):
    reason = "BranchNotFound"


class ConflictError(TablekeeperError):
    reason = "Conflict"


class TagConflictError(ConflictError):
    """A tag of that name exists at another snapshot: tags are never moved silently."""

    reason = "AlreadyExistsDifferentSnapshot"


class AlreadyExistsError(ConflictError):
    reason = "AlreadyExists"


class DivergedBranchError(ConflictError):
    """Fast-forward refused: the branch no longer starts at its fork snapshot."""

    reason = "BranchDiverged"


class ProtectedObjectError(TablekeeperError):
    """The object is still needed (a fork-point tag, a protected branch)."""

    reason = "Protected"


class IncompleteProtectionSetError(TablekeeperError):
    """Planning aborted (fail closed): some file that protects data could not be read."""

    reason = "IncompleteProtectionSet"


class ConcurrentModificationError(TablekeeperError):
    reason = "ConcurrentModification"


class TableLockedError(TablekeeperError):
    """Another tablekeeper process holds the table's maintenance lease (core/safety/concurrency/lease.py)."""

    reason = "TableLocked"

    def __init__(self, message: str, *, fix: str | None = None, holder: str | None = None,
                 expires_ms: int | None = None) -> None:
        super().__init__(message, fix=fix)
        self.holder = holder
        self.expires_ms = expires_ms


class CatalogError(InvalidInputError):
    """The table's catalog (``metastore`` and its options) is unsupported, misconfigured or
    unreachable, or refuses what was asked. ``option`` names the catalog option to set or check.
    Never answered by falling back to the filesystem: the catalog owns where tables are."""

    reason = "CatalogError"

    def __init__(self, message: str, *, fix: str | None = None, option: str | None = None) -> None:
        super().__init__(message, fix=fix)
        self.option = option


class StorageError(TablekeeperError, OSError):
    reason = "StorageError"


class FormatError(TablekeeperError):
    """A Paimon metadata file could not be parsed."""

    reason = "FormatError"
