"""Snapshot JSON (versions 1-3): every field Java writes, in Java's order, NON_NULL fields
omitted; unknown fields kept (after the known ones) so nothing a newer writer added is lost,
except ``logOffsets`` which Java itself dropped in 1.4.1."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tablekeeper.core import errors
from tablekeeper.core.paimon.metadata import jackson
from tablekeeper.core.paimon.metadata.json_fields import INT, NAME, OBJECT, TEXT, check_fields, parse_json_object

__all__ = ["Snapshot", "SNAPSHOT_FIELDS", "ALWAYS_WRITTEN", "KNOWN_VERSIONS", "FIELD_KINDS", "check_version",
           "parse_json_object"]

#: Java's write order (union of all releases up to 2.1-SNAPSHOT).
SNAPSHOT_FIELDS: tuple[str, ...] = (
    "version", "uuid", "id", "schemaId",
    "baseManifestList", "baseManifestListSize",
    "deltaManifestList", "deltaManifestListSize",
    "changelogManifestList", "changelogManifestListSize",
    "indexManifest", "commitUser", "writerVersion", "commitIdentifier", "commitKind",
    "timeMillis", "totalRecordCount", "deltaRecordCount", "changelogRecordCount",
    "watermark", "statistics", "properties", "nextRowId", "totalFileSize", "totalDataFiles",
    "operation",
)
#: Fields Java writes even when null (no @JsonInclude(NON_NULL)).
ALWAYS_WRITTEN = frozenset({
    "version", "id", "schemaId", "baseManifestList", "deltaManifestList", "commitUser",
    "commitIdentifier", "commitKind", "timeMillis", "totalRecordCount", "deltaRecordCount",
})
_DROPPED = frozenset({"logOffsets"})
TAG_FIELDS = ("tagCreateTime", "tagTimeRetained")


#: Snapshot format versions this module understands (Java: 1 and 2 before 0.6, 3 since).
KNOWN_VERSIONS = frozenset({1, 2, 3})


def check_version(data: Mapping[str, Any], what: str, *, kind: str = "snapshot",
                  known: frozenset[int] = KNOWN_VERSIONS) -> None:
    """Fail closed on a format from a newer Paimon: its fields may change what a file
    references, so maintaining the table could delete what a reader still needs.

    Raises:
        FormatError: ``version`` is not one of ``known``; the message names the file and version.
    """
    version = data.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version not in known:
        raise errors.FormatError(
            f"{what}: unsupported {kind} format version {version!r} (tablekeeper reads "
            f"{', '.join(map(str, sorted(known)))})",
            fix="the file was written by a newer Paimon; upgrade tablekeeper before maintaining this "
                "table (nothing was changed)")


#: The JSON type of every field tablekeeper reads (or copies into a field it reads), checked at
#: parse time: the accessors below and every caller may then rely on them.
FIELD_KINDS: dict[str, str] = {
    "id": INT, "schemaId": INT, "timeMillis": INT, "commitKind": TEXT, "uuid": TEXT, "commitUser": TEXT,
    "commitIdentifier": INT, "baseManifestList": NAME, "deltaManifestList": NAME, "changelogManifestList": NAME,
    "indexManifest": NAME, "statistics": NAME, "baseManifestListSize": INT, "deltaManifestListSize": INT,
    "changelogManifestListSize": INT, "totalRecordCount": INT, "deltaRecordCount": INT,
    "changelogRecordCount": INT, "watermark": INT, "nextRowId": INT, "totalFileSize": INT, "totalDataFiles": INT,
    "properties": OBJECT,
}
_REQUIRED = ("id", "schemaId", "commitKind", "timeMillis")


@dataclass(frozen=True)
class Snapshot:
    """One snapshot. ``fields`` holds the parsed JSON (known and unknown keys)."""

    fields: Mapping[str, Any] = field(repr=False)
    #: Size in bytes of the file it was read from (None when built in memory).
    file_size: int | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_json(cls, text: str | bytes, *, what: str = "snapshot") -> Snapshot:
        size = len(text.encode("utf-8")) if isinstance(text, str) else len(text)
        return cls.from_fields(parse_json_object(text, what), what=what, file_size=size)

    @classmethod
    def from_fields(cls, data: dict[str, Any], *, what: str = "snapshot", file_size: int | None = None) -> Snapshot:
        """A snapshot from its parsed JSON object (a tag file's snapshot part: no second parse),
        checked as :meth:`from_json` checks it.

        Raises:
            FormatError: a field of a known name has the wrong type, or the version is unknown.
        """
        check_fields(data, what, FIELD_KINDS, required=_REQUIRED)
        check_version(data, what)
        data.setdefault("version", 1)
        return cls(data, file_size)

    # typed accessors -----------------------------------------------------------------
    @property
    def id(self) -> int:
        return int(self.fields["id"])

    @property
    def version(self) -> int:
        return int(self.fields.get("version", 1))

    @property
    def schema_id(self) -> int:
        return int(self.fields["schemaId"])

    @property
    def base_manifest_list(self) -> str | None:
        return self.fields.get("baseManifestList")

    @property
    def delta_manifest_list(self) -> str | None:
        return self.fields.get("deltaManifestList")

    @property
    def changelog_manifest_list(self) -> str | None:
        return self.fields.get("changelogManifestList")

    @property
    def index_manifest(self) -> str | None:
        return self.fields.get("indexManifest")

    @property
    def statistics(self) -> str | None:
        return self.fields.get("statistics")

    @property
    def commit_kind(self) -> str:
        return str(self.fields["commitKind"])

    @property
    def time_millis(self) -> int:
        return int(self.fields["timeMillis"])

    @property
    def total_record_count(self) -> int | None:
        value = self.fields.get("totalRecordCount")
        return None if value is None else int(value)

    @property
    def delta_record_count(self) -> int | None:
        value = self.fields.get("deltaRecordCount")
        return None if value is None else int(value)

    @property
    def watermark(self) -> int | None:
        value = self.fields.get("watermark")
        return None if value is None else int(value)

    @property
    def uuid(self) -> str | None:
        return self.fields.get("uuid")

    @property
    def manifest_lists(self) -> tuple[str, ...]:
        """Every manifest list this snapshot names (base, delta, changelog)."""
        return tuple(n for n in (self.base_manifest_list, self.delta_manifest_list,
                                 self.changelog_manifest_list) if n)

    def identity(self) -> tuple[int, str | None, str | None]:
        """What identifies a snapshot's content across copies and renames (fork detection)."""
        return (self.id, self.base_manifest_list, self.delta_manifest_list)

    # serialisation ---------------------------------------------------------------------
    def ordered_fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in SNAPSHOT_FIELDS:
            value = self.fields.get(key)
            if value is None and key not in ALWAYS_WRITTEN:
                continue
            if key in self.fields or key in ALWAYS_WRITTEN:
                out[key] = value
        for key, value in self.fields.items():
            if key in out or key in _DROPPED or key in TAG_FIELDS or key in SNAPSHOT_FIELDS:
                continue
            if value is not None:
                out[key] = value
        return out

    def to_json(self) -> str:
        """Jackson-pretty JSON as Java's ``Snapshot.toJson()``."""
        return jackson.dumps(self.ordered_fields())

    def with_fields(self, **updates: Any) -> Snapshot:
        data = dict(self.fields)
        data.update(updates)
        return Snapshot(data)
