"""Human output of the CLI: tables, plans, progress bars and the snapshot/tag/branch timeline."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import click

from tablekeeper.core import paimon

if TYPE_CHECKING:  # types only: the CLI imports what a command needs when it runs (start-up)
    from tablekeeper.core import plans, refs
    from tablekeeper.core.paimon import Table

__all__ = ["rows", "plan", "change", "progress_callback", "build_timeline", "timeline"]


def _print_rich(renderable: Any) -> None:
    """rich is imported only when a table is printed (issue 13: ``-o json`` and plain output
    skip its ~0.2 s import)."""
    from rich.console import Console

    Console(highlight=False).print(renderable)


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def plain_rows(items: Sequence[Mapping[str, Any]]) -> list[str]:
    """``items`` as plain, space-aligned columns with every value in full (what a pipe or a file
    gets: nothing is cut to a terminal's width)."""
    keys = list(items[0])
    cells = [keys, *[["" if item.get(k) is None else str(item.get(k)) for k in keys] for item in items]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(keys))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]


def rows(items: Sequence[Mapping[str, Any]], empty: str) -> None:
    """A table: drawn by rich on a terminal, plain full-width columns otherwise."""
    if not items:
        click.echo(empty)
        return
    if not sys.stdout.isatty():
        for line in plain_rows(items):
            click.echo(line)
        return
    from rich.table import Table as RichTable

    table = RichTable(show_edge=False, pad_edge=False)
    for key in items[0]:
        table.add_column(key, overflow="fold")  # (a long value wraps, never cut)
    for item in items:
        table.add_row(*["" if v is None else str(v) for v in item.values()])
    _print_rich(table)


def plan(p: plans.Plan, *, dry_run: bool, result: plans.ExecutionResult | None = None) -> None:
    from tablekeeper.core import plans  # (loaded by the command that made ``p``)

    head = "would delete" if dry_run else "deleted"
    click.echo(f"{p.operation} on {p.table}{' (dry run)' if dry_run else ''}")
    for note in p.notes:
        click.echo(f"  note: {note}")
    for step in p.steps:
        if isinstance(step, plans.DeleteStep):
            size = sum(f.size or 0 for f in step.files)
            unsized = sum(1 for f in step.files if f.size is None)
            click.echo(f"  {head} {len(step.files)} {step.kind.value} file(s)"
                       + (f", {human_bytes(size)}" if size or not unsized else "")
                       + (f" ({unsized} of unknown size)" if unsized else ""))
            if dry_run:
                for f in step.files[:20]:
                    click.echo(f"    - {f.path}")
                if len(step.files) > 20:
                    click.echo(f"    ... and {len(step.files) - 20} more")
        elif isinstance(step, plans.WriteStep):
            click.echo(f"  {'would write' if dry_run else 'wrote'} {step.path}")
        else:
            click.echo(f"  {'would remove' if dry_run else 'removed'} empty directories under "
                       f"{len(step.dirs)} bucket(s)")
    if result is not None:
        missing = sum(result.missing.values())
        if missing:
            click.echo(f"  {missing} file(s) were already gone (counted, not an error)")
        unsized = sum(result.unsized.values())
        if unsized:
            click.echo(f"  {unsized} deleted file(s) of unknown size (not in the bytes above)")
        for failure in result.failed[:20]:
            click.echo(f"  FAILED {failure.path}: {failure.error}", err=True)
    if not p.steps:
        click.echo("  nothing to do")


def change(c: refs.BranchChange) -> None:
    click.echo(f"{c.action}: branch {c.branch!r}")
    for path in c.written:
        click.echo(f"  + {path}")
    for path in c.deleted:
        click.echo(f"  - {path}")
    for note in c.notes:
        click.echo(f"  note: {note}")


