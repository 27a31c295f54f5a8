"""Controllers of the connection and policy kinds: ``PaimonCatalog`` / ``ClusterPaimonCatalog``
(operator-design.md §4.1) and ``PaimonRetentionPolicy`` / ``ClusterPaimonRetentionPolicy`` (§4.5).

A catalog is probed: its credentials Secret is read (``AuthFailed`` when it cannot be) and the
warehouse root is listed (``CatalogUnreachable`` when that fails); ``Ready`` reason
``Connected`` otherwise. A policy is validated and reports how many tables it applies to
(``matchedTables``) and, for cluster policies, how many break one of its constraints
(``violations``), read from the tables' statuses (``appliedPolicies``, ``policyViolations``).
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from tablekeeper.core import errors as core_errors
from tablekeeper.core import policy
from tablekeeper.core.policy.specs import PaimonCatalogSpec
from tablekeeper.core.storage import FileIO
from tablekeeper.operator import metrics
from tablekeeper.operator.cluster.view import CatalogInfo, Obj, View, parse
from tablekeeper.operator.runtime import Runtime
from tablekeeper.operator.status import conditions
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import OperatorError, classify
from tablekeeper.operator.status.outcome import Outcome

__all__ = ["policy_sources", "reconcile_catalog", "reconcile_policy", "probe"]


def _outcome(obj: Obj, ok: bool, reason: str, message: str, now: datetime) -> Outcome:
    out = Outcome(generation=obj.generation)
    out.conditions = [
        conditions.condition(conditions.READY, ok, reason, message, generation=obj.generation, now=now),
        conditions.condition(conditions.SYNCED, ok, Reason.RECONCILE_SUCCESS if ok else Reason.RECONCILE_ERROR,
                             "" if ok else message, generation=obj.generation, now=now),
    ]
    return out


def probe(warehouse: str, options: dict[str, str]) -> None:
    """List the warehouse root. Blocking.

    Raises:
        OperatorError: ``CatalogUnreachable``.
    """
    try:
        io = FileIO.for_uri(warehouse, options)
        if not io.is_dir(warehouse):
            raise OperatorError(Reason.CATALOG_UNREACHABLE, f"warehouse {warehouse} does not exist or is not a "
                                                            "directory", temporary=True)
        io.list_dir(warehouse)
    except OperatorError:
        raise
    except Exception as e:
        raise OperatorError(Reason.CATALOG_UNREACHABLE, f"warehouse {warehouse}: {type(e).__name__}: {e}",
                            temporary=True) from e


async def reconcile_catalog(rt: Runtime, obj: Obj, *, retry: int | None = None) -> Outcome:
    """Validate and probe a catalog."""
    now = rt.config.now()
    started = asyncio.get_running_loop().time()
    try:
        spec = parse(obj)
        assert isinstance(spec, PaimonCatalogSpec)
        info = CatalogInfo(obj, spec)
        options = await rt.catalog_options(info)
        await asyncio.to_thread(probe, spec.warehouse, options)
    except (OperatorError, core_errors.TablekeeperError, OSError) as e:
        failure = classify(e)
        out = _outcome(obj, False, failure.reason, failure.message, now)
        if rt.first_time(obj.uid, failure.reason, failure.message):
            out.event("Warning", failure.reason, failure.message)
        if failure.temporary and retry is not None:
            out.failure = failure
            out.delay = rt.config.retry_delay(retry + 1)
        metrics.observe_reconcile(obj.kind, "error", asyncio.get_running_loop().time() - started)
        return out
    metrics.observe_reconcile(obj.kind, "success", asyncio.get_running_loop().time() - started)
    return _outcome(obj, True, Reason.CONNECTED, f"warehouse {spec.normalized_warehouse}", now)


def policy_sources(obj: Obj) -> set[str]:
    """The names a table's ``appliedPolicies`` / ``policyViolations`` give this policy."""
    if obj.kind == "ClusterPaimonRetentionPolicy":
        return {policy.cluster_source(obj.name)}
    return {policy.namespaced_source(obj.namespace or "", obj.name), policy.policy_ref_source(obj.name)}


async def reconcile_policy(rt: Runtime, view: View, obj: Obj) -> Outcome:
    """Validate a retention policy and count the tables it applies to."""
    now = rt.config.now()
    try:
        parse(obj)
    except core_errors.InvalidInputError as e:
        out = _outcome(obj, False, Reason.INVALID_SPEC, e.message, now)
        if rt.first_time(obj.uid, Reason.INVALID_SPEC, e.message):
            out.event("Warning", "ValidationError", e.message)
        return out
    labels = policy_sources(obj)
    matched = violations = 0
    for table in view.all("PaimonTable"):
        if obj.kind == "PaimonRetentionPolicy" and table.namespace != obj.namespace:
            continue
        applied = set(table.status.get("appliedPolicies") or ())
        if applied & labels:
            matched += 1
        if set(table.status.get("policyViolations") or ()) & labels:
            violations += 1
    out = _outcome(obj, True, Reason.RECONCILED, f"applies to {matched} table(s)", now)
    out.fields["matchedTables"] = matched
    if obj.kind == "ClusterPaimonRetentionPolicy":
        out.fields["violations"] = violations
    return out
