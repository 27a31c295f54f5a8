"""The API kinds (group ``tablekeeper.io``, version ``v1alpha1``) and their spec models, plus
``parse_spec`` for front ends that read manifests (CLI ``plan/apply -f DIR``, the operator)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from tablekeeper.core import errors
from tablekeeper.core.policy.common import SpecModel
from tablekeeper.core.policy.specs import (
    ClusterPaimonCatalogSpec,
    ClusterPaimonRetentionPolicySpec,
    PaimonBranchSpec,
    PaimonCatalogSpec,
    PaimonMaintenanceRunSpec,
    PaimonRetentionPolicySpec,
    PaimonTableSpec,
    PaimonTagSpec,
)
from tablekeeper.core.policy.validation import as_spec_error

__all__ = ["API_GROUP", "API_VERSION", "API_GROUP_VERSION", "SPEC_MODELS", "CLUSTER_SCOPED", "parse_spec"]

API_GROUP = "tablekeeper.io"
API_VERSION = "v1alpha1"
API_GROUP_VERSION = f"{API_GROUP}/{API_VERSION}"

#: kind -> model of its ``spec``.
SPEC_MODELS: Mapping[str, type[SpecModel]] = {
    "PaimonCatalog": PaimonCatalogSpec,
    "ClusterPaimonCatalog": ClusterPaimonCatalogSpec,
    "PaimonTable": PaimonTableSpec,
    "PaimonTag": PaimonTagSpec,
    "PaimonBranch": PaimonBranchSpec,
    "PaimonRetentionPolicy": PaimonRetentionPolicySpec,
    "ClusterPaimonRetentionPolicy": ClusterPaimonRetentionPolicySpec,
    "PaimonMaintenanceRun": PaimonMaintenanceRunSpec,
}
CLUSTER_SCOPED = frozenset({"ClusterPaimonCatalog", "ClusterPaimonRetentionPolicy"})


def parse_spec(kind: str, spec: Any, *, source: str) -> SpecModel:
    """Validate the ``spec`` of a ``kind`` object.

    Args:
        kind: one of :data:`SPEC_MODELS`.
        spec: the parsed ``spec`` mapping.
        source: names the object in messages, e.g. ``tables/orders.yaml (PaimonTable sales/orders)``.

    Raises:
        InvalidSpecError / UnsafeSpecError: the report of every problem, one line each with the
            camelCase path under ``spec`` and its fix.
        InvalidInputError: ``kind`` is not a tablekeeper kind.
    """
    model = SPEC_MODELS.get(kind)
    if model is None:
        raise errors.InvalidInputError(
            f"{source}: unknown kind {kind!r}", fix="use one of " + ", ".join(sorted(SPEC_MODELS))
        )
    try:
        return model.model_validate(spec)
    except ValidationError as err:
        raise as_spec_error(err, source, path_prefix="spec", model=model) from None
