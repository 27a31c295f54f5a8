"""The measured floor of orphan cleanup on S3 with injected latency (``bench/s3.py``).

The formula floor (``LIST pages x latency + DeleteObjects x latency / parallelism``) leaves out
the store's own service time and the metadata reads. This floor is *measured*: through the same
counting proxy with the same latency, against the same moto, it sends exactly the minimum's
requests with plain boto3 calls and times them:

- the flat listing of the table's prefix, page after page (``ceil(objects / 1000)`` pages, as
  the minimum counts them; continuation tokens make them sequential);
- a GET of every metadata key tablekeeper's run read (the distinct keys, as the minimum counts
  them), 16 at a time (tablekeeper's fetch parallelism), in the order their dependencies allow:
  root files (snapshots, tags, hints, schemas) first, then manifest lists, then manifests and
  index manifests;
- the DeleteObjects of the keys tablekeeper's run deleted, 1,000 keys a request, data files
  before manifests (Paimon's order), 8 requests at a time (``--parallelism 8``).

Nothing is decided here: the keys come from tablekeeper's own run on the same table, which the
caller restores (the deleted objects put back) before the floor runs.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["measured_floor", "GET_PARALLELISM"]

GET_PARALLELISM = 16


def _client(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, max_pool_connections=32,
                                      retries={"max_attempts": 1, "mode": "standard"}))


def _round(key: str) -> int:
    """0: root files (snapshot, tag, changelog, hint, schema, lease); 1: manifest lists;
    2: manifests and index manifests (a manifest list names them)."""
    name = key.rsplit("/", 1)[-1]
    if "/manifest/" not in f"/{key}":
        return 0
    return 1 if name.startswith("manifest-list-") else 2


def measured_floor(endpoint: str, bucket: str, table_prefix: str, read_keys: Iterable[str],
                   deleted_keys: Iterable[str], delete_parallelism: int = 8) -> dict[str, Any]:
    """Send the minimum's requests of an orphan cleanup (module docstring) to ``endpoint``;
    returns the seconds of each part and the requests sent."""
    client = _client(endpoint)
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    pages, token = 0, None
    while True:
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": table_prefix.rstrip("/") + "/", "MaxKeys": 1000}
        if token:
            kwargs["ContinuationToken"] = token
        page = client.list_objects_v2(**kwargs)
        pages += 1
        token = page.get("NextContinuationToken") if page.get("IsTruncated") else None
        if not token:
            break
    out["list_pages"], out["list_s"] = pages, time.perf_counter() - t0

    def get(key: str) -> None:
        try:
            client.get_object(Bucket=bucket, Key=key)["Body"].read()
        except client.exceptions.NoSuchKey:
            pass  # the lease before it was taken: read once, absent

    t1 = time.perf_counter()
    keys = [k.partition("/")[2] for k in read_keys]  # "bucket/key" as the proxy saw it
    with ThreadPoolExecutor(GET_PARALLELISM) as pool:
        for stage in (0, 1, 2):
            list(pool.map(get, sorted(k for k in keys if _round(k) == stage)))
    out["gets"], out["get_s"] = len(keys), time.perf_counter() - t1

    t2 = time.perf_counter()
    deleted = [k.partition("/")[2] if k.startswith(f"{bucket}/") else k for k in deleted_keys]
    steps = [sorted(k for k in deleted if _round(k) == 0), sorted(k for k in deleted if _round(k) != 0)]
    requests = 0
    with ThreadPoolExecutor(delete_parallelism) as pool:
        for step in steps:
            batches = [step[i:i + 1000] for i in range(0, len(step), 1000)]
            requests += len(batches)
            list(pool.map(lambda b: client.delete_objects(
                Bucket=bucket, Delete={"Objects": [{"Key": k} for k in b], "Quiet": True}), batches))
    out["deletes"], out["delete_s"] = requests, time.perf_counter() - t2
    out["seconds"] = time.perf_counter() - t0
    return out
