"""Planning maintenance due by schedule: partition, consumer, snapshot and changelog expiration,
orphan cleanup. Which kinds the policy enables is :mod:`tablekeeper.reconcile.planners.enabled_jobs`; the sizes
come from the core planners (which read metadata, never write); each expiration action carries
the resolved retention it was planned with.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import replace
from datetime import datetime
from typing import Any

from tablekeeper.core import plans, values
from tablekeeper.core.paimon import Table
from tablekeeper.core.policy.effective import EffectivePolicy
from tablekeeper.core.reclaim import expire, orphans, partitions
from tablekeeper.core.refs import consumers
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.planners import context as plan_context
from tablekeeper.reconcile.planners import enabled_jobs
from tablekeeper.reconcile.planners.schedules import is_due
from tablekeeper.reconcile.state.desired import TableTarget
from tablekeeper.reconcile.state.observe import TableState

__all__ = ["writers_enforce", "engine_for", "plan_maintenance"]


def writers_enforce(target: TableTarget, state: TableState, policy: EffectivePolicy, now: datetime) -> str | None:
    """With ``enforcement: Both``, why the writers enforce the written options themselves (they
    expire on commit), or None where they cannot and tablekeeper runs expiration: the table is
    ``write-only``, has no snapshot, or is idle — its latest commit is older than
    ``snapshots.maxAge``, so no writer has had the chance to expire what became due
    (operator-design.md §4.2). Orphan cleanup and tag expiry are never the writers' job."""
    if target.spec.enforcement != "Both":
        return None
    if state.options.get("write-only", "false").lower() == "true":
        return None
    latest = state.latest()
    if latest is None:
        return None
    max_age = policy.values["snapshots.maxAge"]
    age_ms = values.epoch_ms(now) - latest.time_millis
    if age_ms > max_age.to_timedelta().total_seconds() * 1000:
        return None
    return f"the latest commit is {age_ms // 60_000} min old, within snapshots.maxAge {max_age}"


def engine_for(target: TableTarget, estimate: A.Estimate, config: plan_context.ReconcileConfig) -> A.Engine:
    wanted = target.spec.maintenance.engine if target.spec.maintenance is not None else "Auto"
    if wanted == "Python":
        return "in-process"
    if wanted in ("SparkOperator", "SparkJob"):
        return "spark"
    return "spark" if estimate.files >= config.spark_threshold_files else "in-process"


