"""Maintenance: ``expire``, ``expire-changelog``, ``expire-partitions`` and ``clean-orphans``."""

from __future__ import annotations

from datetime import datetime

import click

from tablekeeper.cli import catalog_tables, common, on_spark, printer, render, results
from tablekeeper.core import errors, paimon

__all__ = ["expire_cmd", "expire_changelog_cmd", "expire_partitions_cmd", "clean_orphans_cmd"]


@click.command("expire")
@click.argument("table")
@click.option("--branch", "-b", default=paimon.MAIN, show_default=True)
@click.option("--retain-min", type=int, help="snapshot.num-retained.min (default: table option, else 10; >= 1).")
@click.option("--retain-max", type=int, help="snapshot.num-retained.max (default: table option, else unlimited).")
@click.option("--time-retained", help="snapshot.time-retained, e.g. '1 h' (default: table option, else 1 h).")
@click.option("--max-deletes", "expire_limit", type=int, help="snapshot.expire.limit (default: table option, else 50).")
@click.option("--parallelism", type=int, help="Delete threads.")
@click.option("--now", hidden=True, help="Evaluate retention at this time (epoch ms or ISO).")
@click.option("--dry-run", is_flag=True, help="Print the plan, delete nothing.")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              callback=common.engine_available, help=common.ENGINE_HELP)
@common.common_options
@common.maintains("expire", destructive=True)
def expire_cmd(table: str, branch: str, retain_min: int | None, retain_max: int | None, time_retained: str | None,
               expire_limit: int | None, parallelism: int | None, now: str | None, dry_run: bool, engine: str,
               warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Expire old snapshots of TABLE: data, changelog, manifests, then snapshot files, EARLIEST.

    Options come from the flags, else from the table's own Paimon options."""
    from tablekeeper.core import plans
    from tablekeeper.core.reclaim import expire

    t = common.open_table(table, warehouse, options, branch)
    retention = expire.from_options(t.options(), expire.RetentionFlags(
        retain_min=retain_min, retain_max=retain_max, time_retained=common.duration(time_retained, "--time-retained"),
        expire_limit=expire_limit))
    if engine == "spark":
        on_spark.run("expire", t, options, dry_run, output, retention=retention, parallelism=parallelism,
                      now_ms=common.now_ms(now) if now else None)
        return
    config = expire.expire_config(retention, t.options())
    if dry_run:
        printer.run_plan(expire.plan_expire(t, config, common.now_ms(now)), t, dry_run, output, parallelism)
        return
    made, result = expire.run_expire(t, config, common.now_ms(now), lambda p: plans.execute(
        p, t.file_io, parallelism=parallelism, progress=render.progress_callback()))
    printer.report(made, result, output, branch)


@click.command("expire-changelog")
@click.argument("table")
@click.option("--branch", "-b", default=paimon.MAIN, show_default=True)
@click.option("--parallelism", type=int)
@click.option("--now", hidden=True)
@click.option("--dry-run", is_flag=True)
@common.common_options
@common.maintains("expire-changelog", destructive=True)
def expire_changelog_cmd(table: str, branch: str, parallelism: int | None, now: str | None, dry_run: bool,
                         warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Expire long-lived changelog-N files (decoupled changelog.* options of the table)."""
    from tablekeeper.core import plans
    from tablekeeper.core.reclaim import expire

    t = common.open_table(table, warehouse, options, branch)
    config = expire.changelog_config(expire.from_options(t.options()), t.options())
    if dry_run:
        printer.run_plan(expire.plan_expire_changelog(t, config, common.now_ms(now)), t, dry_run, output, parallelism)
        return
    # unpublish, verify, then delete (core/reclaim/expire/commit.py)
    made, result = expire.run_expire_changelog(t, config, common.now_ms(now), lambda p: plans.execute(
        p, t.file_io, parallelism=parallelism, progress=render.progress_callback()))
    printer.report(made, result, output, branch)


@click.command("expire-partitions")
@click.argument("table")
@click.option("--branch", "-b", default=paimon.MAIN, show_default=True)
@click.option("--expiration-time", help="partition.expiration-time, e.g. '30 d' (default: table option).")
@click.option("--strategy", type=click.Choice(["values-time", "update-time"]))
@click.option("--timestamp-formatter", help="Java pattern, e.g. yyyyMMdd.")
@click.option("--timestamp-pattern", help="e.g. '$dt $hour:00:00'.")
@click.option("--max-expires", type=int, help="partition.expiration-max-num (default 100).")
@click.option("--zone-known", is_flag=True, help="Clock of this machine equals the writers' zone (no 12 h margin).")
@click.option("--now", hidden=True)
@click.option("--dry-run", is_flag=True)
@common.common_options
@common.maintains("expire-partitions", destructive=True, deletes_files=False)
def expire_partitions_cmd(table: str, branch: str, expiration_time: str | None, strategy: str | None,
                          timestamp_formatter: str | None, timestamp_pattern: str | None, max_expires: int | None,
                          zone_known: bool, now: str | None, dry_run: bool, warehouse: str | None,
                          options: tuple[str, ...], output: str) -> None:
    """Drop expired partitions with an OVERWRITE commit (files go with snapshot expiration)."""
    if click.get_current_context().meta.get(common.KEEP_META, (False, None))[1] is not None:
        raise errors.InvalidInputError(
            "expire-partitions deletes no file: the dropped partitions' files stay until expire removes them",
            fix="leave out --keep-deleted here and give it to the expire that follows")
    from tablekeeper.core.reclaim import partitions
    from tablekeeper.core.safety import concurrency

    t = common.open_table(table, warehouse, options, branch, guard=False)
    with t.file_io.one_view():  # one decision: its schema, hints and snapshot read once (FileIO.one_view)
        concurrency.check_latest(t)  # the guard, in the decision's view: nothing has changed yet
        config = partitions.config_from_options(
            t.options(), expiration_time=common.duration(expiration_time, "--expiration-time"), strategy=strategy,
            timestamp_formatter=timestamp_formatter, timestamp_pattern=timestamp_pattern, max_expires=max_expires,
            zone_known=zone_known or None)
        if config is None:
            raise errors.InvalidInputError("partition expiration is off for this table",
                                           fix="pass --expiration-time or set partition.expiration-time")
        plan = partitions.plan_partition_expiry(t, config, datetime.fromtimestamp(common.now_ms(now) / 1000))
    summary = plan.summary()
    dropped = None if dry_run else catalog_tables.apply_partition_expiry(t, plan, common.parse_options(options))
    payload = results.document(
        "expire-partitions", t.identifier, branch, dry_run=dry_run, action=None, notes=summary["notes"],
        result=None if dry_run else printer.nothing_deleted([]), dropped=dropped,
        fields={k: v for k, v in summary.items() if k not in ("operation", "table", "branch", "notes", "files")},
        partition_files=summary["files"])

    def text() -> None:
        verb = "would drop" if dry_run else "dropped"
        click.echo(f"expire-partitions on {t.identifier}: {verb} {len(plan.expired)} partition(s)")
        for p in plan.expired:
            click.echo(f"  - {p.name} ({p.file_count} files)")
        for name in plan.unparseable:
            click.echo(f"  kept (value does not parse): {name}")
        for note in plan.notes:
            click.echo(f"  note: {note}")

    printer.emit(output, payload, text)


@click.command("clean-orphans")
@click.argument("table")
@click.option("--older-than", help="Delete only files older than this: an age ('2 d') or a time (ISO/epoch ms). "
                                   "Default: 1 day.")
@click.option("--force", is_flag=True, help="Allow thresholds less than 1 hour ago (no writer may be running).")
@click.option("--parallelism", type=int, help="Delete threads (default: 2 x CPUs, max 8).")
@click.option("--plan-processes", type=click.IntRange(min=1),
              help="Processes that scan manifests while planning, on local warehouses (default: one per CPU, "
                   "at most 4; 1 scans in this process only).")
@click.option("--listing", "listing_path", metavar="PATH",
              help="Take the candidates from a storage inventory instead of listing the store: an S3 Inventory "
                   "manifest.json (CSV, ORC or Parquet) or a CSV/Parquet file list (key,size,last_modified); "
                   "local or on the store. It must predate the threshold (docs/inventory.md).")
@click.option("--now", hidden=True)
@click.option("--dry-run", is_flag=True, help="List the orphans, delete nothing.")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              callback=common.engine_available, help=common.ENGINE_HELP)
@common.common_options
@common.maintains("clean-orphans", destructive=True)
def clean_orphans_cmd(table: str, older_than: str | None, force: bool, parallelism: int | None,
                      plan_processes: int | None, listing_path: str | None, now: str | None, dry_run: bool,
                      engine: str, warehouse: str | None, options: tuple[str, ...], output: str) -> None:
    """Delete files no snapshot, tag, branch or changelog references (never directories or
    metadata JSON)."""
    from tablekeeper.core import values
    from tablekeeper.core.reclaim import orphans
    from tablekeeper.core.safety import concurrency

    t = common.open_table(table, warehouse, options)
    now_ms = common.now_ms(now)
    at, age = values.parse_time_or_age(older_than, flag="--older-than") if older_than is not None else (None, None)
    threshold = orphans.resolve_older_than(now_ms, older_than_ms=at, older_than_age=age, force=force)
    warning = concurrency.forced_threshold_warning(t, threshold, now_ms)
    if warning is not None:
        click.echo(f"warning: {warning}", err=True)
    if engine == "spark":
        on_spark.run("clean-orphans", t, options, dry_run, output, older_than=older_than, force=force,
                      parallelism=parallelism, now_ms=common.now_ms(now) if now else None, listing=listing_path)
        return
    listing = None
    if listing_path is not None:
        from tablekeeper.core.reclaim import orphans

        listing = orphans.load_for_table(listing_path, t.file_io, t.root, orphans.listing_roots(t),
                                           common.parse_options(options))
    config = orphans.OrphanConfig(threshold, processes=plan_processes, listing=listing)
    printer.run_plan(orphans.plan_orphan_clean(t, config), t, dry_run, output, parallelism)
