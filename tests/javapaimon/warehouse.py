"""The Java-written warehouse: what users' Flink and Spark writers leave behind (issue 13 point 2).

Three tables, written only by Java Paimon (through ``PaimonDriver``):

- ``sales.orders``: primary key (dt, id), partitioned by dt, fixed 2 buckets, deletion vectors,
  ``changelog-producer = lookup``, decoupled changelog (``changelog.num-retained.max`` above the
  snapshot limit, so Java's own commit-time expiration moves changelogs to ``changelog/``), tags
  by ``create_tag`` (one with ``time_retained``), branch ``dev`` from tag ``t1`` with own writes,
  an upsert and a delete.
- ``sales.events``: append-only, partitioned by dt, ``INSERT OVERWRITE`` of a partition, schema
  evolution (ADD COLUMN, then RENAME COLUMN), ``tag.automatic-creation = process-time`` (daily),
  a manual tag with a retention, branch ``exp`` from it with own writes, a consumer ``reader-1``.
- ``sales.dyn``: primary key, dynamic bucket (``bucket = -1``), ``changelog-producer = input``,
  decoupled changelog.

Partition ``dt`` values are days: one 60 days old (expired by a 30 d partition expiration), the
rest today and yesterday, formatted ``yyyy-MM-dd`` as examples/04 expects.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from tests.support import javapaimon as J

ORDERS = "sales.orders"
EVENTS = "sales.events"
DYN = "sales.dyn"
TABLES = (ORDERS, EVENTS, DYN)


def day(offset: int) -> str:
    return (datetime.now(UTC) + timedelta(days=offset)).strftime("%Y-%m-%d")


OLD, YESTERDAY, TODAY = day(-60), day(-1), day(0)


@dataclasses.dataclass(frozen=True)
class Built:
    root: str
    version: str


def build(java: J.JavaPaimon, wh: str) -> Built:
    _orders(java, wh)
    _events(java, wh)
    _dyn(java, wh)
    return Built(wh, java.version)


def _orders(java: J.JavaPaimon, wh: str) -> None:
    java.call("create_table", warehouse=wh, table=ORDERS,
              fields=[["dt", "STRING"], ["id", "BIGINT"], ["amount", "DOUBLE"]],
              primary_keys=["dt", "id"], partition_keys=["dt"],
              options={"bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "lookup",
                       "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "5",
                       "changelog.num-retained.max": "20", "snapshot.time-retained": "1 h"})
    java.write(wh, ORDERS, [[OLD, 1, 1.0], [OLD, 2, 2.0], [YESTERDAY, 3, 3.0]])             # 1
    java.write(wh, ORDERS, [[YESTERDAY, 3, 30.0], [TODAY, 4, 4.0]])                        # 2 upsert
    java.table_call("create_tag", wh, ORDERS, tag="t1", snapshot=None)
    java.write(wh, ORDERS, [{"kind": "-D", "values": [OLD, 2, 2.0]}, [TODAY, 5, 5.0]])     # delete
    java.table_call("create_branch", wh, ORDERS, branch="dev", tag="t1")
    java.write(wh, ORDERS, [[TODAY, 100, 1.0]], branch="dev")
    java.write(wh, ORDERS, [[TODAY, 101, 1.0], [YESTERDAY, 3, 31.0]], branch="dev")
    for i in range(6, 10):
        java.write(wh, ORDERS, [[TODAY, i, float(i)], [YESTERDAY, 3, float(i)]])
    java.table_call("create_tag", wh, ORDERS, tag="t2", snapshot=None, time_retained_ms=86_400_000)


def _events(java: J.JavaPaimon, wh: str) -> None:
    java.call("create_table", warehouse=wh, table=EVENTS,
              fields=[["dt", "STRING"], ["id", "BIGINT"], ["payload", "STRING"]],
              partition_keys=["dt"],
              options={"bucket": "-1", "tag.automatic-creation": "process-time", "tag.creation-period": "daily",
                       "tag.num-retained-max": "10"})
    java.write(wh, EVENTS, [[OLD, 1, "a"], [YESTERDAY, 2, "b"], [TODAY, 3, "c"]])         # 1
    java.write(wh, EVENTS, [[TODAY, 4, "d"]])                                            # 2
    java.table_call("create_tag", wh, EVENTS, tag="manual", snapshot=2, time_retained_ms=3 * 86_400_000)
    java.write(wh, EVENTS, [[TODAY, 5, "e2"], [TODAY, 6, "f2"]], overwrite={"dt": TODAY})  # 3 overwrite
    java.call("alter_table", warehouse=wh, table=EVENTS, changes=[["add_column", "note", "STRING"]])
    java.write(wh, EVENTS, [[YESTERDAY, 7, "g", "n1"]])                                  # 4
    java.call("alter_table", warehouse=wh, table=EVENTS, changes=[["rename_column", "payload", "body"]])
    java.write(wh, EVENTS, [[TODAY, 8, "h", "n2"]])                                      # 5
    java.table_call("create_branch", wh, EVENTS, branch="exp", tag="manual")
    java.write(wh, EVENTS, [[TODAY, 50, "x"]], branch="exp")
    java.table_call("reset_consumer", wh, EVENTS, consumer="reader-1", next_snapshot=3)


def _dyn(java: J.JavaPaimon, wh: str) -> None:
    java.call("create_table", warehouse=wh, table=DYN, fields=[["id", "BIGINT"], ["v", "STRING"]],
              primary_keys=["id"],
              options={"bucket": "-1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
                       "snapshot.num-retained.max": "3", "changelog.num-retained.max": "6"})
    for i in range(6):
        java.write(wh, DYN, [[i, f"v{i}"], [0, f"zero-{i}"]])
