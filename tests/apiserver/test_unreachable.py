"""A PaimonTag deleted while its catalog is unreachable, on the real API server with an S3
warehouse (a moto server of its own, stopped and started again on the same port; moto keeps the
objects in this process, so the warehouse survives).

What docs/operator.md promises (operator-design.md §7.3): the finalizer stays while storage cannot
be reached, the object reports ``Ready=False`` reason ``DeleteFailed`` with the cause and a
Warning Event ``DeleteFailed`` is posted, the operator retries with backoff, and once the catalog
answers again the tag is deleted from storage and the finalizer released. The tag is never left
behind unmanaged.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import s3fs
from moto.server import ThreadedMotoServer

from tablekeeper.core.paimon.table import open_table
from tablekeeper.operator.main import FINALIZER
from tests.apiserver.harness import RealHarness
from tests.operator.conftest import obj
from tests.support.k8s import eventually
from tests.support.s3 import _UNSET, ACCESS_KEY, FAKE_AWS_ENV, REGION, SECRET_KEY

pytestmark = pytest.mark.s3

BUCKET = "unreachable-lake"


class Moto:
    """A moto S3 server that can be stopped and started again on the same port."""

    def __init__(self) -> None:
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        host, self.port = self.server.get_host_and_port()
        self.endpoint = f"http://{host}:{self.port}"
        self.running = True

    def stop(self) -> None:
        if self.running:
            self.server.stop()
            self.running = False

    def start(self) -> None:
        if not self.running:
            self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
            self.server.start()
            self.running = True


@pytest.fixture
def moto(monkeypatch: pytest.MonkeyPatch) -> Iterator[Moto]:
    for name in _UNSET:
        monkeypatch.delenv(name, raising=False)
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)
    # botocore's own retries of a refused connection (legacy mode: 5 attempts, up to ~15 s of
    # backoff per request) only slow the test down: the operator's retry is what is under test
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    server = Moto()
    try:
        yield server
    finally:
        server.stop()


def tags(moto: Moto) -> list[str]:
    options = {"s3.endpoint": moto.endpoint, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
               "s3.region": REGION, "s3.path.style.access": "true"}
    return open_table(f"s3://{BUCKET}/wh", "sales.orders", options=options).tag_names()


async def test_tag_deleted_while_its_catalog_is_unreachable(real_harness: RealHarness, warehouse: Path,
                                                            moto: Moto) -> None:
    h = real_harness
    fs = s3fs.S3FileSystem(key=ACCESS_KEY, secret=SECRET_KEY, endpoint_url=moto.endpoint,
                           skip_instance_cache=True, use_listings_cache=False)
    fs.mkdir(BUCKET)
    fs.put(str(warehouse / "sales.db"), f"{BUCKET}/wh/sales.db", recursive=True)
    h.add_secret("sales", "lake-creds", {"s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY})
    await h.start()
    await h.apply(obj("PaimonCatalog", "lake", {
        "warehouse": f"s3://{BUCKET}/wh", "writerTimeZone": "UTC", "credentialsSecretRef": {"name": "lake-creds"},
        "options": {"s3.endpoint": moto.endpoint, "s3.region": REGION, "s3.path.style.access": "true"}}))
    await h.apply(obj("PaimonTable", "orders", {"catalogRef": {"kind": "PaimonCatalog", "name": "lake"},
                                                "database": "sales", "table": "orders"}))
    await h.wait_condition("PaimonTable", "orders", reason="Reconciled", timeout=60)
    await h.apply(obj("PaimonTag", "nightly", {"tableRef": {"name": "orders"}, "snapshotId": 3}))
    await h.wait_condition("PaimonTag", "nightly", reason="Created", timeout=60)
    await eventually(lambda: FINALIZER in ((h.get("PaimonTag", "nightly") or {})["metadata"].get("finalizers") or []))
    assert tags(moto) == ["nightly"]

    moto.stop()  # the warehouse is unreachable
    await h.delete("PaimonTag", "nightly")
    cond = await h.wait_condition("PaimonTag", "nightly", status="False", reason="DeleteFailed", timeout=90)
    held = h.get("PaimonTag", "nightly") or {}
    assert held["metadata"].get("deletionTimestamp") and held["metadata"]["finalizers"] == [FINALIZER]
    assert held["status"]["state"] == "Deleting" and cond["message"]
    event = await h.wait_event("nightly", "DeleteFailed")
    assert event["type"] == "Warning"

    moto.start()  # the catalog answers again: the retry deletes the tag and releases the finalizer
    await h.wait_gone("PaimonTag", "nightly", timeout=120)
    assert tags(moto) == []
    await h.wait_event("nightly", "Deleted")
