"""The Spark engine on moto (issue 16): every storage request of a run, the executors' too, is
counted by tablekeeper and agrees with the server's own count; and ``clean-orphans --listing``
takes its candidates from an S3 Inventory report with ``--engine spark``.

Requests: the small fixed scenario of ``tests/storage/test_request_counts.py`` (5 commits, one
tag, one planted orphan), each command through the CLI with ``--engine spark --output json``
against the counting proxy (``bench/_s3count.py``). Tablekeeper's count equals the server's
request for request (less the CLI lease's release after the JSON is printed), the executors made
part of them; every manifest list and manifest is read exactly once (the job reads each once per
run, whichever task or evaluation needs it), the candidates come from one flat listing of the
table's prefix (no listing of a bucket directory), the deletes take as many DeleteObjects as in
process; the total is the in-process count plus at most the driver's own table opening and
lease re-entry, and the lease's renewals of a slow run (time-dependent, so bounded).
A second scenario plants orphans in four bucket directories and runs with ``--batch-size 4``:
the stage's 6 keys go in exactly ``ceil(6 / 4) = 2`` DeleteObjects across the tasks.

Inventory: the S3 Inventory layout and the stale-inventory case of
``tests/maintenance/test_orphans_inventory.py`` (helpers reused), run on Spark: exactly the
listed orphans go, a file committed after the inventory and an orphan the inventory lacks stay,
a refused inventory exits 2 and deletes nothing."""

from __future__ import annotations

from datetime import timedelta
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest
import s3fs

from tablekeeper.spark import dispatch, job_request
from tests.maintenance import test_orphans_inventory as inv
from tests.maintenance.helpers import IDENT, check_retained, reload, rows, table_root, views
from tests.maintenance.test_orphans_inventory import _backdate_all, _keys, _read_rows, _upload, s3_rows, write_inventory
from tests.storage import test_request_counts as counted
from tests.storage.test_request_counts import EXPIRE, LEASE_RELEASE, SCENARIOS
from tests.support import s3 as s3support
from tests.support.paimon import ORDERS_SCHEMA

pytestmark = [pytest.mark.s3, pytest.mark.spark]

# the scenarios' fixtures, shared with the in-process tests
mixed_template = inv.mixed_template
template, s3_table, s3count = counted.template, counted.s3_table, counted.s3count


def _run(args: list[str], warehouse: str, endpoint: str) -> dict[str, Any]:
    return counted._run([*args, "--engine", "spark", "--parallelism", "2"], warehouse, endpoint)


