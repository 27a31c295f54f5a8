"""Schema JSON (read side: options drive maintenance; schema files are copied verbatim)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tablekeeper.core import errors
from tablekeeper.core.paimon.snapshot import check_version, parse_json_object

__all__ = ["TableSchema", "KNOWN_SCHEMA_VERSIONS"]

#: Schema format versions Java Paimon has written (3 since 0.6).
KNOWN_SCHEMA_VERSIONS = frozenset({1, 2, 3})


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
        data = parse_json_object(text, what)
        if "id" not in data or "fields" not in data:
            raise errors.FormatError(f"{what} lacks 'id' or 'fields'", fix="restore the schema file")
        check_version(data, what, kind="schema", known=KNOWN_SCHEMA_VERSIONS)
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
