"""Shared builders and oracles of the safety suite (issue #12)."""

from __future__ import annotations

from datetime import timedelta

from tablekeeper.core.plans import execution
from tablekeeper.core.reclaim.expire import planning
from tests.maintenance.helpers import append_table, handle, overwrite, rows, write

NOW = 4_102_444_800_000  # 2100-01-01: every snapshot is old enough to expire
EXPIRE_ALL_BUT_TWO = planning.ExpireConfig(retain_min=2, time_retained=timedelta(0), expire_limit=1000)


def build_expired_tag(wh: str) -> None:
    """main: 1 +a0  2 +b10  3 ow(a) -a0 +a20 [tag t3]  4 ow(a) +a30  5 ow(b) +b60  6 +a70  7 ow(a) +a80,
    then snapshots 1..5 expired: tag t3 alone keeps a20 and its manifests."""
    t = append_table(wh)
    write(t, rows("a", 0))
    write(t, rows("b", 10))
    overwrite(t, rows("a", 20), {"dt": "a"})
    t.create_tag("t3")
    overwrite(t, rows("a", 30), {"dt": "a"})
    overwrite(t, rows("b", 60), {"dt": "b"})
    write(t, rows("a", 70))
    overwrite(t, rows("a", 80), {"dt": "a"})
    table = handle(wh)
    result = execution.execute(planning.plan_expire(table, EXPIRE_ALL_BUT_TWO, NOW), table.file_io)
    assert not result.failed
