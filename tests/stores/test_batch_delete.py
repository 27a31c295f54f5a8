"""Bulk deletes on GCS, counted at the wire by a pass-through proxy (tests/support/faults.py with
no faults) in front of fake-gcs-server.

Against Google, tablekeeper deletes through the JSON API's batch endpoint (gcsfs ``_rm_files``,
up to 100 objects a request); fake-gcs-server answers gcsfs's batch sub-requests with 400, so
gcsfs (and tablekeeper) use one ``DELETE`` per object against other endpoints. What is checked
here: outcomes per file (deleted / missing told apart by one listing), exactly one request per
deleted object plus the listing, and a batch answer that confirms only some objects (as
gcsfs reports a failed batch) is completed per file with exact counts.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tablekeeper.core.storage import DeleteOutcome, FileIO
from tests.support import stores as storesupport
from tests.support.faults import FaultPlan, fault_proxy

pytestmark = [pytest.mark.gcs, pytest.mark.storage]


def _bucket_with(fs: Any, n: int) -> tuple[str, list[str]]:
    bucket = f"b{uuid.uuid4().hex[:8]}"
    fs.mkdir(bucket)
    names = [f"data-{i}.parquet" for i in range(n)]
    for name in names:
        fs.pipe_file(f"{bucket}/t/bucket-0/{name}", b"x")
    fs.pipe_file(f"{bucket}/t/bucket-0/keep.parquet", b"k")
    return bucket, names


def test_gcs_bulk_delete_outcomes_and_request_count(gcs_server: str) -> None:
    import gcsfs

    fs = gcsfs.GCSFileSystem(endpoint_url=gcs_server, token="anon", project="test", skip_instance_cache=True)
    bucket, names = _bucket_with(fs, 12)
    with fault_proxy(gcs_server, FaultPlan()) as proxy:
        io = FileIO.for_uri(f"gs://{bucket}", storesupport.gcs_options(proxy.url))
        results = io.delete_files([f"gs://{bucket}/t/bucket-0/{n}" for n in [*names, "gone.parquet"]])
        requests = proxy.requests
    assert [r.outcome for r in results] == [DeleteOutcome.DELETED] * 12 + [DeleteOutcome.MISSING]
    assert requests == 1 + 12  # one listing of the parent (missing vs deleted), one DELETE per object
    fs.invalidate_cache()
    assert fs.ls(f"{bucket}/t/bucket-0") == [f"{bucket}/t/bucket-0/keep.parquet"]


def test_gcs_batch_path_completes_unconfirmed_objects_per_file(gcs_server: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch path as it runs against Google: here the emulator refuses the batch (gcsfs then
    raises), so every object is deleted by the per-file completion, each exactly once."""
    import gcsfs

    fs = gcsfs.GCSFileSystem(endpoint_url=gcs_server, token="anon", project="test", skip_instance_cache=True)
    bucket, names = _bucket_with(fs, 5)
    io = FileIO.for_uri(f"gs://{bucket}", storesupport.gcs_options(gcs_server))
    monkeypatch.setattr(type(io.fs), "on_google", property(lambda self: True))
    results = io.delete_files([f"gs://{bucket}/t/bucket-0/{n}" for n in names])
    assert [r.outcome for r in results] == [DeleteOutcome.DELETED] * 5
    fs.invalidate_cache()
    assert fs.ls(f"{bucket}/t/bucket-0") == [f"{bucket}/t/bucket-0/keep.parquet"]
