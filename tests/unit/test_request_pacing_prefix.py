"""Pacing per prefix (issue 16, point 5): one token bucket per S3 prefix, the prefix of a request
as S3 partitions its rate (the key's parent "directory"), and the cap a Spark run hands each
concurrent task. Waits are counted on an injected clock, never measured."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tablekeeper.core.storage import FileIO
from tablekeeper.core.storage.layers import requests as rq
from tablekeeper.spark import request_tally
from tests.unit import test_storage_requests


class FakeClock(test_storage_requests.FakeClock):
    """The token-bucket tests' clock, with the botocore hook's async sleep (records, does not advance)."""

    async def async_sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.mark.parametrize(("url", "body", "prefix"), [
    ("http://127.0.0.1:5000/lake/wh/db.db/t/dt%3D1/bucket-0/data-1.parquet", None, "lake/wh/db.db/t/dt=1/bucket-0/"),
    ("https://lake.s3.eu-west-1.amazonaws.com/wh/db.db/t/manifest/manifest-1", None, "wh/db.db/t/manifest/"),
    ("http://127.0.0.1:5000/lake?list-type=2&prefix=wh%2Fdb.db%2Ft%2Fsnapshot%2F", None, "lake/wh/db.db/t/snapshot/"),
    ("http://127.0.0.1:5000/lake?delete", b"<Delete><Object><Key>wh/db.db/t/dt=2/bucket-0/a</Key></Object>"
                                          b"<Object><Key>wh/db.db/t/dt=2/bucket-0/b</Key></Object></Delete>",
     "lake/wh/db.db/t/dt=2/bucket-0/"),
    ("http://127.0.0.1:5000/lake", None, ""),
])
def test_prefix_of_a_request_is_its_keys_parent_directory(url: str, body: bytes | None, prefix: str) -> None:
    assert rq.prefix_of_request(url, body) == prefix


def test_pacer_keeps_one_bucket_per_prefix() -> None:
    clock = FakeClock()
    pacer = rq.Pacer(10, clock=clock)
    waits = {p: sum(1 for _ in range(15) if pacer.delay(p) > 0) for p in ("a/", "b/")}
    assert waits == {"a/": 5, "b/": 5} and pacer.waits == 10  # one shared bucket would wait 20 times


@pytest.mark.s3
def test_s3_requests_are_paced_per_prefix_on_moto(s3_warehouse: str, s3_options: dict[str, str]) -> None:
    io = FileIO.for_uri(s3_warehouse, {**s3_options, rq.PACING_OPTION: "5"})
    clock = FakeClock()
    assert io.requests.pacer is not None
    io.requests.pacer = rq.Pacer(5, clock=clock)
    io.requests.pacer.async_sleep = clock.async_sleep
    for d in ("p1", "p2"):
        for i in range(7):
            io.overwrite(f"{s3_warehouse}/{d}/f{i}", b"x")
    # 7 PUTs in each of two prefixes at 5/s (burst 5): two waits per prefix, queued 0.2 s apart.
    # (s3fs's PUT makes one request each; a shared bucket would have waited 9 times)
    assert io.requests.counts.snapshot()["put"] == 14
    assert [round(w, 6) for w in clock.waits] == [0.2, 0.4, 0.2, 0.4]


def test_spark_tasks_share_the_cap() -> None:
    spark = SimpleNamespace(sparkContext=SimpleNamespace(defaultParallelism=4))
    out = request_tally.executor_options({rq.PACING_OPTION: "100", "s3.endpoint": "x"}, spark, 200)
    assert out == {rq.PACING_OPTION: "25.0", "s3.endpoint": "x"}
    assert request_tally.executor_options({"s3.endpoint": "x"}, spark, 200) == {"s3.endpoint": "x"}
    # fewer partitions than slots: only that many tasks run at once
    assert request_tally.executor_options({rq.PACING_OPTION: "100"}, spark, 2) == {rq.PACING_OPTION: "50.0"}


def test_when_the_slots_are_unknown_the_cap_is_divided_by_the_partitions() -> None:
    """A Spark Connect session has no SparkContext (tests/spark_versions/test_connect.py asks a real
    one); then no more tasks than a stage's partitions run at once."""
    no_context = SimpleNamespace(conf=SimpleNamespace(get=lambda key, default=None: default))
    assert request_tally.slots(no_context) is None
    assert request_tally.executor_options({rq.PACING_OPTION: "100"}, no_context, 8) == {rq.PACING_OPTION: "12.5"}
