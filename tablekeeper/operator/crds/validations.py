"""What the CRDs check beyond the pydantic JSON schema: CEL ``x-kubernetes-validations`` rules and
schema refinements, keyed by model class and field so that :mod:`tablekeeper.operator.crds.schema` can
attach them wherever a model appears.

The pydantic JSON schema carries types, enums, patterns and bounds, but not the model and field
validators (one-of sources, ``min <= max``, name rules, immutability). This module restates
those validators as CEL, so that a cluster rejects a bad object at admission with the same
meaning the models give it later. Every rule here mirrors a validator of a model in
``tablekeeper.core.policy`` (named in a comment) or a design rule (immutability,
operator-design.md §3 and §4); what cannot be stated in CEL is listed in
:data:`MODEL_ONLY_CHECKS` and enforced only when the operator parses the spec.

Rules use only standard CEL plus ``matches``/``contains``/``startsWith`` (evaluable by the
``cel`` package the tests use, and by Kubernetes). String fields that rules inspect carry a
``maxLength``, and lists whose items carry rules a ``maxItems``, so that the API server's static
cost estimate stays bounded; these bounds are the only places where a CRD is stricter than the
models.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, get_args

from pydantic.fields import FieldInfo

from tablekeeper.core import policy, values
from tablekeeper.core.policy import Duration, LabelSelector, LabelSelectorRequirement, SpecModel, TimeZoneName
from tablekeeper.core.policy.specs import (
    RESERVED_TAG_NAMES,
    BranchTTL,
    ChangelogRetention,
    ConsumerRetention,
    DurationBound,
    IntBound,
    MaintenanceSpec,
    MaintenanceWindow,
    OrphanFileCleanup,
    PaimonBranchSpec,
    PaimonCatalogSpec,
    PaimonMaintenanceRunSpec,
    PaimonTableSpec,
    PaimonTagSpec,
    PartitionRetention,
    RollbackTarget,
    SnapshotRetention,
    TagAutoCreate,
    TagRetention,
)

__all__ = [
    "Rule",
    "MODEL_RULES",
    "FIELD_RULES",
    "FIELD_SCHEMA",
    "TYPE_SCHEMA",
    "IMMUTABLE_FIELDS",
    "IMMUTABLE_SPEC_KINDS",
    "IMMUTABLE_WHY",
    "ROOT_RULES",
    "MODEL_ONLY_CHECKS",
    "NAME_MAX_LENGTH",
    "TEXT_MAX_LENGTH",
    "MAX_SELECTOR_REQUIREMENTS",
    "ZONE_PATTERN",
    "int_at_least_regex",
    "tag_name_rules",
    "branch_name_rules",
    "branch_ref_rule",
    "duration_at_least_regex",
    "rules_for_model",
    "rules_for_field",
    "schema_for_field",
]


@dataclass(frozen=True)
class Rule:
    """One ``x-kubernetes-validations`` entry."""

    rule: str
    message: str

    def to_schema(self) -> dict[str, str]:
        """The CRD form: ``{rule, message}``."""
        return {"rule": self.rule, "message": self.message}


#: Upper bound put on Paimon names and identifiers the rules inspect (cost budget; Paimon file
#: names such as ``tag-<name>`` must fit in 255 bytes anyway).
NAME_MAX_LENGTH = 253
#: Upper bound on free-text strings the rules inspect (warehouse URIs, schedules).
TEXT_MAX_LENGTH = 4096
#: Upper bound on ``matchExpressions`` (each item is checked by CEL; the models set no limit).
MAX_SELECTOR_REQUIREMENTS = 64
#: Shape of an IANA zone name, as ``tablekeeper.core.policy.common`` checks it before looking the
#: zone up (the lookup itself cannot be done at admission).
ZONE_PATTERN = r"^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$"

_UNITS: tuple[tuple[str, timedelta], ...] = (
    ("ms", timedelta(milliseconds=1)),
    ("s", timedelta(seconds=1)),
    ("min", timedelta(minutes=1)),
    ("h", timedelta(hours=1)),
    ("d", timedelta(days=1)),
)


def int_at_least_regex(n: int) -> str:
    """An unanchored regex for a decimal integer (leading zeros allowed) that is ``>= n``."""
    if n <= 0:
        return "[0-9]+"
    digits = str(n)
    width = len(digits)
    alternatives = [f"[1-9][0-9]{{{width},}}"]  # more significant digits than n
    for i, char in enumerate(digits):
        if char != "9":
            low = int(char) + 1
            rest = width - i - 1
            alternatives.append(digits[:i] + ("9" if low == 9 else f"[{low}-9]")
                                + ("" if rest == 0 else "[0-9]" if rest == 1 else f"[0-9]{{{rest}}}"))
    alternatives.append(digits)
    return "0*(" + "|".join(alternatives) + ")"


def duration_at_least_regex(floor: timedelta) -> str:
    """An anchored regex matching Paimon durations (``DURATION_PATTERN``) of at least ``floor``."""
    parts = []
    for unit, size in _UNITS:
        amount = math.ceil(floor / size)
        parts.append(f"{int_at_least_regex(amount)} ?{unit}")
    return "^(" + "|".join(parts) + ")$"


def _cel_string(value: str) -> str:
    """``value`` as a single-quoted CEL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _matches(regex: str) -> str:
    return f"self.matches({_cel_string(regex)})"


