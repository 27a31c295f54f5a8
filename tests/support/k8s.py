"""pytest plugin: a Kubernetes API server emulator for Kopf, with CRD admission (schema + CEL).

Adapted from test-recipes.md, Recipe 1 (kmock 0.8 ``KubernetesEmulator`` subclass, thread-run
Kopf, ``CRDValidator``). Registered from ``tests/conftest.py`` (``pytest_plugins``).

What the emulator adds to kmock 0.8 (each gap is described in the recipe):

- metadata a real API server manages: ``namespace`` from the URL, ``generateName``, ``uid``,
  ``creationTimestamp``, ``resourceVersion`` on every write (and deletion), ``generation`` bumped on
  spec changes only;
- LIST with a real ``resourceVersion`` and watches that replay exactly the changes after it;
- ``GET /api/v1/namespaces/<name>`` (kmock parses that path as a namespaced list and answers 500);
- a new ``resourceVersion`` on ``/status`` merge-patches too (the old and new objects must not
  share their metadata dict, or the merge diff loses the version and Kopf's finalizer patches then
  fail their ``resourceVersion`` test);
- 422 (not 500) for failed JSON-patch ``test`` operations; 201 (not 200) for creations;
- 409 ``Conflict`` for a merge patch whose ``metadata.resourceVersion`` is not the object's (the
  API server's optimistic-concurrency precondition, on ``/status`` too);
- :attr:`ApiServerEmulator.watches_held`: while true, watch streams deliver nothing (the events
  wait, in order), as a real API server's watch may lag behind its writes;
  :attr:`~ApiServerEmulator.hold_watches_from` sets it at the first write it matches;
- admission *before* anything is stored or broadcast, for every resource with a CRD:
  the status subresource is isolated (a main-resource write keeps the old status, a ``/status``
  write changes only status, a create drops status), unknown fields are pruned (or rejected with
  400 under ``?fieldValidation=Strict``, as ``kubectl`` sends), nulls of non-nullable fields
  are dropped, defaults are applied, then ``metadata.name``, the OpenAPI schema, list types and
  the CEL rules are checked; a failure answers 422 ``Invalid`` with the API server's message
  shape, e.g. ``PaimonTag.tablekeeper.io "x" is invalid: spec: Invalid value: "object": ...``.

Still not emulated: label/field selectors, PUT, CEL cost limits, ratcheting, format checks other
than ``date-time``, and Kubernetes' CEL extension libraries (the rules must not use them).

Fixtures
- ``tablekeeper_crds`` (session): the checked-in CRDs of ``crds/`` (kept current by
  ``tests/operator/test_crds_current.py``).
- ``crd_validators`` (session): ``{kind: CRDValidator}`` for those CRDs.
- ``k8s``: a running :class:`ApiServerEmulator` with every tablekeeper resource registered (from
  the CRDs, with their validators), plus ``v1/events``, ``v1/namespaces``, ``v1/secrets`` and the
  CRD resource itself (the CRD objects are stored in it).
- ``operator_settings``: the operator's production settings (``tablekeeper.operator.main``)
  adjusted for tests (no peering, no scanning, short watch timeouts).
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import itertools
import json
import re
import secrets
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp.web
import attrs
import cel
import jsonpatch
import jsonpointer
import jsonschema
import kmock
import kopf
import pytest
import yaml

from tablekeeper.core.policy.kinds import API_GROUP, API_VERSION

__all__ = [
    "REPO_ROOT",
    "CRD_DIR",
    "VERBS",
    "EVENTS",
    "NAMESPACES",
    "SECRETS",
    "CRDS",
    "ApiServerEmulator",
    "OperatorEmulator",
    "CRDValidator",
    "OperatorThread",
    "Validator",
    "eventually",
    "load_crds",
    "merge_patch",
    "merge_diff",
    "register_crds",
    "resource_of",
    "url_of",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = REPO_ROOT / "crds"
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}
EVENTS = kmock.resource("", "v1", "events")
NAMESPACES = kmock.resource("", "v1", "namespaces")
SECRETS = kmock.resource("", "v1", "secrets")
CRDS = kmock.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")

Validator = Callable[[dict[str, Any], dict[str, Any] | None], None]  # (new, old) -> raise on error

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_BLOCKING = frozenset({"FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany",
                       "FieldValueTypeInvalid"})
_PATCH_REJECTED = "the server rejected our request due to an error in our request"  # a failed JSON-patch test
_NAMESPACE_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/?$")
_ROOT_KEYS = frozenset({"apiVersion", "kind", "metadata"})


# --- small helpers -----------------------------------------------------------------------------------

def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 merge patch (``None`` deletes, lists are replaced)."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def merge_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A merge patch that turns ``old`` into ``new`` (``new`` has no ``None`` values)."""
    diff: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            sub = merge_diff(before, value)
            if sub:
                diff[key] = sub
        elif key not in old or before != value:
            diff[key] = copy.deepcopy(value)
    return diff


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def resource_of(crd: Mapping[str, Any]) -> kmock.resource:
    """The kmock resource of a CRD's storage version."""
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("storage"))
    return kmock.resource(spec["group"], version, spec["names"]["plural"])


