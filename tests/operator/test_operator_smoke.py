"""Smoke test of the harness: Kopf runs in-process (own thread and loop) against the emulator with
the generated CRDs and the operator's real settings (``tablekeeper.operator.main``), with a trivial
registry. The real controller comes later; this proves the harness works end to end:
a valid PaimonTag reaches a handler (defaulted by the CRD, status written through the status
subresource and validated, finalizer and Event posted), an invalid one is rejected with 422 and
never stored or seen, deletion runs the delete handler and releases the finalizer.
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator
from typing import Any

import kopf
import pytest

from tablekeeper.core.policy.kinds import API_GROUP, API_VERSION
from tablekeeper.operator import main as operator_main
from tests.support.k8s import EVENTS, ApiServerEmulator, OperatorThread, eventually, url_of

pytestmark = pytest.mark.k8s

NS = "sales"
TAGS = url_of("paimontags", NS)

Seen = list[tuple[str, ...]]


def trivial_registry(seen: Seen) -> kopf.OperatorRegistry:
    """The operator's own handlers plus toy handlers that record what they see."""
    registry = operator_main.register(kopf.OperatorRegistry(), login=False, controllers=False)

    @kopf.on.create(API_GROUP, API_VERSION, "paimontags", registry=registry)
    def tag_created(spec: kopf.Spec, name: str, namespace: str, meta: kopf.Meta, body: kopf.Body,
                    patch: kopf.Patch, **_: Any) -> None:
        seen.append(("create", f"{namespace}/{name}", spec["branch"], str(spec["backoffLimit"])))
        kopf.event(body, type="Normal", reason="Seen", message=f"tag {name} seen")  # posted at any posting.level
        patch.status["observedGeneration"] = meta["generation"]
        patch.status["conditions"] = [{
            "type": "Ready", "status": "True", "reason": "Created", "message": "seen by the smoke test",
            "lastTransitionTime": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "observedGeneration": meta["generation"],
        }]

    @kopf.on.delete(API_GROUP, API_VERSION, "paimontags", registry=registry)
    def tag_deleted(name: str, namespace: str, **_: Any) -> None:
        seen.append(("delete", f"{namespace}/{name}"))

    @kopf.on.create(API_GROUP, API_VERSION, "clusterpaimoncatalogs", registry=registry)
    def catalog_created(name: str, spec: kopf.Spec, **_: Any) -> None:
        seen.append(("create-catalog", name, spec["metastore"]))

    return registry


@pytest.fixture
async def seen(k8s: ApiServerEmulator, operator_settings: kopf.OperatorSettings) -> AsyncIterator[Seen]:
    calls: Seen = []
    operator = OperatorThread(trivial_registry(calls), str(k8s.url).rstrip("/"), settings=operator_settings)
    await operator.start()
    yield calls
    await operator.stop()


def paimontag(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonTag", "metadata": {"name": name},
            "spec": {"tableRef": {"name": "orders"}, **spec}}


def obj_of(k8s: ApiServerEmulator, name: str) -> Any:
    return next(obj for (resource, ns, obj_name), obj in k8s.objects.items()
                if resource.plural == "paimontags" and ns == NS and obj_name == name)


async def test_a_created_tag_reaches_the_handler(k8s: ApiServerEmulator, seen: Seen) -> None:
    resp = await k8s.post(TAGS, json=paimontag("nightly", fromLatest=True))
    assert resp.status == 201
    await eventually(lambda: ("create", f"{NS}/nightly", "main", "6") in seen)  # CRD defaults applied
    obj = obj_of(k8s, "nightly")
    await eventually(lambda: obj.get("status", {}).get("conditions"))
    assert obj["status"]["conditions"][0]["reason"] == "Created"
    assert obj["status"]["observedGeneration"] == 1
    assert obj["metadata"]["finalizers"] == [operator_main.FINALIZER]
    events = await eventually(lambda: [e.raw for (res, _, _), e in k8s.objects.items()
                                       if res == EVENTS and e.raw["reason"] == "Seen"])
    assert events[0]["involvedObject"]["name"] == "nightly"
    assert events[0]["metadata"]["name"].startswith("tablekeeper-")


async def test_an_invalid_tag_is_rejected_and_never_seen(k8s: ApiServerEmulator, seen: Seen) -> None:
    resp = await k8s.post(TAGS, json=paimontag("both", snapshotId=3, fromLatest=True))
    assert resp.status == 422
    assert (await resp.json())["message"].startswith('PaimonTag.tablekeeper.io "both" is invalid: spec: ')
    await k8s.post(TAGS, json=paimontag("after", snapshotId=3))
    await eventually(lambda: any(call[:2] == ("create", f"{NS}/after") for call in seen))
    assert not any(call[1] == f"{NS}/both" for call in seen)
    assert not [key for key in k8s.objects if key[2] == "both"]


async def test_deletion_runs_the_handler_and_releases_the_finalizer(k8s: ApiServerEmulator, seen: Seen) -> None:
    await k8s.post(TAGS, json=paimontag("doomed", fromLatest=True))
    obj = obj_of(k8s, "doomed")
    await eventually(lambda: obj.get("metadata", {}).get("finalizers"))
    resp = await k8s.delete(f"{TAGS}/doomed")
    assert (await resp.json())["metadata"]["deletionTimestamp"]
    await eventually(lambda: obj.deleted)
    assert ("delete", f"{NS}/doomed") in seen
    assert (await k8s.get(f"{TAGS}/doomed")).status == 404


async def test_cluster_scoped_kinds_are_served(k8s: ApiServerEmulator, seen: Seen) -> None:
    await k8s.post(url_of("clusterpaimoncatalogs"), json={
        "apiVersion": "tablekeeper.io/v1alpha1", "kind": "ClusterPaimonCatalog", "metadata": {"name": "default"},
        "spec": {"warehouse": "s3://lake/wh"}})
    await eventually(lambda: ("create-catalog", "default", "filesystem") in seen)
