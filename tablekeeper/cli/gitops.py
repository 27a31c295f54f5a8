"""``tablekeeper plan -f DIR`` / ``apply -f DIR``: GitOps without a cluster. Reads manifests,
asks :mod:`tablekeeper.reconcile` for a plan and prints it like ``terraform plan``; ``apply``
carries it out. Decisions live in ``tablekeeper.reconcile``; this module only renders."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import click

from tablekeeper import reconcile
from tablekeeper.cli.render import human_bytes
from tablekeeper.core import errors, pycompat
from tablekeeper.reconcile import actions as A

__all__ = ["parse_now", "action_line", "render_plan", "render_result", "render_summary", "human_bytes", "EXIT_CHANGES",
           "EXIT_APPLY_FAILED", "load_desired", "record_store"]

#: ``plan``: something would change (terraform's ``-detailed-exitcode``). Bad input is also 2 but
#: prints ``error:`` on stderr; a pending plan prints the diff on stdout.
EXIT_CHANGES = 2
#: ``apply``: an action failed, or conflicts keep storage from matching the manifests.
EXIT_APPLY_FAILED = 1


def parse_now(value: str | None) -> datetime:
    """``--now``: ISO-8601 (a naive value is UTC) or epoch ms; default: the current time."""
    if value is None:
        return datetime.now(timezone.utc)
    if value.isdigit():
        return datetime.fromtimestamp(int(value) / 1000, tz=timezone.utc)
    try:
        parsed = pycompat.fromisoformat(value)
    except ValueError as e:
        raise errors.InvalidInputError(f"--now {value!r} is neither ISO-8601 nor epoch ms",
                                       fix="e.g. 2026-11-20T12:00:00Z") from e
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def load_desired(paths: Sequence[str], relative_to: str) -> reconcile.DesiredState:
    return reconcile.load(list(paths), relative_to_manifests=relative_to == "manifests")


def record_store(opener: reconcile.Opener) -> reconcile.WarehouseRecordStore:
    return reconcile.WarehouseRecordStore(opener.file_io)


def _est(e: A.Estimate) -> str:
    if not e.files and not e.bytes:
        return ""
    text = f"{e.files} file(s)" + (f", {human_bytes(e.bytes)}" if e.bytes else "")
    if e.partial:
        text += f" ({e.note or 'first batch only'})"
    return text


def action_line(a: A.Action) -> tuple[str, str]:
    """(marker, text) of one action."""
    on = "" if a.branch == "main" else f" on branch {a.branch!r}"
    if isinstance(a, A.CreateTag):
        ttl = f", TTL {a.time_retained}" if a.time_retained else ""
        what = "auto tag" if a.auto else "tag"
        return "+", f"{what} {a.tag!r}{on} at snapshot {a.snapshot_id}{ttl}  -- {a.reason}"
    if isinstance(a, A.AdoptTag):
        return "=", f"adopt tag {a.tag!r}{on} at snapshot {a.snapshot_id}  -- {a.reason}"
    if isinstance(a, A.DeleteTag):
        size = _est(a.estimate)
        return "-", f"tag {a.tag!r}{on}" + (f": {size}" if size else "") + f"  -- {a.reason}"
    if isinstance(a, A.ExpireTags):
        names = ", ".join(f"{e.tag!r} ({e.rule})" for e in a.tags[:8])
        more = f" and {len(a.tags) - 8} more" if len(a.tags) > 8 else ""
        size = _est(a.estimate)
        return "-", f"expire tag(s){on}: {names}{more}" + (f": {size}" if size else "")
    if isinstance(a, A.CreateBranch):
        origin = (f"tag {a.from_tag!r}" if a.from_tag else f"snapshot {a.from_snapshot_id} (via fork tag)"
                  if a.from_snapshot_id else "nothing (empty)")
        return "+", f"branch {a.name!r} from {origin}" + (" [protected]" if a.protected else "")
    if isinstance(a, A.AdoptBranch):
        return "=", f"adopt branch {a.name!r}  -- {a.reason}"
    if isinstance(a, A.DropBranch):
        return "-", f"drop branch {a.name!r}  -- {a.reason}"
    if isinstance(a, A.ReleaseObject):
        return "=", f"forget {a.object_kind} {a.name!r}{on}  -- {a.reason}"
    if isinstance(a, A.ExpirePartitions):
        shown = ", ".join(a.partitions[:4]) + (f" (+{len(a.partitions) - 4} more)" if len(a.partitions) > 4 else "")
        more = f"; {a.more} more next run" if a.more else ""
        return "~", (f"expire partitions older than {a.expiration}: {shown} -- {a.estimate.files} file(s) leave the "
                     f"latest snapshot{more} [{a.engine}]")
    if isinstance(a, A.ExpireConsumers):
        shown = ", ".join(a.consumers[:4]) + (f" (+{len(a.consumers) - 4} more)" if len(a.consumers) > 4 else "")
        return "~", f"expire consumers not updated for {a.expiration}: {shown}  -- {a.reason}"
    if isinstance(a, A.ExpireSnapshots):
        rng = f"{a.first_snapshot}..{a.last_snapshot} ({a.snapshots})" if a.snapshots else "(hint only)"
        size = _est(a.estimate) or "no files"
        return "~", f"expire snapshots {rng}: {size} [{a.engine}]"
    if isinstance(a, A.ExpireChangelog):
        return "~", f"expire {a.changelogs} changelog(s): {_est(a.estimate) or 'no files'} [{a.engine}]"
    if isinstance(a, A.CleanOrphans):
        verb = "report orphans" if a.dry_run else "clean orphans"
        return ("#" if a.dry_run else "~"), (f"{verb} older than {a.older_than}: {_est(a.estimate)}"
                                             + (" (dryRun: nothing deleted)" if a.dry_run else f" [{a.engine}]"))
    if isinstance(a, A.SetTableOptions):
        shown = ", ".join(f"{k}={v}" for k, v in a.changed.items())
        return "~", f"set table options: {shown}"
    if isinstance(a, A.TagConflict):
        return "!", f"conflict on tag {a.tag!r}{on}: {a.conflict} -- {a.reason}"
    if isinstance(a, A.BranchConflict):
        return "!", f"conflict on branch {a.name!r}: {a.conflict} -- {a.reason}"
    if isinstance(a, A.Skipped):
        return "#", f"{a.what}: {a.reason}"
    return "?", a.reason


def render_plan(plan: reconcile.ReconcilePlan, *, verbose: bool = False) -> None:
    """Print the plan: one block per table, then a summary line."""
    click.echo(f"tablekeeper plan at {plan.now.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC "
               f"({len(plan.tables)} table(s))")
    for tp in plan.tables:
        loc = tp.target.location
        click.echo(f"\n{loc.identifier}  {loc.warehouse}  ({tp.target.resource.ref})")
        if not tp.actions:
            click.echo("  no changes")
            continue
        if not tp.changes:
            click.echo("  no changes")
        for a in tp.actions:
            mark, text = action_line(a)
            click.echo(f"  {mark} {text}")
            if verbose and a.policy:
                for path, value in a.policy.items():
                    click.echo(f"      {path} = {value}")
    click.echo()
    render_summary(plan)


def render_summary(plan: reconcile.ReconcilePlan) -> None:
    s = plan.summary()
    if plan.is_empty:
        click.echo("No changes: storage matches the manifests."
                   + (f" {s['conflicts']} conflict(s) need attention." if s["conflicts"] else ""))
        return
    deleting = f" (deleting about {s['files']} file(s), {human_bytes(s['bytes'])})" if s["files"] else ""
    click.echo(f"Plan: {s['create']} to create, {s['delete']} to delete, {s['adopt_or_release']} to adopt/forget, "
               f"{s['maintenance']} maintenance step(s){deleting}."
               + (f" {s['conflicts']} conflict(s) need attention." if s["conflicts"] else ""))


def render_result(r: reconcile.ActionResult) -> None:
    mark = {"applied": "ok", "unchanged": "--", "failed": "FAILED"}[r.status]
    table = r.action.table if r.action.branch == "main" else f"{r.action.table}@{r.action.branch}"
    size = f" ({r.deleted_files} file(s), {human_bytes(r.deleted_bytes)} deleted)" if r.deleted_files else ""
    click.echo(f"  [{mark}] {table}: {r.message}{size}", err=r.status == "failed")


def apply_payload(result: reconcile.ConvergeResult) -> dict[str, Any]:
    return result.to_dict()
