"""``check``: does every retained view of a table still have its files?

A view is a root that readers may open: every snapshot and tag of every branch and every kept
``changelog-N``. For each, the files a reader needs: its manifest lists and manifests, the live
data files (with the extra files they name), the changelog files, the index manifest with its
index files (deletion vectors, bucket indexes) and the statistics file, each checked to exist
and, where the metadata records a size, to have it. References Paimon lets dangle by design
(core/reclaim/reach/guarantees.py) are not damage and are left out; a missing manifest list or manifest is
reported for the view whose reads it stops."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tablekeeper.core.paimon import Snapshot, Table, manifests
from tablekeeper.core.reclaim.reach import ListRole, RootKind, RootName, copied_lists, dangling_roles, root_kind

__all__ = ["Problem", "CheckReport", "check_table", "retained_views", "view_label", "view_kind"]


@dataclass(frozen=True)
class Problem:
    """One file a view needs that is gone (``actual_size`` None) or has another size."""

    kind: str
    path: str
    expected_size: int | None
    actual_size: int | None
    #: The views that need it: ``main snapshot 3``, ``main tag t1``, ``dev changelog 7`` ...
    views: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "expected_size": self.expected_size,
                "actual_size": self.actual_size, "problem": "missing" if self.actual_size is None else "size",
                "views": list(self.views)}


@dataclass(frozen=True)
class CheckReport:
    table: str
    views_checked: int
    files_checked: int
    problems: tuple[Problem, ...]
    #: References gone by design (not damage): (view, role, file).
    ignored: tuple[tuple[str, str, str], ...] = field(default=())

    @property
    def broken_views(self) -> list[str]:
        return sorted({v for p in self.problems for v in p.views})

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {"table": self.table, "ok": self.ok, "views_checked": self.views_checked,
                "files_checked": self.files_checked, "broken_views": self.broken_views,
                "problems": [p.as_dict() for p in self.problems],
                "ignored_references": [{"view": v, "role": r, "file": f} for v, r, f in self.ignored]}


@dataclass
class _Needs:
    files: dict[str, tuple[str, int | None, set[str]]] = field(default_factory=dict)
    gone_meta: dict[str, tuple[str, set[str]]] = field(default_factory=dict)

    def need(self, kind: str, path: str, size: int | None, view: str) -> None:
        entry = self.files.setdefault(path, (kind, size, set()))
        entry[2].add(view)


def retained_views(table: Table) -> list[tuple[RootName, Snapshot]]:
    """Every snapshot and tag of every branch and every kept changelog, named."""
    out: list[tuple[RootName, Snapshot]] = []
    for branch in table.all_branches():
        b = branch.branch
        out += [(RootName(root_kind("snapshot", b), b, str(s.id)), s)
                for s in branch.snapshots()]
        out += [(RootName(root_kind("tag", b), b, t.name), t.snapshot) for t in branch.tags()]
        for cid in branch.changelog_ids():
            try:
                out.append((RootName(RootKind.CHANGELOG, b, str(cid)), branch.changelog(cid)))
            except FileNotFoundError:
                continue
    return out


def view_label(branch: str, kind: str, name: str) -> str:
    """How a report names a view: ``main snapshot 3``, ``dev tag t1``, ``main changelog 7``."""
    return f"{branch} {kind} {name}"


def view_kind(label: str) -> str:
    """The kind of a view named by :func:`view_label`: ``snapshot``, ``tag`` or ``changelog``."""
    return label.split(" ")[1]


def _label(root: RootName) -> str:
    return view_label(root.branch, root.kind.file_kind, root.name)


def check_table(table: Table) -> CheckReport:
    """Check every retained view of ``table`` (all branches); reads only."""
    from tablekeeper.core import plans
    from tablekeeper.core.reclaim.reach import MissingFile, Reachability

    reach = Reachability(table)
    producer = reach.changelog_producer()
    roots = retained_views(table)
    copied = copied_lists((n, s.changelog_manifest_list) for n, s in roots)
    needs = _Needs()
    ignored: list[tuple[str, str, str]] = []
    for root, snap in roots:
        view = _label(root)
        meta: list[tuple[str, str, int | None]]
        data: list[manifests.FileRef]
        dangling = dangling_roles(root.kind, snap, producer=producer, copied=copied)

        def told(role: ListRole, file: str, _via: str | None, view: str = view) -> None:
            ignored.append((view, role.value, file))

        def refs(name: str | None, role: ListRole, told: Callable[[ListRole, str, str | None], None] = told,
                 dangling: frozenset[ListRole] = dangling) -> list[manifests.FileRef]:
            return reach.refs_of_list(name, role, missing=told if role in dangling else None)

        try:
            if root.kind == RootKind.CHANGELOG:
                role = reach.changelog_role(snap)
                data = [] if role == "empty" else [r for r in (
                    refs(snap.changelog_manifest_list, ListRole.CHANGELOG) if role == "changelog"
                    else refs(snap.delta_manifest_list, ListRole.DELTA)) if r.kind == manifests.ADD]
                kind = "changelog"
                meta = [("manifest", p, None) for p in reach.changelog_root_meta(snap, dangling=dangling,
                                                                                  missing=told)]
            else:
                data = manifests.merge_live(refs(snap.base_manifest_list, ListRole.BASE)
                                            + refs(snap.delta_manifest_list, ListRole.DELTA))
                kind = "data"
                changelog = [r for r in refs(snap.changelog_manifest_list, ListRole.CHANGELOG)
                             if r.kind == manifests.ADD]
                for ref in changelog:
                    _need_data(needs, reach.data_paths(ref), ref.file_size, "changelog", view)
                meta = [(m.kind, m.path, m.size) for m in reach.meta_files(snap, dangling=dangling, missing=told)]
        except MissingFile as e:
            gone = needs.gone_meta.setdefault(e.name, (e.what, set()))
            gone[1].add(view)
            continue
        for ref in data:
            _need_data(needs, reach.data_paths(ref), ref.file_size, kind, view)
        for meta_kind, path, size in meta:
            needs.need(meta_kind, path, size, view)
    paths = sorted(needs.files)
    sizes = plans.stat_sizes(table.file_io, paths)
    problems: list[Problem] = []
    for path, actual in zip(paths, sizes, strict=True):
        kind, expected, views = needs.files[path]
        if actual is None or (expected is not None and actual >= 0 and actual != expected):
            problems.append(Problem(kind, path, expected, actual, tuple(sorted(views))))
    for name, (what, views) in sorted(needs.gone_meta.items()):
        path = f"{reach.manifest_dir}/{name}"
        if path not in needs.files:
            problems.append(Problem(what, path, None, None, tuple(sorted(views))))
    return CheckReport(table.identifier, len(roots), len(paths), tuple(problems), tuple(sorted(set(ignored))))


def _need_data(needs: _Needs, paths: list[str], size: int | None, kind: str, view: str) -> None:
    for i, path in enumerate(paths):  # the data file, sized by its manifest; then its extra files
        needs.need(kind if i == 0 else f"{kind} extra", path, size if i == 0 else None, view)
