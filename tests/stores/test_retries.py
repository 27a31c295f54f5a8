"""Retries that lose nothing, against moto behind a proxy that fails a fraction of requests
(tests/support/faults.py): 503 SlowDown, 500, 429, connection resets, and DeleteObjects answers
in which some keys failed with SlowDown."""

from __future__ import annotations

import pytest
import s3fs

from tablekeeper.core.storage import DeleteOutcome, FileIO
from tablekeeper.core.storage.layers.retry import RetryPolicy, UnreachableError, is_transient
from tests.support import s3 as s3support
from tests.support.faults import FaultPlan, fault_proxy

pytestmark = [pytest.mark.s3, pytest.mark.storage]

FAST = RetryPolicy(attempts=12, base_s=0.005, cap_s=0.05)


def _files(s3: s3fs.S3FileSystem, bucket: str, prefix: str, n: int) -> list[str]:
    s3support.put_objects(bucket, {f"{prefix}/f-{i:04d}": b"d" for i in range(n)})
    return [f"s3://{bucket}/{prefix}/f-{i:04d}" for i in range(n)]


def _present(s3: s3fs.S3FileSystem, bucket: str, prefix: str) -> set[str]:
    s3.invalidate_cache()
    return {f"s3://{k}" for k in s3.find(f"{bucket}/{prefix}")}


def test_faults_everywhere_lose_nothing_and_delete_each_file_once(s3: s3fs.S3FileSystem, s3_bucket: str,
                                                                   s3_endpoint: str) -> None:
    doomed = _files(s3, s3_bucket, "t/data", 1500)
    referenced = _files(s3, s3_bucket, "t/keep", 40)
    with fault_proxy(s3_endpoint, FaultPlan(rate=0.3, key_rate=0.2, seed=11)) as proxy:
        io = FileIO.for_uri(f"s3://{s3_bucket}", s3support.paimon_s3_options(proxy.url), retry=FAST)
        results = io.delete_files(doomed)
        assert io.read_bytes(referenced[0]) == b"d"  # reads go through the same faults

    assert [r.path for r in results] == doomed
    assert {r.outcome for r in results} == {DeleteOutcome.DELETED}
    assert _present(s3, s3_bucket, "t/data") == set()
    assert _present(s3, s3_bucket, "t/keep") == set(referenced)
    assert set(proxy.deleted_keys) == {p[len("s3://"):] for p in doomed}
    assert max(proxy.deleted_keys.values()) == 1, "a key was sent for deletion twice"
    assert proxy.injected["key-slowdown"] > 0 and proxy.injected["reset"] > 0 and proxy.injected["slowdown"] > 0


def test_an_exhausted_budget_reports_exactly_and_a_rerun_finishes(s3: s3fs.S3FileSystem, s3_bucket: str,
                                                                  s3_endpoint: str) -> None:
    doomed = _files(s3, s3_bucket, "t/data", 400)
    with fault_proxy(s3_endpoint, FaultPlan(rate=0.2, key_rate=0.6, seed=3)) as proxy:
        io = FileIO.for_uri(f"s3://{s3_bucket}", s3support.paimon_s3_options(proxy.url),
                            retry=RetryPolicy(attempts=2, base_s=0.001, cap_s=0.002))
        first = io.delete_files(doomed)
        left = _present(s3, s3_bucket, "t/data")
        deleted = {r.path for r in first if r.outcome == DeleteOutcome.DELETED}
        failed = {r.path for r in first if r.outcome == DeleteOutcome.FAILED}
        assert deleted and failed, "the scenario needs both outcomes"
        assert deleted | failed == set(doomed)
        assert failed == left, "reported failures are exactly the files still there"
        assert all("retry budget exhausted" in (r.error or "") for r in first if r.outcome == DeleteOutcome.FAILED)

        proxy.plan.rate, proxy.plan.key_rate = 0.0, 0.0
        second = io.delete_files(doomed)

    by_path = {r.path: r.outcome for r in second}
    assert {p for p, o in by_path.items() if o == DeleteOutcome.DELETED} == failed
    assert {p for p, o in by_path.items() if o == DeleteOutcome.MISSING} == deleted
    assert _present(s3, s3_bucket, "t/data") == set()
    assert max(proxy.deleted_keys.values()) == 1


def test_writes_and_listings_survive_faults(s3: s3fs.S3FileSystem, s3_bucket: str, s3_endpoint: str) -> None:
    with fault_proxy(s3_endpoint, FaultPlan(rate=0.3, seed=5)) as proxy:
        io = FileIO.for_uri(f"s3://{s3_bucket}", s3support.paimon_s3_options(proxy.url), retry=FAST)
        for i in range(8):
            io.write_new(f"s3://{s3_bucket}/t/tag/tag-{i}", f"v{i}")
        listing = io.list_dir(f"s3://{s3_bucket}/t/tag")
        assert proxy.injected.total() > 0
    assert sorted(s.name for s in listing) == sorted(f"tag-{i}" for i in range(8))
    assert all(s3.cat_file(f"{s3_bucket}/t/tag/tag-{i}") == f"v{i}".encode() for i in range(8))


def test_denied_and_missing_are_not_retried() -> None:
    assert not is_transient(FileNotFoundError("x"))
    assert not is_transient(PermissionError("AccessDenied"))
    assert is_transient(ConnectionResetError("reset by peer"))
    assert is_transient(OSError("An error occurred (SlowDown) when calling the PutObject operation: reduce rate"))


def test_a_wrong_endpoint_names_the_option() -> None:
    io = FileIO.for_uri("s3://lake", {"s3.endpoint": "http://127.0.0.1:9", "s3.access-key": "a", "s3.secret-key": "b"},
                        retry=RetryPolicy(attempts=2, base_s=0.001, cap_s=0.001))
    with pytest.raises(UnreachableError) as caught:
        io.list_dir("s3://lake/wh")
    assert "s3.endpoint" in str(caught.value) and "http://127.0.0.1:9" in str(caught.value)
