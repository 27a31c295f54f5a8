"""``PaimonCatalog`` / ``ClusterPaimonCatalog`` specs: how to reach a Paimon warehouse.

A namespaced ``PaimonCatalog`` is usable only by CRs of its namespace; a ``ClusterPaimonCatalog``
is shared and gated by ``allowedNamespaces`` (operator-design.md §4.1, §8). Credentials never
appear inline: they come from a Kubernetes Secret (``credentialsSecretRef``), and option keys
that look like secrets are rejected.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import Field, field_validator

from tablekeeper.core.policy.common import NamespaceName, ObjectName, SpecModel, TimeZoneName
from tablekeeper.core.policy.selectors import LabelSelector
from tablekeeper.core.policy.validation import InvalidSpecError
from tablekeeper.core.storage import is_secret_option

__all__ = [
    "Metastore",
    "SecretReference",
    "ClusterSecretReference",
    "SparkDefaults",
    "AllowedNamespaces",
    "PaimonCatalogSpec",
    "ClusterPaimonCatalogSpec",
    "normalize_warehouse",
]

Metastore = Literal["filesystem", "hive", "jdbc", "rest"]

_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://(?P<rest>.+)$")
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}
#: Last segment of an option key that holds a secret (``fs.s3.secret-key``, ``token``, ...).
_SECRET_SEGMENT = re.compile(
    r"(secret|password|passwd|access-?key|session-?token|credential|^token$)", re.IGNORECASE
)


def normalize_warehouse(uri: str) -> str:
    """Identity form of a warehouse URI: lower-case scheme, ``s3a``/``s3n`` -> ``s3``, no
    trailing slash, ``file://`` dropped for local paths (operator-design.md §7.1)."""
    match = _SCHEME.match(uri)
    if not match:
        return uri.rstrip("/") or "/"
    scheme = match.group("scheme").lower()
    scheme = _SCHEME_ALIASES.get(scheme, scheme)
    rest = match.group("rest").rstrip("/")
    if scheme == "file":
        return rest if rest.startswith("/") else "/" + rest
    return f"{scheme}://{rest}"


class SecretReference(SpecModel):
    """A Secret in the catalog's own namespace whose keys are catalog options."""

    name: ObjectName = Field(description="Name of the Secret.")


class ClusterSecretReference(SecretReference):
    """A Secret referenced from a cluster-scoped catalog."""

    namespace: NamespaceName | None = Field(
        default=None, description="Namespace of the Secret; absent = the operator's own namespace."
    )


class SparkDefaults(SpecModel):
    """Per-catalog defaults for Spark maintenance runs of the catalog's tables."""

    image: str | None = Field(default=None, min_length=1, description="Spark image with tablekeeper installed.")
    spark_version: str | None = Field(
        default=None, pattern=r"^[0-9]+\.[0-9]+(\.[0-9]+)?$", description="Spark version of the image, e.g. 4.0.1."
    )
    conf: dict[str, str] = Field(default_factory=dict, description="Spark configuration (spark.* keys).")


class AllowedNamespaces(SpecModel):
    """Namespaces whose CRs may use a cluster catalog: listed by name and/or by label selector.

    A namespace is allowed when it is in ``names`` **or** selected by ``selector``. With neither
    given, no namespace is allowed.
    """

    names: tuple[NamespaceName, ...] = Field(default=(), description="Namespaces allowed by name.")
    selector: LabelSelector | None = Field(
        default=None, description="Namespaces allowed by their labels (the Namespace object's labels)."
    )

    def allows(self, namespace: str, namespace_labels: Mapping[str, str]) -> bool:
        """Whether CRs in ``namespace`` (with ``namespace_labels``) may use the catalog."""
        if namespace in self.names:
            return True
        return self.selector is not None and self.selector.matches(namespace_labels)


