"""JSON written exactly as Java Paimon's Jackson ``writerWithDefaultPrettyPrinter()`` does:
two-space indentation, ``"key" : value``, scalar arrays inline (``[ 1, 2 ]``), empty containers
``[ ]`` / ``{ }``, arrays of objects as ``[ {`` ... ``}, {`` ... ``} ]``, no trailing newline."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["RawNumber", "dumps"]


class RawNumber(str):
    """A number written verbatim (e.g. a Duration as ``86400.000000000``)."""


def _scalar(value: Any) -> str:
    if isinstance(value, RawNumber):
        return str(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _java_double(value: float) -> str:
    """Java's Double.toString for the values metadata uses."""
    if value != value or value in (float("inf"), float("-inf")):
        return json.dumps(value)
    if value == int(value) and abs(value) < 1e7:
        return f"{int(value)}.0"
    text = repr(value)
    if "e" in text:
        mantissa, exp = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}E{int(exp)}"
    return text


def _write(value: Any, indent: int, out: list[str]) -> None:
    if isinstance(value, Mapping):
        if not value:
            out.append("{ }")
            return
        pad = "  " * (indent + 1)
        out.append("{\n")
        items = list(value.items())
        for i, (key, item) in enumerate(items):
            out.append(f"{pad}{json.dumps(str(key), ensure_ascii=False)} : ")
            _write(item, indent + 1, out)
            out.append(",\n" if i < len(items) - 1 else "\n")
        out.append("  " * indent + "}")
        return
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        if not value:
            out.append("[ ]")
            return
        out.append("[ ")
        for i, item in enumerate(value):
            if i:
                out.append(", ")
            _write(item, indent, out)
        out.append(" ]")
        return
    out.append(_scalar(value))


def dumps(value: Any) -> str:
    """Serialise ``value`` in Jackson's default pretty-printed layout."""
    out: list[str] = []
    _write(value, 0, out)
    return "".join(out)
