"""Shared building blocks of the policy models: the base model, object references, enums and
small validated string types (Kubernetes names, time zones).

Every spec model derives from :class:`SpecModel`: frozen, unknown fields rejected, camelCase
aliases (the CRD/YAML spelling) with snake_case attribute names. Absent optional fields are
``None`` and mean "not managed here" (operator-design.md §1.11), never "reset to default".
"""

from __future__ import annotations

import re
import zoneinfo
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from tablekeeper.core.policy.validation import InvalidSpecError

__all__ = [
    "SpecModel",
    "PatternString",
    "ObjectName",
    "NamespaceName",
    "TimeZoneName",
    "ObjectReference",
    "CatalogRef",
    "CatalogKind",
    "DeletionPolicy",
    "AdoptionPolicy",
    "SectionState",
    "Engine",
    "RunEngine",
    "OBJECT_NAME_PATTERN",
    "NAMESPACE_NAME_PATTERN",
]


class SpecModel(BaseModel):
    """Base of every spec model: frozen, ``extra="forbid"``, camelCase aliases."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        validate_default=False,
    )

    def to_dict(self) -> dict[str, Any]:
        """The YAML/JSON form: camelCase keys, absent (None) fields omitted, plain JSON types.

        ``Model.model_validate(m.to_dict()) == m`` holds for every spec model.
        """
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class PatternString(str):
    """Base of the string field types kept exactly as written (``Duration``, ``Schedule``).

    The subclass constructor validates; pydantic calls it on every input string and serialises
    the value back as the plain string. The JSON schema (and so the CRD) is
    ``{"type": "string", "pattern": json_pattern}``.
    """

    __slots__ = ()

    #: The shape emitted as the JSON-schema ``pattern`` (CRD validation).
    json_pattern: ClassVar[str]

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(
            cls,
            core_schema.str_schema(),
            serialization=core_schema.plain_serializer_function_ser_schema(
                str, return_schema=core_schema.str_schema()
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {"type": "string", "pattern": cls.json_pattern}


#: DNS-1123 subdomain, the rule for most Kubernetes object names.
OBJECT_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
#: DNS-1123 label, the rule for namespace names.
NAMESPACE_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

ObjectName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=253,
        pattern=OBJECT_NAME_PATTERN,
        description="Kubernetes object name (DNS-1123 subdomain: lowercase letters, digits, '-' and '.').",
    ),
]
NamespaceName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=63,
        pattern=NAMESPACE_NAME_PATTERN,
        description="Kubernetes namespace name (DNS-1123 label).",
    ),
]

_ZONE_SHAPE = re.compile(r"^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$")


def _check_zone(value: str) -> str:
    if not _ZONE_SHAPE.match(value):
        raise InvalidSpecError(
            f"{value!r} is not an IANA time zone name",
            fix="use a zone such as 'UTC', 'Europe/Berlin' or 'Asia/Shanghai' (not an offset like '+08:00')",
        )
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidSpecError(
            f"unknown time zone {value!r}",
            fix="use an IANA zone name such as 'UTC', 'Europe/Berlin' or 'Asia/Shanghai'",
        ) from exc
    return value


TimeZoneName = Annotated[
    str,
    AfterValidator(_check_zone),
    Field(description="IANA time zone name, e.g. 'UTC' or 'Asia/Shanghai'."),
]

CatalogKind = Literal["PaimonCatalog", "ClusterPaimonCatalog"]
DeletionPolicy = Literal["Delete", "Retain"]
AdoptionPolicy = Literal["Adopt", "MustCreate"]
#: Per-section switch (Databricks ENABLE/DISABLE/INHERIT). ``Inherit`` and absent are the same.
SectionState = Literal["Enabled", "Disabled", "Inherit"]
#: Where a table's maintenance runs; ``Auto`` picks per run (operator-design.md §7.7).
Engine = Literal["Auto", "Python", "SparkOperator", "SparkJob"]
#: A run's concrete engine (``Auto`` resolved).
RunEngine = Literal["Python", "SparkOperator", "SparkJob"]


class ObjectReference(SpecModel):
    """Reference to an object by name, in the referring object's namespace."""

    name: ObjectName = Field(description="Name of the referenced object (same namespace).")


class CatalogRef(SpecModel):
    """Reference to a ``PaimonCatalog`` (same namespace) or a ``ClusterPaimonCatalog``."""

    kind: CatalogKind = Field(
        description="Kind of the referenced catalog: PaimonCatalog (same namespace) or ClusterPaimonCatalog "
        "(cluster-scoped, subject to its allowedNamespaces)."
    )
    name: ObjectName = Field(description="Name of the referenced catalog.")
