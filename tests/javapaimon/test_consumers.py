"""``tablekeeper consumer`` on a consumer Java Paimon wrote (``reset_consumer``): listed as Java's
``$consumers`` shows it, expired by its modification time, then Java's own expiration is no
longer held back by it, and every view Java reads is unchanged."""

from __future__ import annotations

import os
import time

import pytest

from tests.javapaimon import judge
from tests.javapaimon import warehouse as W
from tests.support import javapaimon as J

pytestmark = [pytest.mark.javapaimon, pytest.mark.timeout(1200)]


def test_java_consumer_listed_expired_and_no_longer_holds(java: J.JavaPaimon, wh: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    [row] = judge.json_cli(capsys, "consumer", "list", "-w", wh, W.EVENTS)
    views = judge.readable(java.views(wh, W.EVENTS))
    assert [[row["consumer_id"], str(row["next_snapshot_id"])]] == J.system_rows(views, "consumers")
    path = J.table_root(wh, W.EVENTS) / "consumer" / f"consumer-{row['consumer_id']}"
    then = time.time() - 2 * 86_400
    os.utime(path, (then, then))
    before, after = judge.judged(java, wh, W.EVENTS, lambda: judge.json_cli(
        capsys, "consumer", "expire", "-w", wh, W.EVENTS, "--older-than", "1 d"))
    assert not path.exists() and J.system_rows(after, "consumers") == []
    judge.unchanged_except(before, after)
    judge.java_still_works(java, wh, W.EVENTS, after)
