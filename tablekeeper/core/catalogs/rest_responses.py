"""What a REST catalog server answers, checked before anything uses it.

A server is outside tablekeeper's control (another version, a proxy's error page, a bug): every
answer is parsed here into plain typed values, and anything else is one :class:`CatalogError`
naming the request and what is wrong, never a Python exception from deep inside a command. Pure
functions of the body, so the fuzz target ``rest_responses`` drives them directly."""

from __future__ import annotations

import json
from typing import Any

from tablekeeper.core import errors

__all__ = ["decode", "config", "page", "table_location", "data_token", "MAX_PAGES"]

#: A listing longer than this many pages is refused (a server repeating pages forever).
MAX_PAGES = 100_000
_SCALARS = (str, int, float, bool)


def _bad(what: str, problem: str) -> errors.CatalogError:
    return errors.CatalogError(f"the REST catalog answered {what} with {problem}", option="uri",
                               fix="check that uri names a Paimon REST catalog server (REST API 1.x) and its log")


def decode(raw: bytes, what: str) -> Any:
    """The JSON document of an answer (an empty body is an empty object)."""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _bad(what, "a body that is not UTF-8 text") from None
    except RecursionError:
        raise _bad(what, "JSON nested too deeply") from None
    except ValueError as e:
        raise _bad(what, f"a body that is not JSON ({e.msg} at {e.pos})" if isinstance(e, json.JSONDecodeError)
                   else "a body that is not JSON") from None


def _object(answer: Any, what: str) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise _bad(what, f"a JSON {type(answer).__name__} where an object belongs")
    return answer


def _string_map(value: Any, what: str, field: str) -> dict[str, str]:
    """An object of scalar values (Paimon's options: strings; numbers and booleans as text)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad(what, f"{field!r} as a JSON {type(value).__name__}, not an object of options")
    out: dict[str, str] = {}
    for key, item in value.items():
        if item is None:
            continue
        if not isinstance(item, _SCALARS):
            raise _bad(what, f"option {key!r} of {field!r} as a JSON {type(item).__name__}, not a value")
        out[str(key)] = str(item).lower() if isinstance(item, bool) else str(item)
    return out


def config(answer: Any) -> tuple[dict[str, str], dict[str, str]]:
    """``GET /v1/config``: the server's ``defaults`` and ``overrides``."""
    what = "GET /v1/config"
    doc = _object(answer, what)
    return _string_map(doc.get("defaults"), what, "defaults"), _string_map(doc.get("overrides"), what, "overrides")


def page(answer: Any, what: str, key: str) -> tuple[list[str], str | None]:
    """One page of a listing: its names under ``key`` and the next page's token."""
    doc = _object(answer, what)
    names = doc.get(key)
    if names is None:
        names = []
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise _bad(what, f"{key!r} that is not a list of names")
    token = doc.get("nextPageToken")
    if token is not None and not isinstance(token, str):
        raise _bad(what, f"a nextPageToken that is a JSON {type(token).__name__}, not a string")
    return list(names), token or None


def table_location(answer: Any, identifier: str) -> tuple[str, Any]:
    """``GET …/tables/{t}``: the table's path (``file:`` stripped from a local one) and its id."""
    what = f"GET the table {identifier}"
    doc = _object(answer, what)
    path = doc.get("path")
    if path is None or path == "":
        raise errors.CatalogError(f"the REST catalog gave no path for {identifier}", option="uri",
                                  fix="check the server: tables of the REST API have a path")
    if not isinstance(path, str) or "\x00" in path:
        raise _bad(what, f"a path that is a JSON {type(path).__name__}, not a location" if not isinstance(path, str)
                   else "a path with a NUL character")
    table_id = doc.get("id")
    if table_id is not None and not isinstance(table_id, (str, int)):
        raise _bad(what, f"an id that is a JSON {type(table_id).__name__}")
    return (path.removeprefix("file:") if path.startswith("file:/") else path), table_id


def data_token(answer: Any, identifier: str) -> tuple[dict[str, str], int]:
    """``GET …/token``: the vended storage options and when they expire (epoch ms; 0: unknown)."""
    what = f"GET the data token of {identifier}"
    doc = _object(answer, what)
    token = _string_map(doc.get("token"), what, "token")
    expires = doc.get("expiresAtMillis")
    if expires is None:
        return token, 0
    if isinstance(expires, bool) or not isinstance(expires, int) or expires < 0:
        raise _bad(what, f"expiresAtMillis {expires!r}, not a time in epoch milliseconds")
    return token, expires
