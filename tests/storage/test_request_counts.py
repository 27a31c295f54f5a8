"""Storage requests of a small fixed scenario on moto, counted exactly (counts, never times).

The table (5 commits over 4 daily partitions, one tag, one planted orphan) is written by pypaimon
locally and uploaded straight into moto's backend, every object backdated three days. Each
command runs through the CLI with ``--output json`` against a counting proxy on loopback
(``bench/_s3count.py``, the benchmark's server-side count), so every figure is asserted twice:
by tablekeeper's own count (the JSON's ``requests``) and by the server. The server sees three
requests more, the maintenance lease's release after the JSON was printed (GET, DeleteObjects,
bounded LIST of ``.tablekeeper/``). ``expire-partitions`` commits through tablekeeper's own client
(core/paimon/pypaimon/store_io.py), so pypaimon's requests are in tablekeeper's count too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from tablekeeper.cli.main import cli
from tablekeeper.core.plans import request_minimum
from tests.maintenance.helpers import plant, table_root
from tests.support import s3 as s3support
from tests.support.bench import loaded
from tests.support.paimon import append_table, rows, write

LEASE_RELEASE = {"get": 1, "list": 1, "bulk_delete": 1}


@pytest.fixture(scope="module")
def s3count() -> Iterator[ModuleType]:
    with loaded("_s3count") as module:
        yield module


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("requests") / "wh")
    t = append_table(wh, options={"partition.expiration-time": "7 d", "partition.timestamp-formatter": "yyyyMMdd"})
    for i, dt in enumerate(["20260101", "20260102", "20260118", "20260119", "20260119"]):
        write(t, rows(dt, 10 * i))
    plant(f"{table_root(wh)}/dt=20260118/bucket-0/data-orphan-0.parquet", b"x" * 10)
    result = CliRunner().invoke(cli, ["tag", "create", "db.orders", "t3", "--snapshot", "3", "--warehouse", wh])
    assert result.exit_code == 0, result.output
    return wh


@pytest.fixture
def s3_table(template: str, s3_bucket: str) -> str:
    objects = {}
    for dirpath, _dirs, names in os.walk(template):
        for name in names:
            full = os.path.join(dirpath, name)
            objects[f"wh/{os.path.relpath(full, template)}"] = Path(full).read_bytes()
    s3support.put_objects(s3_bucket, objects)
    for key in objects:
        s3support.backdate(s3_bucket, key, timedelta(days=3))
    return f"s3://{s3_bucket}/wh"


def _run(args: list[str], warehouse: str, endpoint: str) -> dict[str, Any]:
    argv = [*args, "--warehouse", warehouse, "--output", "json"]
    for key, value in s3support.paimon_s3_options(endpoint).items():
        argv += ["--option", f"{key}={value}"]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, (result.output, result.exception)
    out: dict[str, Any] = json.loads(result.output)
    return out


def _plus(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = {k: a.get(k, 0) + b.get(k, 0) for k in sorted({*a, *b} - {"total"})}
    out["total"] = sum(out.values())
    return out


EXPIRE = ["expire", "db.orders", "--retain-max", "2", "--retain-min", "1", "--time-retained", "1 ms"]

#: (command, requests counted by tablekeeper, deletes by step)
SCENARIOS = {
    "expire": (EXPIRE, {"bulk_delete": 3, "get": 33, "head": 9, "list": 17, "put": 3, "total": 65}),
    # with pypaimon's commit (manifest, manifest list x2, snapshot, LATEST, and the lease: 6 PUTs);
    # the format guard reads in the decision's view, pypaimon's existence checks of directories
    # and of LATEST cost a bounded LIST or nothing, LATEST is overwritten without a HEAD (was 42)
    "expire-partitions": (["expire-partitions", "db.orders", "--now", "2026-01-20T12:00:00", "--zone-known"],
                          {"get": 13, "head": 6, "list": 6, "put": 6, "total": 31}),
    "tag delete": (["tag", "delete", "db.orders", "t3"],
                   {"bulk_delete": 1, "get": 11, "head": 4, "list": 6, "put": 1, "total": 23}),
    "clean-orphans": (["clean-orphans", "db.orders"],
                      {"bulk_delete": 1, "get": 25, "head": 3, "list": 11, "put": 1, "total": 41}),
}


@pytest.mark.s3
@pytest.mark.parametrize("operation", list(SCENARIOS))
def test_requests_of_each_operation_are_counted_exactly(operation: str, s3_table: str, s3_endpoint: str,
                                                        s3count: ModuleType) -> None:
    args, expected = SCENARIOS[operation]
    with s3count.counting_proxy(s3_endpoint) as counts:
        out = _run(args, s3_table, counts.url)
        server = counts.snapshot()
    assert out["requests"] == expected
    assert server == _plus(expected, LEASE_RELEASE)
    steps = [int(n) for n in out["files"].values()] if isinstance(out.get("files"), dict) else []
    minimum = request_minimum.minimum(distinct_reads=len(counts.read_keys), listed_pages=len(counts.list_pages),
                                      writes=len(counts.written_keys), delete_steps=steps)
    assert minimum.total <= server["total"]


@pytest.mark.s3
def test_plan_deletes_send_no_listing_and_fill_batches(s3_table: str, s3_endpoint: str, s3count: ModuleType) -> None:
    """Expiration's deletes: one DeleteObjects per step, no LIST of each parent directory first
    (the parent listings were most of an expiration's requests)."""
    with s3count.counting_proxy(s3_endpoint) as counts:
        dry = _run([*EXPIRE, "--dry-run"], s3_table, counts.url)
        planned = counts.snapshot()
        counts.reset()
        _run(EXPIRE, s3_table, counts.url)
        done = counts.snapshot()
    steps = [int(n) for n in dry["files"].values()]
    assert sum(steps) == 10 and len(steps) == 2  # data files and manifests (snapshot files: unpublished first)
    # one DeleteObjects per step, + 2: the unpublished snapshot files (once: the verify phase no
    # longer deletes them a second time) and the run's bookkeeping (intent / lease release)
    assert done["bulk_delete"] == len(steps) + 2
    # no listing of the deleted data files' directories (partition/bucket-N/) to tell missing files
    assert not [page for page in counts.list_pages if "bucket-" in page[0]]
    assert done["list"] > 0 and planned["list"] > 0


@pytest.mark.s3
def test_flat_orphan_listing_pages(s3_table: str, s3_endpoint: str, s3count: ModuleType) -> None:
    """Orphan candidates come from one flat listing of the table's prefix (1 page for 29
    objects), not a listing per partition and bucket directory."""
    with s3count.counting_proxy(s3_endpoint) as counts:
        _run(["clean-orphans", "db.orders", "--dry-run"], s3_table, counts.url)
    flat = [page for page in counts.list_pages if page[0].endswith("orders/&delimiter=")]
    bucket_dirs = [page for page in counts.list_pages if "bucket-" in page[0]]
    assert len(flat) == 1 and not bucket_dirs
    assert request_minimum.list_pages(29) == 1


def test_request_minimum_formulas() -> None:
    assert request_minimum.list_pages(0) == 1 and request_minimum.list_pages(1000) == 1
    assert request_minimum.list_pages(1001) == 2 and request_minimum.list_pages(100_000) == 100
    assert request_minimum.delete_requests(0) == 0 and request_minimum.delete_requests(2500) == 3
    m = request_minimum.minimum(distinct_reads=10, listed_pages=3, writes=2, delete_steps=[1500, 10, 0])
    assert m.as_dict() == {"get": 10, "list": 3, "put": 2, "bulk_delete": 3, "total": 18}
    assert request_minimum.ratio({"get": 20, "list": 7, "total": 27}, m) == 1.5
