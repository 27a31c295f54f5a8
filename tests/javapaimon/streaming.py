"""Tables as streaming jobs leave them, written by Java Paimon only (``PaimonDriver``'s ``stream``
op: a ``StreamTableWrite`` / ``StreamTableCommit`` per job run, compaction as Flink's sinks do it,
Java's own commit-time maintenance). Built once per Paimon version and session; every test works
on its own copy.

- ``live.orders``: primary key (dt, id), partitioned by dt, 2 buckets, deletion vectors,
  ``changelog-producer = lookup`` (every commit compacts and writes its changelog in the COMPACT
  snapshot), ``full-compaction.delta-commits = 4``, small ``snapshot.num-retained.*`` and a
  decoupled changelog (``changelog.num-retained.*`` above them), so Java's commit-time expiry
  moves snapshots to ``changelog-N`` and later expires those; ``tag.automatic-creation =
  watermark`` (hourly, at most 3 kept: Java deletes the older ones itself); tag ``release-1``
  by ``createTag(name)`` on the latest snapshot (a COMPACT snapshot carrying a changelog list),
  branch ``hotfix`` from it with its own streaming commits, and tag ``release-2`` later. Java's
  expiry of the tagged snapshots' changelogs leaves both tags, and the branch's copies,
  naming a changelog manifest list that no longer exists (by design: tags never keep changelog).
- ``live.metrics``: primary key, one bucket, ``changelog-producer = full-compaction`` with
  ``full-compaction.delta-commits = 2``, changelog not decoupled (snapshot expiry deletes the
  changelog with the snapshot), ``tag.automatic-creation = process-time`` (daily), tags ``v0``
  and ``v1`` by ``createTag(name)`` on COMPACT snapshots (main's own expiry deletes v0's
  changelog list), branch ``exp`` from v1 with its own commits and compactions (its own expiry
  deletes the changelog list main's snapshot 6 and tag v1 share), and a consumer ``reader-1``
  that holds main's expiration back.

Partition values of ``live.orders`` are days: one 60 days old (a 30 d partition expiration drops
it), the rest yesterday and today (``yyyy-MM-dd``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.javapaimon.warehouse import OLD, TODAY, YESTERDAY, Built
from tests.support import javapaimon as J

__all__ = ["ORDERS", "METRICS", "TABLES", "OLD", "YESTERDAY", "TODAY", "Built", "build"]

ORDERS = "live.orders"
METRICS = "live.metrics"
TABLES = (ORDERS, METRICS)
#: the first watermark: two days ago, on the hour (one automatic tag per hour the watermark passes)
_WATERMARK_0 = int((datetime.now(UTC) - timedelta(days=2)).replace(minute=0, second=0, microsecond=0)
                   .timestamp() * 1000)


def build(java: J.JavaPaimon, wh: str) -> Built:
    _orders(java, wh)
    _metrics(java, wh)
    return Built(wh, java.version)


def _commits(rows: list[list[Any]], *, watermark_hours: int | None = None) -> list[dict[str, Any]]:
    """One commit per row group; with ``watermark_hours``: commit i carries the watermark of hour
    ``watermark_hours + i`` after the first."""
    out: list[dict[str, Any]] = []
    for i, group in enumerate(rows):
        commit: dict[str, Any] = {"rows": group}
        if watermark_hours is not None:
            commit["watermark"] = _WATERMARK_0 + (watermark_hours + i) * 3_600_000 + 60_000
        out.append(commit)
    return out


def _orders(java: J.JavaPaimon, wh: str) -> None:
    java.call("create_table", warehouse=wh, table=ORDERS,
              fields=[["dt", "STRING"], ["id", "BIGINT"], ["amount", "DOUBLE"]],
              primary_keys=["dt", "id"], partition_keys=["dt"],
              options={"bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "lookup",
                       "full-compaction.delta-commits": "4",
                       "snapshot.num-retained.min": "2", "snapshot.num-retained.max": "4",
                       "snapshot.time-retained": "1 ms",
                       "changelog.num-retained.min": "2", "changelog.num-retained.max": "10",
                       "changelog.time-retained": "1 h",
                       "tag.automatic-creation": "watermark", "tag.creation-period": "hourly",
                       "tag.num-retained-max": "3"})
    first = [[[OLD, 1, 1.0], [OLD, 2, 2.0], [YESTERDAY, 3, 3.0]],
             [[YESTERDAY, 3, 30.0], [TODAY, 4, 4.0]],
             [{"kind": "-D", "values": [OLD, 2, 2.0]}, [TODAY, 5, 5.0]],
             [[TODAY, 4, 40.0], [YESTERDAY, 6, 6.0]],
             [[TODAY, 7, 7.0]],
             [[YESTERDAY, 3, 31.0], [TODAY, 8, 8.0]]]
    java.table_call("stream", wh, ORDERS, commits=_commits(first, watermark_hours=0))
    java.table_call("create_tag", wh, ORDERS, tag="release-1", snapshot=None)  # on the latest (COMPACT)
    java.table_call("create_branch", wh, ORDERS, branch="hotfix", tag="release-1")
    hotfix = [[[TODAY, 100, 1.0], [YESTERDAY, 3, 32.0]], [{"kind": "-D", "values": [TODAY, 4, 40.0]}]]
    java.table_call("stream", wh, ORDERS, on_branch="hotfix", commits=_commits(hotfix))
    second = [[[TODAY, 9, 9.0], [YESTERDAY, 3, 33.0]], [[TODAY, 10, 10.0]], [[TODAY, 9, 90.0]],
              [{"kind": "-D", "values": [TODAY, 5, 5.0]}, [TODAY, 11, 11.0]]]
    java.table_call("stream", wh, ORDERS, commits=_commits(second, watermark_hours=6))
    java.table_call("create_tag", wh, ORDERS, tag="release-2", snapshot=None)
    third = [[[TODAY, 12, 12.0]], [[YESTERDAY, 6, 60.0]], [[TODAY, 13, 13.0], [TODAY, 12, 120.0]],
             [[TODAY, 14, 14.0]], [[YESTERDAY, 15, 15.0]], [[TODAY, 16, 16.0]]]
    java.table_call("stream", wh, ORDERS, commits=_commits(third, watermark_hours=10))


def _metrics(java: J.JavaPaimon, wh: str) -> None:
    java.call("create_table", warehouse=wh, table=METRICS, fields=[["id", "BIGINT"], ["v", "STRING"]],
              primary_keys=["id"],
              options={"bucket": "1", "changelog-producer": "full-compaction", "full-compaction.delta-commits": "2",
                       "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3",
                       "snapshot.time-retained": "1 ms",
                       "tag.automatic-creation": "process-time", "tag.creation-period": "daily"})
    java.table_call("stream", wh, METRICS, commits=_commits([[[1, "a"], [2, "b"]], [[2, "b2"], [3, "c"]]]))
    java.table_call("create_tag", wh, METRICS, tag="v0", snapshot=None)  # snapshot 3: the full compaction's
    # main's own commit-time expiry expires snapshot 3, deleting the changelog list tag v0 names
    java.table_call("stream", wh, METRICS, commits=_commits([[[4, "d"]], [[1, "a2"]]]))
    java.table_call("create_tag", wh, METRICS, tag="v1", snapshot=None)  # on the latest (COMPACT)
    fork = java.table_call("latest_snapshot", wh, METRICS)
    # a streaming reader of main at the tagged snapshot: main keeps it and everything after
    java.table_call("reset_consumer", wh, METRICS, consumer="reader-1", next_snapshot=fork)
    java.table_call("create_branch", wh, METRICS, branch="exp", tag="v1")
    # the branch's own commit-time expiry expires its copy of the fork snapshot and deletes the
    # changelog list that main's (retained) snapshot and tag v1 name too
    exp = [[[50, "x"]], [[51, "y"], [1, "exp"]], [[50, "x2"]], [[52, "z"]]]
    java.table_call("stream", wh, METRICS, on_branch="exp", commits=_commits(exp))
    second = [[[5, "e"]], [[3, "c2"]], [[6, "f"], [2, "b3"]], [[7, "g"]], [[5, "e2"]], [[8, "h"]]]
    java.table_call("stream", wh, METRICS, commits=_commits(second))
