"""Kubernetes label selectors (``metav1.LabelSelector``) and their evaluation.

Used by retention policies (which tables, which namespaces) and by ``ClusterPaimonCatalog``'s
``allowedNamespaces``. Semantics follow Kubernetes: all ``matchLabels`` and all
``matchExpressions`` must hold; an empty selector matches everything; ``NotIn`` and
``DoesNotExist`` match objects without the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import Field, model_validator

from tablekeeper.core.policy.common import SpecModel
from tablekeeper.core.policy.validation import InvalidSpecError

__all__ = ["LabelSelector", "LabelSelectorRequirement", "LABEL_KEY_PATTERN", "LABEL_VALUE_PATTERN"]

#: ``[prefix/]name``: DNS-1123 subdomain prefix, 63-character name.
LABEL_KEY_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"

LabelKey = Annotated[str, Field(min_length=1, max_length=317, pattern=LABEL_KEY_PATTERN)]
LabelValue = Annotated[str, Field(max_length=63, pattern=LABEL_VALUE_PATTERN)]


class LabelSelectorRequirement(SpecModel):
    """One set-based requirement, e.g. ``{key: tier, operator: In, values: [gold, silver]}``."""

    key: LabelKey = Field(description="Label key the requirement applies to.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = Field(
        description="In / NotIn: the label value is (not) one of values; Exists / DoesNotExist: the key is "
        "(not) present."
    )
    values: tuple[LabelValue, ...] = Field(
        default=(),
        description="Values for In and NotIn (at least one); must be empty for Exists and DoesNotExist.",
    )

    @model_validator(mode="after")
    def _check_values(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise InvalidSpecError(f"operator {self.operator} needs at least one value",
                                   fix="list the label values in 'values'", fields=("values",))
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise InvalidSpecError(f"operator {self.operator} takes no values",
                                   fix="remove 'values'", fields=("values",))
        return self

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this requirement."""
        present = self.key in labels
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator == "In":
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values


class LabelSelector(SpecModel):
    """A Kubernetes label selector; all conditions must hold, an empty selector matches all."""

    match_labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict, description="Labels that must all be present with exactly these values."
    )
    match_expressions: tuple[LabelSelectorRequirement, ...] = Field(
        default=(), description="Set-based requirements that must all hold."
    )

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether an object with ``labels`` is selected."""
        return all(labels.get(key) == value for key, value in self.match_labels.items()) and all(
            requirement.matches(labels) for requirement in self.match_expressions
        )
