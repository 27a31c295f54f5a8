"""Pydantic JSON schema of a spec model -> Kubernetes structural schema (the CRD ``spec``).

``$ref``/``$defs`` inlined, ``Optional[X]`` -> ``X`` (not required, not nullable), ``Literal`` ->
``enum``, patterns/bounds/formats/descriptions kept, titles and ``additionalProperties: false``
dropped, non-empty defaults kept; :mod:`tablekeeper.operator.crds.validations` adds the CEL rules and
refinements. Anything the translation cannot express raises :class:`CRDGenerationError` instead
of producing a schema Kubernetes would reject. See :mod:`tablekeeper.operator.crds.generate`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, get_args

from pydantic import BaseModel

from tablekeeper.core.policy import SPEC_MODELS, SpecModel
from tablekeeper.operator.crds import validations

__all__ = ["CRDGenerationError", "spec_schema", "model_classes", "walk_types", "Translator", "ordered"]

_MISSING = object()


class CRDGenerationError(Exception):
    """A model's JSON schema has a construct that a structural CRD schema cannot express."""




# --- JSON schema -> structural schema --------------------------------------------------------------

_VALUE_KEYWORDS = frozenset({
    "type", "format", "enum", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "multipleOf",
})
_MODEL_KEYWORDS = frozenset({"type", "title", "description", "properties", "required", "additionalProperties"})
_KEY_ORDER = (
    "description", "type", "format", "enum", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "default",
    "properties", "required", "items", "additionalProperties", "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-validations",
)


def _clean_text(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("``", "`")).strip()


def walk_types(annotation: Any) -> Iterator[Any]:
    yield annotation
    for arg in get_args(annotation):
        yield from walk_types(arg)


def model_classes(root: type[BaseModel]) -> dict[str, type[SpecModel]]:
    """Every model reachable from ``root``, by class name (the pydantic ``$defs`` key)."""
    found: dict[str, type[SpecModel]] = {}
    stack: list[type[BaseModel]] = [root]
    while stack:
        klass = stack.pop()
        known = found.get(klass.__name__)
        if known is klass:
            continue
        if known is not None:
            raise CRDGenerationError(f"two models are named {klass.__name__}: {known} and {klass}")
        if not issubclass(klass, SpecModel):
            raise CRDGenerationError(f"{klass} is not a SpecModel")
        found[klass.__name__] = klass
        for info in klass.model_fields.values():
            stack.extend(t for t in walk_types(info.annotation) if isinstance(t, type) and issubclass(t, BaseModel))
    return found


def ordered(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    unknown = [key for key in node if key not in _KEY_ORDER]
    if unknown:
        raise CRDGenerationError(f"unexpected keys {unknown} in a generated schema node")
    out: dict[str, Any] = {}
    for key in _KEY_ORDER:
        if key not in node:
            continue
        value = node[key]
        if key == "properties":
            value = {name: ordered(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties"):
            value = ordered(value)
        out[key] = value
    return out


class Translator:
    """Turns one spec model's pydantic JSON schema into a structural schema."""

    def __init__(self, model: type[SpecModel]) -> None:
        self.model = model
        self.raw = model.model_json_schema(by_alias=True, mode="validation")
        self.defs: dict[str, Any] = self.raw.get("$defs", {})
        self.classes = model_classes(model)
        missing = sorted(set(self.defs) - set(self.classes))
        if missing:
            raise CRDGenerationError(f"{model.__name__}: $defs without a known model class: {missing}")

    def translate(self) -> dict[str, Any]:
        return self._model(self.model, self.raw)

    def _model(self, model: type[SpecModel], raw: Mapping[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(raw) - _MODEL_KEYWORDS - {"$defs"})
        if unknown:
            raise CRDGenerationError(f"{model.__name__}: unsupported keywords {unknown}")
        out: dict[str, Any] = {"type": "object"}
        if raw.get("description"):
            out["description"] = _clean_text(raw["description"])
        aliases = {(info.alias or name): name for name, info in model.model_fields.items()}
        properties: dict[str, Any] = {}
        for alias, prop in raw.get("properties", {}).items():
            name = aliases[alias]
            node = self._field(prop, f"{model.__name__}.{alias}")
            node.update(validations.schema_for_field(model, name))
            rules = [rule.to_schema() for rule in validations.rules_for_field(model, name)]
            if rules:
                node["x-kubernetes-validations"] = node.get("x-kubernetes-validations", []) + rules
            properties[alias] = node
        if properties:
            out["properties"] = properties
        if raw.get("required"):
            out["required"] = list(raw["required"])
        rules = [rule.to_schema() for rule in validations.rules_for_model(model)]
        if rules:
            out["x-kubernetes-validations"] = rules
        return out

    def _field(self, prop: Mapping[str, Any], where: str) -> dict[str, Any]:
        node = {key: value for key, value in prop.items() if key != "title"}
        if "anyOf" in node:
            branches = [branch for branch in node.pop("anyOf") if branch != {"type": "null"}]
            if len(branches) != 1:
                raise CRDGenerationError(f"{where}: a union of {len(branches)} types has no structural schema")
            if node.get("default", _MISSING) is None:
                del node["default"]
            node = {**branches[0], **node}  # outer keys (description, bounds) win
        if "allOf" in node and len(node["allOf"]) == 1:
            node = {**node.pop("allOf")[0], **node}
        if "$ref" in node:
            name = node.pop("$ref").rsplit("/", 1)[-1]
            out = self._model(self.classes[name], self.defs[name])
            default = node.pop("default", None)
            if node.get("description"):
                out["description"] = _clean_text(node.pop("description"))
            node.pop("title", None)
            if node:
                raise CRDGenerationError(f"{where}: unsupported keywords next to $ref: {sorted(node)}")
            if default not in (None, {}, []):
                out["default"] = default
            return out
        out = {}
        for key, value in node.items():
            if key == "description":
                out[key] = _clean_text(value)
            elif key in _VALUE_KEYWORDS:
                out[key] = value
            elif key == "const":
                out["enum"] = [value]
            elif key == "default":
                if value not in (None, {}, []):
                    out[key] = value
            elif key == "items":
                out[key] = self._field(value, f"{where}[]")
            elif key == "additionalProperties":
                if isinstance(value, Mapping):
                    out[key] = self._field(value, f"{where}{{}}")
            elif key == "patternProperties":
                if len(value) != 1:
                    raise CRDGenerationError(f"{where}: several patternProperties")
                out["additionalProperties"] = self._field(next(iter(value.values())), f"{where}{{}}")
            elif key == "propertyNames":
                continue  # no structural equivalent: key syntax is checked by the model
            else:
                raise CRDGenerationError(f"{where}: unsupported keyword {key!r}")
        if "type" not in out:
            raise CRDGenerationError(f"{where}: no type")
        return out


def spec_schema(kind: str) -> dict[str, Any]:
    """The structural schema of ``kind``'s ``spec`` (with the kind-level rules).

    Raises:
        CRDGenerationError: when the model's JSON schema cannot be expressed.
    """
    schema = Translator(SPEC_MODELS[kind]).translate()
    if kind in validations.IMMUTABLE_SPEC_KINDS:
        schema.setdefault("x-kubernetes-validations", []).append(
            {"rule": "self == oldSelf", "message": f"spec is immutable: create a new {kind} instead"})
    return schema