# --- names (tablekeeper.core.values.names, tag.check_tag_name) -------------------------------------------

_CONTROL = r"[\x00-\x1f]"


def _common_name_rules(what: str) -> tuple[Rule, ...]:
    # names._common: blank, surrounding spaces, path separators, '..', control characters, digits
    return (
        Rule(_matches(r"\S"), f"{what} must not be blank"),
        Rule("!" + _matches(r"^\s|\s$"), f"{what} must not start or end with white space"),
        Rule("!self.contains('/') && !self.contains('\\\\')", f"{what} must not contain '/' or '\\'"),
        Rule("!self.contains('..')", f"{what} must not contain '..'"),
        Rule("!" + _matches(_CONTROL), f"{what} must not contain control characters"),
        Rule("!" + _matches(r"^[0-9]+$"),
             f"{what} must not be all digits: it would shadow snapshot ids in time travel"),
    )


def tag_name_rules(what: str) -> tuple[Rule, ...]:
    """``names.validate_tag_name`` plus ``RESERVED_TAG_NAMES``."""
    reserved = ", ".join(_cel_string(name) for name in sorted(RESERVED_TAG_NAMES))
    return _common_name_rules(what) + (
        Rule("!self.contains(',')", f"{what} must not contain ',': Paimon procedures split tag lists on commas"),
        Rule(f"!(self in [{reserved}])",
             f"{what} must not be {', '.join(sorted(RESERVED_TAG_NAMES))}: the name is reserved by Paimon"),
    )


def branch_name_rules(what: str) -> tuple[Rule, ...]:
    """``names.validate_branch_name``."""
    return _common_name_rules(what) + (
        Rule("self != 'main'", f"{what} must not be 'main'"),
        Rule("!self.contains('.')", f"{what} must not contain '.'"),
        Rule("!self.contains(',') && !self.contains('$')", f"{what} must not contain ',' or '$'"),
    )


def branch_ref_rule(what: str) -> Rule:
    """``tag.check_branch_ref``: 'main' or a valid branch name, as one rule."""
    conditions = [rule.rule for rule in branch_name_rules(what) if rule.rule != "self != 'main'"]
    return Rule(
        "self == 'main' || (" + " && ".join(conditions) + ")",
        f"{what} must be 'main' or a valid branch name (not blank or all digits; no '/', '\\', '.', ',', '$' or "
        "control characters)",
    )


def _exactly_one(fields: tuple[str, ...], message: str) -> Rule:
    count = " + ".join(f"(has(self.{field}) ? 1 : 0)" for field in fields)
    return Rule(f"{count} == 1", message)


def _min_le_max(low: str, high: str, what: str) -> Rule:
    return Rule(
        f"!has(self.{low}) || !has(self.{high}) || self.{low} <= self.{high}",
        f"{what}{low} must not be larger than {high}",
    )