def url_of(plural: str, namespace: str | None = None, name: str | None = None, *,
           group: str = API_GROUP, version: str = API_VERSION) -> str:
    """The API path of a collection or object: ``/apis/<group>/<version>[/namespaces/<ns>]/<plural>[/<name>]``."""
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{base}{scope}/{plural}" + (f"/{name}" if name else "")


def load_crds(directory: Path = CRD_DIR) -> list[dict[str, Any]]:
    """Every CRD in ``directory`` (``*.yaml``, one CRD per file)."""
    return [yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted(directory.glob("*.yaml"))]


async def eventually(fn: Callable[[], Any], timeout: float = 10, interval: float = 0.05) -> Any:
    """Poll ``fn`` (sync or async) until it returns something truthy; fail after ``timeout``."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = fn()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met in {timeout}s: last result {result!r}")
        await asyncio.sleep(interval)


# --- admission: the CRD's schema and CEL rules ------------------------------------------------------

def _check_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return "T" in value.upper() and parsed.tzinfo is not None


_FORMATS = jsonschema.FormatChecker(formats=())
_FORMATS.checks("date-time")(_check_date_time)

# RE2 (Go: OpenAPI ``pattern`` and cel-go ``matches``) is not Python's ``re`` nor Rust's ``regex``
# (the ``cel`` package): its ``\s \d \w`` are ASCII (``\s`` = [\t\n\f\r ], no \v, no NBSP), and ``$``
# without (?m) matches only at the very end (Python's also before a final newline).
_RE2_CLASSES = {"s": r"\t\n\f\r ", "d": "0-9", "w": "0-9A-Za-z_"}


def re2_semantics(pattern: str, *, python: bool) -> str:
    """``pattern`` rewritten so that Python's ``re`` (``python``) or Rust's ``regex`` matches what
    Go's RE2 matches: ASCII Perl classes, and (Python) ``$`` as end of text."""
    out, in_class, i = [], False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt.lower() in _RE2_CLASSES:
                body = _RE2_CLASSES[nxt.lower()]
                if in_class:
                    out.append(body if nxt.islower() else pattern[i:i + 2])  # negated inside a class: kept
                else:
                    out.append(f"[{body}]" if nxt.islower() else f"[^{body}]")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = char != "]" or out[-1] == "["
        elif char == "[":
            in_class = True
        elif char == "$" and python:
            char = "\\Z"
        out.append(char)
        i += 1
    return "".join(out)


