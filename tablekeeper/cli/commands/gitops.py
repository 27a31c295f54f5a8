"""GitOps: ``plan -f`` and ``apply -f`` (manifests in, the changes that make storage match them out)."""

from __future__ import annotations

import json
from typing import Any

import click

from tablekeeper.cli import printer
from tablekeeper.cli.common import F

__all__ = ["plan_cmd", "apply_cmd"]


def _gitops_options(func: F) -> F:
    func = click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table",
                        show_default=True, help="Output format.")(func)
    func = click.option("--now", hidden=True, help="Evaluate at this time (ISO-8601 or epoch ms; tests).")(func)
    func = click.option("--verbose", "-v", is_flag=True, help="Show the effective-policy values behind each action, "
                                                              "with their sources.")(func)
    func = click.option("--no-estimate", is_flag=True, help="Do not size deletions (faster; no file counts).")(func)
    func = click.option("--spark-threshold", type=int, default=100_000, show_default=True,
                        help="engine: Auto runs a step with at least this many files on Spark.")(func)
    func = click.option("--ignore-schedules", is_flag=True,
                        help="Treat every maintenance step as due (a manual run).")(func)
    func = click.option("--table", "tables", multiple=True, metavar="DB.TABLE",
                        help="Only these tables (repeatable).")(func)
    func = click.option("--relative-to", type=click.Choice(["cwd", "manifests"]), default="cwd", show_default=True,
                        help="What relative warehouse paths of catalogs resolve against: the current directory or "
                             "the directory of the manifest file.")(func)
    func = click.option("--filename", "-f", "paths", multiple=True, required=True, metavar="PATH",
                        help="Manifest file or directory (*.yaml, *.yml; repeatable).")(func)
    return func


def _reconcile_setup(paths: tuple[str, ...], relative_to: str, spark_threshold: int, ignore_schedules: bool,
                     no_estimate: bool) -> tuple[Any, Any, Any, Any]:
    from tablekeeper import reconcile
    from tablekeeper.cli import gitops

    desired = gitops.load_desired(paths, relative_to)
    opener = reconcile.Opener()
    config = reconcile.ReconcileConfig(spark_threshold_files=spark_threshold, ignore_schedules=ignore_schedules,
                                       estimate=not no_estimate, table_options=True)
    return desired, opener, gitops.record_store(opener), config


@click.command("plan")
@_gitops_options
@click.option("--allow-conflicts", is_flag=True,
              help="Exit 0/2 also when conflicts keep storage from matching the manifests (default: exit 1).")
def plan_cmd(paths: tuple[str, ...], relative_to: str, tables: tuple[str, ...], ignore_schedules: bool,
             spark_threshold: int, no_estimate: bool, verbose: bool, now: str | None, output: str,
             allow_conflicts: bool) -> None:
    """Show what 'apply -f' would change so storage matches the manifests (terraform plan).

    \b
    Exit codes: 0 nothing would change; 2 something would change (the diff is on stdout);
    1 conflicts need attention (a tag at another snapshot...; --allow-conflicts: 0 or 2 as
    without them); 2 with an 'error:' line on stderr for bad manifests (nothing is read or
    changed then).
    """
    from tablekeeper import reconcile
    from tablekeeper.cli import gitops

    desired, opener, store, config = _reconcile_setup(paths, relative_to, spark_threshold, ignore_schedules,
                                                      no_estimate)
    result = reconcile.plan(desired, now=gitops.parse_now(now), store=store, opener=opener, config=config,
                            tables=tables or None)
    printer.emit(output, result.to_dict(), lambda: gitops.render_plan(result, verbose=verbose))
    if result.summary()["conflicts"] and not allow_conflicts:
        raise click.exceptions.Exit(gitops.EXIT_APPLY_FAILED)
    if not result.is_empty:
        raise click.exceptions.Exit(gitops.EXIT_CHANGES)


@click.command("apply")
@_gitops_options
def apply_cmd(paths: tuple[str, ...], relative_to: str, tables: tuple[str, ...], ignore_schedules: bool,
              spark_threshold: int, no_estimate: bool, verbose: bool, now: str | None, output: str) -> None:
    """Make storage match the manifests: create/adopt tags and branches, delete what manifests
    no longer declare, expire tags, run due maintenance. Every manifest is validated first;
    on any problem nothing is changed.

    \b
    Exit codes: 0 applied (or nothing to do); 1 an action failed or conflicts remain;
    2 bad manifests ('error:' on stderr, nothing changed).
    """
    from tablekeeper import reconcile
    from tablekeeper.cli import gitops, trash_report

    desired, opener, store, config = _reconcile_setup(paths, relative_to, spark_threshold, ignore_schedules,
                                                      no_estimate)
    when = gitops.parse_now(now)
    first = reconcile.plan(desired, now=when, store=store, opener=opener, config=config, tables=tables or None)
    text = output == "table"
    if text:
        gitops.render_plan(first, verbose=verbose)
        if not first.is_empty:
            click.echo("\nApplying:")
    passes = {"n": 0}

    def progress(r: reconcile.ActionResult) -> None:
        if text:
            gitops.render_result(r)

    if tables:
        result = reconcile.converge(reconcile.DesiredState(desired.resources, tuple(
            t for t in desired.tables if t.location.identifier in tables)), now=when, store=store, opener=opener,
            config=config, on_result=progress, first_plan=first)
    else:
        result = reconcile.converge(desired, now=when, store=store, opener=opener, config=config,
                                    on_result=progress, first_plan=first)
    passes["n"] = len(result.applied)
    if output == "json":
        click.echo(json.dumps(result.to_dict(), indent=2, default=str))
    elif result.applied:
        totals = [r.totals() for r in result.applied]
        applied = sum(t["applied"] for t in totals)
        failed = sum(t["failed"] for t in totals)
        deleted = sum(t["deletedFiles"] for t in totals)
        size = sum(t["deletedBytes"] for t in totals)
        extra = f" in {passes['n']} passes (applying made more work due)" if passes["n"] > 1 else ""
        click.echo(f"\nApply complete{extra}: {applied} applied, {failed} failed; deleted {deleted} file(s), "
                   f"{gitops.human_bytes(size)}.")
        for kept in (k for r in result.applied for k in r.kept):
            click.echo(trash_report.kept_line(kept.table, kept.run, kept.keep_until_ms, kept.moved_files))
        if not result.final.is_empty:
            click.echo("Still pending (run apply again):")
            for tp in result.final.tables:
                for a in tp.changes:
                    click.echo(f"  {a.kind} {a.table}: {a.reason}")
    conflicts = [a for a in result.final.reported if a.kind in ("TagConflict", "BranchConflict")]
    if not result.ok or conflicts:
        raise click.exceptions.Exit(gitops.EXIT_APPLY_FAILED)