_POSITIVE_DURATION = Rule("!" + _matches(r"^0+ ?[a-z]+$"), "must be longer than 0")
_ORPHAN_FLOOR = Rule(
    _matches(duration_at_least_regex(values.ORPHAN_AGE_FLOOR)),
    f"must be at least the orphan-cleanup safety floor '{Duration.from_timedelta(values.ORPHAN_AGE_FLOOR)}': "
    "younger files may belong to commits in flight",
)
_MIN_INTERVAL = duration_at_least_regex(policy.MIN_INTERVAL)[1:-1]
_MACROS = ", ".join(_cel_string(name) for name in sorted(policy.MACROS))
_SCHEDULE_RULES = (
    Rule(
        "!self.startsWith('@every') || " + _matches("^@every (" + _MIN_INTERVAL + ")$"),
        "an @every schedule needs one space and an interval of at least 1 min, e.g. '@every 6 h'",
    ),
    Rule(
        f"!self.startsWith('@') || self.startsWith('@every') || self in [{_MACROS}]",
        "unknown schedule macro: use one of " + ", ".join(sorted(policy.MACROS)) + " or '@every <duration>'",
    ),
)
_IDENTIFIER = Rule(
    "!" + _matches(r"[/\\.$\s\x00-\x1f]"),
    "must be a plain Paimon name without '/', '\\', '.', '$', white space or control characters "
    "(branches are addressed with PaimonBranch, not 'table$branch_x')",
)

#: Object-level rules, by model (inherited by subclasses).
MODEL_RULES: Mapping[type[SpecModel], tuple[Rule, ...]] = {
    # PaimonTagSpec._one_source
    PaimonTagSpec: (
        _exactly_one(("snapshotId", "fromTimestamp", "fromLatest"),
                     "exactly one of snapshotId, fromTimestamp or fromLatest must be set"),
        Rule("!has(self.fromLatest) || self.fromLatest",
             "fromLatest: false selects no snapshot; set fromLatest: true, or use snapshotId or fromTimestamp"),
    ),
    # PaimonBranchSpec._one_source
    PaimonBranchSpec: (
        _exactly_one(("fromTag", "fromSnapshotId", "empty"),
                     "exactly one of fromTag, fromSnapshotId or empty must be set"),
        Rule("!has(self.empty) || self.empty",
             "empty: false selects no starting point; set empty: true, or use fromTag or fromSnapshotId"),
    ),
    # BranchTTL._check
    BranchTTL: (Rule("has(self.maxAge) || has(self.maxIdle)", "ttl must set maxAge and/or maxIdle"),),
    # RollbackTarget._one
    RollbackTarget: (_exactly_one(("tag", "snapshotId"), "rollbackTo needs exactly one of tag or snapshotId"),),
    # PaimonMaintenanceRunSpec._check
    PaimonMaintenanceRunSpec: (
        Rule(
            "self.type == 'Rollback' ? (has(self.parameters) && has(self.parameters.rollbackTo)) : "
            "(!has(self.parameters) || !has(self.parameters.rollbackTo))",
            "parameters.rollbackTo is required for Rollback runs and not allowed for other types",
        ),
        Rule("self.type != 'FastForward' || (has(self.branch) && self.branch != 'main')",
             "FastForward merges a branch into main: set branch to that branch, not main"),
        Rule("(self.type == 'Undo') == (has(self.parameters) && has(self.parameters.undoRun))",
             "parameters.undoRun is required for Undo runs and not allowed for other types"),
        Rule("self.type != 'Check' || !has(self.branch) || self.branch == 'main'",
             "a Check run reads every branch of the table: remove branch"),
        Rule("self.type != 'Compact' || !has(self.engine) || self.engine != 'Python'",
             "Compact has no Python implementation: use engine SparkOperator or SparkJob"),
    ),
    # SnapshotRetention._check / ChangelogRetention._check
    SnapshotRetention: (_min_le_max("minRetained", "maxRetained", ""),),
    ChangelogRetention: (_min_le_max("minRetained", "maxRetained", ""),),
    # TagAutoCreate._check (the delay < period half is model-only)
    TagAutoCreate: (
        Rule("!has(self.period) || !has(self.periodDuration)", "set period or periodDuration, not both"),
    ),
    # IntBound._check / DurationBound._check (durations cannot be compared in CEL)
    IntBound: (
        Rule("has(self.min) || has(self.max)", "a bound must set min and/or max"),
        _min_le_max("min", "max", "bound "),
    ),
    DurationBound: (Rule("has(self.min) || has(self.max)", "a bound must set min and/or max"),),
    # LabelSelectorRequirement._check_values
    LabelSelectorRequirement: (
        Rule("!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",
             "operators In and NotIn need at least one value"),
        Rule("!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",
             "operators Exists and DoesNotExist take no values"),
    ),
    # MaintenanceWindow._check
    MaintenanceWindow: (Rule("self.start != self.end", "window start and end must differ (an empty window)"),),
}

