"""Sample CRs against the generated CRDs (schema + CEL, through the emulator's admission code)
and against the models.

- ``data/valid/*.yaml`` and every tablekeeper object in ``examples/``: admitted (pruned,
  defaulted, validated) without error, nothing pruned, and the model parses the spec to the same
  value before and after the API server's defaulting (CRD defaults = model defaults).
- ``data/invalid/*.yaml``: rejected with exactly the message a cluster gives (annotation
  ``test.tablekeeper.io/expect``: the part after ``is invalid: ``), and rejected by the models too
  unless annotated ``test.tablekeeper.io/model: accepts``.
- ``data/transitions.yaml``: updates checked by the transition (``oldSelf``) rules.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kmock
import pytest
import yaml

from tablekeeper.core import errors
from tablekeeper.core.policy import parse_spec
from tablekeeper.core.policy.kinds import API_GROUP_VERSION, CLUSTER_SCOPED
from tablekeeper.core.policy.specs import PaimonBranchSpec, PaimonTagSpec
from tests.support.k8s import REPO_ROOT, CRDValidator, merge_patch

DATA = Path(__file__).parent / "data"
EXAMPLES = REPO_ROOT / "examples"
EXPECT = "test.tablekeeper.io/expect"
MODEL = "test.tablekeeper.io/model"


#: Examples known not to be valid Kubernetes objects, by test id, with the reason. The xfail is
#: strict: once the example is fixed the test reports XPASS and the entry must be removed.
KNOWN_EXAMPLE_GAPS: dict[str, str] = {}


def _documents(paths: list[Path]) -> list[Any]:
    params = []
    for path in paths:
        for index, doc in enumerate(yaml.safe_load_all(path.read_text(encoding="utf-8"))):
            if isinstance(doc, dict) and doc.get("apiVersion") == API_GROUP_VERSION:
                name = doc.get("metadata", {}).get("name", index)
                test_id = f"{path.relative_to(REPO_ROOT)}:{doc['kind']}/{name}"
                marks = [pytest.mark.xfail(strict=True, raises=kmock.KubernetesError,
                                           reason=KNOWN_EXAMPLE_GAPS[test_id])] if test_id in KNOWN_EXAMPLE_GAPS else []
                params.append(pytest.param(doc, id=test_id, marks=marks))
    return params


VALID = _documents(sorted((DATA / "valid").glob("*.yaml")))
INVALID = _documents(sorted((DATA / "invalid").glob("*.yaml")))
EXAMPLE_FILES = sorted(EXAMPLES.rglob("*.yaml")) + sorted(EXAMPLES.rglob("*.yml")) if EXAMPLES.is_dir() else []
EXAMPLE_DOCS = _documents(EXAMPLE_FILES)
TRANSITIONS = yaml.safe_load((DATA / "transitions.yaml").read_text(encoding="utf-8"))


def _placed(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy as the API server receives it: namespaced objects get a namespace (from the URL)."""
    obj = copy.deepcopy(doc)
    if obj["kind"] not in CLUSTER_SCOPED:
        obj.setdefault("metadata", {}).setdefault("namespace", "default")
    return obj


def _model_check(doc: dict[str, Any]) -> None:
    """Everything the operator will check when it parses the object."""
    spec = parse_spec(doc["kind"], doc.get("spec") or {}, source=f"{doc['kind']}/{doc['metadata']['name']}")
    if isinstance(spec, PaimonTagSpec):
        spec.resolved_tag_name(doc["metadata"]["name"])
    if isinstance(spec, PaimonBranchSpec):
        spec.resolved_branch_name(doc["metadata"]["name"])


def _assert_admitted(validator: CRDValidator, doc: dict[str, Any]) -> None:
    obj = _placed(doc)
    before = copy.deepcopy(obj)
    validator.admit(obj, None, strict=True)  # strict: an unknown field would fail here
    _model_check(doc)
    original = parse_spec(doc["kind"], before.get("spec") or {}, source="original")
    defaulted = parse_spec(doc["kind"], obj.get("spec") or {}, source="defaulted")
    assert defaulted == original, "the CRD's defaults differ from the model's"


@pytest.mark.parametrize("doc", VALID)
def test_valid_samples_are_admitted(doc: dict[str, Any], crd_validators: dict[str, CRDValidator]) -> None:
    _assert_admitted(crd_validators[doc["kind"]], doc)


def test_every_kind_has_valid_and_invalid_samples(crd_validators: dict[str, CRDValidator]) -> None:
    kinds = set(crd_validators)
    assert {p.values[0]["kind"] for p in VALID} == kinds
    assert {p.values[0]["kind"] for p in INVALID} == kinds


@pytest.mark.parametrize("doc", INVALID)
def test_invalid_samples_are_rejected_like_a_cluster(doc: dict[str, Any],
                                                      crd_validators: dict[str, CRDValidator]) -> None:
    obj = _placed(doc)
    with pytest.raises(kmock.KubernetesError) as info:
        crd_validators[doc["kind"]].admit(obj, None)
    err = info.value
    name = doc["metadata"]["name"]
    assert (err.status, err.reason) == (422, "Invalid")
    assert err.message == f'{doc["kind"]}.tablekeeper.io "{name}" is invalid: {doc["metadata"]["annotations"][EXPECT]}'
    assert err.details["kind"] == doc["kind"] and err.details["causes"]


@pytest.mark.parametrize("doc", INVALID)
def test_invalid_samples_are_rejected_by_the_models(doc: dict[str, Any]) -> None:
    if doc["metadata"]["annotations"].get(MODEL) == "accepts":
        _model_check(doc)
        return
    with pytest.raises((errors.TablekeeperError, ValueError)):
        _model_check(doc)


@pytest.mark.parametrize("case", TRANSITIONS, ids=[case["name"] for case in TRANSITIONS])
def test_transition_rules(case: dict[str, Any], crd_validators: dict[str, CRDValidator]) -> None:
    validator = crd_validators[case["old"]["kind"]]
    old = validator.admit(_placed(case["old"]))
    new = merge_patch(old, case["patch"])
    if case["expect"] is None:
        validator.admit(new, old)
        return
    with pytest.raises(kmock.KubernetesError) as info:
        validator.admit(new, old)
    kind, name = old["kind"], old["metadata"]["name"]
    assert info.value.message == f'{kind}.tablekeeper.io "{name}" is invalid: {case["expect"]}'


@pytest.mark.skipif(not EXAMPLE_DOCS, reason="no tablekeeper objects in examples/ yet")
@pytest.mark.parametrize("doc", EXAMPLE_DOCS or [None])
def test_examples_are_admitted(doc: dict[str, Any], crd_validators: dict[str, CRDValidator]) -> None:
    _assert_admitted(crd_validators[doc["kind"]], doc)
