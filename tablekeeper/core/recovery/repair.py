"""``repair --remove-missing``: Paimon's ``remove_unexisting_files``, decided from ``check``.

The data files the branch's latest snapshot lists but storage no longer has make every read of
it fail. The repair is one commit whose delta DELETEs their entries, as Paimon's procedure
commits it (a data increment of deleted files, through pypaimon's commit and its conflict
check); no file is deleted. It refuses when a tag also reads a missing file: the tag would stay
broken with nothing telling so, so the tag must go first (or the file come back). What the
repair does not change is reported: missing manifests (Paimon's ``remove_unexisting_manifests``
finds them), index, changelog and extra files, size mismatches, and other views that read the
missing files (older snapshots expire with them; other branches are repaired on their own).

Crash-safe by construction: before the commit nothing is written, after it the new latest
snapshot no longer lists the files, so a rerun finds nothing left to do."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tablekeeper.core import errors
from tablekeeper.core.paimon import Table
from tablekeeper.core.recovery.check import CheckReport, Problem, check_table, view_kind, view_label

__all__ = ["RemoveMissingPlan", "plan_remove_missing", "remove_missing"]


@dataclass(frozen=True)
class RemoveMissingPlan:
    table: str
    branch: str
    #: The latest snapshot the plan was made on (None: the branch has no snapshot).
    snapshot_id: int | None
    #: Missing data files the latest snapshot lists: their entries are removed.
    files: tuple[str, ...]
    #: (tag view, missing file): why the repair refuses.
    tags_reading: tuple[tuple[str, str], ...]
    #: Problems of the latest snapshot this repair does not change (manifests, index files...).
    unrepaired: tuple[Problem, ...]
    #: Other views that read the removed files and stay broken (older snapshots, other branches).
    still_broken: tuple[str, ...]

    @property
    def refused(self) -> bool:
        return bool(self.tags_reading)

    def notes(self) -> list[str]:
        out = []
        if not self.files:
            out.append(f"the latest snapshot of branch {self.branch!r} names no missing data file")
        else:
            out.append(f"snapshot {self.snapshot_id} keeps naming the removed files until it expires")
        for p in self.unrepaired:
            what = "missing" if p.actual_size is None else f"has size {p.actual_size}, expected {p.expected_size}"
            hint = " (Paimon's remove_unexisting_manifests drops it)" if p.kind == "manifest" else ""
            out.append(f"not repaired: {p.kind} {p.path} {what}{hint}")
        if self.still_broken:
            shown = ", ".join(self.still_broken[:5]) + (f" and {len(self.still_broken) - 5} more"
                                                        if len(self.still_broken) > 5 else "")
            out.append(f"still reading the removed files: {shown}")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"table": self.table, "branch": self.branch, "snapshot_id": self.snapshot_id,
                "missing_data_files": list(self.files), "refused": self.refused,
                "tags_reading_missing_files": [{"tag": t, "file": f} for t, f in self.tags_reading],
                "unrepaired": [p.as_dict() for p in self.unrepaired], "still_broken_views": list(self.still_broken),
                "notes": self.notes()}


def _is_tag(view: str) -> bool:
    return view_kind(view) == "tag"


def plan_remove_missing(table: Table, report: CheckReport | None = None) -> RemoveMissingPlan:
    """The repair of ``table``'s branch (pure over ``report``, else checks the table: reads only)."""
    report = report if report is not None else check_table(table.on_branch("main"))
    latest = table.latest_snapshot_id()
    if latest is None:
        return RemoveMissingPlan(table.identifier, table.branch, None, (), (), (), ())
    view = view_label(table.branch, "snapshot", str(latest))
    mine = [p for p in report.problems if view in p.views]
    removed = [p for p in mine if p.kind == "data" and p.actual_size is None]
    tags = tuple((v, p.path) for p in removed for v in p.views if _is_tag(v))
    still = sorted({v for p in removed for v in p.views if v != view and not _is_tag(v)})
    return RemoveMissingPlan(table.identifier, table.branch, latest, tuple(p.path for p in removed), tags,
                             tuple(p for p in mine if p not in removed), tuple(still))


def remove_missing(table: Table, plan: RemoveMissingPlan, *,
                   commit: Callable[[Table, list[str], int], int] | None = None) -> int:
    """Commit the repair ``plan``; the entries removed (0 when nothing is left to do).

    Raises:
        InvalidInputError: a tag reads a missing file (the plan is refused).
        ConcurrentModificationError: a writer committed since the plan (run it again)."""
    if plan.refused:
        tag, path = plan.tags_reading[0]
        more = len({t for t, _ in plan.tags_reading}) - 1
        raise errors.InvalidInputError(
            f"{tag}{f' and {more} more tag(s)' if more else ''} also read(s) the missing file {path}: removing it "
            "from the latest snapshot leaves the tag broken",
            fix="restore the file, or delete the tag ('tablekeeper tag delete') and repair again")
    if not plan.files or plan.snapshot_id is None:
        return 0
    names = [p.rsplit("/", 1)[-1] for p in plan.files]
    if commit is None:
        from tablekeeper.core.paimon import pypaimon

        def commit(t: Table, files: list[str], snapshot_id: int) -> int:
            return pypaimon.remove_data_files(t.root, t.branch, files, snapshot_id, file_io=t.file_io)
    return commit(table, names, plan.snapshot_id)