#: Field-level rules, by (model, Python field name); inherited by subclasses.
FIELD_RULES: Mapping[tuple[type[SpecModel], str], tuple[Rule, ...]] = {
    (PaimonTagSpec, "tag_name"): tag_name_rules("tagName"),
    (PaimonTagSpec, "branch"): (branch_ref_rule("branch"),),
    (PaimonTagSpec, "time_retained"): (_POSITIVE_DURATION,),
    (PaimonBranchSpec, "branch_name"): branch_name_rules("branchName"),
    (PaimonBranchSpec, "from_tag"): tag_name_rules("fromTag"),
    (BranchTTL, "max_age"): (_POSITIVE_DURATION,),
    (BranchTTL, "max_idle"): (_POSITIVE_DURATION,),
    (RollbackTarget, "tag"): tag_name_rules("tag"),
    (PaimonMaintenanceRunSpec, "branch"): (branch_ref_rule("branch"),),
    (PartitionRetention, "expiration"): (_POSITIVE_DURATION,),
    (TagRetention, "default_time_retained"): (_POSITIVE_DURATION,),
    (ConsumerRetention, "expiration"): (_POSITIVE_DURATION,),
    (OrphanFileCleanup, "older_than"): (_ORPHAN_FLOOR,),
    (OrphanFileCleanup, "schedule"): _SCHEDULE_RULES,
    (MaintenanceSpec, "schedule"): _SCHEDULE_RULES,
    (TagAutoCreate, "period_duration"): (
        Rule(_matches(duration_at_least_regex(timedelta(minutes=1))), "periodDuration must be at least 1 min"),
    ),
    (PaimonTableSpec, "database"): (_IDENTIFIER,),
    (PaimonTableSpec, "table"): (_IDENTIFIER,),
    (PaimonTableSpec, "deletion_policy"): (
        Rule("self != 'Delete'",
             "deletionPolicy Delete (drop the table with the CR) is not supported yet: use Retain"),
    ),
    # PaimonCatalogSpec._check_warehouse
    (PaimonCatalogSpec, "warehouse"): (
        Rule("!" + _matches(r"\s"), "warehouse must not contain white space"),
        Rule(_matches(r"^[A-Za-z][A-Za-z0-9+.\-]*://.+$") + " || self.startsWith('/')",
             "warehouse must be a URI such as 's3://bucket/warehouse' or an absolute path such as '/data/warehouse'"),
    ),
}

_NAME_LIMIT: dict[str, Any] = {"maxLength": NAME_MAX_LENGTH}
_TEXT_LIMIT: dict[str, Any] = {"maxLength": TEXT_MAX_LENGTH}

