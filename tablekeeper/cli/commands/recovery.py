"""Bad-day commands: ``rollback`` (restore an earlier snapshot or tag as the latest one),
``check`` (which views lost files), ``repair`` (drop missing data files from the latest
snapshot), ``explain`` (what holds history).

Decisions live in ``tablekeeper.core.recovery``; this module parses, runs and renders."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from tablekeeper.cli import catalog_tables, common, printer, render, results
from tablekeeper.core import paimon

if TYPE_CHECKING:
    from tablekeeper.core.paimon import Table

__all__ = ["rollback_cmd", "check_cmd", "repair_cmd", "explain_cmd"]


@click.command("rollback")
@click.argument("table")
@click.option("--to-snapshot", type=int, metavar="N", help="Restore snapshot N (or the tag that keeps it).")
@click.option("--to-tag", metavar="TAG", help="Restore the snapshot tag TAG points at.")
@click.option("--to-timestamp", metavar="TIME",
              help="Restore the latest snapshot committed at or before TIME (epoch ms or ISO-8601).")
@click.option("--keep-as-tag", metavar="NAME", help="Tag the current latest snapshot NAME before rolling back.")
@click.option("--discard-later", is_flag=True,
              help="Delete the snapshots, tags and changelogs after the target and the files only they use "
                   "(Paimon's rollback_to). Main only; try --dry-run first.")
@click.option("--branch", "-b", default=paimon.MAIN, show_default=True, help="Branch to roll back.")
@click.option("--dry-run", is_flag=True, help="Show what would be written or deleted, change nothing.")
@common.common_options
@common.maintains("rollback")
@catalog_tables.served_by_catalog
def rollback_cmd(table: str, to_snapshot: int | None, to_tag: str | None, to_timestamp: str | None,
                 keep_as_tag: str | None, discard_later: bool, branch: str, dry_run: bool, warehouse: str | None,
                 options: tuple[str, ...], output: str) -> None:
    """Make an earlier snapshot or tag of TABLE the latest one again, deleting nothing.

    A new snapshot is committed whose content equals the target's (Paimon's
    rollback_to_as_latest): readers at LATEST read the target, every later snapshot and tag
    stays readable and expires by the usual rules. A tag 'rollback-to-as-latest-<target>-<latest>'
    keeps the target's files; delete it once the rolled-back history is no longer needed.

    With --discard-later: Paimon's rollback_to. The snapshots, tags and changelogs after the
    target are deleted with the files no remaining snapshot, tag or changelog of any branch
    uses; refused when a branch was created after the target or a consumer read past it.
    Through a REST catalog (--catalog-option metastore=rest) only --discard-later is offered:
    the server's rollback endpoint carries it out.

    \b
    Examples:
      tablekeeper rollback -w /data/wh sales.orders --to-tag nightly --keep-as-tag before-rollback
      tablekeeper rollback -w /data/wh sales.orders --to-timestamp 2026-01-31T23:00:00Z --dry-run
    """
    from tablekeeper.core import recovery

    request = recovery.RollbackRequest(snapshot_id=to_snapshot, tag=to_tag,
                                       timestamp_ms=common.timestamp_ms(to_timestamp) if to_timestamp else None,
                                       keep_as_tag=keep_as_tag)
    t = common.open_table(table, warehouse, options, branch)
    if discard_later:
        _discard(t, request, dry_run, output)
        return
    done = recovery.restore_as_latest(t, request, dry_run=dry_run)
    plan = done.plan
    action = ("would-" if dry_run else "") + ("roll-back" if plan.action == "roll-back" else "unchanged")
    if dry_run and plan.action == "unchanged":
        action = "unchanged"
    writes = list(done.written) if not dry_run else (
        [t.tag_path(n) for n in plan.tags_to_create] + ([] if plan.action == "unchanged" else [
            f"{t.root}/manifest/{plan.base_manifest_list}", f"{t.root}/manifest/{plan.delta_manifest_list}",
            t.snapshot_path(plan.new_snapshot_id)]))
    notes = [f"tag {name!r} at snapshot {sid}" + (" (created)" if name in done.tags_created else "")
             for name, sid in plan.tags_to_create.items()]
    payload = results.document(
        "rollback", t.identifier, branch, dry_run=dry_run, action=action, writes=writes, notes=notes,
        result=None if dry_run else printer.nothing_deleted(writes), target=plan.target_source,
        target_snapshot_id=plan.target_id, previous_snapshot_id=plan.previous_latest_id,
        current_snapshot_id=plan.new_snapshot_id, tags=dict(plan.tags_to_create))

    def text() -> None:
        if plan.action == "unchanged":
            click.echo(f"unchanged: the latest snapshot {plan.new_snapshot_id} of {t.identifier} already reads "
                       f"{plan.target_source} (snapshot {plan.target_id})")
            return
        verb = "would restore" if dry_run else "restored"
        target = plan.target_source if plan.target_source.startswith("snapshot ") else \
            f"{plan.target_source} (snapshot {plan.target_id})"
        click.echo(f"{verb} {target} of {t.identifier} as snapshot "
                   f"{plan.new_snapshot_id}; snapshot {plan.previous_latest_id} and everything before stay")
        for name, sid in plan.tags_to_create.items():
            click.echo(f"  {'would tag' if dry_run else 'tagged'} snapshot {sid} as {name!r}")

    printer.emit(output, payload, text)


def _discard(t: Table, request: Any, dry_run: bool, output: str) -> None:
    from tablekeeper.core import plans, recovery

    done = recovery.discard_later(t, request, dry_run=dry_run, run=lambda p: plans.execute(
        p, t.file_io, progress=render.progress_callback()))
    if done.result is None:
        shown = plans.sized(done.plan, t.file_io)
        printer.emit(output, results.of_plan(shown, branch=t.branch, dry_run=True, action="would-roll-back"),
              lambda: render.plan(shown, dry_run=True))
        return
    printer.report(done.plan, done.result, output, t.branch, action="rolled-back")


@click.command("check")
@click.argument("table")
@common.common_options
def check_cmd(table: str, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Check that every retained snapshot, tag, branch and changelog of TABLE still has its files.

    Reads every view's manifests and checks its data, changelog, index (deletion vectors),
    statistics and manifest files exist with the sizes the metadata records. Exit code 1
    when a view is broken (the report names the view and the files); nothing is changed."""
    from tablekeeper.core import recovery

    t = common.open_table(table, warehouse, options)
    report = recovery.check_table(t)

    def text() -> None:
        state = "ok" if report.ok else f"BROKEN: {len(report.broken_views)} view(s)"
        click.echo(f"{t.identifier}: {state} ({report.views_checked} views, {report.files_checked} files checked)")
        for p in report.problems:
            what = "missing" if p.actual_size is None else f"size {p.actual_size}, expected {p.expected_size}"
            shown = ", ".join(p.views[:5]) + (f" and {len(p.views) - 5} more" if len(p.views) > 5 else "")
            click.echo(f"  {p.kind} {p.path}: {what} (needed by {shown})")
        if report.ignored:
            click.echo(f"  {len(report.ignored)} reference(s) gone by design (Paimon lets them dangle) were not counted")

    printer.emit(output, report.as_dict(), text)
    if not report.ok:
        printer.print_pending()
        click.get_current_context().exit(1)