def _pattern_re2(validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    if isinstance(instance, str) and not re.search(re2_semantics(pattern, python=True), instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


_Draft4RE2 = jsonschema.validators.extend(jsonschema.Draft4Validator, {"pattern": _pattern_re2})
_CEL_MATCHES = re.compile(r"""matches\(\s*'((?:\\.|[^'\\])*)'\s*\)""")


def _cel_re2(rule: str) -> str:
    """The rule with the regex literal of every ``matches('...')`` given RE2 semantics."""
    def fix(match: re.Match[str]) -> str:
        regex = match.group(1).replace("\\\\", "\\")
        literal = re2_semantics(regex, python=False).replace("\\", "\\\\").replace("'", "\\'")
        return f"matches('{literal}')"
    return _CEL_MATCHES.sub(fix, rule)


def _cel_typed(schema: Mapping[str, Any], value: Any) -> Any:
    """``value`` as the API server's CEL sees it: ``format: date-time`` strings are timestamps."""
    if isinstance(value, str) and schema.get("format") == "date-time":
        try:
            return datetime.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            return value
    if isinstance(value, Mapping):
        props, extra = schema.get("properties", {}), schema.get("additionalProperties")
        return {k: _cel_typed(props.get(k) or (extra if isinstance(extra, Mapping) else {}), v)
                for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [_cel_typed(schema["items"], v) for v in value]
    return value


def _field_path(parts: Sequence[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _shown(value: Any) -> str:
    if isinstance(value, Mapping):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    return json.dumps(value)


def _json_type(value: Any) -> str:
    for name, types in (("boolean", bool), ("integer", int), ("number", float), ("string", str),
                        ("object", Mapping), ("array", list)):
        if isinstance(value, types):
            return name
    return "null"


def _cause(reason: str, field: str, message: str) -> dict[str, str]:
    return {"reason": reason, "field": field, "message": message}


def _schema_cause(err: jsonschema.ValidationError) -> dict[str, str]:
    """One kube-openapi error in the API server's words (apiextensions-apiserver's
    ``kubeOpenAPIResultToFieldErrors``; wording as of Kubernetes 1.30+)."""
    field = _field_path(list(err.absolute_path))
    value, limit, where = err.instance, err.validator_value, field or "<nil>"
    # status is validated on its own (only /status writes carry one): "in body" paths start below it
    where = where.removeprefix("status.")
    if err.validator == "required":
        match = re.match(r"^'(.*)' is a required property$", err.message)
        missing = match.group(1) if match else "?"
        return _cause("FieldValueRequired", f"{field}.{missing}" if field else missing, "Required value")
    if err.validator == "enum":
        supported = ", ".join(json.dumps(v) for v in limit)
        return _cause("FieldValueNotSupported", field, f"Unsupported value: {_shown(value)}: supported values: {supported}")
    if err.validator == "type":
        got = _json_type(value)
        return _cause("FieldValueTypeInvalid", field, f'Invalid value: "{got}": {where} in body must be of type {limit}: "{got}"')
    if err.validator == "maxLength":
        return _cause("FieldValueTooLong", field, f"Too long: may not be more than {limit} bytes")
    if err.validator == "maxItems":
        return _cause("FieldValueTooMany", field, f"Too many: {len(value)}: must have at most {limit} items")
    texts = {
        "pattern": f"should match '{limit}'",
        "minimum": f"should be greater than or equal to {limit}",
        "maximum": f"should be less than or equal to {limit}",
        "minLength": f"should be at least {limit} chars long",
        "minItems": f"should have at least {limit} items",
        "format": f"must be of type {limit}: {_shown(value)}",
    }
    detail = texts.get(str(err.validator), err.message)
    reason = "FieldValueTypeInvalid" if err.validator == "format" else "FieldValueInvalid"  # a format is a type
    return _cause(reason, field, f"Invalid value: {_shown(value)}: {where} in body {detail}")


class CRDValidator:
    """Admission for one CRD version: pruning, defaulting, schema, list types and CEL rules.

    ``validator(new, old)`` raises ``kmock.KubernetesError(422)`` when the object is invalid (the
    recipe's interface); :meth:`admit` first prunes and defaults ``new`` in place as the API server
    does; :meth:`causes` returns the problems without raising.
    """

    def __init__(self, crd: Mapping[str, Any], version: str | None = None) -> None:
        spec = crd["spec"]
        ver = next(v for v in spec["versions"] if version is None or v["name"] == version)
        self.group: str = spec["group"]
        self.version: str = ver["name"]
        self.kind: str = spec["names"]["kind"]
        self.namespaced: bool = spec["scope"] == "Namespaced"
        self.status_subresource: bool = "status" in (ver.get("subresources") or {})
        self.schema: dict[str, Any] = ver["schema"]["openAPIV3Schema"]
        self.jsonschema = _Draft4RE2(self.schema, format_checker=_FORMATS)  # OpenAPI 3.0 ≈ draft 4, RE2 patterns
        self._programs: dict[str, Any] = {}
        self.has_rules: bool = "x-kubernetes-validations" in json.dumps(self.schema)

    # -- mutation ----------------------------------------------------------------------------------

    def admit(self, new: dict[str, Any], old: dict[str, Any] | None = None, *, strict: bool = False) -> dict[str, Any]:
        """Prune, default and validate ``new`` in place (create: ``old`` is None).

        Raises:
            kmock.KubernetesError: 400 for unknown fields under ``strict``, 422 when invalid.
        """
        unknown = list(self._prune(self.schema, new, [], root=True))
        if unknown and strict:
            fields = ", ".join(f'unknown field "{path}"' for path in unknown)
            raise kmock.KubernetesError(
                status=400, reason="BadRequest",
                message=f'{self.kind} in version "{self.version}" cannot be handled as a {self.kind}: '
                        f"strict decoding error: {fields}",
            )
        self._default(self.schema, new)
        self(new, old)
        return new

    def _prune(self, schema: Mapping[str, Any], value: Any, path: list[Any], *, root: bool = False) -> Iterator[str]:
        if isinstance(value, dict) and schema.get("type") == "object":
            properties = schema.get("properties", {})
            extra = schema.get("additionalProperties")
            keep_unknown = schema.get("x-kubernetes-preserve-unknown-fields") or isinstance(extra, Mapping)
            for key in list(value):
                if root and key in _ROOT_KEYS:
                    continue
                sub = properties.get(key, extra if isinstance(extra, Mapping) else None)
                if sub is None:
                    if not keep_unknown:
                        del value[key]
                        yield _field_path([*path, key])
                elif value[key] is None and not sub.get("nullable"):
                    del value[key]  # nulls of non-nullable fields are dropped
                else:
                    yield from self._prune(sub, value[key], [*path, key])
        elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
            for index, item in enumerate(value):
                yield from self._prune(schema["items"], item, [*path, index])

    def _default(self, schema: Mapping[str, Any], value: Any) -> None:
        if isinstance(value, dict) and schema.get("type") == "object":
            for key, sub in schema.get("properties", {}).items():
                if key not in value and "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
                if key in value:
                    self._default(sub, value[key])
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping):
                for key in value:
                    if key not in schema.get("properties", {}):
                        self._default(extra, value[key])
        elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
            for item in value:
                self._default(schema["items"], item)

    # -- validation --------------------------------------------------------------------------------

    def __call__(self, new: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        causes = self.causes(new, old)
        if causes:
            name = new.get("metadata", {}).get("name")
            texts = [f"{c['field'] or '<nil>'}: {c['message']}" for c in causes]  # '<nil>': as Kubernetes prints it
            aggregate = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
            raise kmock.KubernetesError(
                status=422, reason="Invalid",
                message=f'{self.kind}.{self.group} "{name}" is invalid: {aggregate}',
                details={"name": name, "group": self.group, "kind": self.kind, "causes": causes},
            )

    def causes(self, new: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
        """Every problem of ``new`` (given the stored ``old`` on updates), as Status causes."""
        causes = list(self._metadata_causes(new.get("metadata") or {}))
        schema_causes = [_schema_cause(err) for err in self.jsonschema.iter_errors(new)]
        causes += schema_causes
        causes += list(self._list_type_causes(self.schema, new, []))
        # kube-apiserver (apiextensions' hasBlockingErr) skips the CEL rules only after a blocking
        # schema error, and says so; after others (pattern, minimum, ...) the rules still run.
        if any(c["reason"] in _BLOCKING for c in schema_causes):
            if self.has_rules:
                causes.append(_cause("FieldValueInvalid", "", "Invalid value: null: some validation rules were "
                                     "not checked because the object was invalid; correct the existing errors to "
                                     "complete validation"))
        else:
            causes += list(self._cel_causes(self.schema, new, old, []))
        return causes

    def _metadata_causes(self, meta: Mapping[str, Any]) -> Iterator[dict[str, str]]:
        name = meta.get("name")
        if not name:
            yield _cause("FieldValueRequired", "metadata.name", "Required value: name or generateName is required")
        elif not (len(name) <= 253 and _DNS1123_SUBDOMAIN.match(name)):
            yield _cause(
                "FieldValueInvalid", "metadata.name",
                f"Invalid value: {json.dumps(name)}: a lowercase RFC 1123 subdomain must consist of lower case "
                "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'example.com', regex used for validation is "
                r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            )
        if self.namespaced and not meta.get("namespace"):
            yield _cause("FieldValueRequired", "metadata.namespace", "Required value")

    def _list_type_causes(self, schema: Mapping[str, Any], value: Any, path: list[Any]) -> Iterator[dict[str, str]]:
        if isinstance(value, list):
            items = schema.get("items")
            list_type = schema.get("x-kubernetes-list-type")
            if list_type in ("map", "set"):
                keys = schema.get("x-kubernetes-list-map-keys", [])
                seen: list[Any] = []
                for index, item in enumerate(value):
                    key = [item.get(k) for k in keys] if list_type == "map" and isinstance(item, Mapping) else item
                    if key in seen:
                        shown = json.dumps({k: item.get(k) for k in keys} if list_type == "map" else item,
                                           separators=(",", ":"))  # Go's compact JSON
                        yield _cause("FieldValueDuplicate", _field_path([*path, index]), f"Duplicate value: {shown}")
                    seen.append(key)
            if isinstance(items, Mapping):
                for index, item in enumerate(value):
                    yield from self._list_type_causes(items, item, [*path, index])
        elif isinstance(value, Mapping):
            for key, sub in schema.get("properties", {}).items():
                if key in value:
                    yield from self._list_type_causes(sub, value[key], [*path, key])

    def _program(self, rule: str) -> Any:
        program = self._programs.get(rule)
        if program is None:
            program = self._programs[rule] = cel.compile(_cel_re2(rule))
        return program

    def _cel_causes(self, schema: Mapping[str, Any], value: Any, old: Any, path: list[Any]) -> Iterator[dict[str, str]]:
        for rule in schema.get("x-kubernetes-validations", ()):
            program = self._program(rule["rule"])
            if "oldSelf" in program.variables() and old is None:
                continue  # transition rules run on updates with an old value only
            typed, typed_old = _cel_typed(schema, value), _cel_typed(schema, old)
            variables = {"self": typed} if old is None else {"self": typed, "oldSelf": typed_old}
            try:
                ok = program.execute(variables)
                message = rule.get("message") or f"failed rule: {rule['rule']}"
            except Exception as err:  # e.g. KeyError for a missing field read without has()
                ok, message = False, f"rule {rule['rule']!r} failed to evaluate: {err!r}"
            if ok is not True:
                yield _cause("FieldValueInvalid", _field_path(path),
                             f'Invalid value: "{schema.get("type", "object")}": {message}')
        if isinstance(value, Mapping):
            for key, sub in schema.get("properties", {}).items():
                if key in value:
                    sub_old = old.get(key) if isinstance(old, Mapping) else None
                    yield from self._cel_causes(sub, value[key], sub_old, [*path, key])
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping):
                for key, item in value.items():
                    if key not in schema.get("properties", {}):
                        sub_old = old.get(key) if isinstance(old, Mapping) else None
                        yield from self._cel_causes(extra, item, sub_old, [*path, key])
        if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
            keys = schema.get("x-kubernetes-list-map-keys", [])
            old_items: dict[str, Any] = {}
            if schema.get("x-kubernetes-list-type") == "map" and isinstance(old, list):
                old_items = {json.dumps([o.get(k) for k in keys]): o for o in old if isinstance(o, Mapping)}
            for index, item in enumerate(value):
                sub_old = old_items.get(json.dumps([item.get(k) for k in keys])) if isinstance(item, Mapping) else None
                yield from self._cel_causes(schema["items"], item, sub_old, [*path, index])


# --- the emulator --------------------------------------------------------------------------------------

@attrs.mutable(weakref_slot=True)
class _JournalingBus(kmock.Bus[dict[str, Any]]):
    next_version: Callable[[], str] = attrs.field(kw_only=True)
    journal: list[dict[str, Any]] = attrs.field(factory=list, kw_only=True)

    async def put(self, *items: dict[str, Any]) -> None:
        fixed = []
        for item in items:
            if item.get("type") == "DELETED":  # a real API server bumps the version on deletion too
                obj = item["object"]
                meta = dict(obj.get("metadata", {}), resourceVersion=self.next_version())
                item = dict(item, object=dict(obj, metadata=meta))
            fixed.append(item)
        self.journal.extend(fixed)
        await super().put(*fixed)

    @property
    def last_version(self) -> int:
        # Never "0" (it means "any version" to a watch); real versions start at 2.
        return int(self.journal[-1]["object"]["metadata"]["resourceVersion"]) if self.journal else 1


class _Buses(dict[Any, _JournalingBus]):
    def __init__(self, next_version: Callable[[], str]) -> None:
        super().__init__()
        self.next_version = next_version

    def __missing__(self, resource: kmock.resource) -> _JournalingBus:
        bus = self[resource] = _JournalingBus(next_version=self.next_version)
        return bus


@attrs.define(kw_only=True)
class ApiServerEmulator(kmock.KubernetesEmulator):
    """kmock's emulator with the API-server behaviour Kopf needs and CRD admission (module docstring).

    ``validators[resource]`` is either a :class:`CRDValidator` (full admission) or any
    ``(new, old) -> None`` callable that raises ``kmock.KubernetesError`` (validation only).
    """

    validators: dict[kmock.resource, Validator] = attrs.field(factory=dict)
    #: Every resource request as the RBAC verb it needs: (user agent, namespace, group, resource[/sub], verb).
    api_calls: list[tuple[str, str | None, str, str, str]] = attrs.field(factory=list)
    _versions: Iterator[int] = attrs.field(factory=lambda: itertools.count(2), init=False)
    #: While true, watch streams hold their events back (delivered in order once false again).
    watches_held: bool = attrs.field(default=False, init=False)
    #: A write this matches (and every later event) is held back: ``watches_held`` becomes true.
    hold_watches_from: Callable[[kmock.Request], bool] | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self._buses = _Buses(self._next_version)

    def _next_version(self) -> str:
        return str(next(self._versions))

    async def _handle(self, request: kmock.Request) -> Any:
        if request.resource is not None:
            self._record(request)
            self._prepare(request)
            if self.hold_watches_from is not None and self.hold_watches_from(request):
                self.hold_watches_from, self.watches_held = None, True
        try:
            return await super()._handle(request)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as err:
            raise kmock.KubernetesError(status=422, reason="Invalid", message=_PATCH_REJECTED) from err
        except kmock.KubernetesObjectNotFoundError as err:  # the API server's words
            resource = request.resource
            what = f"{resource.plural}.{resource.group}" if resource is not None and resource.group else \
                (resource.plural if resource is not None else "object")
            raise kmock.KubernetesError(status=404, reason="NotFound",
                                        message=f'{what} "{request.name}" not found') from err

    def _record(self, request: kmock.Request) -> None:
        if request.resource is None or not request.resource.plural:
            return  # discovery (/api, /apis/<group>/<version>): non-resource URLs, open to every user
        verbs = {kmock.action.LIST: "list", kmock.action.WATCH: "watch", kmock.action.FETCH: "get",
                 kmock.action.CREATE: "create", kmock.action.DELETE: "delete"}
        verb = verbs.get(request.action) if request.action is not None else None
        if request.action == kmock.action.UPDATE:
            verb = "update" if request.method == kmock.method.PUT else "patch"
        resource = request.resource.plural + (f"/{request.subresource}" if request.subresource else "")
        agent = request.headers.get("User-Agent", "")
        self.api_calls.append((agent, request.namespace, request.resource.group, resource, verb or str(request.action)))

    def _admit(self, request: kmock.Request, new: dict[str, Any], old: dict[str, Any] | None) -> None:
        validator = self.validators.get(request.resource)
        if isinstance(validator, CRDValidator):
            validator.admit(new, old, strict=request.params.get("fieldValidation") == "Strict")
        elif validator is not None:
            validator(new, old)

    def _prepare(self, request: kmock.Request) -> None:
        # NB: request.data is mutable; mutating it is the only way to influence what the parent
        # class stores (it stores and broadcasts before any reaction runs).
        validator = self.validators.get(request.resource)
        has_status = isinstance(validator, CRDValidator) and validator.status_subresource
        if request.action == kmock.action.CREATE and isinstance(request.data, dict):
            meta = request.data.setdefault("metadata", {})
            if request.namespace and not meta.get("namespace"):
                meta["namespace"] = request.namespace
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + secrets.token_hex(3)
            if has_status:
                request.data.pop("status", None)  # the status subresource ignores status on create
            self._admit(request, request.data, None)
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", _now())
            meta["generation"] = 1
            meta["resourceVersion"] = self._next_version()

        elif request.action == kmock.action.UPDATE and request.name is not None:
            key = (request.resource, request.namespace, request.name)
            if key not in self.objects or self.objects[key].deleted:
                return  # the parent class answers 404
            old = copy.deepcopy(dict(self.objects[key].raw))
            if isinstance(request.data, dict):
                expected = (request.data.get("metadata") or {}).get("resourceVersion")
                current = (old.get("metadata") or {}).get("resourceVersion")
                if expected is not None and str(expected) != str(current):
                    what = f"{request.resource.plural}.{request.resource.group}" if request.resource.group \
                        else request.resource.plural
                    raise kmock.KubernetesError(
                        status=409, reason="Conflict",
                        message=f'Operation cannot be fulfilled on {what} "{request.name}": the object has been '
                                "modified; please apply your changes to the latest version and try again")
                new = merge_patch(old, request.data)
            elif isinstance(request.data, list):
                try:
                    new = jsonpatch.apply_patch(old, request.data, in_place=False)
                except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as err:
                    raise kmock.KubernetesError(status=422, reason="Invalid", message=_PATCH_REJECTED) from err
            else:
                return
            new = copy.deepcopy(new)  # merge_patch shares untouched subtrees with old
            if has_status and request.subresource == "status":
                # a fresh metadata dict: the version set below must show in the diff against old
                new = {**old, "metadata": dict(old.get("metadata") or {}), "status": new.get("status")} \
                    if new.get("status") is not None else \
                    {**{k: v for k, v in old.items() if k != "status"}, "metadata": dict(old.get("metadata") or {})}
            elif has_status and request.subresource is None:
                new = {k: v for k, v in new.items() if k != "status"}
                if "status" in old:
                    new["status"] = old["status"]
            self._admit(request, new, old)
            meta = new.setdefault("metadata", {})
            meta["resourceVersion"] = self._next_version()
            if request.subresource is None and new.get("spec") != old.get("spec"):
                meta["generation"] = old.get("metadata", {}).get("generation", 1) + 1
            if isinstance(request.data, dict):
                diff = merge_diff(old, new)
                request.data.clear()
                request.data.update(diff)
            else:
                request.data[:] = [{"op": "replace", "path": "", "value": new}]

        elif request.action == kmock.action.DELETE and request.name is not None:
            # With finalizers, the parent class only sets deletionTimestamp: bump the version too.
            key = (request.resource, request.namespace, request.name)
            if key in self.objects and not self.objects[key].deleted:
                meta = dict(self.objects[key].raw.get("metadata", {}))
                if meta.get("finalizers") and not meta.get("deletionTimestamp"):
                    meta["resourceVersion"] = self._next_version()
                    meta["generation"] = int(meta.get("generation") or 0) + 1  # as kube-apiserver does
                    self.objects[key]["metadata"] = meta  # in place, no extra history entry

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        match = _NAMESPACE_PATH.match(raw_request.path)
        if match and raw_request.method == "GET":  # kmock parses this as a namespaced list (500)
            await raw_request.read()
            self.api_calls.append((raw_request.headers.get("User-Agent", ""), None, "", "namespaces", "get"))
            key = (NAMESPACES, None, match.group(1))
            if key in self.objects and not self.objects[key].deleted:
                return aiohttp.web.json_response(dict(self.objects[key].raw))
            return aiohttp.web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                              "reason": "NotFound", "code": 404,
                                              "message": f'namespaces "{match.group(1)}" not found'}, status=404)
        return await super().__call__(raw_request)

    async def _serve_create(self, request: kmock.Request) -> Any:
        # A real API server answers 201 Created (the kubernetes client only deserializes 201).
        return kmock.Response(status=201, payload=await super()._serve_create(request))

    async def _serve_list(self, request: kmock.Request) -> Any:
        if request.resource not in self._get_resources():
            raise kmock.KubernetesResourceNotFoundError()
        async with self._lock:  # items and version must agree
            items = [obj.raw for key, obj in self.objects.items() if self._watched(request, key) and not obj.deleted]
            version = self._buses[request.resource].last_version
        return {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": str(version)}, "items": items}

    async def _serve_watch(self, request: kmock.Request) -> Any:
        yield b""  # send the headers now
        bus: _JournalingBus = self._buses[request.resource]
        since = request.params.get("resourceVersion", "")
        async with self._lock:  # no gaps, no overlaps between the backlog and the live stream
            marker = await bus.mark()
            if since.isdigit() and int(since) > 0:  # "changes after N"
                backlog = [e for e in bus.journal if int(e["object"]["metadata"]["resourceVersion"]) > int(since)]
            else:  # "start at any": the current state as synthetic ADDED events
                backlog = [{"type": "ADDED", "object": obj.raw} for key, obj in self.objects.items()
                           if key[0] == request.resource and not obj.deleted]
        try:
            for event in backlog:
                if self._event_matches(request, event):
                    yield event
            async for event in bus.stream(since=marker):
                while self.watches_held:
                    await asyncio.sleep(0.02)
                if self._event_matches(request, event):
                    yield event
        finally:
            await bus.unmark(marker)

    @classmethod
    def _event_matches(cls, request: kmock.Request, event: dict[str, Any]) -> bool:
        meta = event.get("object", {}).get("metadata", {})
        return cls._watched(request, (request.resource, meta.get("namespace"), meta.get("name")))

    @staticmethod
    def _watched(request: kmock.Request, key: tuple[Any, str | None, str]) -> bool:
        resource, namespace, name = key
        return (resource == request.resource
                and (request.namespace is None or namespace == request.namespace)
                and (request.name is None or name == request.name))


#: The name the operator tests and ``bench/operator_scale.py`` use (the fixes it once added live above).
OperatorEmulator = ApiServerEmulator


def register_crds(emu: ApiServerEmulator, crds: Sequence[Mapping[str, Any]]) -> dict[str, kmock.resource]:
    """Register each CRD's resource for discovery (with a :class:`CRDValidator`), store the CRD
    objects, and register events, namespaces, secrets and the CRD resource.

    Returns:
        ``{kind: resource}`` of the CRDs.
    """
    emu.resources[EVENTS] = kmock.ResourceInfo(kind="Event", singular="event", namespaced=True, verbs=VERBS)
    emu.resources[NAMESPACES] = kmock.ResourceInfo(kind="Namespace", singular="namespace", namespaced=False,
                                                   verbs=VERBS)
    emu.resources[SECRETS] = kmock.ResourceInfo(kind="Secret", singular="secret", namespaced=True, verbs=VERBS)
    emu.resources[CRDS] = kmock.ResourceInfo(kind="CustomResourceDefinition", singular="customresourcedefinition",
                                             namespaced=False, verbs=VERBS)
    kinds: dict[str, kmock.resource] = {}
    for crd in crds:
        spec, resource = crd["spec"], resource_of(crd)
        names = spec["names"]
        version = next(v for v in spec["versions"] if v.get("storage"))
        emu.resources[resource] = kmock.ResourceInfo(
            kind=names["kind"], singular=names["singular"], namespaced=spec["scope"] == "Namespaced", verbs=VERBS,
            shortnames=set(names.get("shortNames", ())), categories=set(names.get("categories", ())),
            subresources=set(version.get("subresources") or {}),
        )
        emu.validators[resource] = CRDValidator(crd, version["name"])
        emu.objects[CRDS, None, crd["metadata"]["name"]] = copy.deepcopy(dict(crd))
        kinds[names["kind"]] = resource
    return kinds


# --- Kopf in its own thread and loop ------------------------------------------------------------------

class OperatorThread:
    """Runs ``kopf.operator()`` with ``registry`` against ``server`` in a thread with its own loop.

    The registry gets a login handler pointing at the emulator; use a fresh registry per test.
    Stop with :meth:`stop` (the stop flag), never by cancelling: see the recipe's caveats.
    """

    def __init__(self, registry: kopf.OperatorRegistry, server: str, *,
                 settings: kopf.OperatorSettings | None = None, namespaces: list[str] | None = None,
                 connection: kopf.ConnectionInfo | None = None) -> None:
        # ``connection``: credentials for a real API server (tests/support/apiserver.py)
        info = connection or kopf.ConnectionInfo(server=server)

        @kopf.on.login(registry=registry)
        def _login(**_: Any) -> kopf.ConnectionInfo:
            return info

        self.registry = registry
        self.settings = settings or kopf.OperatorSettings()
        self.namespaces = namespaces
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="kopf-operator", daemon=True)

    def _main(self) -> None:
        try:
            asyncio.run(self._run())
        except BaseException as err:  # reported by start()/stop()
            self._error = err
            self._ready.set()

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        await kopf.operator(
            registry=self.registry, settings=self.settings,
            clusterwide=not self.namespaces, namespaces=self.namespaces or (),
            stop_flag=self._stop, ready_flag=self._ready,
        )

    async def start(self, timeout: float = 10) -> None:
        self._thread.start()
        if not await asyncio.to_thread(self._ready.wait, timeout) or self._error:
            raise RuntimeError("the operator did not start") from self._error

    async def stop(self, timeout: float = 10) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        await asyncio.to_thread(self._thread.join, timeout)  # keep the emulator's loop serving
        if self._thread.is_alive():
            raise RuntimeError("the operator did not stop in time")
        if self._error is not None:
            raise self._error


# --- fixtures ------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def tablekeeper_crds() -> list[dict[str, Any]]:
    """The checked-in CRDs (``crds/``)."""
    crds = load_crds()
    assert crds, f"no CRDs in {CRD_DIR}: run python -m tablekeeper.operator.crds --out crds"
    return crds


@pytest.fixture(scope="session")
def crd_validators(tablekeeper_crds: list[dict[str, Any]]) -> dict[str, CRDValidator]:
    """``{kind: CRDValidator}``."""
    return {crd["spec"]["names"]["kind"]: CRDValidator(crd) for crd in tablekeeper_crds}


@pytest.fixture
async def k8s(tablekeeper_crds: list[dict[str, Any]]) -> AsyncIterator[ApiServerEmulator]:
    """A running emulator (random 127.0.0.1 port) with every tablekeeper resource registered."""
    async with ApiServerEmulator() as emu, kmock.Server(emu):
        register_crds(emu, tablekeeper_crds)
        yield emu


@pytest.fixture
def operator_settings() -> kopf.OperatorSettings:
    """The operator's settings, adjusted for the emulator."""
    from tablekeeper.operator import main as operator_main

    settings = operator_main.build_settings()
    settings.peering.standalone = True
    settings.process.ultimate_exiting_timeout = None  # see the recipe's caveats
    settings.watching.server_timeout = 5
    settings.watching.client_timeout = 10
    settings.networking.error_backoffs = [0.1, 0.2]
    settings.execution.max_workers = 4
    return settings