#: Extra schema keywords, by (model, Python field name); inherited by subclasses. The
#: ``maxLength`` values are not in the models (see the module docstring).
FIELD_SCHEMA: Mapping[tuple[type[SpecModel], str], Mapping[str, Any]] = {
    (PaimonTagSpec, "tag_name"): _NAME_LIMIT,
    (PaimonTagSpec, "branch"): _NAME_LIMIT,
    (PaimonTagSpec, "time_retained"): _NAME_LIMIT,
    (PaimonBranchSpec, "branch_name"): _NAME_LIMIT,
    (PaimonBranchSpec, "from_tag"): _NAME_LIMIT,
    (BranchTTL, "max_age"): _NAME_LIMIT,
    (BranchTTL, "max_idle"): _NAME_LIMIT,
    (RollbackTarget, "tag"): _NAME_LIMIT,
    (PaimonMaintenanceRunSpec, "branch"): _NAME_LIMIT,
    (PartitionRetention, "expiration"): _NAME_LIMIT,
    (TagRetention, "default_time_retained"): _NAME_LIMIT,
    (ConsumerRetention, "expiration"): _NAME_LIMIT,
    (OrphanFileCleanup, "older_than"): _NAME_LIMIT,
    (OrphanFileCleanup, "schedule"): _NAME_LIMIT,
    (MaintenanceSpec, "schedule"): _NAME_LIMIT,
    (TagAutoCreate, "period_duration"): _NAME_LIMIT,
    (PaimonTableSpec, "database"): {"minLength": 1, **_NAME_LIMIT},
    (PaimonTableSpec, "table"): {"minLength": 1, **_NAME_LIMIT},
    (PaimonTableSpec, "policy_refs"): {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    (PaimonCatalogSpec, "warehouse"): _TEXT_LIMIT,
    # The requirement rules run once per list item: bound the list and the compared strings.
    (LabelSelector, "match_expressions"): {"maxItems": MAX_SELECTOR_REQUIREMENTS},
    (LabelSelectorRequirement, "operator"): {"maxLength": 16},
}

#: Extra schema keywords for every field whose annotation contains the given type.
TYPE_SCHEMA: tuple[tuple[Any, Mapping[str, Any]], ...] = (
    (TimeZoneName, {"pattern": ZONE_PATTERN, "maxLength": 64}),
)

#: Fields that must not change after creation (``self == oldSelf``; optional ones also must not
#: be added or removed). operator-design.md §4.1-§4.4 and the field descriptions.
IMMUTABLE_FIELDS: Mapping[type[SpecModel], tuple[str, ...]] = {
    PaimonCatalogSpec: ("warehouse",),
    PaimonTableSpec: ("catalog_ref", "database", "table"),
    PaimonTagSpec: ("table_ref", "branch", "tag_name", "snapshot_id", "from_timestamp", "from_latest",
                    "time_retained"),
    PaimonBranchSpec: ("table_ref", "branch_name", "from_tag", "from_snapshot_id", "empty"),
}

#: Why the immutable fields of a kind cannot change and what to do instead: the message a
#: refused update shows (the field's name goes first).
IMMUTABLE_WHY: Mapping[type[SpecModel], str] = {
    PaimonCatalogSpec: "the catalog's tables, tags and ownership records live in that warehouse; to use "
                       "another one, delete this PaimonCatalog and create it again (or create a new one)",
    PaimonTableSpec: "it names the Paimon table this object manages; to manage another table create a new "
                     "PaimonTable (deleting this one never touches the table)",
    PaimonTagSpec: "a tag stays at what it was created from; delete this PaimonTag and create a new one "
                   "(its deletionPolicy decides whether the tag in storage goes)",
    PaimonBranchSpec: "a branch stays at what it was created from; delete this PaimonBranch and create a new "
                      "one (its deletionPolicy decides whether the branch in storage goes)",
}

#: Kinds whose whole spec is immutable (operator-design.md §4.6).
IMMUTABLE_SPEC_KINDS = frozenset({"PaimonMaintenanceRun"})

#: Rules on the whole object (may read ``metadata.name``), by kind: the name fallbacks of
#: ``PaimonTagSpec.resolved_tag_name`` and ``PaimonBranchSpec.resolved_branch_name``.
ROOT_RULES: Mapping[str, tuple[Rule, ...]] = {
    "PaimonTag": (
        Rule("has(self.spec.tagName) || !self.metadata.name.matches('^[0-9]+$')",
             "metadata.name is all digits and spec.tagName is not set: the tag name would shadow snapshot ids; "
             "set spec.tagName"),
        Rule("has(self.spec.tagName) || !(self.metadata.name in ["
             + ", ".join(_cel_string(name) for name in sorted(RESERVED_TAG_NAMES)) + "])",
             "metadata.name is a reserved tag name and spec.tagName is not set; set spec.tagName"),
    ),
    "PaimonBranch": (
        Rule("has(self.spec.branchName) || (self.metadata.name != 'main' && !self.metadata.name.contains('.') "
             "&& !self.metadata.name.matches('^[0-9]+$'))",
             "metadata.name is not a valid branch name ('main', all digits or containing '.') and "
             "spec.branchName is not set; set spec.branchName"),
    ),
}

#: Model checks the CRDs cannot state; the operator enforces them when it parses a spec.
MODEL_ONLY_CHECKS: tuple[str, ...] = (
    "time zones exist in the IANA database (the CRD checks the shape of the name only)",
    "cron expressions: field count, ranges and names (the CRD checks the coarse shape, macros and @every)",
    "catalog options whose key looks like a secret (secret, password, access key, token) are rejected",
    "label keys of matchLabels follow the Kubernetes label-key syntax (values are checked)",
    "tags.autoCreate.delay is shorter than the period; periodDuration is a whole number of minutes",
    "DurationBound min is not longer than max (durations are strings to CEL)",
    "names with Unicode white space or Unicode digits (CEL/RE2 classes are ASCII, the models' are Unicode)",
)


def _lookup(table: Mapping[tuple[type[SpecModel], str], Any], model: type[SpecModel], field: str) -> Any:
    for klass in model.__mro__:
        if (klass, field) in table:
            return table[(klass, field)]
    return None


def rules_for_model(model: type[SpecModel]) -> tuple[Rule, ...]:
    """Object-level rules of ``model``: its own and those of its bases, plus immutability presence
    rules (an optional immutable field may not be added or removed)."""
    found: list[Rule] = []
    for klass in reversed(model.__mro__):
        found.extend(MODEL_RULES.get(klass, ()))
    for klass in reversed(model.__mro__):
        for field in IMMUTABLE_FIELDS.get(klass, ()):
            info = model.model_fields[field]
            if not info.is_required():
                alias = info.alias or field
                found.append(Rule(f"has(self.{alias}) == has(oldSelf.{alias})",
                                  f"{alias} cannot be added or removed after creation"))
    return tuple(found)


def rules_for_field(model: type[SpecModel], field: str) -> tuple[Rule, ...]:
    """Field-level rules of ``model.field`` (including immutability)."""
    found = list(_lookup(FIELD_RULES, model, field) or ())
    for klass in model.__mro__:
        if field in IMMUTABLE_FIELDS.get(klass, ()):
            alias = model.model_fields[field].alias or field
            why = next((IMMUTABLE_WHY[k] for k in model.__mro__ if k in IMMUTABLE_WHY), "")
            found.append(Rule("self == oldSelf", f"{alias} is immutable" + (f": {why}" if why else "")))
            break
    return tuple(found)


def schema_for_field(model: type[SpecModel], field: str) -> dict[str, Any]:
    """Extra schema keywords of ``model.field``: per-field ones and per-type ones."""
    extra: dict[str, Any] = {}
    info = model.model_fields[field]
    for type_, keywords in TYPE_SCHEMA:
        if _contains_type(info.annotation, type_) or _is_annotated_as(info, type_):
            extra.update(keywords)
    extra.update(_lookup(FIELD_SCHEMA, model, field) or {})
    return extra


def _is_annotated_as(info: FieldInfo, wanted: Any) -> bool:
    """A required ``Annotated`` field: pydantic keeps the base type as the annotation and moves the
    validators into ``metadata``."""
    base, *extras = get_args(wanted) or (None,)
    validators = [extra for extra in extras if not isinstance(extra, FieldInfo)]
    return bool(validators) and info.annotation == base and all(v in info.metadata for v in validators)


def _contains_type(annotation: Any, wanted: Any) -> bool:
    if annotation == wanted:
        return True
    return any(_contains_type(arg, wanted) for arg in get_args(annotation))