@click.command("repair")
@click.argument("table")
@click.option("--remove-missing", is_flag=True,
              help="Drop the data files the latest snapshot lists but storage no longer has (Paimon's "
                   "remove_unexisting_files).")
@click.option("--remove-missing-manifests", is_flag=True,
              help="Drop the manifests the latest snapshot lists but storage no longer has (Paimon's "
                   "remove_unexisting_manifests); runs first when both are given.")
@click.option("--branch", "-b", default=paimon.MAIN, show_default=True, help="Branch to repair.")
@click.option("--dry-run/--apply", default=True, show_default=True,
              help="Show the repair (the default), or --apply: commit it.")
@common.common_options
@common.maintains("repair")
def repair_cmd(table: str, remove_missing: bool, remove_missing_manifests: bool, branch: str, dry_run: bool,
               warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Make the latest snapshot of TABLE readable again after files were lost.

    With --remove-missing: one commit whose delta removes the entries of the data files the
    latest snapshot lists but storage no longer has (Paimon's remove_unexisting_files). With
    --remove-missing-manifests: one commit whose manifest list leaves out the manifests storage
    lost (Paimon's remove_unexisting_manifests). The rows in the lost files are gone from the
    table; no file is deleted. Shown only, until you pass --apply. Refused while a tag also
    reads a lost file (delete the tag or restore the file first). Other missing files (index,
    changelog) are reported, not changed. Stop the table's writers first, as for Paimon's
    procedures.

    \b
    Examples:
      tablekeeper check -w /data/wh sales.orders
      tablekeeper repair -w /data/wh sales.orders --remove-missing
      tablekeeper repair -w /data/wh sales.orders --remove-missing-manifests --remove-missing --apply
    """
    from tablekeeper.core import errors, recovery

    if not (remove_missing or remove_missing_manifests):
        raise errors.InvalidInputError("name the repair to run: --remove-missing or --remove-missing-manifests",
                                       fix="pass --remove-missing and/or --remove-missing-manifests (run "
                                           "'tablekeeper check' to see what is broken)")
    t = common.open_table(table, warehouse, options, branch)
    fields: dict[str, Any] = {}
    notes: list[str] = []
    lines: list[str] = []
    changed = False
    removed_manifests = 0
    if remove_missing_manifests:
        mplan = recovery.plan_remove_missing_manifests(t)
        # (a refused plan raises its refusal, naming the tag and what to do, also in a dry run)
        removed_manifests = recovery.remove_missing_manifests(t, mplan) if mplan.refused or not dry_run else 0
        changed = bool(mplan.manifests)
        fields["manifests"] = mplan.as_dict() | {"removed_manifests": removed_manifests}
        notes += mplan.notes()
        if mplan.manifests:
            lines.append(f"{'would drop' if dry_run else 'dropped'} {len(mplan.manifests)} missing manifest(s) from "
                         f"snapshot {mplan.snapshot_id} of {t.identifier} (branch {branch}); no file is deleted")
            lines += [f"  {name}" for name in mplan.manifests]
            if dry_run and remove_missing:
                notes.append("the data files of the lost manifests' snapshot are checked once they are dropped: "
                             "run with --apply, then check again")
        else:
            lines.append(f"unchanged: the latest snapshot of {t.identifier} (branch {branch}) lists no missing "
                         "manifest")
    removed = 0
    if remove_missing:
        plan = recovery.plan_remove_missing(t)
        removed = recovery.remove_missing(t, plan) if plan.refused or not dry_run else 0
        changed = changed or bool(plan.files)
        fields |= plan.as_dict()
        notes += plan.notes()[1 if not plan.files else 0:] if remove_missing_manifests else plan.notes()
        if plan.files:
            lines.append(f"{'would remove' if dry_run else 'removed'} {len(plan.files)} missing data file(s) from "
                         f"snapshot {plan.snapshot_id} of {t.identifier} (branch {branch}); no file is deleted")
            lines += [f"  {path}" for path in plan.files]
        else:
            lines.append(f"unchanged: the latest snapshot of {t.identifier} (branch {branch}) names no missing data "
                         "file")
    action = ("would-remove" if dry_run else "removed") if changed else "unchanged"
    payload = results.document(
        "repair", t.identifier, branch, dry_run=dry_run, action=action, notes=notes,
        result=None if dry_run else {"removed_entries": removed, "removed_manifests": removed_manifests,
                                     "deleted": {}},
        fields=fields | {"removed_entries": removed})

    def text() -> None:
        for line in lines:
            click.echo(line)
        shown = set()
        for note in notes:
            if note not in shown and not note.startswith("the latest snapshot of branch"):
                click.echo(f"note: {note}")
            shown.add(note)
        if dry_run and changed:
            click.echo("dry run: pass --apply to commit the repair")

    printer.emit(output, payload, text)


@click.command("explain")
@click.argument("table")
@click.option("--now", hidden=True)
@common.common_options
def explain_cmd(table: str, now: str | None, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Show what keeps TABLE's history: for main and every branch, what holds the oldest retained
    snapshot and how many snapshots each pin alone keeps.

    Snapshot pins: snapshot.num-retained.min, snapshot.time-retained, snapshot.expire.limit and
    consumers; file pins: tags, branches created from it and kept changelogs. The counts come from
    expiration's own rule with that one pin removed: what 'tablekeeper expire' would then remove."""
    from tablekeeper.core.recovery import pins

    t = common.open_table(table, warehouse, options)
    branches = pins.explain_table(t, common.now_ms(now))

    def text() -> None:
        for b in branches:
            click.echo(f"{t.identifier} branch {b.branch}: snapshots {b.earliest}..{b.latest}, "
                       f"{b.expirable_now} expirable now; oldest retained {b.oldest_retained}, held by {b.held_by}")
            for p in b.pins:
                mark = "*" if p.holds_oldest else "-"
                held = f", holds {p.snapshots_held} snapshot(s)" if p.snapshots_held else ""
                if p.bytes_held:
                    held += f", {render.human_bytes(p.bytes_held)} reclaimable without it"
                click.echo(f"  {mark} {p.kind} {p.name}{held}: {p.detail}")

    printer.emit(output, {"table": t.identifier, "branches": [b.as_dict() for b in branches]}, text)
