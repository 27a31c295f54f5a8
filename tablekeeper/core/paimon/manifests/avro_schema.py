"""What an embedded Avro writer schema must be before any decoder walks it, and whether a field
has the type a reader relies on.

Every Avro file carries its own writer schema, written by whoever wrote the file: a newer Paimon,
a damaged disk or a hostile tenant. The decoders (the native program, the generated Python
decoder, fastavro's reader) and the code that builds rows from what they return all assume a
well-formed schema and the field types Paimon writes. :func:`schema_problem` checks the first,
:func:`type_problem` the second, each returning what is wrong in words for the caller's
``FormatError`` (naming the file), instead of an AttributeError or a RecursionError deep inside
a walk, or rows whose file names are numbers.

Beyond Avro's own rules, refused: nesting deeper than :data:`MAX_DEPTH` (Paimon's schemas nest
five levels), more than :data:`MAX_NODES` types, and arrays or maps whose items can take no
bytes (``null``, a record of such fields): a block of 2**62 such items decodes from a few bytes
into a loop without end in every decoder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

__all__ = ["MAX_DEPTH", "MAX_NODES", "Shape", "INT", "BYTES", "STRING", "array", "optional", "record",
    "schema_problem", "type_problem", "primitive_type"]

MAX_DEPTH: Final = 32
MAX_NODES: Final = 10_000
PRIMITIVES: Final = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED: Final = frozenset({"record", "error", "enum", "fixed"})


class _Walk:
    """One pass over a schema: the first problem found, and the named types defined so far (by
    name and by full name) with whether each can take no bytes."""

    def __init__(self) -> None:
        self.nodes = 0
        self.named: dict[str, Any] = {}
        self.empty_named: set[str] = set()

    def type(self, t: Any, depth: int, namespace: str) -> tuple[str | None, bool]:
        """(problem, whether a value of ``t`` can take no bytes)."""
        self.nodes += 1
        if depth > MAX_DEPTH:
            return f"the schema nests deeper than {MAX_DEPTH} levels", False
        if self.nodes > MAX_NODES:
            return f"the schema has more than {MAX_NODES} types", False
        if isinstance(t, str):
            if t in PRIMITIVES:
                return None, t == "null"
            full = t if "." in t or not namespace else f"{namespace}.{t}"
            if full not in self.named and t not in self.named:
                return f"the type {t[:80]!r} is neither a primitive nor a type defined before", False
            return None, full in self.empty_named or t in self.empty_named
        if isinstance(t, list):
            if not t:
                return "an empty union", False
            for member in t:
                if isinstance(member, list):
                    return "a union directly inside a union", False
                problem, _empty = self.type(member, depth + 1, namespace)
                if problem:
                    return problem, False
            return None, False  # the branch index is a varint: at least one byte
        if not isinstance(t, dict):
            return f"{_show(t)} where a type belongs", False
        kind = t.get("type")
        if isinstance(kind, (dict, list)):
            return self.type(kind, depth + 1, namespace)
        if not isinstance(kind, str):
            return f"a type object whose 'type' is {_show(kind)}", False
        if kind in _NAMED:
            return self._named(t, kind, depth, namespace)
        if kind == "array":
            return self._items(t, "items", depth, namespace)
        if kind == "map":
            return self._items(t, "values", depth, namespace)
        return self.type(kind, depth + 1, namespace)

    def _items(self, t: Mapping[str, Any], key: str, depth: int, namespace: str) -> tuple[str | None, bool]:
        if key not in t:
            return f"an {t['type']} without {key!r}", False
        problem, empty = self.type(t[key], depth + 1, namespace)
        if problem:
            return problem, False
        if empty:
            return f"an {t['type']} of {key} that take no bytes", False
        return None, False  # (an empty array or map is one byte, its end)

    def _named(self, t: Mapping[str, Any], kind: str, depth: int, namespace: str) -> tuple[str | None, bool]:
        name = t.get("name")
        if not isinstance(name, str) or not name:
            return f"a {kind} without a name", False
        own_namespace = t.get("namespace")
        if own_namespace is not None and not isinstance(own_namespace, str):
            return f"the {kind} {name[:80]!r} has a namespace that is not a string", False
        space = name.rsplit(".", 1)[0] if "." in name else (own_namespace if own_namespace is not None else namespace)
        full = name if "." in name or not space else f"{space}.{name}"
        self.named[full] = t
        self.named.setdefault(name.rsplit(".", 1)[-1], t)
        empty = False
        if kind == "fixed":
            size = t.get("size")
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                return f"the fixed {name[:80]!r} has no valid size", False
            empty = size == 0
        elif kind == "enum":
            symbols = t.get("symbols")
            if not isinstance(symbols, list) or not symbols or not all(isinstance(s, str) for s in symbols):
                return f"the enum {name[:80]!r} has no list of symbols", False
        else:
            fields = t.get("fields")
            if not isinstance(fields, list):
                return f"the record {name[:80]!r} has no list of fields", False
            empty = True
            for field in fields:
                if not isinstance(field, dict):
                    return f"the record {name[:80]!r} has {_show(field)} where a field belongs", False
                if not isinstance(field.get("name"), str):
                    return f"the record {name[:80]!r} has a field without a name", False
                if "type" not in field:
                    return f"the field {field['name'][:80]!r} has no type", False
                problem, field_empty = self.type(field["type"], depth + 1, space or "")
                if problem:
                    return problem, False
                empty = empty and field_empty
        if empty:
            self.empty_named.update((full, name.rsplit(".", 1)[-1]))
        return None, empty


def _show(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def schema_problem(schema: Any) -> str | None:
    """What makes ``schema`` (a parsed writer schema) unusable, or None: not a record, not
    well-formed Avro, too deep or too big, or items that take no bytes."""
    if not isinstance(schema, dict) or schema.get("type") not in ("record", "error"):
        return "the writer schema is not a record"
    return _Walk().type(schema, 0, "")[0]


# -- field types ----------------------------------------------------------------------------------
class Shape(NamedTuple):
    """The type a reader relies on: ``kind`` is "int" (Avro int or long), "bytes", "string",
    "array" (of ``item``), or "record" (with ``fields``: name -> shape, ``required`` of them
    present); ``nullable``: also a union of null and it."""

    kind: str
    nullable: bool = False
    item: Shape | None = None
    fields: tuple[tuple[str, Shape], ...] = ()
    required: frozenset[str] = frozenset()


INT: Final = Shape("int")
BYTES: Final = Shape("bytes")
STRING: Final = Shape("string")


def array(item: Shape) -> Shape:
    return Shape("array", item=item)


def optional(shape: Shape) -> Shape:
    return shape._replace(nullable=True)


def record(fields: Mapping[str, Shape], required: tuple[str, ...] = ()) -> Shape:
    return Shape("record", fields=tuple(fields.items()), required=frozenset(required))


def _describe(shape: Shape) -> str:
    inner = {"int": "int or long", "array": f"array of {_describe(shape.item) if shape.item else '?'}"}.get(
        shape.kind, shape.kind)
    return f"{inner} (or null)" if shape.nullable else inner


def _resolve(t: Any, named: Mapping[str, Any]) -> Any:
    for _ in range(MAX_DEPTH):
        if isinstance(t, str) and t not in PRIMITIVES:
            t = named.get(t, named.get(t.rsplit(".", 1)[-1], t))
        elif isinstance(t, dict) and isinstance(t.get("type"), (dict, list)):
            t = t["type"]
        elif isinstance(t, dict) and t.get("type") in PRIMITIVES:
            t = t["type"]
        else:
            return t
    return t


def _named_types(schema: Any) -> dict[str, Any]:
    walk = _Walk()
    walk.type(schema, 0, "")
    return walk.named


def _mismatch(t: Any, shape: Shape, named: Mapping[str, Any], at: str) -> str | None:
    t = _resolve(t, named)
    if isinstance(t, list):
        others = [m for m in t if _resolve(m, named) != "null"]
        if not shape.nullable or len(t) != 2 or len(others) != 1:
            return f"{at} is a union {_show(t)}, not {_describe(shape)}"
        return _mismatch(others[0], shape._replace(nullable=False), named, at)
    if shape.kind == "int":
        ok = t in ("int", "long")
    elif shape.kind in ("bytes", "string"):
        ok = t == shape.kind
    elif shape.kind == "array":
        if isinstance(t, dict) and t.get("type") == "array" and shape.item is not None:
            return _mismatch(t.get("items"), shape.item, named, f"{at}[]")
        ok = False
    else:
        if isinstance(t, dict) and t.get("type") in ("record", "error"):
            have = {f["name"]: f["type"] for f in t["fields"]}
            missing = sorted(shape.required - set(have))
            if missing:
                return f"{at} lacks {', '.join(f'{at}.{m}' for m in missing)}"
            for name, field_shape in shape.fields:
                if name in have:
                    problem = _mismatch(have[name], field_shape, named, f"{at}.{name}")
                    if problem:
                        return problem
            return None
        ok = False
    return None if ok else f"{at} is {_show(t)}, not {_describe(shape)}"


def type_problem(schema: Mapping[str, Any], fields: Mapping[str, Shape]) -> str | None:
    """The first field of a (well-formed, :func:`schema_problem`) record schema whose type is
    not its shape in ``fields`` (absent fields are the caller's concern), or None."""
    named = _named_types(schema)
    have = {f["name"]: f["type"] for f in schema["fields"]}
    for name, shape in fields.items():
        if name in have:
            problem = _mismatch(have[name], shape, named, name)
            if problem:
                return problem
    return None


def strip_logical_types(schema: Any) -> Any:
    """Drop ``logicalType`` annotations: we want ``_CREATION_TIME`` as the raw long, not a
    datetime fastavro would build only for us to convert back."""
    if isinstance(schema, list):
        return [strip_logical_types(s) for s in schema]
    if isinstance(schema, dict):
        return {k: strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    return schema


def record_fields(schema: Any) -> dict[str, Any] | None:
    if isinstance(schema, dict) and schema.get("type") == "record" and isinstance(schema.get("fields"), list):
        return {str(f["name"]): f.get("type") for f in schema["fields"] if isinstance(f, dict) and "name" in f}
    return None


def primitive_type(schema: Any) -> str | None:
    if isinstance(schema, str) and schema in PRIMITIVES:
        return schema
    if isinstance(schema, dict) and schema.get("type") in PRIMITIVES and set(schema) <= {"type"}:
        return str(schema["type"])
    return None


def has_named_reference(schema: Any) -> bool:
    if isinstance(schema, str):
        return schema not in PRIMITIVES
    if isinstance(schema, list):
        return any(has_named_reference(s) for s in schema)
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind == "record":
            return any(has_named_reference(f.get("type")) for f in schema.get("fields", []))
        if kind == "array":
            return has_named_reference(schema.get("items"))
        if kind == "map":
            return has_named_reference(schema.get("values"))
        if kind in ("enum", "fixed"):
            return False
        return has_named_reference(kind)
    return True
