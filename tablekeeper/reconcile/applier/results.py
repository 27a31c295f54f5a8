"""What applying a plan reports: one :class:`ActionResult` per change action, the trash runs it
filled (:class:`KeptRun`), one :class:`ApplyResult` per pass and the :class:`ConvergeResult` of
all passes. Front ends render these (the CLI's table and JSON, the operator's conditions and
Events); nothing here does I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from tablekeeper.core import errors, values
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.planner import ReconcilePlan

__all__ = ["ActionResult", "ApplyResult", "ConvergeResult", "KeptRun", "Status"]

Status = Literal["applied", "unchanged", "failed"]


@dataclass(frozen=True)
class ActionResult:
    """What happened to one change action."""

    action: A.Action
    status: Status
    message: str
    deleted_files: int = 0
    deleted_bytes: int = 0
    engine: str | None = None
    #: For maintenance: how many snapshots, changelogs or partitions it actually expired (the
    #: action's own numbers are the plan's, made before earlier actions of the run changed the table).
    expired: int | None = None
    #: The exception of a failed action (its type, message and ``fix`` are what front ends
    #: report: the operator turns it into a condition reason and an Event).
    error: BaseException | None = field(default=None, compare=False)

    @property
    def fix(self) -> str | None:
        return self.error.fix if isinstance(self.error, errors.TablekeeperError) else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.action.kind, "table": self.action.table, "branch": self.action.branch,
                               "status": self.status, "message": self.message,
                               "deletedFiles": self.deleted_files, "deletedBytes": self.deleted_bytes}
        if self.error is not None:
            err = self.error
            out["error"] = {"type": type(err).__name__,
                            "message": err.message if isinstance(err, errors.TablekeeperError) else str(err),
                            "fix": self.fix}
        name = getattr(self.action, "tag", None) or getattr(self.action, "name", None)
        if name:
            out["name"] = name
        if self.engine:
            out["engine"] = self.engine
        return out


@dataclass(frozen=True)
class KeptRun:
    """A trash run that applying filled: what it removed from ``table`` can be put back until
    ``keep_until_ms`` (``tablekeeper undo TABLE RUN``)."""

    table: str
    run: str
    keep_until_ms: int
    moved_files: int
    moved_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "run": self.run,
                "keepUntil": values.iso_ms(self.keep_until_ms),
                "movedFiles": self.moved_files, "movedBytes": self.moved_bytes}


@dataclass(frozen=True)
class ApplyResult:
    results: tuple[ActionResult, ...] = ()
    #: the trash runs of tables whose policy keeps what is removed (``trash.keep``)
    kept: tuple[KeptRun, ...] = ()

    @property
    def failed(self) -> tuple[ActionResult, ...]:
        return tuple(r for r in self.results if r.status == "failed")

    @property
    def ok(self) -> bool:
        return not self.failed

    def totals(self) -> dict[str, int]:
        return {"applied": sum(1 for r in self.results if r.status == "applied"),
                "unchanged": sum(1 for r in self.results if r.status == "unchanged"),
                "failed": len(self.failed),
                "deletedFiles": sum(r.deleted_files for r in self.results),
                "deletedBytes": sum(r.deleted_bytes for r in self.results)}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"totals": self.totals(), "results": [r.to_dict() for r in self.results]}
        if self.kept:
            out["trash"] = [k.to_dict() for k in self.kept]
        return out


@dataclass(frozen=True)
class ConvergeResult:
    """Plans and results of each pass; ``final`` is the plan after the last pass (empty when
    converged)."""

    plans: tuple[ReconcilePlan, ...]
    applied: tuple[ApplyResult, ...]
    final: ReconcilePlan

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.applied)

    @property
    def results(self) -> tuple[ActionResult, ...]:
        return tuple(r for a in self.applied for r in a.results)

    def to_dict(self) -> dict[str, Any]:
        return {"plan": self.plans[0].to_dict() if self.plans else None,
                "passes": [a.to_dict() for a in self.applied],
                "converged": self.final.is_empty,
                "remaining": self.final.to_dict() if not self.final.is_empty else None}
