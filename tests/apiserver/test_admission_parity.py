"""Admission parity: every sample CR of the emulator's admission tests is also sent to the real API
server, and the verdicts agree.

- ``tests/operator/data/valid``: created (``fieldValidation=Strict``, as ``kubectl`` sends) and
  stored with exactly the spec the emulator's admission defaults to;
- ``tests/operator/data/invalid``: refused with 422 and exactly the message the sample expects
  (the one the emulator produces, tests/operator/test_samples.py), field paths included;
- ``tests/operator/data/transitions.yaml``: updates accepted or refused alike;
- the HTTP probes of tests/operator/test_admission.py (status subresource, generation, strict
  decoding, JSON-patch tests, deletion with a finalizer) sent to both servers, answers compared.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tablekeeper.core.policy.kinds import CLUSTER_SCOPED
from tests.operator.conftest import PLURALS
from tests.operator.test_samples import EXPECT, INVALID, TRANSITIONS, VALID, _placed
from tests.support.apiserver import Rest, Testenv
from tests.support.k8s import ApiServerEmulator, CRDValidator, url_of


def _path(obj: dict[str, Any], *, item: bool = True) -> str:
    kind, meta = obj["kind"], obj["metadata"]
    namespace = None if kind in CLUSTER_SCOPED else meta.get("namespace")
    return url_of(PLURALS[kind], namespace, meta["name"] if item else None)


def _create(rest: Rest, testenv: Testenv, obj: dict[str, Any]) -> Any:
    if obj["kind"] not in CLUSTER_SCOPED:
        testenv.ensure_namespace(obj["metadata"]["namespace"])
    return rest.request("POST", _path(obj, item=False), obj, params={"fieldValidation": "Strict"})


def _remove(rest: Rest, obj: dict[str, Any]) -> None:
    rest.merge_patch(_path(obj), {"metadata": {"finalizers": None}})
    rest.delete(_path(obj))


@pytest.mark.parametrize("doc", VALID)
def test_valid_samples_are_stored_as_the_emulator_defaults_them(
        doc: dict[str, Any], crds: Testenv, crd_validators: dict[str, CRDValidator]) -> None:
    obj = _placed(doc)
    expected = crd_validators[doc["kind"]].admit(copy.deepcopy(obj), None, strict=True)
    rest = crds.admin
    resp = _create(rest, crds, obj)
    try:
        assert resp.status_code == 201, resp.text
        assert resp.json()["spec"] == expected["spec"]
    finally:
        _remove(rest, obj)


@pytest.mark.parametrize("doc", INVALID)
def test_invalid_samples_are_refused_with_the_emulators_message(doc: dict[str, Any], crds: Testenv) -> None:
    obj = _placed(doc)
    rest = crds.admin
    resp = _create(rest, crds, obj)
    if resp.status_code == 201:
        _remove(rest, obj)
    status = resp.json()
    name = doc["metadata"]["name"]
    assert (resp.status_code, status.get("reason")) == (422, "Invalid"), resp.text
    assert status["message"] == f'{doc["kind"]}.tablekeeper.io "{name}" is invalid: {doc["metadata"]["annotations"][EXPECT]}'


@pytest.mark.parametrize("case", TRANSITIONS, ids=[case["name"] for case in TRANSITIONS])
def test_transitions_agree(case: dict[str, Any], crds: Testenv) -> None:
    old = _placed(case["old"])
    rest = crds.admin
    resp = _create(rest, crds, old)
    assert resp.status_code == 201, resp.text
    try:
        resp = rest.merge_patch(_path(old), case["patch"])
        if case["expect"] is None:
            assert resp.status_code == 200, resp.text
        else:
            kind, name = old["kind"], old["metadata"]["name"]
            assert resp.status_code == 422, resp.text
            assert resp.json()["message"] == f'{kind}.tablekeeper.io "{name}" is invalid: {case["expect"]}'
    finally:
        _remove(rest, old)


# -- HTTP probes, both servers -----------------------------------------------------------------------

NS = "sales"
TAGS = url_of("paimontags", NS)
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"


def paimontag(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonTag", "metadata": {"name": name},
            "spec": {"tableRef": {"name": "orders"}, "fromLatest": True, **spec}}


CONDITION = {"type": "Ready", "status": "True", "reason": "Created", "message": "",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}

#: (method, path, body, content type) steps; each answer is reduced by :func:`_seen`.
PROBES: dict[str, list[tuple[str, str, Any, str]]] = {
    "create-defaults-drops-status": [("POST", TAGS, {**paimontag("p1"), "status": {"state": "Ready"}}, "")],
    "strict-unknown-field": [("POST", TAGS + "?fieldValidation=Strict", paimontag("p2", snapshotID=5), "")],
    "unknown-field-pruned": [("POST", TAGS, paimontag("p3", snapshotID=5), "")],
    "immutable-and-generation": [
        ("POST", TAGS, paimontag("p4", tagName="nightly"), ""),
        ("PATCH", f"{TAGS}/p4", {"spec": {"tagName": "other"}}, MERGE_PATCH),
        ("PATCH", f"{TAGS}/p4", {"spec": {"deletionPolicy": "Retain"}}, MERGE_PATCH),
        ("PATCH", f"{TAGS}/p4", {"metadata": {"labels": {"tablekeeper.io/table": "orders"}}}, MERGE_PATCH),
    ],
    "status-subresource": [
        ("POST", TAGS, paimontag("p5"), ""),
        ("PATCH", f"{TAGS}/p5/status", {"status": {"state": "Ready", "conditions": [CONDITION]},
                                        "spec": {"branch": "x"}}, MERGE_PATCH),
        ("PATCH", f"{TAGS}/p5", {"status": {"state": "Lost"}}, MERGE_PATCH),
        ("PATCH", f"{TAGS}/p5/status", {"status": {"conditions": [{**CONDITION, "status": "Yes"}]}}, MERGE_PATCH),
        ("GET", f"{TAGS}/p5", None, ""),
    ],
    "failed-json-patch-test": [
        ("POST", TAGS, paimontag("p6"), ""),
        ("PATCH", f"{TAGS}/p6", [{"op": "test", "path": "/metadata/resourceVersion", "value": "0"},
                                 {"op": "add", "path": "/metadata/finalizers", "value": ["x.io/f"]}], JSON_PATCH),
    ],
    "delete-with-finalizer": [
        ("POST", TAGS, {**paimontag("p7"), "metadata": {"name": "p7", "finalizers": ["tablekeeper.io/finalizer"]}},
         ""),
        ("DELETE", f"{TAGS}/p7", None, ""),
        ("GET", f"{TAGS}/p7", None, ""),
        ("PATCH", f"{TAGS}/p7", {"metadata": {"finalizers": None}}, MERGE_PATCH),
        ("GET", f"{TAGS}/p7", None, ""),
    ],
    # RE2 (Go) vs Python re / Rust regex: `$` before a trailing newline, Unicode `\s`
    "duration-trailing-newline": [("POST", TAGS, paimontag("p9", timeRetained="7 d\n"), "")],
    "tag-name-ends-with-nbsp": [("POST", TAGS, paimontag("p10", tagName="nightly\u00a0"), "")],
    "tag-name-starts-with-em-space": [("POST", TAGS, paimontag("p11", tagName="\u2003nightly"), "")],
    # format: date-time is a timestamp in the API server (parsing and CEL)
    "date-time-without-zone": [("POST", TAGS, {**paimontag("p12"), "spec": {
        "tableRef": {"name": "orders"}, "fromTimestamp": "2024-07-11T10:00:00"}}, "")],
    "date-time-with-space": [("POST", TAGS, {**paimontag("p13"), "spec": {
        "tableRef": {"name": "orders"}, "fromTimestamp": "2024-07-11 10:00:00Z"}}, "")],
    "date-time-same-instant-is-no-change": [
        ("POST", TAGS, {**paimontag("p14"), "spec": {"tableRef": {"name": "orders"},
                                                    "fromTimestamp": "2024-07-11T10:00:00Z"}}, ""),
        ("PATCH", f"{TAGS}/p14", {"spec": {"fromTimestamp": "2024-07-11T12:00:00+02:00"}}, MERGE_PATCH),
        ("PATCH", f"{TAGS}/p14", {"spec": {"fromTimestamp": "2024-07-11T11:00:00Z"}}, MERGE_PATCH),
    ],
    # optimistic concurrency: a merge patch under a resourceVersion that is not the object's
    "stale-resource-version": [
        ("POST", TAGS, paimontag("p15"), ""),
        ("PATCH", f"{TAGS}/p15/status", {"metadata": {"resourceVersion": "1"}, "status": {"state": "Ready"}},
         MERGE_PATCH),
        ("PATCH", f"{TAGS}/p15", {"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}}, MERGE_PATCH),
        ("GET", f"{TAGS}/p15", None, ""),
    ],
    "rfc3339-condition-time": [
        ("POST", TAGS, paimontag("p8"), ""),
        ("PATCH", f"{TAGS}/p8/status", {"status": {"conditions": [
            {**CONDITION, "lastTransitionTime": "2026-01-01 00:00:00"}]}}, MERGE_PATCH),
    ],
}


def _seen(status: int, body: Any) -> dict[str, Any]:
    """What must agree: the code, the Status reason and message, or the object's spec, status
    presence and generation."""
    if not isinstance(body, dict):
        return {"code": status}
    if body.get("kind") == "Status":
        return {"code": status, "reason": body.get("reason"), "message": body.get("message")}
    meta = body.get("metadata") or {}
    return {"code": status, "spec": body.get("spec"), "status": body.get("status"),
            "generation": meta.get("generation"), "deleting": bool(meta.get("deletionTimestamp")),
            "finalizers": meta.get("finalizers")}


async def _run_emulator(k8s: ApiServerEmulator, steps: list[tuple[str, str, Any, str]]) -> list[dict[str, Any]]:
    seen = []
    for method, path, body, content_type in steps:
        headers = {"Content-Type": content_type or "application/json"}
        data = None if body is None else json.dumps(body)
        resp = await k8s.request(method, path, data=data, headers=headers)
        text = await resp.text()
        seen.append(_seen(resp.status, json.loads(text) if text.strip().startswith("{") else None))
    return seen


def _run_real(testenv: Testenv, steps: list[tuple[str, str, Any, str]]) -> list[dict[str, Any]]:
    rest = testenv.admin
    seen = []
    for method, path, body, content_type in steps:
        resp = rest.request(method, path, body, content_type=content_type or "application/json")
        seen.append(_seen(resp.status_code, resp.json() if resp.text.strip().startswith("{") else None))
    return seen


@pytest.mark.parametrize("probe", sorted(PROBES))
async def test_probes_agree(probe: str, k8s: ApiServerEmulator, crds: Testenv) -> None:
    crds.ensure_namespace(NS)
    steps = PROBES[probe]
    try:
        real = _run_real(crds, steps)
    finally:
        for item in (crds.admin.get(TAGS) or {}).get("items", []):
            name = item["metadata"]["name"]
            crds.admin.merge_patch(f"{TAGS}/{name}", {"metadata": {"finalizers": None}})
            crds.admin.delete(f"{TAGS}/{name}")
    emulated = await _run_emulator(k8s, steps)
    assert emulated == real
