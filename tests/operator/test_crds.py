"""The generated CRDs: names and scope, structural-schema rules, Kubernetes' own CRD schema,
agreement with the models (fields, required, defaults), printer columns, status, CEL hygiene."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any

import cel
import jsonschema
import kubernetes_validate
import pytest
from pydantic import BaseModel

from tablekeeper.core.policy import common as policy_common
from tablekeeper.core.policy import duration_field as policy_durations
from tablekeeper.core.policy.common import SpecModel
from tablekeeper.core.policy.kinds import API_GROUP, API_VERSION, CLUSTER_SCOPED, SPEC_MODELS
from tablekeeper.operator import rbac
from tablekeeper.operator.crds import kinds as crd_kinds
from tablekeeper.operator.crds import schema as crd_schema
from tablekeeper.operator.crds import validations

DESIGN_NAMES = {  # operator-design.md §2
    "PaimonCatalog": ("paimoncatalogs", "pcat", "Namespaced"),
    "ClusterPaimonCatalog": ("clusterpaimoncatalogs", "cpcat", "Cluster"),
    "PaimonTable": ("paimontables", "ptable", "Namespaced"),
    "PaimonTag": ("paimontags", "ptag", "Namespaced"),
    "PaimonBranch": ("paimonbranches", "pbranch", "Namespaced"),
    "PaimonRetentionPolicy": ("paimonretentionpolicies", "prp", "Namespaced"),
    "ClusterPaimonRetentionPolicy": ("clusterpaimonretentionpolicies", "cprp", "Cluster"),
    "PaimonMaintenanceRun": ("paimonmaintenanceruns", "pmr", "Namespaced"),
}
#: Keywords Kubernetes rejects (or that have no effect) in a structural schema.
FORBIDDEN = {"$ref", "$defs", "definitions", "anyOf", "oneOf", "allOf", "not", "patternProperties", "propertyNames",
             "dependencies", "additionalItems", "const", "title", "nullable", "uniqueItems", "$schema", "id"}
ALLOWED_FUNCTIONS = {"has", "size", "matches", "contains", "startsWith", "endsWith", "all", "exists",
                     "exists_one", "filter", "map", "int", "string"}
STRING_FUNCTIONS = re.compile(r"\b(matches|contains|startsWith|endsWith)\(")

ALL_CRDS = crd_kinds.build_crds()
BY_KIND = {crd["spec"]["names"]["kind"]: crd for crd in ALL_CRDS}


def _schema(kind: str) -> dict[str, Any]:
    return BY_KIND[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def _nodes(node: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    yield path, node
    for name, sub in node.get("properties", {}).items():
        yield from _nodes(sub, f"{path}.{name}")
    if isinstance(node.get("items"), Mapping):
        yield from _nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), Mapping):
        yield from _nodes(node["additionalProperties"], f"{path}{{}}")


def test_kinds_names_scope_and_categories() -> None:
    assert set(BY_KIND) == set(SPEC_MODELS) == set(DESIGN_NAMES)
    for kind, (plural, short, scope) in DESIGN_NAMES.items():
        crd = BY_KIND[kind]
        names = crd["spec"]["names"]
        assert crd["metadata"]["name"] == f"{plural}.{API_GROUP}"
        assert (names["plural"], names["singular"], names["listKind"]) == (plural, kind.lower(), f"{kind}List")
        assert names["shortNames"] == [short]
        assert set(names["categories"]) == {"tablekeeper", "paimon"}
        assert crd["spec"]["scope"] == scope == ("Cluster" if kind in CLUSTER_SCOPED else "Namespaced")
        assert crd["spec"]["group"] == API_GROUP
        [version] = crd["spec"]["versions"]
        assert (version["name"], version["served"], version["storage"]) == (API_VERSION, True, True)
    assert rbac.TABLEKEEPER_PLURALS == {kind: plural for kind, (plural, _, _) in DESIGN_NAMES.items()}


@pytest.mark.parametrize("kube_version", ["1.29.0", kubernetes_validate.utils.latest_version()])
@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_crd_is_valid_for_kubernetes(kind: str, kube_version: str) -> None:
    """Kubernetes' own OpenAPI schema of CustomResourceDefinition (strict: no unknown keys)."""
    kubernetes_validate.validate(BY_KIND[kind], kube_version, strict=True)


