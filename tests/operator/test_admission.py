"""The emulator's admission over HTTP, as clients see it: 422 with the cluster's message and nothing
stored, defaults, pruning and strict field validation, the status subresource, generation, and the
``kubernetes`` client's view of a rejection."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import kubernetes
import pytest

from tablekeeper.core.policy.specs.tag import PaimonTagSpec
from tablekeeper.operator.crds.validations import IMMUTABLE_WHY
from tests.support.k8s import CRDS, ApiServerEmulator, register_crds, url_of

pytestmark = pytest.mark.k8s

NS = "sales"
TAGS = url_of("paimontags", NS)


def paimontag(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonTag", "metadata": {"name": name},
            "spec": {"tableRef": {"name": "orders"}, "fromLatest": True, **spec}}


def stored(k8s: ApiServerEmulator, plural: str, name: str, namespace: str | None = NS) -> dict[str, Any] | None:
    for (resource, ns, obj_name), obj in k8s.objects.items():
        if resource.plural == plural and ns == namespace and obj_name == name and not obj.deleted:
            return dict(obj.raw)
    return None


async def test_create_applies_defaults_and_metadata_and_drops_status(k8s: ApiServerEmulator) -> None:
    resp = await k8s.post(TAGS, json={**paimontag("t1"), "status": {"state": "Ready"}})
    assert resp.status == 201
    body = await resp.json()
    assert body["spec"] == {"tableRef": {"name": "orders"}, "fromLatest": True, "branch": "main",
                            "adoptionPolicy": "Adopt", "backoffLimit": 6}
    assert "status" not in body
    meta = body["metadata"]
    assert meta["namespace"] == NS and meta["uid"] and meta["creationTimestamp"]
    assert (meta["generation"], int(meta["resourceVersion"]) > 1) == (1, True)


async def test_invalid_create_is_422_and_never_stored(k8s: ApiServerEmulator) -> None:
    resp = await k8s.post(TAGS, json=paimontag("both", snapshotId=3))
    assert resp.status == 422
    status = await resp.json()
    assert status["kind"] == "Status" and status["reason"] == "Invalid" and status["code"] == 422
    assert status["message"] == ('PaimonTag.tablekeeper.io "both" is invalid: spec: Invalid value: "object": '
                                 "exactly one of snapshotId, fromTimestamp or fromLatest must be set")
    assert status["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec", "message":
                                            'Invalid value: "object": exactly one of snapshotId, fromTimestamp '
                                            "or fromLatest must be set"}]
    assert stored(k8s, "paimontags", "both") is None
    assert (await k8s.get(f"{TAGS}/both")).status == 404


async def test_unknown_fields_are_pruned_or_rejected_under_strict_validation(k8s: ApiServerEmulator) -> None:
    resp = await k8s.post(f"{TAGS}?fieldValidation=Strict", json=paimontag("typo", snapshotID=5))
    assert resp.status == 400
    assert (await resp.json())["message"] == ('PaimonTag in version "v1alpha1" cannot be handled as a PaimonTag: '
                                              'strict decoding error: unknown field "spec.snapshotID"')
    assert stored(k8s, "paimontags", "typo") is None
    # Without strict validation (the default for API clients) the field is silently dropped.
    resp = await k8s.post(TAGS, json=paimontag("typo", snapshotID=5))
    assert resp.status == 201
    assert "snapshotID" not in (await resp.json())["spec"]


async def test_update_rules_and_generation(k8s: ApiServerEmulator) -> None:
    await k8s.post(TAGS, json=paimontag("t1", tagName="nightly"))
    resp = await k8s.patch(f"{TAGS}/t1", json={"spec": {"tagName": "other"}})
    assert resp.status == 422
    assert (await resp.json())["message"] == ('PaimonTag.tablekeeper.io "t1" is invalid: spec.tagName: '
                                              'Invalid value: "string": tagName is immutable: '
                                              + IMMUTABLE_WHY[PaimonTagSpec])
    assert stored(k8s, "paimontags", "t1")["spec"]["tagName"] == "nightly"  # type: ignore[index]

    resp = await k8s.patch(f"{TAGS}/t1", json={"spec": {"deletionPolicy": "Retain"}})
    assert resp.status == 200
    body = await resp.json()
    assert (body["metadata"]["generation"], body["spec"]["deletionPolicy"]) == (2, "Retain")

    resp = await k8s.patch(f"{TAGS}/t1", json={"metadata": {"labels": {"tablekeeper.io/table": "orders"}}})
    assert (await resp.json())["metadata"]["generation"] == 2  # metadata changes keep the generation


async def test_status_subresource_is_isolated(k8s: ApiServerEmulator) -> None:
    await k8s.post(TAGS, json=paimontag("t1"))
    condition = {"type": "Ready", "status": "True", "reason": "Created", "message": "",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}
    resp = await k8s.patch(f"{TAGS}/t1/status",
                           json={"status": {"state": "Ready", "conditions": [condition]}, "spec": {"branch": "x"}})
    assert resp.status == 200
    obj = stored(k8s, "paimontags", "t1")
    assert obj is not None
    assert obj["status"]["state"] == "Ready" and obj["spec"]["branch"] == "main"
    assert obj["metadata"]["generation"] == 1
    # The main resource ignores status; the status is validated against the conditions schema.
    await k8s.patch(f"{TAGS}/t1", json={"status": {"state": "Lost"}})
    assert stored(k8s, "paimontags", "t1")["status"]["state"] == "Ready"  # type: ignore[index]
    resp = await k8s.patch(f"{TAGS}/t1/status", json={"status": {"conditions": [{**condition, "status": "Yes"}]}})
    assert resp.status == 422
    assert 'status.conditions[0].status: Unsupported value: "Yes"' in (await resp.json())["message"]


async def test_failed_json_patch_test_is_422(k8s: ApiServerEmulator) -> None:
    await k8s.post(TAGS, json=paimontag("t1"))
    resp = await k8s.patch(f"{TAGS}/t1", data=json.dumps([
        {"op": "test", "path": "/metadata/resourceVersion", "value": "0"},
        {"op": "add", "path": "/metadata/finalizers", "value": ["tablekeeper.io/finalizer"]},
    ]), headers={"Content-Type": "application/json-patch+json"})
    assert resp.status == 422
    assert "finalizers" not in stored(k8s, "paimontags", "t1")["metadata"]  # type: ignore[index]


async def test_cluster_scoped_kinds_and_discovery(k8s: ApiServerEmulator) -> None:
    resp = await k8s.post(url_of("clusterpaimoncatalogs"), json={
        "apiVersion": "tablekeeper.io/v1alpha1", "kind": "ClusterPaimonCatalog", "metadata": {"name": "default"},
        "spec": {"warehouse": "s3://lake/wh"}})
    assert resp.status == 201
    assert stored(k8s, "clusterpaimoncatalogs", "default", None)["spec"]["metastore"] == "filesystem"  # type: ignore[index]
    group = await (await k8s.get("/apis/tablekeeper.io/v1alpha1")).json()
    resources = {r["name"]: r for r in group["resources"]}
    assert resources["paimontags"]["namespaced"] and not resources["clusterpaimoncatalogs"]["namespaced"]
    assert "paimontags/status" in resources
    assert set(resources["paimontags"]["categories"]) == {"tablekeeper", "paimon"}
    crd_names = {name for (resource, _, name) in k8s.objects if resource == CRDS}
    assert "paimontags.tablekeeper.io" in crd_names


async def test_the_kubernetes_client_sees_a_clusters_error(k8s: ApiServerEmulator) -> None:
    config = kubernetes.client.Configuration(host=str(k8s.url).rstrip("/"))
    with kubernetes.client.ApiClient(config) as client:
        api = kubernetes.client.CustomObjectsApi(client)
        with pytest.raises(kubernetes.client.ApiException) as info:
            await asyncio.to_thread(api.create_namespaced_custom_object, "tablekeeper.io", "v1alpha1", NS,
                                    "paimontags", paimontag("2024"))
        assert info.value.status == 422
        assert json.loads(info.value.body)["message"] == (
            'PaimonTag.tablekeeper.io "2024" is invalid: <nil>: Invalid value: "object": metadata.name is all '
            "digits and spec.tagName is not set: the tag name would shadow snapshot ids; set spec.tagName")
        created = await asyncio.to_thread(api.create_namespaced_custom_object, "tablekeeper.io", "v1alpha1", NS,
                                          "paimontags", paimontag("2024", tagName="y2024"))
        assert created["spec"]["tagName"] == "y2024"


async def test_register_crds_is_reusable(tablekeeper_crds: list[dict[str, Any]]) -> None:
    emu = ApiServerEmulator()
    kinds = register_crds(emu, tablekeeper_crds)
    assert set(kinds) == {crd["spec"]["names"]["kind"] for crd in tablekeeper_crds}
    assert all(resource in emu.validators for resource in kinds.values())
