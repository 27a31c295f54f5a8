"""Schema JSON (read side: options drive maintenance; schema files are copied verbatim)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tablekeeper.core import errors
from tablekeeper.core.paimon.metadata.json_fields import INT, LIST, OBJECT, check_fields, parse_json_object
from tablekeeper.core.paimon.metadata.snapshot import check_version

__all__ = ["TableSchema", "KNOWN_SCHEMA_VERSIONS"]

#: Schema format versions Java Paimon has written (3 since 0.6).
KNOWN_SCHEMA_VERSIONS = frozenset({1, 2, 3})
_FIELD_KINDS = {"id": INT, "fields": LIST, "partitionKeys": LIST, "primaryKeys": LIST, "options": OBJECT,
                "timeMillis": INT, "highestFieldId": INT}
_FIX = "restore the schema file from a backup (schema files are never rewritten by Paimon)"


@dataclass(frozen=True)
class TableSchema:
    """One ``schema/schema-N`` file: the fields, keys and options a snapshot's files were written with."""

    id: int
    fields: tuple[Mapping[str, Any], ...]
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]
    options: Mapping[str, str]
    time_millis: int | None
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, text: str | bytes, *, what: str = "schema") -> TableSchema:
        data = parse_json_object(text, what, fix=_FIX)
        if "id" not in data or "fields" not in data:
            raise errors.FormatError(f"{what} lacks 'id' or 'fields'", fix=_FIX)
        check_fields(data, what, _FIELD_KINDS, required=("id", "fields"), fix=_FIX)
        for key in ("fields", "partitionKeys", "primaryKeys"):
            kind = "an object" if key == "fields" else "a string"
            if not all(isinstance(v, dict if key == "fields" else str) for v in data.get(key) or ()):
                raise errors.FormatError(f"{what}: {key!r} holds something other than {kind}", fix=_FIX)
        check_version(data, what, kind="schema", known=KNOWN_SCHEMA_VERSIONS)
        if any(isinstance(v, (dict, list)) for v in (data.get("options") or {}).values()):
            raise errors.FormatError(f"{what}: an option value is not a string", fix=_FIX)
        options = {str(k): str(v) for k, v in (data.get("options") or {}).items()}
        version = int(data.get("version", 1))
        if version <= 1 and "bucket" not in options:
            options["bucket"] = "1"
        if version <= 2 and "file.format" not in options:
            options["file.format"] = "orc"
        return cls(
            id=int(data["id"]),
            fields=tuple(data["fields"]),
            partition_keys=tuple(data.get("partitionKeys") or ()),
            primary_keys=tuple(data.get("primaryKeys") or ()),
            options=options,
            time_millis=data.get("timeMillis"),
            raw=data,
        )

    def field_type(self, name: str) -> str:
        for f in self.fields:
            if f.get("name") == name:
                return str(f.get("type"))
        raise KeyError(name)