def _minus(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = {k: a.get(k, 0) - b.get(k, 0) for k in sorted({*a, *b} - {"total"}) if a.get(k, 0) != b.get(k, 0)}
    out["total"] = sum(out.values())
    return out


@pytest.mark.parametrize("operation", ["clean-orphans", "expire"])
def test_spark_requests_driver_and_executors_agree_with_the_server(operation: str, spark: Any, s3_table: str,
                                                                    s3_endpoint: str, s3count: ModuleType) -> None:
    args, in_process = {"clean-orphans": (["clean-orphans", "db.orders"], SCENARIOS["clean-orphans"][1]),
                        "expire": (EXPIRE, SCENARIOS["expire"][1])}[operation]
    with s3count.counting_proxy(s3_endpoint) as counts:
        out = _run(args, s3_table, counts.url)
        server = counts.snapshot()
    mine = out["requests"]
    assert mine == _minus(server, LEASE_RELEASE)  # every request counted, request for request
    executors = out["details"]["executorRequests"]
    assert out["details"]["requestsCounted"] == "driver and executors"
    assert executors.get("get", 0) > 0 and executors["total"] < mine["total"]
    # each manifest list and manifest read exactly once in the run
    metadata = {key: n for (kind, key), n in counts.by_key.items() if kind == "get" and "/manifest/manifest-" in key}
    assert len(metadata) == 15 and set(metadata.values()) == {1}, metadata  # 10 lists, 5 manifests
    # no listing of a bucket directory (orphans: one flat listing of the prefix; deletes: none)
    assert not [page for page in counts.list_pages if "bucket-" in page[0]]
    if operation == "clean-orphans":
        assert [page for page in counts.list_pages if page[0].endswith("orders/&delimiter=")]
    assert mine.get("bulk_delete", 0) == in_process.get("bulk_delete", 0)
    # bounded: the in-process count, plus the driver's own openings of the table (the dispatcher's
    # lease, the job's re-entry, its decision: a schema listing and read each) and the lease's
    # renewals (a GET and a PUT every ttl/3) of a slow run
    renewals = 2 * (mine.get("put", 0) - in_process.get("put", 0))
    assert in_process["total"] <= mine["total"] <= in_process["total"] + 6 + renewals, (mine, in_process)
    print(operation, "spark", mine, "executors", executors, "in-process", in_process, "timings", out["timings"])


def test_spark_deletes_fill_batches_across_tasks_and_directories(spark: Any, s3_table: str, s3_endpoint: str,
                                                                  s3_bucket: str, s3count: ModuleType) -> None:
    prefix = "wh/db.db/orders"
    planted = [f"{prefix}/dt={day}/bucket-0/data-orphan-{i}.parquet"
               for i, day in enumerate(["20260101", "20260102", "20260119", "20260119", "20260102"], start=1)]
    s3support.put_objects(s3_bucket, dict.fromkeys(planted, b"junk"))
    for key in planted:
        s3support.backdate(s3_bucket, key, timedelta(days=3))
    with s3count.counting_proxy(s3_endpoint) as counts:
        request = job_request.JobRequest(operation="clean-orphans", warehouse=s3_table, table="db.orders",
                                         options=s3support.paimon_s3_options(counts.url), parallelism=2, batch_size=4)
        result = dispatch.run(request, engine="spark", spark=spark)
    assert result.status == "Succeeded" and result.deleted == {"data": 6}  # 5 planted + the scenario's own
    # one stage of 6 keys over 2 tasks and 4 directories: ceil(6 / 4) DeleteObjects, full but the last
    assert result.requests["bulk_delete"] == 2
    assert counts.snapshot()["bulk_delete"] == 2 + 1 and counts.deleted_keys == 6 + 1  # + the lease's release
    assert not set(s3support.snapshot_bucket(s3_bucket)) & {*planted, f"{prefix}/dt=20260118/bucket-0/data-orphan-0.parquet"}


def test_spark_clean_orphans_from_an_s3_inventory(spark: Any, mixed_template: str, s3: s3fs.S3FileSystem,
                                                  s3_warehouse: str, s3_bucket: str, s3_options: dict[str, str],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    wh = s3_warehouse
    _upload(mixed_template, s3_bucket, "wh")
    prefix = table_root(wh).removeprefix(f"s3://{s3_bucket}/")
    keys_built = _keys(s3, s3_bucket, "wh")
    pending = reload(wh, catalog_options=s3_options).new_batch_write_builder()  # commits after the inventory
    pending_write = pending.new_write()
    pending_write.write_arrow(pa.Table.from_pylist(rows("b", 700), schema=ORDERS_SCHEMA))
    messages = pending_write.prepare_commit()
    pending_files = _keys(s3, s3_bucket, "wh") - keys_built
    planted = {f"{prefix}/{rel}" for rel in (
        "manifest/manifest-0a0a-orphan-0", "index/index-0a0a-orphan-0", "dt=a/bucket-0/data-0a0a-orphan-0.parquet",
        "dt=zz/bucket-0/data-0a0a-orphan-1.parquet", "snapshot/.snapshot-99.0a0a.tmp")}
    untouchable = {f"{prefix}/{rel}" for rel in ("schema/junk", "tag/junk", "dt=a/_SUCCESS",
                                                 "dt=a/bucket-0/sub/data-0a0a-1.parquet")}
    s3support.put_objects(s3_bucket, dict.fromkeys(planted | untouchable, b"junk"))
    _backdate_all(s3, s3_bucket, "wh", timedelta(days=3))
    listed = s3_rows(s3, s3_bucket)
    opts = [a for k, v in s3_options.items() for a in ("--option", f"{k}={v}")]

    # refused: the inventory of another bucket; nothing deleted, exit 2 with the reason
    wrong = write_inventory(s3, listed, source_bucket="elsewhere")
    keys_before = _keys(s3, s3_bucket, "wh")
    code, _out, err = inv.cli(capsys, "clean-orphans", "-w", wh, IDENT, "--listing", wrong, "--engine", "spark",
                              *opts, "-o", "json")
    assert code == 2, err
    assert "'elsewhere'" in err and _keys(s3, s3_bucket, "wh") == keys_before

    manifest = write_inventory(s3, listed)
    commit = pending.new_commit()
    commit.commit(messages)
    commit.close()
    pending_write.close()
    late = f"{prefix}/dt=b/bucket-0/data-0a0a-late-orphan.parquet"  # an old orphan the inventory lacks
    s3support.put_objects(s3_bucket, {late: b"junk"})
    s3support.backdate(s3_bucket, late, timedelta(days=3))
    before = views(wh, IDENT, s3_options)
    keys_before = _keys(s3, s3_bucket, "wh")

    code, out, err = inv.cli(capsys, "clean-orphans", "-w", wh, IDENT, "--listing", manifest, "--engine", "spark",
                             *opts, "-o", "json")
    assert code == 0, err
    assert out["engine"] == "spark" and out["total_files"] == len(planted)
    assert any("storage inventory" in n for n in out["notes"])
    assert _keys(s3, s3_bucket, "wh") == keys_before - planted
    assert late in _keys(s3, s3_bucket, "wh") and pending_files <= _keys(s3, s3_bucket, "wh")
    assert out["details"]["candidates"] >= len(planted) and out["requests"]["total"] > 0
    check_retained(wh, before, options=s3_options)
    assert {r["id"] for r in _read_rows(reload(wh, catalog_options=s3_options))} >= {700, 701}