@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_schema_is_structural(kind: str) -> None:
    root = _schema(kind)
    assert root["properties"]["metadata"] == {"type": "object"}
    for path, node in _nodes(root):
        assert not FORBIDDEN & set(node), f"{kind}{path}: {FORBIDDEN & set(node)}"
        assert "type" in node, f"{kind}{path}: no type"
        assert not ("properties" in node and "additionalProperties" in node), f"{kind}{path}"
        assert node.get("additionalProperties", {}) is not False
        for name in node.get("required", ()):
            assert name in node.get("properties", {}), f"{kind}{path}: required {name} undeclared"
        if node.get("x-kubernetes-list-type") == "map":
            keys = node["x-kubernetes-list-map-keys"]
            assert set(keys) <= set(node["items"].get("required", ())), f"{kind}{path}: map keys must be required"
        if "default" in node:
            jsonschema.Draft4Validator(node).validate(node["default"])
        if path.startswith(".status"):
            continue
        assert node.get("description") or path in ("", ".apiVersion", ".kind", ".metadata") or path.endswith(
            ("[]", "{}")), f"{kind}{path}: no description"


def _aliases(model: type[BaseModel]) -> dict[str, str]:
    return {(info.alias or name): name for name, info in model.model_fields.items()}


def _compare(model: type[SpecModel], node: Mapping[str, Any], path: str) -> None:
    """The schema node of ``model`` declares exactly its fields, requires exactly its required
    ones, and recurses into nested models."""
    aliases = _aliases(model)
    assert set(node.get("properties", {})) == set(aliases), path
    required = {alias for alias, name in aliases.items() if model.model_fields[name].is_required()}
    assert set(node.get("required", ())) == required, path
    for alias, name in aliases.items():
        sub = node["properties"][alias]
        nested = [t for t in crd_schema.walk_types(model.model_fields[name].annotation)
                  if isinstance(t, type) and issubclass(t, BaseModel)]
        if nested:
            target = sub["items"] if sub["type"] == "array" else sub
            _compare(nested[0], target, f"{path}.{alias}")


@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_schema_declares_exactly_the_model_fields(kind: str) -> None:
    _compare(SPEC_MODELS[kind], _schema(kind)["properties"]["spec"], f"{kind}.spec")


@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_printer_columns(kind: str) -> None:
    columns = BY_KIND[kind]["spec"]["versions"][0]["additionalPrinterColumns"]
    by_name = {column["name"]: column for column in columns}
    assert by_name["Ready"]["jsonPath"] == '.status.conditions[?(@.type=="Ready")].status'
    assert by_name["Reason"]["priority"] == 1
    assert columns[-1] == {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
                           "description": "Time since the object was created."}
    spec = _schema(kind)["properties"]["spec"]
    for column in columns:
        if column["jsonPath"].startswith(".spec."):  # spec columns must point at real fields
            node: Mapping[str, Any] = spec
            for part in column["jsonPath"].removeprefix(".spec.").split("."):
                node = node["properties"][part]
            assert {"integer": "integer", "boolean": "boolean"}.get(node["type"], "string") == column["type"]
    status_paths = {c["jsonPath"].removeprefix(".status.") for c in columns if c["jsonPath"].startswith(".status.")}
    assert status_paths - {'conditions[?(@.type=="Ready")].status', 'conditions[?(@.type=="Ready")].reason'} == set(
        crd_kinds.STATUS_FIELDS[kind])