def plan_maintenance(ctx: plan_context.PlanContext, table: Table, config: plan_context.ReconcileConfig,
                 kinds: Collection[str] | None = None) -> list[A.Action]:
    target, policy, v = ctx.target, ctx.policy, ctx.policy.values
    base = ctx.base()

    def wanted(kind: str) -> bool:
        return kinds is None or kind in kinds

    def on(kind: str) -> bool:
        return enabled_jobs.enabled(kind, target.spec.enforcement, policy)
    if target.spec.enforcement == "TableOptions":
        managed = [s for s in ("partitions", "consumers", "snapshots", "changelog", "orphanFiles")
                   if enabled_jobs.managed(policy, s)]
        if not managed:
            return []
        return [A.Skipped(**base, what="maintenance",
                          reason=f"enforcement TableOptions: {', '.join(managed)} left to the writers (the policy "
                                 "is written as table options)")]
    deferred = None if config.ignore_schedules else writers_enforce(target, ctx.state, policy, ctx.now)
    if deferred is not None:  # enforcement Both, on a table whose writers expire it
        kinds = [k for k in (kinds or A.MAINTENANCE_KINDS) if k == "CleanOrphans"]
        managed = [s for s in ("partitions", "consumers", "snapshots", "changelog") if enabled_jobs.managed(policy, s)]
        if managed:
            out_skip: list[A.Action] = [A.Skipped(**base, what="maintenance", reason=(
                f"enforcement Both: {', '.join(managed)} left to the writers ({deferred}); "
                "tablekeeper runs them when the table is write-only or idle"))]
        else:
            out_skip = []
        if not kinds:
            return out_skip
    else:
        out_skip = []
    schedule = target.spec.maintenance.schedule if target.spec.maintenance is not None else None
    window = target.spec.maintenance.window if target.spec.maintenance is not None else None
    now_ms = values.epoch_ms(ctx.now)
    out: list[A.Action] = []
    skipped: list[A.Action] = []

    def due(kind: str, sched: Any) -> bool:
        if config.ignore_schedules:
            return True
        verdict = is_due(sched, ctx.records.last_runs.get(kind), ctx.now, window=window)
        if not verdict.due:
            skipped.append(A.Skipped(**base, what=kind, reason=verdict.reason))
        return verdict.due

    def sized(p: plans.Plan) -> A.Estimate:
        return plan_context.estimate_plan(p, table.file_io) if config.estimate else A.Estimate(files=len(p.files))

    def nothing(kind: str, notes: tuple[str, ...]) -> None:
        """A kind asked for by name (``kinds``: a maintenance run) whose plan does nothing says why,
        in the core plan's words; a plan of every kind lists only what it does or holds back."""
        if kinds is not None:
            skipped.extend(A.Skipped(**base, what=kind, reason=note) for note in notes)

    # partitions
    if wanted("ExpirePartitions") and on("ExpirePartitions") and due("ExpirePartitions", schedule):
        pconf = partitions.PartitionConfig(
            expiration_time=v["partitions.expiration"].to_timedelta(), strategy=v["partitions.strategy"],
            timestamp_formatter=v["partitions.timestampFormatter"], timestamp_pattern=v["partitions.timestampPattern"],
            max_expires=v["partitions.maxPerRun"], zone_known=ctx.zone is not None)
        pplan = partitions.plan_partition_expiry(table, pconf, plan_context.wall_clock(ctx.now, ctx.zone))
        if pplan.expired:
            files = sum(p.file_count for p in pplan.expired)
            est = A.Estimate(files=files, bytes=0, note="files leave the latest snapshot now and are deleted by "
                                                        "snapshot expiration once nothing retained reads them")
            out.append(A.ExpirePartitions(
                **base, expiration=str(v["partitions.expiration"]), strategy=pconf.strategy,
                timestamp_formatter=pconf.timestamp_formatter, timestamp_pattern=pconf.timestamp_pattern,
                max_per_run=pconf.max_expires, zone_known=pconf.zone_known,
                partitions=tuple(p.name for p in pplan.expired), more=pplan.left_for_next_run, estimate=est,
                engine=engine_for(target, est, config), notes=pplan.notes,
                policy=ctx.policy_of("partitions.expiration", "partitions.strategy", "partitions.maxPerRun",
                                     "partitions.timestampFormatter", "partitions.timestampPattern"),
                reason=f"{len(pplan.expired)} partition(s) older than {v['partitions.expiration']}"
                       + ("" if ctx.zone is not None else " (writer zone unknown: 12 h margin)")))
        else:
            nothing("ExpirePartitions", pplan.notes)
    # consumers, before snapshots: snapshot expiration is planned on the table without the expiring
    # consumers, so that it reclaims what they held in the same run (Paimon's commit expires
    # consumers first for the same reason); the applier re-plans each step on the table as it is
    expiring: tuple[str, ...] = ()
    if wanted("ExpireConsumers") and on("ExpireConsumers") and due("ExpireConsumers", schedule):
        after = v["consumers.expiration"]
        rows = consumers.list_consumers(table, now_ms, after.to_timedelta())
        cplan = consumers.plan_expire(table, rows, after.to_timedelta())
        expiring = tuple(dict(cplan.details).get("consumers", ()))
        if expiring:
            out.append(A.ExpireConsumers(
                **base, expiration=str(after), consumers=expiring, estimate=sized(cplan),
                policy=ctx.policy_of("consumers.state", "consumers.expiration"),
                reason=f"{len(expiring)} consumer(s) not updated for more than consumers.expiration {after}"))
        else:
            nothing("ExpireConsumers", (f"no consumer of {len(rows)} was last updated more than "
                                        f"consumers.expiration {after} ago",))
    expiring_table = consumers.without_consumers(table, expiring) if expiring else table
    # snapshots
    snapshot_paths = ("snapshots.minRetained", "snapshots.maxRetained", "snapshots.maxAge", "snapshots.expireLimit",
                      "snapshots.cleanEmptyDirectories")
    if wanted("ExpireSnapshots") and on("ExpireSnapshots") and due("ExpireSnapshots", schedule):
        retention = expire.from_policy(v)
        econf = expire.expire_config(retention, ctx.state.options)
        eplan = expire.plan_expire(expiring_table, econf, now_ms)
        if not eplan.is_empty:
            total = expire.compute_range(expiring_table, replace(econf, expire_limit=plan_context.INT_MAX), now_ms)
            count = total.count
            batches = max(1, math.ceil(count / econf.expire_limit)) if count else 1
            est = sized(eplan)
            if batches > 1:
                est = est.model_copy(update={"partial": True,
                                             "note": f"first of {batches} batches of {econf.expire_limit}"})
            out.append(A.ExpireSnapshots(
                **base, retention=retention,
                first_snapshot=total.earliest if count else None,
                last_snapshot=(total.end_exclusive - 1) if count and total.end_exclusive else None,
                snapshots=count, batches=batches, estimate=est, engine=engine_for(target, est, config),
                policy=ctx.policy_of(*snapshot_paths), notes=eplan.notes,
                reason=(f"{count} snapshot(s) past retention (stop: {total.reason})" if count
                        else "only the missing EARLIEST hint is written")))
        else:
            nothing("ExpireSnapshots", eplan.notes)
    # changelog
    if wanted("ExpireChangelog") and on("ExpireChangelog") and table.changelog_ids() \
            and due("ExpireChangelog", schedule):
        retention = expire.from_policy(v)
        lplan = expire.plan_expire_changelog(expiring_table, expire.changelog_config(retention, ctx.state.options),
                                             now_ms)
        if not lplan.is_empty:
            est = sized(lplan)
            out.append(A.ExpireChangelog(
                **base, retention=retention,
                changelogs=int(dict(lplan.details).get("expired_changelogs", 0)),
                estimate=est, engine=engine_for(target, est, config), notes=lplan.notes,
                policy=ctx.policy_of("changelog.minRetained", "changelog.maxRetained", "changelog.maxAge",
                                     "snapshots.expireLimit"),
                reason="long-lived changelogs past retention"))
        else:
            nothing("ExpireChangelog", lplan.notes)
    # orphans
    if wanted("CleanOrphans") and on("CleanOrphans") and due("CleanOrphans", v["orphanFiles.schedule"] or schedule):
        older = v["orphanFiles.olderThan"]
        threshold = orphans.resolve_older_than(now_ms, older_than_age=older.to_timedelta())
        listing_path = v["orphanFiles.listing"]
        listing = None if listing_path is None else orphans.load_for_table(
            str(listing_path), table.file_io, table.root, orphans.listing_roots(table))
        oplan = orphans.plan_orphan_clean(table, orphans.OrphanConfig(threshold, listing=listing))
        if oplan.files:
            est = A.Estimate(files=len(oplan.files), bytes=sum(f.size or 0 for f in oplan.files),
                             by_kind={k: sum(1 for f in oplan.files if f.kind.value == k)
                                      for k in {f.kind.value for f in oplan.files}})
            dry = bool(v["orphanFiles.dryRun"])
            out.append(A.CleanOrphans(
                **base, older_than=str(older), older_than_ms=threshold, dry_run=dry, estimate=est,
                listing=None if listing_path is None else str(listing_path), notes=oplan.notes,
                # an inventory replaces the listing Spark would spread: it runs in process
                engine="in-process" if listing_path is not None else engine_for(target, est, config),
                policy=ctx.policy_of("orphanFiles.state", "orphanFiles.olderThan", "orphanFiles.dryRun",
                                     "orphanFiles.schedule", "orphanFiles.listing"),
                reason=(f"{len(oplan.files)} file(s) older than {older} referenced by nothing"
                        + (" (dryRun: reported only; set orphanFiles.dryRun: false to delete)" if dry else ""))))
        else:
            nothing("CleanOrphans", oplan.notes)
    return out_skip + out + skipped
