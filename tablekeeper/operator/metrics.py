"""Prometheus metrics (operator-design.md §7.10), prefix ``tablekeeper_``.

Counters and histograms are updated by the controllers as they work; the object gauges
(``resources``, ``paused_resources``, ``condition``, ``tag_crs``) are computed at scrape time from
the operator's indexes (:func:`watch_view`), so a deleted object disappears from them. The
metrics server itself is started by the startup handler (``--metrics-port``), never in tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from tablekeeper.operator.cluster.view import INDEX_IDS

__all__ = [
    "RECONCILIATIONS",
    "RECONCILE_DURATION",
    "MAINTENANCE_RUNS",
    "MAINTENANCE_DURATION",
    "MAINTENANCE_LAST_SUCCESS",
    "TABLE_SNAPSHOTS",
    "TRASH_BYTES",
    "TRASH_PURGED_BYTES",
    "TRASH_RUNS",
    "TABLE_TAGS",
    "TABLE_BRANCHES",
    "SNAPSHOTS_EXPIRED",
    "FILES_DELETED",
    "BYTES_RECLAIMED",
    "ORPHAN_FILES_FOUND",
    "STORAGE_REQUESTS",
    "observe_reconcile",
    "watch_view",
]

RECONCILIATIONS = Counter("tablekeeper_reconciliations", "Reconciles by kind and result "
                          "(success, error, unchanged, deleted).", ["kind", "result"])
RECONCILE_DURATION = Histogram("tablekeeper_reconcile_duration_seconds", "Duration of one reconcile.", ["kind"],
                               buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300))
MAINTENANCE_RUNS = Counter("tablekeeper_maintenance_runs", "Finished maintenance runs.", ["type", "engine", "result"])
MAINTENANCE_DURATION = Histogram("tablekeeper_maintenance_run_duration_seconds", "Duration of maintenance runs.",
                                 ["type", "engine"], buckets=(0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 7200))
MAINTENANCE_LAST_SUCCESS = Gauge("tablekeeper_maintenance_last_success_timestamp_seconds",
                                 "When a maintenance type last succeeded for a table.", ["table", "type"])
TABLE_SNAPSHOTS = Gauge("tablekeeper_table_snapshots", "Snapshots of the main branch.", ["table"])
TABLE_TAGS = Gauge("tablekeeper_table_tags", "Tags of the main branch.", ["table"])
TABLE_BRANCHES = Gauge("tablekeeper_table_branches", "Branches of the table.", ["table"])
TRASH_BYTES = Gauge("tablekeeper_trash_bytes", "Bytes in the table's trash that can still be undone "
                    "(tables with a trash.keep window).", ["table"])
TRASH_RUNS = Gauge("tablekeeper_trash_runs", "Trash runs of the table that can still be undone.", ["table"])
TRASH_PURGED_BYTES = Counter("tablekeeper_trash_purged_bytes", "Bytes purged from tables' trash after their window.",
                             ["table"])
SNAPSHOTS_EXPIRED = Counter("tablekeeper_snapshots_expired", "Snapshots expired by maintenance runs.", ["table"])
FILES_DELETED = Counter("tablekeeper_files_deleted", "Files deleted by maintenance runs.", ["table", "type"])
BYTES_RECLAIMED = Counter("tablekeeper_bytes_reclaimed", "Bytes deleted by maintenance runs.", ["table"])
STORAGE_REQUESTS = Counter("tablekeeper_storage_requests", "Storage requests of maintenance runs by kind "
                           "(list page, get, head, put, bulk_delete, delete, copy, other).", ["op", "type"])
ORPHAN_FILES_FOUND = Counter("tablekeeper_orphan_files_found", "Orphan files found (dry run or not).", ["table"])


def observe_reconcile(kind: str, result: str, seconds: float) -> None:
    """Count one reconcile of ``kind`` and record its duration."""
    RECONCILIATIONS.labels(kind=kind, result=result).inc()
    if seconds > 0:
        RECONCILE_DURATION.labels(kind=kind).observe(seconds)


_view_provider: Callable[[], Any] | None = None


def watch_view(provider: Callable[[], Any] | None) -> None:
    """Compute the object gauges from ``provider()`` (a :class:`tablekeeper.operator.cluster.view.View`,
    or None before the operator has seen anything)."""
    global _view_provider
    _view_provider = provider


class _ObjectCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        resources = GaugeMetricFamily("tablekeeper_resources", "tablekeeper objects by kind and namespace.",
                                      labels=["kind", "namespace"])
        paused = GaugeMetricFamily("tablekeeper_paused_resources", "Objects with tablekeeper.io/paused.",
                                   labels=["kind"])
        condition = GaugeMetricFamily("tablekeeper_condition", "Objects by condition type, status and reason.",
                                      labels=["kind", "type", "status", "reason"])
        tag_crs = GaugeMetricFamily("tablekeeper_tag_crs", "PaimonTags by namespace and state.",
                                    labels=["namespace", "state"])
        view = _view_provider() if _view_provider is not None else None
        if view is not None:
            counts: dict[tuple[str, ...], int] = {}
            paused_counts: dict[str, int] = {}
            cond_counts: dict[tuple[str, ...], int] = {}
            tags: dict[tuple[str, ...], int] = {}
            for kind in INDEX_IDS:
                for obj in view.all(kind):
                    key = (kind, obj.namespace or "")
                    counts[key] = counts.get(key, 0) + 1
                    if obj.paused:
                        paused_counts[kind] = paused_counts.get(kind, 0) + 1
                    for cond in obj.status.get("conditions") or ():
                        ckey = (kind, str(cond.get("type")), str(cond.get("status")), str(cond.get("reason")))
                        cond_counts[ckey] = cond_counts.get(ckey, 0) + 1
                    if kind == "PaimonTag":
                        tkey = (obj.namespace or "", str(obj.status.get("state") or "Pending"))
                        tags[tkey] = tags.get(tkey, 0) + 1
            for labels, value in sorted(counts.items()):
                resources.add_metric(list(labels), value)
            for kind, value in sorted(paused_counts.items()):
                paused.add_metric([kind], value)
            for labels, value in sorted(cond_counts.items()):
                condition.add_metric(list(labels), value)
            for labels, value in sorted(tags.items()):
                tag_crs.add_metric(list(labels), value)
        yield resources
        yield paused
        yield condition
        yield tag_crs


REGISTRY.register(_ObjectCollector())