@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_status_subresource_and_schema(kind: str) -> None:
    version = BY_KIND[kind]["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    status = _schema(kind)["properties"]["status"]
    assert status["x-kubernetes-preserve-unknown-fields"] is True
    conditions = status["properties"]["conditions"]
    assert (conditions["x-kubernetes-list-type"], conditions["x-kubernetes-list-map-keys"]) == ("map", ["type"])
    assert conditions["items"] == crd_kinds.CONDITION_SCHEMA


def _rules(kind: str) -> Iterator[tuple[str, Mapping[str, Any], Mapping[str, str]]]:
    for path, node in _nodes(_schema(kind)):
        for rule in node.get("x-kubernetes-validations", ()):
            yield path, node, rule


@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_cel_rules_compile_and_use_only_portable_functions(kind: str) -> None:
    for path, _, rule in _rules(kind):
        program = cel.compile(rule["rule"])
        assert set(program.variables()) <= {"self", "oldSelf", "k", "r", "s", "x"}, (path, rule)
        called = set(re.findall(r"([A-Za-z_]+)\(", re.sub(r"'(\\.|[^'])*'", "''", rule["rule"])))
        assert called <= ALLOWED_FUNCTIONS, f"{kind}{path}: {called - ALLOWED_FUNCTIONS} in {rule['rule']}"
        assert rule["message"] and "rule" in rule


@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_cel_cost_hygiene(kind: str) -> None:
    """String functions and comparisons only on strings with a bounded length, rules on list items
    only in bounded lists (the API server estimates rule cost from maxLength/maxItems; unbounded
    ones can push a rule over its budget and the CRD is refused)."""
    for path, node in _nodes(_schema(kind)):
        if node.get("type") == "array" and node["items"].get("x-kubernetes-validations"):
            assert node.get("maxItems"), f"{kind}{path}: list items have CEL rules but the list has no maxItems"
    for path, node, rule in _rules(kind):
        uses_strings = STRING_FUNCTIONS.search(rule["rule"])
        if uses_strings and node["type"] == "string":
            assert 0 < node.get("maxLength", 0) <= validations.TEXT_MAX_LENGTH, f"{kind}{path}: no maxLength"
        if node["type"] == "object" and "[]" in path:  # comparisons run once per list item
            for name in re.findall(r"self\.(\w+) (?:==|!=|in) ", rule["rule"]):
                sub = node["properties"][name]
                assert sub["type"] != "string" or 0 < sub.get("maxLength", 0) <= validations.TEXT_MAX_LENGTH, (
                    f"{kind}{path}.{name}: compared by CEL without maxLength")
        if uses_strings and node["type"] == "object":
            assert "self.metadata.name" in rule["rule"] or not re.search(r"self\.\w+\.(matches|contains)", rule["rule"])


def test_generator_refuses_unions() -> None:
    class Bad(SpecModel):
        value: int | str

    with pytest.raises(crd_schema.CRDGenerationError, match="union of 2 types"):
        crd_schema.Translator(Bad).translate()


@pytest.mark.parametrize("floor", [timedelta(hours=1), timedelta(minutes=1), timedelta(days=1),
                                   timedelta(minutes=90), timedelta(milliseconds=1500)])
def test_duration_floor_regex_agrees_with_the_duration_parser(floor: timedelta) -> None:
    pattern = re.compile(validations.duration_at_least_regex(floor))
    for unit in ("ms", "s", "min", "h", "d"):
        for amount in [*range(130), 1439, 1440, 1441, 3599, 3600, 3601, 86399, 86400, 86401, 3599999, 3600000]:
            for text in (f"{amount} {unit}", f"{amount}{unit}", f"00{amount} {unit}"):
                expected = policy_durations.Duration(text).to_timedelta() >= floor
                assert bool(pattern.match(text)) == expected, text


def test_zone_pattern_is_the_models() -> None:
    assert validations.ZONE_PATTERN == policy_common._ZONE_SHAPE.pattern


def test_every_rule_target_exists() -> None:
    for (model, field), _ in [*validations.FIELD_RULES.items(), *validations.FIELD_SCHEMA.items()]:
        assert field in model.model_fields, (model, field)
    for model, fields in validations.IMMUTABLE_FIELDS.items():
        assert set(fields) <= set(model.model_fields), model


@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_transition_rules_only_where_kubernetes_can_correlate(kind: str) -> None:
    """The API server refuses ``oldSelf`` under atomic lists (items cannot be matched to old ones)."""
    for path, _, rule in _rules(kind):
        if "oldSelf" in rule["rule"]:
            assert "[]" not in path, f"{kind}{path}: transition rule inside a list"
