"""Planning automatic tags with Paimon's rules (period, name format, creation delay), where
tablekeeper creates them instead of the writers, and the auto tags ``num-retained-max`` expires. Pure.
"""

from __future__ import annotations

from datetime import timedelta, tzinfo

from tablekeeper.core import errors, paimon, refs
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.planners import context as plan_context

__all__ = ["auto_handler", "auto_rules", "plan_auto_tags"]


def auto_handler(ctx: plan_context.PlanContext) -> refs.TagPeriodHandler | None:
    v = ctx.policy.values
    try:
        return refs.TagPeriodHandler.create(v["tags.autoCreate.period"], plan_context.td(v["tags.autoCreate.periodDuration"]),
                                                v["tags.autoCreate.nameFormat"])
    except errors.InvalidInputError:
        return None


def auto_rules(ctx: plan_context.PlanContext) -> tuple[refs.AutoTagRules | None, str | None]:
    """(rules, None) or (None, why tablekeeper does not create auto tags for this table)."""
    v, s = ctx.policy.values, ctx.policy.sources
    mode = v["tags.autoCreate.mode"]
    if v["tags.state"] == "Disabled" or mode in (None, "none"):
        return None, None
    if s["tags.autoCreate.mode"].startswith("table-option/"):
        return None, "writers create auto tags (table option tag.automatic-creation is set)"
    if ctx.target.spec.enforcement == "TableOptions":
        return None, "enforcement TableOptions: auto tags are left to writers (tag.automatic-creation is written " \
                     "as a table option)"
    handler = auto_handler(ctx)
    if handler is None:
        return None, "invalid auto-tag period"
    opts = ctx.state.options
    zone: tzinfo | None
    if mode == "watermark":
        zone = refs.parse_zone_id(opts.get("sink.watermark-time-zone") or "UTC")
    elif opts.get("sink.process-time-zone"):
        zone = refs.parse_zone_id(opts["sink.process-time-zone"])
    else:
        zone = ctx.zone
    return refs.AutoTagRules(
        mode=mode, handler=handler, zone=zone, delay=plan_context.td(v["tags.autoCreate.delay"]) or timedelta(0),
        num_retained_max=v["tags.autoCreate.maxRetained"], default_time_retained=plan_context.td(v["tags.defaultTimeRetained"]),
        automatic_completion=bool(v["tags.autoCreate.catchUp"])), None


_AUTO_PATHS = ("tags.autoCreate.mode", "tags.autoCreate.period", "tags.autoCreate.periodDuration",
               "tags.autoCreate.delay", "tags.autoCreate.nameFormat", "tags.autoCreate.maxRetained",
               "tags.autoCreate.catchUp", "tags.defaultTimeRetained")


def plan_auto_tags(ctx: plan_context.PlanContext) -> tuple[list[A.Action], list[refs.ExpiredTag], list[A.Action]]:
    rules, why_not = auto_rules(ctx)
    base = ctx.base()
    if rules is None:
        notes: list[A.Action] = [A.Skipped(**base, what="auto tags", reason=why_not)] if why_not else []
        return [], [], notes
    main = paimon.MAIN
    protected = set(ctx.state.protected_tags(main)) | {t.tag for t in ctx.target.tags if t.branch == main
                                                        and t.resource.labels.get(plan_context.POLICY_TRIGGER_LABEL) != "Policy"}
    points = [t.point for t in ctx.state.branch_tags(main).values()]
    policy = ctx.policy_of(*_AUTO_PATHS)
    if rules.mode == "batch":
        expired: list[refs.ExpiredTag] = []
        if rules.num_retained_max is not None:
            expired, _kept = refs.plan_batch_count_expiry(points, rules.num_retained_max, protected=protected)
        return [], expired, [A.Skipped(**base, what="auto tags", policy=policy,
                                       reason="batch mode: the batch writer creates batch-write-<date> tags")]
    result = refs.plan_auto_tags(ctx.state.branch_snapshots(main), points, rules, protected=protected)
    if result.refused:
        return [], [], [A.Skipped(**base, what="auto tags", policy=policy, reason=result.refused)]
    ttl = rules.default_time_retained
    creates: list[A.Action] = [
        A.CreateTag(**base, tag=c.name, snapshot_id=c.snapshot_id, auto=True, policy=policy,
                    time_retained=str(ctx.policy.values["tags.defaultTimeRetained"]) if ttl else None,
                    reason=f"auto tag {rules.handler.describe()}, {rules.mode} "
                           f"{c.snapshot_time:%Y-%m-%d %H:%M} of snapshot {c.snapshot_id}")
        for c in result.create]
    notes = [A.Skipped(**base, what="auto tags", reason=n, policy=policy) for n in result.notes]
    return creates, list(result.expire), notes
