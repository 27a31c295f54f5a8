"""Reading Paimon's JSON metadata (snapshots, tags, schemas, consumers): the text parsed into an
object of bounded depth, and the fields read from it checked for their JSON type, so that a
damaged or hostile file is one FormatError naming it, never a TypeError or ValueError later,
where a field is used (``int(...)`` of a list, a path joined with a number)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from tablekeeper.core import errors

__all__ = ["MAX_DEPTH", "parse_json_object", "check_fields", "INT", "TEXT", "NAME", "OBJECT", "LIST"]

#: Paimon's metadata nests four levels (a schema's field types); a deeper document is damage.
MAX_DEPTH: Final = 64

#: Field kinds of :func:`check_fields`.
INT: Final = "a whole number"
TEXT: Final = "a string"
NAME: Final = "a file name"
OBJECT: Final = "an object"
LIST: Final = "a list"

_FIX: Final = "restore the file from a backup, or remove it"


def _too_deep(value: Any) -> bool:
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


def parse_json_object(text: str | bytes, what: str, *, fix: str = _FIX) -> dict[str, Any]:
    """The JSON object in ``text`` (``what`` names the file in errors).

    Raises:
        FormatError: not UTF-8 JSON, not an object, or nested deeper than :data:`MAX_DEPTH`.
    """
    try:
        value = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise errors.FormatError(f"{what} is not valid JSON: {type(e).__name__}: {str(e)[:200]}", fix=fix) from e
    if not isinstance(value, dict):
        raise errors.FormatError(f"{what} is not a JSON object", fix=fix)
    if _too_deep(value):
        raise errors.FormatError(f"{what} nests deeper than {MAX_DEPTH} levels", fix=fix)
    return value


def _is(value: Any, kind: str) -> bool:
    if kind == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == TEXT:
        return isinstance(value, str)
    if kind == NAME:  # a plain file name in the directory the reader joins it to
        return isinstance(value, str) and value not in ("", ".", "..") and "/" not in value and "\\" not in value
    if kind == OBJECT:
        return isinstance(value, dict)
    return isinstance(value, list)


def check_fields(data: Mapping[str, Any], what: str, kinds: Mapping[str, str], *, required: Iterable[str] = (),
                 fix: str = _FIX) -> None:
    """Every field of ``kinds`` that ``data`` has is of its kind (or null, unless ``required``),
    and every ``required`` field is present and not null.

    Raises:
        FormatError: naming ``what``, the field and what it holds.
    """
    must = frozenset(required)
    for key in sorted(must):
        if data.get(key) is None:
            raise errors.FormatError(f"{what} has no {key!r}", fix=fix)
    for key, kind in kinds.items():
        value = data.get(key)
        if value is None or _is(value, kind):
            continue
        shown = json.dumps(value)[:60] if not isinstance(value, float) else repr(value)
        raise errors.FormatError(f"{what}: {key!r} is {shown}, not {kind}", fix=fix)
