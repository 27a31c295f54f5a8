"""Spec validation errors and their rendering for humans.

The policy models validate with pydantic; every check tablekeeper adds raises one of the two
errors below (both ``ValueError`` subclasses, so pydantic wraps them into a ``ValidationError``
and keeps the original exception in the error's ``ctx``). ``format_validation_error`` turns a
``ValidationError`` into lines of the form::

    tables/orders.yaml: spec.retention.snapshots.minRetained: must be at least 1, got 0 (fix: ...)

naming the file or resource, the field path in camelCase (the CRD spelling) and the fix.
``as_spec_error`` wraps the same text into a typed ``TablekeeperError`` for front ends.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from tablekeeper.core import errors

__all__ = [
    "InvalidSpecError",
    "UnsafeSpecError",
    "format_validation_error",
    "as_spec_error",
    "format_path",
]


class InvalidSpecError(errors.InvalidInputError):
    """A spec is malformed or self-contradictory.

    ``fields`` names the offending fields (camelCase, relative to the model that raised), so that
    a model-level check can still point at the field to change.
    """

    reason = "InvalidSpec"

    def __init__(self, message: str, *, fix: str | None = None, fields: Sequence[str] = ()) -> None:
        super().__init__(message, fix=fix)
        self.fields = tuple(fields)


class UnsafeSpecError(InvalidSpecError, errors.UnsafePolicyError):
    """A spec would break a safety rail (retain-min below 1, max below min, orphan age floor)."""

    reason = "UnsafePolicy"


def format_path(loc: Iterable[int | str], prefix: str = "") -> str:
    """Render a pydantic ``loc`` as ``spec.policyRefs[0].name`` / ``options["fs.s3.region"]``."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _is_identifier(part):
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
    return out or "(top level)"


def _is_identifier(part: str) -> bool:
    return bool(part) and part.replace("_", "a").isalnum() and not part[0].isdigit()


def _allowed_fields(model: type[BaseModel], loc: Sequence[int | str]) -> list[str] | None:
    """The camelCase field names accepted by the object at ``loc`` inside ``model``."""
    current: Any = model
    for part in loc:
        current = _strip_optional(current)
        origin = get_origin(current)
        if isinstance(current, type) and issubclass(current, BaseModel) and isinstance(part, str):
            by_alias = {(f.alias or n): f for n, f in current.model_fields.items()}
            if part not in by_alias:
                return None
            current = by_alias[part].annotation
        elif origin in (tuple, list) and isinstance(part, int):
            current = get_args(current)[0]
        elif origin is dict and isinstance(part, str):
            current = get_args(current)[1]
        else:
            return None
    current = _strip_optional(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or n for n, f in current.model_fields.items()]
    return None


def _strip_optional(annotation: Any) -> Any:
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) in (Union, UnionType) and len(args) == 1:
        return args[0]
    return annotation


def _explain(error: ErrorDetails, model: type[BaseModel] | None) -> tuple[str, str, tuple[str, ...]]:
    """(message, fix, extra path parts) for one pydantic error."""
    kind = error["type"]
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    loc = error["loc"]
    field = str(loc[-1]) if loc else "field"
    exc = ctx.get("error")
    if isinstance(exc, errors.TablekeeperError):
        extra: tuple[str, ...] = ()
        if isinstance(exc, InvalidSpecError) and len(exc.fields) == 1:
            extra = exc.fields
        return exc.message, exc.fix or "correct the value", extra
    if kind == "missing":
        return "required field is missing", f"add '{field}'", ()
    if kind == "extra_forbidden":
        allowed = _allowed_fields(model, loc[:-1]) if model is not None else None
        fix = "remove it"
        if allowed:
            close = difflib.get_close_matches(field, allowed, n=1)
            fix = f"did you mean '{close[0]}'? " if close else ""
            fix += "allowed fields here: " + ", ".join(sorted(allowed))
        return f"unknown field '{field}'", fix, ()
    if kind in ("literal_error", "enum"):
        expected = ctx.get("expected", "")
        return f"{error['input']!r} is not allowed", f"use one of {expected}", ()
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = next(iter(ctx.values()), "")
        words = {"greater_than_equal": "at least", "greater_than": "greater than",
                 "less_than_equal": "at most", "less_than": "less than"}[kind]
        return f"must be {words} {bound}, got {error['input']!r}", f"use a value {words} {bound}", ()
    if kind == "string_pattern_mismatch":
        return (f"{error['input']!r} does not match {ctx.get('pattern')!r}",
                "use a value matching the pattern", ())
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"{error['input']!r} is not a whole number", "write an integer without quotes", ()
    if kind in ("bool_parsing", "bool_type"):
        return f"{error['input']!r} is not a boolean", "write true or false", ()
    if kind in ("string_type",):
        return f"{error['input']!r} is not a string", "quote the value", ()
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return "expected an object (a mapping of fields)", "write the fields as a YAML/JSON mapping", ()
    if kind in ("list_type", "tuple_type"):
        return "expected a list", "write the values as a YAML/JSON list", ()
    if kind in ("timezone_aware",):
        return "timestamp has no time zone", "add an offset, e.g. '2024-07-11T10:00:00Z' or '+08:00'", ()
    if kind.startswith("datetime"):
        return f"{error['input']!r} is not a timestamp", "write an RFC 3339 timestamp, e.g. '2024-07-11T10:00:00Z'", ()
    if kind in ("string_too_short", "too_short"):
        return "must not be empty", "give a value", ()
    if kind in ("string_too_long", "too_long"):
        return "value is too long", f"shorten it ({error['msg']})", ()
    return error["msg"], "correct the value", ()


def _lines(err: ValidationError, source: str, path_prefix: str,
           model: type[BaseModel] | None) -> list[tuple[str, str]]:
    out = []
    for error in err.errors(include_url=False):
        message, fix, extra = _explain(error, model)
        path = format_path([*error["loc"], *extra], path_prefix)
        out.append((f"{source}: {path}: {message} (fix: {fix})", fix))
    return out


def format_validation_error(
    err: ValidationError,
    source: str,
    *,
    path_prefix: str = "",
    model: type[BaseModel] | None = None,
) -> str:
    """Render every error of ``err`` as ``<source>: <camelCase.path>: <problem> (fix: <fix>)``.

    Args:
        err: the pydantic error raised while validating a spec.
        source: what was validated, e.g. a file name or ``PaimonTable sales/orders``.
        path_prefix: prepended to every path, e.g. ``"spec"`` when only the spec was validated.
        model: the model that was validated; enables "did you mean" suggestions and the list of
            allowed fields for unknown fields.

    Returns:
        One line per problem, joined by newlines.
    """
    return "\n".join(line for line, _ in _lines(err, source, path_prefix, model))


def as_spec_error(
    err: ValidationError,
    source: str,
    *,
    path_prefix: str = "",
    model: type[BaseModel] | None = None,
) -> InvalidSpecError:
    """The same report as a typed error: ``UnsafeSpecError`` when any problem breaks a safety
    rail, ``InvalidSpecError`` otherwise. ``str()`` of the result is the formatted report, one
    line per problem, each with its own fix (so the error's ``fix`` attribute is None)."""
    lines = _lines(err, source, path_prefix, model)
    unsafe = any(isinstance((e.get("ctx") or {}).get("error"), errors.UnsafePolicyError)
                 for e in err.errors(include_url=False))
    cls = UnsafeSpecError if unsafe else InvalidSpecError
    # Each line already carries its own fix; ``fix`` stays None so str() does not repeat it.
    return cls("\n".join(line for line, _ in lines))
