"""Table options as Paimon's ``ALTER TABLE ... SET ('k' = 'v')`` writes them: a new schema file.

Java's ``SchemaManager.commitChanges`` never rewrites a schema: it writes ``schema-<latest+1>``
with the same fields, keys and comment, the changed options and a new ``timeMillis``, and only
if that file does not exist yet (a concurrent writer that committed its own schema change
first wins; the change is recomputed against the new latest schema). Snapshots keep their
``schemaId``; readers take options from the latest schema.

- :func:`diff_options` (pure): what to set, given the current options, the desired ones and the
  keys that must never be written (a table's ``protectedOptions`` plus the operator's global
  unalterable list).
- :func:`schema_with_options` (pure): the JSON text of the next schema, in Java's Jackson layout
  (byte-identical to Java for the same content), unknown fields kept.
- :func:`alter_options` (I/O): write it with create-if-absent; never overwrites.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from tablekeeper.core import errors
from tablekeeper.core.paimon import metadata
from tablekeeper.core.paimon.metadata import TableSchema
from tablekeeper.core.paimon.table import Table

__all__ = ["OptionsDiff", "AlterResult", "diff_options", "options_hash", "schema_with_options", "alter_options"]


@dataclass(frozen=True)
class OptionsDiff:
    """``set``: options to write (key -> new value); ``previous``: their current values (None =
    unset); ``protected``: desired options that differ but must not be written (key -> (current,
    desired))."""

    set: Mapping[str, str] = field(default_factory=dict)
    previous: Mapping[str, str | None] = field(default_factory=dict)
    protected: Mapping[str, tuple[str | None, str]] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not self.set


@dataclass(frozen=True)
class AlterResult:
    """``schema_id``: the schema written (None: nothing to write); ``options``: what was set."""

    schema_id: int | None
    options: Mapping[str, str]
    previous: Mapping[str, str | None]
    attempts: int = 1


def diff_options(current: Mapping[str, str], desired: Mapping[str, str], protected: Collection[str] = ()
                 ) -> OptionsDiff:
    """The options of ``desired`` that differ from ``current``, minus ``protected`` keys."""
    to_set: dict[str, str] = {}
    previous: dict[str, str | None] = {}
    kept: dict[str, tuple[str | None, str]] = {}
    for key, value in sorted(desired.items()):
        now = current.get(key)
        if now == value:
            continue
        if key in protected:
            kept[key] = (now, value)
            continue
        to_set[key] = value
        previous[key] = now
    return OptionsDiff(to_set, previous, kept)


def options_hash(options: Mapping[str, str]) -> str:
    """A stable hash of an option map (drift detection: ``appliedTableOptionsHash``)."""
    text = json.dumps(dict(sorted(options.items())), separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def schema_with_options(schema: TableSchema, options: Mapping[str, str], now_ms: int) -> str:
    """The next schema's JSON: ``schema`` with ``options`` set (existing keys keep their place,
    new ones are appended), id + 1, ``timeMillis`` = ``now_ms``; every other field as it was."""
    raw: dict[str, Any] = dict(schema.raw)
    merged: dict[str, Any] = dict(raw.get("options") or {})
    for key, value in options.items():
        merged[key] = value
    raw["id"] = schema.id + 1
    raw["options"] = merged
    raw["timeMillis"] = now_ms
    return metadata.dumps(raw)


def alter_options(table: Table, desired: Mapping[str, str], *, now_ms: int, protected: Collection[str] = (),
                  attempts: int = 3) -> AlterResult:
    """Set ``desired`` options on ``table``'s branch the way Paimon does (a new schema file).

    Re-reads the latest schema and recomputes the diff when another writer's schema appeared
    meanwhile; nothing is written when nothing differs.

    Raises:
        ConcurrentModificationError: every attempt lost a race against other schema writers.
        TableNotFoundError: the branch has no schema.
    """
    for attempt in range(1, attempts + 1):
        schema = table.schema()
        diff = diff_options(schema.options, desired, protected)
        if diff.is_empty:
            return AlterResult(None, {}, {}, attempt)
        text = schema_with_options(schema, diff.set, now_ms)
        try:
            table.file_io.write_new(table.schema_path(schema.id + 1), text)
        except FileExistsError:
            continue  # someone committed schema-<id+1> first: never overwrite, decide again
        return AlterResult(schema.id + 1, dict(diff.set), dict(diff.previous), attempt)
    raise errors.ConcurrentModificationError(
        f"the schema of {table.identifier} kept changing while table options were being written",
        fix="retry later; nothing was overwritten")