def progress_callback() -> plans.Progress | None:
    """A rich progress bar on interactive terminals; None otherwise (logs stay clean)."""
    if not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskID, TextColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   console=Console(stderr=True), transient=True)
    tasks: dict[str, TaskID] = {}

    def update(kind: str, done: int, total: int) -> None:
        if not bar.live.is_started:
            bar.start()
        if kind not in tasks:
            tasks[kind] = bar.add_task(f"deleting {kind}", total=total)
        bar.update(tasks[kind], completed=done)
        if done >= total and all(t.finished for t in bar.tasks):
            bar.stop()

    return update


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def build_timeline(table: Table) -> dict[str, Any]:
    """Snapshots, tags and branches as plain data (the JSON of ``show``)."""
    from tablekeeper.core import refs

    main = table.on_branch(paimon.MAIN)

    def branch_data(t: Table) -> dict[str, Any]:
        by_snapshot: dict[int, list[str]] = {}
        expired_tagged: dict[int, Any] = {}
        existing = set(t.snapshot_ids())
        for tag in t.tags():
            by_snapshot.setdefault(tag.snapshot_id, []).append(tag.name)
            if tag.snapshot_id not in existing:
                expired_tagged[tag.snapshot_id] = tag.snapshot
        snaps = []
        for s in [*t.snapshots(), *expired_tagged.values()]:
            snaps.append({
                "id": s.id, "commit_kind": s.commit_kind, "time": _when(s.time_millis),
                "records": s.total_record_count, "tags": sorted(by_snapshot.get(s.id, [])),
                "expired": s.id not in existing,
            })
        return {"snapshots": sorted(snaps, key=lambda x: x["id"], reverse=True),
                "latest": t.latest_snapshot_id(), "earliest": t.earliest_snapshot_id()}

    out: dict[str, Any] = {"table": table.identifier, "main": branch_data(main), "branches": []}
    for fp in refs.fork_points(main):
        data = branch_data(main.on_branch(fp.branch))
        data.update({"name": fp.branch, "fork_snapshot_id": fp.snapshot_id, "from_tag": fp.from_tag})
        out["branches"].append(data)
    return out


def _snapshot_line(s: Mapping[str, Any], latest: int | None) -> str:
    marks = []
    if s["tags"]:
        marks.append("tags: " + ", ".join(s["tags"]))
    if s["id"] == latest:
        marks.append("LATEST")
    if s["expired"]:
        marks.append("expired, pinned by tag")
    suffix = f"  ({'; '.join(marks)})" if marks else ""
    records = "" if s["records"] is None else f" records={s['records']}"
    return f"{s['id']:>6}  {s['commit_kind']:<9} {s['time']}{records}{suffix}"


def timeline(data: Mapping[str, Any]) -> None:
    """``git log --graph``-style drawing: main on the left column, each branch drawn in its own
    column above the snapshot it forked from."""
    click.echo(f"table {data['table']}")
    main = data["main"]
    forks_at: dict[int | None, list[Mapping[str, Any]]] = {}
    for b in data["branches"]:
        forks_at.setdefault(b["fork_snapshot_id"], []).append(b)
    for b in forks_at.pop(None, []):
        click.echo(f"  o branch {b['name']} (empty or unrelated history)")
        for s in b["snapshots"]:
            click.echo(f"  | * {b['name']}: {_snapshot_line(s, b['latest'])}")
    pending = dict(forks_at)
    main_ids = [s["id"] for s in main["snapshots"]]

    def draw_branches_for(fork_id: int) -> None:
        for b in pending.pop(fork_id, []):
            own = [s for s in b["snapshots"] if s["id"] > fork_id]
            click.echo(f"  | o branch {b['name']}" + (f" (from tag {b['from_tag']})" if b["from_tag"] else ""))
            for s in own:
                click.echo(f"  | * {_snapshot_line(s, b['latest'])}")
            click.echo("  |/")

    for s in main["snapshots"]:
        for fid in sorted([f for f in pending if f is not None and f > s["id"]], reverse=True):
            draw_branches_for(fid)  # fork snapshot no longer in main: draw above the next older one
        if s["id"] in pending:
            draw_branches_for(s["id"])
        click.echo(f"  * {_snapshot_line(s, main['latest'])}")
    for leftover in sorted((f for f in pending if f is not None), reverse=True):
        draw_branches_for(leftover)
    if not main_ids:
        click.echo("  (main has no snapshots)")
