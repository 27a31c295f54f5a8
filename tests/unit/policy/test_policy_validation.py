"""Validation reports: source, camelCase field path and fix for every kind of problem."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from tablekeeper.core import errors
from tablekeeper.core.policy import (
    InvalidSpecError,
    UnsafeSpecError,
    as_spec_error,
    format_validation_error,
    parse_spec,
)
from tablekeeper.core.policy.specs import PaimonCatalogSpec, PaimonTableSpec, PaimonTagSpec
from tablekeeper.core.policy.validation import format_path

SOURCE = "tables/orders.yaml"


def report(validated: type[BaseModel], data: Any, **kwargs: Any) -> str:
    with pytest.raises(ValidationError) as info:
        validated.model_validate(data)
    return format_validation_error(info.value, SOURCE, **kwargs)


def table(**extra: Any) -> dict[str, Any]:
    return {"database": "sales", "table": "orders", **extra}


@pytest.mark.parametrize(("model", "data", "path", "problem", "fix"), [
    (PaimonTableSpec, table(retention={"snapshots": {"minRetained": 0}}),
     "spec.retention.snapshots.minRetained", "must be at least 1, got 0", "set minRetained to 1 or more"),
    (PaimonTableSpec, table(retention={"snapshots": {"minRetained": 30, "maxRetained": 20}}),
     "spec.retention.snapshots.minRetained", "is larger than snapshots.maxRetained (20)", "raise maxRetained"),
    (PaimonTableSpec, table(retention={"snapshots": {"maxAge": "7 days"}}),
     "spec.retention.snapshots.maxAge", "'7 days' is not a duration", "'7 d'"),
    (PaimonTableSpec, table(retention={"tags": {"autoCreate": {"period": "hourly", "delay": "1 h"}}}),
     "spec.retention.tags.autoCreate.delay", "not shorter than the period hourly", "delay shorter than the period"),
    (PaimonTableSpec, table(retention={"snapshots": {"maxRetaind": 5}}),
     "spec.retention.snapshots.maxRetaind", "unknown field 'maxRetaind'", "did you mean 'maxRetained'?"),
    (PaimonTableSpec, {"database": "sales"}, "spec.table", "required field is missing", "add 'table'"),
    (PaimonTableSpec, table(enforcement="Sometimes"), "spec.enforcement", "'Sometimes' is not allowed",
     "use one of 'TableOptions', 'Operator' or 'Both'"),
    (PaimonTableSpec, table(policyRefs=[{"name": "Gold"}]), "spec.policyRefs[0].name", "does not match",
     "matching the pattern"),
    (PaimonTableSpec, table(maintenance={"activeDeadlineSeconds": 0}), "spec.maintenance.activeDeadlineSeconds",
     "must be at least 1", "at least 1"),
    (PaimonTableSpec, table(retention={"snapshots": {"expireLimit": "many"}}), "spec.retention.snapshots.expireLimit",
     "'many' is not a whole number", "integer"),
    (PaimonTagSpec, {"tableRef": {"name": "t"}, "snapshotId": 3, "fromLatest": True}, "spec",
     "more than one of (snapshotId, fromLatest)", "exactly one of snapshotId, fromTimestamp or fromLatest"),
    (PaimonTagSpec, {"tableRef": {"name": "t"}}, "spec", "none of snapshotId, fromTimestamp, fromLatest", "exactly one"),
    (PaimonTagSpec, {"tableRef": {"name": "t"}, "fromLatest": True, "tagName": "a,b"}, "spec.tagName",
     "contains ','", "use '-' or '_'"),
    (PaimonTagSpec, {"tableRef": {"name": "t"}, "fromLatest": False}, "spec.fromLatest",
     "fromLatest: false selects no snapshot", "set fromLatest: true"),
    (PaimonCatalogSpec, {"warehouse": "s3://l/w", "options": {"fs.s3.secret-key": "x"}},
     'spec.options["fs.s3.secret-key"]', "looks like a secret", "credentialsSecretRef"),
])
def test_report_names_source_path_problem_and_fix(model: type[BaseModel], data: Any, path: str, problem: str,
                                                  fix: str) -> None:
    text = report(model, data, path_prefix="spec", model=model)
    assert text.startswith(f"{SOURCE}: {path}: "), text
    assert problem in text and "(fix: " in text and fix in text.split("(fix: ", 1)[1], text
    assert "Value error" not in text


def test_one_line_per_problem() -> None:
    text = report(PaimonTableSpec, table(retention={"snapshots": {"minRetained": 0, "maxAge": "1 week"},
                                                    "orphanFiles": {"olderThan": "5 min"}}))
    lines = text.splitlines()
    assert len(lines) == 3 and all(line.startswith(f"{SOURCE}: retention.") for line in lines)


def test_unknown_field_without_model_still_has_a_fix() -> None:
    text = report(PaimonTableSpec, table(surprise=1))
    assert text == f"{SOURCE}: surprise: unknown field 'surprise' (fix: remove it)"


def test_unknown_field_lists_allowed_fields_in_nested_lists() -> None:
    data = {"selector": {"tableSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "valuse": []}]}}}
    from tablekeeper.core.policy.specs import PaimonRetentionPolicySpec

    text = report(PaimonRetentionPolicySpec, data, model=PaimonRetentionPolicySpec)
    assert "selector.tableSelector.matchExpressions[0].valuse" in text
    assert "did you mean 'values'?" in text and "key, operator, values" in text


@pytest.mark.parametrize(("loc", "prefix", "expected"), [
    ((), "", "(top level)"),
    ((), "spec", "spec"),
    (("a", 0, "b"), "", "a[0].b"),
    (("options", "fs.s3.region"), "spec", 'spec.options["fs.s3.region"]'),
])
def test_format_path(loc: tuple[Any, ...], prefix: str, expected: str) -> None:
    assert format_path(loc, prefix) == expected


class TestTypedErrors:
    def test_unsafe_when_a_rail_is_broken(self) -> None:
        with pytest.raises(ValidationError) as info:
            PaimonTableSpec.model_validate(table(retention={"snapshots": {"minRetained": 0}, "consumers": {"x": 1}}))
        exc = as_spec_error(info.value, SOURCE, path_prefix="spec")
        assert isinstance(exc, UnsafeSpecError) and isinstance(exc, errors.UnsafePolicyError)
        assert exc.reason == "UnsafePolicy"
        assert len(str(exc).splitlines()) == 2 and "spec.retention.consumers.x" in str(exc)

    def test_invalid_otherwise(self) -> None:
        with pytest.raises(ValidationError) as info:
            PaimonTableSpec.model_validate(table(enforcement="x"))
        exc = as_spec_error(info.value, SOURCE)
        assert type(exc) is InvalidSpecError and exc.reason == "InvalidSpec"
        assert isinstance(exc, errors.InvalidInputError)

    def test_parse_spec(self) -> None:
        spec = parse_spec("PaimonTable", table(), source=SOURCE)
        assert isinstance(spec, PaimonTableSpec)
        with pytest.raises(UnsafeSpecError, match=r"tables/orders.yaml: spec.retention.changelog.minRetained"):
            parse_spec("PaimonTable", table(retention={"changelog": {"minRetained": 0}}), source=SOURCE)
        with pytest.raises(InvalidSpecError, match="did you mean 'tagName'"):
            parse_spec("PaimonTag", {"tableRef": {"name": "t"}, "fromLatest": True, "tag_nam": "x"}, source=SOURCE)
        with pytest.raises(errors.InvalidInputError, match="unknown kind 'PaimonView'"):
            parse_spec("PaimonView", {}, source=SOURCE)