class PaimonCatalogSpec(SpecModel):
    """Connection to a Paimon warehouse, usable by CRs in the catalog's namespace."""

    warehouse: str = Field(
        min_length=1,
        description="Warehouse root URI, e.g. s3://lake/warehouse or /data/warehouse. Part of the identity of "
        "every table in it; immutable.",
    )
    metastore: Metastore = Field(
        default="filesystem",
        description="Paimon metastore. The operator and apply -f maintain filesystem catalogs; hive, jdbc and rest "
        "are refused here (InvalidSpec) and maintained with the CLI's --catalog-option.",
    )
    options: dict[str, str] = Field(
        default_factory=dict,
        description="Paimon catalog options (fs.s3.endpoint, fs.s3.region, ...). Values are strings. Secrets "
        "are not allowed here: put them into the Secret named by credentialsSecretRef.",
    )
    credentials_secret_ref: SecretReference | None = Field(
        default=None,
        description="Secret whose keys are catalog option names (e.g. fs.s3.accessKeyId) and whose values are "
        "merged over options when connecting; never logged or written to status.",
    )
    writer_time_zone: TimeZoneName | None = Field(
        default=None,
        description="Default time zone of the writers of this warehouse's tables, used for tag TTL, auto-tag "
        "names and update-time partition expiry. PaimonTable.spec.timeZone overrides it.",
    )
    spark_defaults: SparkDefaults | None = Field(
        default=None, description="Defaults for Spark maintenance runs of this catalog's tables."
    )

    @field_validator("warehouse")
    @classmethod
    def _check_warehouse(cls, value: str) -> str:
        if value != value.strip() or any(c.isspace() for c in value):
            raise InvalidSpecError(f"warehouse {value!r} contains white space", fix="remove the spaces")
        if not (_SCHEME.match(value) or value.startswith("/")):
            raise InvalidSpecError(
                f"warehouse {value!r} is neither a URI nor an absolute path",
                fix="write a URI such as 's3://bucket/warehouse' or an absolute path such as '/data/warehouse'",
            )
        return value

    @field_validator("options")
    @classmethod
    def _check_options(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not key.strip():
                raise InvalidSpecError("catalog option with an empty key", fix="remove it")
            if _SECRET_SEGMENT.search(key.rsplit(".", 1)[-1]) or is_secret_option(key):
                raise InvalidSpecError(
                    f"catalog option {key!r} looks like a secret; secrets must not be written in specs",
                    fix="move it into the Secret named by credentialsSecretRef (same key)",
                    fields=(key,),
                )
        return value

    @field_validator("metastore")
    @classmethod
    def _check_metastore(cls, value: str) -> str:
        if value != "filesystem":
            raise InvalidSpecError(
                f"metastore {value!r} is not maintained by the operator or apply -f yet (their tables would be "
                "treated as a filesystem warehouse)",
                fix=f"maintain metastore={value} tables with the CLI (--catalog-option metastore={value} ...), or "
                    "use metastore: filesystem",
                fields=("metastore",))
        return value

    @property
    def normalized_warehouse(self) -> str:
        """The warehouse URI in identity form (see :func:`normalize_warehouse`)."""
        return normalize_warehouse(self.warehouse)


class ClusterPaimonCatalogSpec(PaimonCatalogSpec):
    """A shared, cluster-scoped warehouse connection, gated by ``allowedNamespaces``."""

    credentials_secret_ref: ClusterSecretReference | None = Field(
        default=None,
        description="Secret (name and namespace) whose keys are catalog option names and whose values are "
        "merged over options when connecting; never logged or written to status.",
    )
    allowed_namespaces: AllowedNamespaces | None = Field(
        default=None,
        description="Namespaces whose CRs may reference this catalog (names or label selector). Absent = every "
        "namespace, as for cert-manager ClusterIssuers; set it on shared clusters.",
    )

    def allows(self, namespace: str, namespace_labels: Mapping[str, str]) -> bool:
        """Whether CRs in ``namespace`` may reference this catalog."""
        if self.allowed_namespaces is None:
            return True
        return self.allowed_namespaces.allows(namespace, namespace_labels)
