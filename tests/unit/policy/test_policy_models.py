"""Policy models: field validation, cross-field rules, names, round trips, JSON schema."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from tablekeeper.core import errors
from tablekeeper.core.policy import SPEC_MODELS, Duration, Schedule, to_timedelta
from tablekeeper.core.policy.common import SpecModel
from tablekeeper.core.policy.duration_field import DURATION_PATTERN
from tablekeeper.core.policy.selectors import LabelSelector
from tablekeeper.core.policy.specs import (
    ClusterPaimonCatalogSpec,
    PaimonBranchSpec,
    PaimonCatalogSpec,
    PaimonMaintenanceRunSpec,
    PaimonTableSpec,
    PaimonTagSpec,
    RetentionSpec,
)
from tablekeeper.core.policy.specs.catalog import AllowedNamespaces, normalize_warehouse
from tablekeeper.core.policy.specs.policy import ClusterPaimonRetentionPolicySpec, IntBound


def error_of(model: type[BaseModel], data: Any) -> dict[str, Any]:
    """The single pydantic error raised for ``data`` (fails if there are several or none)."""
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    found = info.value.errors(include_url=False)
    assert len(found) == 1, found
    return dict(found[0])


def cause(error: dict[str, Any]) -> Exception | None:
    value = (error.get("ctx") or {}).get("error")
    return value if isinstance(value, Exception) else None


# Rich, valid examples of every kind; also used for round trips and unknown-field checks.
EXAMPLES: dict[str, dict[str, Any]] = {
    "PaimonCatalog": {
        "warehouse": "s3://lake/warehouse",
        "metastore": "filesystem",
        "options": {"fs.s3.endpoint": "http://minio:9000", "fs.s3.region": "eu-west-1"},
        "credentialsSecretRef": {"name": "lake-creds"},
        "writerTimeZone": "Asia/Shanghai",
        "sparkDefaults": {"image": "tk-spark:1", "sparkVersion": "4.0.1", "conf": {"spark.a": "1"}},
    },
    "ClusterPaimonCatalog": {
        "warehouse": "/data/warehouse",
        "credentialsSecretRef": {"name": "lake-creds", "namespace": "tablekeeper"},
        "allowedNamespaces": {"names": ["sales"], "selector": {"matchLabels": {"lake": "yes"}}},
    },
    "PaimonTable": {
        "catalogRef": {"kind": "ClusterPaimonCatalog", "name": "prod"},
        "database": "sales",
        "table": "orders",
        "enforcement": "Operator",
        "timeZone": "Asia/Shanghai",
        "policyRefs": [{"name": "gold"}, {"name": "base"}],
        "retention": {
            "snapshots": {"state": "Enabled", "minRetained": 10, "maxRetained": 200, "maxAge": "7 d",
                          "expireLimit": 50, "cleanEmptyDirectories": True},
            "changelog": {"minRetained": 20, "maxRetained": 400, "maxAge": "14 d"},
            "partitions": {"expiration": "90 d", "checkInterval": "1 h", "strategy": "values-time",
                           "timestampFormatter": "yyyyMMdd", "timestampPattern": "$dt", "maxPerRun": 100},
            "tags": {"defaultTimeRetained": "30 d",
                     "autoCreate": {"mode": "process-time", "period": "daily", "delay": "10 min",
                                    "nameFormat": "with_dashes", "maxRetained": 90, "catchUp": False}},
            "orphanFiles": {"state": "Disabled", "olderThan": "3 d", "dryRun": True, "schedule": "0 3 * * 0"},
            "consumers": {"expiration": "7 d"},
        },
        "maintenance": {
            "schedule": "@every 6h",
            "window": {"start": "01:00", "end": "05:00", "timeZone": "UTC"},
            "engine": "SparkOperator",
            "spark": {"image": "tk-spark:1", "driver": {"cores": 1, "memory": "2g"},
                      "executor": {"instances": 2, "cores": 2, "memory": "4g"}, "conf": {"spark.x": "y"}},
            "successfulRunsHistoryLimit": 3,
            "failedRunsHistoryLimit": 5,
            "activeDeadlineSeconds": 7200,
        },
        "protectedOptions": ["bucket"],
    },
    "PaimonTag": {
        "tableRef": {"name": "orders"},
        "branch": "dev",
        "tagName": "2024-07-10 09",
        "fromTimestamp": "2024-07-10T09:00:00+08:00",
        "timeRetained": "30 d",
        "adoptionPolicy": "MustCreate",
        "deletionPolicy": "Retain",
        "backoffLimit": -1,
    },
    "PaimonBranch": {
        "tableRef": {"name": "orders"},
        "branchName": "experiment_1",
        "fromSnapshotId": 42,
        "protected": True,
        "ttl": {"maxAge": "30 d", "maxIdle": "7 d"},
        "deletionPolicy": "Delete",
        "adoptionPolicy": "Adopt",
    },
    "PaimonRetentionPolicy": {
        "selector": {"tableSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]},
                     "tableNames": ["sales.*"]},
        "priority": 100,
        "defaults": {"snapshots": {"maxAge": "3 d"}, "tags": {"defaultTimeRetained": "90 d"}},
    },
    "ClusterPaimonRetentionPolicy": {
        "selector": {"namespaceSelector": {"matchLabels": {"team": "sales"}}, "namespaces": ["sales"]},
        "priority": 5,
        "defaults": {"orphanFiles": {"state": "Enabled"}},
        "constraints": {
            "snapshots": {"maxAge": {"min": "24 h", "max": "30 d"}, "minRetained": {"min": 5}},
            "tags": {"defaultTimeRetained": {"max": "400 d"}, "autoCreate": {"maxRetained": {"max": 400}}},
            "partitions": {"expiration": {"min": "7 d", "enforcement": "Reject"}},
            "orphanFiles": {"olderThan": {"min": "1 d"}},
        },
        "enforcement": "Warn",
    },
    "PaimonMaintenanceRun": {
        "tableRef": {"name": "orders"},
        "type": "Rollback",
        "parameters": {"dryRun": True, "rollbackTo": {"tag": "v1"},
                       "retention": {"snapshots": {"minRetained": 10}}},
        "engine": "Python",
        "activeDeadlineSeconds": 600,
        "backoffLimit": 1,
        "ttlSecondsAfterFinished": 604800,
    },
}


class TestRoundTrip:
    @pytest.mark.parametrize("kind", sorted(SPEC_MODELS))
    def test_model_dict_model(self, kind: str) -> None:
        model = SPEC_MODELS[kind].model_validate(EXAMPLES[kind])
        assert SPEC_MODELS[kind].model_validate(model.model_dump(by_alias=True)) == model
        assert SPEC_MODELS[kind].model_validate(model.to_dict()) == model
        assert SPEC_MODELS[kind].model_validate(yaml.safe_load(yaml.safe_dump(model.to_dict()))) == model

    @pytest.mark.parametrize("kind", sorted(SPEC_MODELS))
    def test_dump_keeps_what_was_written(self, kind: str) -> None:
        dumped = SPEC_MODELS[kind].model_validate(EXAMPLES[kind]).to_dict()

        def contained(expected: Any, actual: Any) -> None:
            if isinstance(expected, dict):
                for key, value in expected.items():
                    contained(value, actual[key])
            elif isinstance(expected, list):
                assert len(expected) == len(actual)
                for e, a in zip(expected, actual, strict=True):
                    contained(e, a)
            else:
                assert expected == actual or str(expected).replace("+08:00", "") in str(actual)

        contained(EXAMPLES[kind], dumped)

    def test_snake_case_names_are_accepted_too(self) -> None:
        spec = PaimonTableSpec(database="sales", table="orders", retention=RetentionSpec.model_validate(
            {"snapshots": {"min_retained": 3}}))
        assert spec.to_dict()["retention"] == {"snapshots": {"minRetained": 3}}

    def test_absent_means_absent(self) -> None:
        spec = PaimonTableSpec.model_validate({"database": "sales", "table": "orders",
                                               "retention": {"snapshots": {"maxAge": "7 d"}}})
        assert spec.to_dict()["retention"] == {"snapshots": {"maxAge": "7 d"}}
        assert spec.catalog_ref.kind == "ClusterPaimonCatalog" and spec.catalog_ref.name == "default"

    def test_models_are_frozen(self) -> None:
        spec = PaimonTableSpec(database="sales", table="orders")
        with pytest.raises(ValidationError, match="frozen"):
            spec.database = "other"


class TestUnknownFields:
    @pytest.mark.parametrize("kind", sorted(SPEC_MODELS))
    def test_top_level(self, kind: str) -> None:
        error = error_of(SPEC_MODELS[kind], {**EXAMPLES[kind], "surprise": 1})
        assert error["type"] == "extra_forbidden" and error["loc"] == ("surprise",)

    @pytest.mark.parametrize(("kind", "path"), [
        ("PaimonTable", ("retention", "snapshots")),
        ("PaimonTable", ("retention", "tags", "autoCreate")),
        ("PaimonTable", ("maintenance", "spark", "executor")),
        ("ClusterPaimonRetentionPolicy", ("constraints", "snapshots", "maxAge")),
        ("PaimonBranch", ("ttl",)),
        ("PaimonCatalog", ("credentialsSecretRef",)),
    ])
    def test_nested(self, kind: str, path: tuple[str, ...]) -> None:
        data = yaml.safe_load(yaml.safe_dump(EXAMPLES[kind]))
        node = data
        for part in path:
            node = node[part]
        node["typo"] = True
        assert error_of(SPEC_MODELS[kind], data)["loc"] == (*path, "typo")

    def test_namespace_only_on_the_cluster_catalog_secret(self) -> None:
        data = {**EXAMPLES["PaimonCatalog"], "credentialsSecretRef": {"name": "s", "namespace": "x"}}
        assert error_of(PaimonCatalogSpec, data)["loc"] == ("credentialsSecretRef", "namespace")


class TestDuration:
    @pytest.mark.parametrize(("text", "amount"), [
        ("30 min", timedelta(minutes=30)), ("1 h", timedelta(hours=1)), ("7d", timedelta(days=7)),
        ("500 ms", timedelta(milliseconds=500)), ("0 s", timedelta(0)), ("86400 s", timedelta(days=1)),
    ])
    def test_valid(self, text: str, amount: timedelta) -> None:
        value = Duration(text)
        assert value == text and value.to_timedelta() == amount and to_timedelta(text) == amount

    @pytest.mark.parametrize("text", ["7 days", "1.5 h", "-1 h", "", " 1 h", "1 h ", "PT1H", "500", "1  h", "h"])
    def test_malformed(self, text: str) -> None:
        with pytest.raises(errors.InvalidDurationError) as info:
            Duration(text)
        assert info.value.fix and "'7 d'" in info.value.fix
        error = error_of(RetentionSpec, {"snapshots": {"maxAge": text}})
        assert error["loc"] == ("snapshots", "maxAge")
        assert isinstance(cause(error), errors.InvalidDurationError)

    def test_serialises_as_plain_string(self) -> None:
        spec = RetentionSpec.model_validate({"snapshots": {"maxAge": "7 d"}})
        assert spec.snapshots is not None and isinstance(spec.snapshots.max_age, Duration)
        dumped = spec.model_dump()["snapshots"]["max_age"]
        assert type(dumped) is str and dumped == "7 d"
        assert yaml.safe_dump(spec.model_dump(by_alias=True, exclude_none=True)) == "snapshots:\n  maxAge: 7 d\n"
        assert spec.model_dump_json(exclude_none=True) == '{"snapshots":{"max_age":"7 d"}}'

    def test_from_timedelta_and_textual_equality(self) -> None:
        assert Duration.from_timedelta(timedelta(minutes=90)) == "90 min"
        assert Duration("60 min") != Duration("1 h")
        assert Duration("60 min").to_timedelta() == Duration("1 h").to_timedelta()
        with pytest.raises(errors.InvalidDurationError):
            Duration.from_timedelta(timedelta(seconds=-1))

    def test_ordering_is_refused(self) -> None:
        with pytest.raises(TypeError, match="to_timedelta"):
            _ = Duration("10 min") < Duration("9 min")

    def test_json_schema(self) -> None:
        schema = RetentionSpec.model_json_schema(by_alias=True)
        max_age = schema["$defs"]["SnapshotRetention"]["properties"]["maxAge"]
        assert {"type": "string", "pattern": DURATION_PATTERN} in max_age["anyOf"]


class TestSchedule:
    @pytest.mark.parametrize("text", [
        "@every 6 h", "@every 6h", "@every 1 min", "@daily", "@hourly", "@weekly", "0 3 * * 0", "0 0 * * 7",
        "*/15 0-6 1,15 JAN-MAR MON-FRI", "5 4 * * sun", "0 0-23/2 * * *",
    ])
    def test_valid(self, text: str) -> None:
        assert Schedule(text) == text

    @pytest.mark.parametrize("text", [
        "@every 30 s", "@every", "@every6h", "@every 6 hours", "@fortnightly", "60 * * * *", "* * * *",
        "0 3 * * 8", "5-1 * * * *", "*/0 * * * *", "0  3 * * *", "0 3 * * * *", "0 3 ? * *", "",
    ])
    def test_invalid(self, text: str) -> None:
        error = error_of(RetentionSpec, {"orphanFiles": {"schedule": text}})
        assert error["loc"] == ("orphanFiles", "schedule")
        exc = cause(error)
        assert isinstance(exc, errors.TablekeeperError) and exc.fix

    def test_accessors(self) -> None:
        assert Schedule("@every 6h").interval == timedelta(hours=6) and Schedule("@every 6h").cron is None
        assert Schedule("@daily").cron == "0 0 * * *" and Schedule("@daily").interval is None


class TestRetention:
    @pytest.mark.parametrize("section", ["snapshots", "changelog"])
    def test_min_retained_zero_is_unsafe(self, section: str) -> None:
        error = error_of(RetentionSpec, {section: {"minRetained": 0}})
        assert error["loc"] == (section, "minRetained")
        assert isinstance(cause(error), errors.UnsafePolicyError)

    @pytest.mark.parametrize("section", ["snapshots", "changelog"])
    def test_min_above_max_is_unsafe(self, section: str) -> None:
        error = error_of(RetentionSpec, {section: {"minRetained": 20, "maxRetained": 10}})
        exc = cause(error)
        assert isinstance(exc, errors.UnsafePolicyError)
        assert "20" in str(exc) and "10" in str(exc)

    def test_min_equal_max_is_fine(self) -> None:
        RetentionSpec.model_validate({"snapshots": {"minRetained": 10, "maxRetained": 10}})

    @pytest.mark.parametrize(("auto", "ok"), [
        ({"period": "hourly", "delay": "59 min"}, True),
        ({"period": "hourly", "delay": "1 h"}, False),
        ({"period": "two-hours", "delay": "90 min"}, True),
        ({"period": "daily", "delay": "1 d"}, False),
        ({"periodDuration": "30 min", "delay": "30 min"}, False),
        ({"periodDuration": "30 min", "delay": "29 min"}, True),
        ({"delay": "5 d"}, True),  # no period at this level: checked on the resolved policy
        ({"period": "daily", "periodDuration": "1 h"}, False),
        ({"periodDuration": "30 s"}, False),
        ({"periodDuration": "90 s"}, False),
        ({"periodDuration": "2 h"}, True),
        ({"mode": "sometimes"}, False),
        ({"nameFormat": "yyyyMMdd"}, False),
        ({"maxRetained": 0}, False),
    ])
    def test_auto_create(self, auto: dict[str, Any], ok: bool) -> None:
        data = {"tags": {"autoCreate": auto}}
        if ok:
            RetentionSpec.model_validate(data)
        else:
            with pytest.raises(ValidationError):
                RetentionSpec.model_validate(data)

    def test_orphan_age_below_floor_is_unsafe(self) -> None:
        error = error_of(RetentionSpec, {"orphanFiles": {"olderThan": "10 min"}})
        assert isinstance(cause(error), errors.UnsafePolicyError)

    @pytest.mark.parametrize("data", [
        {"partitions": {"expiration": "0 d"}},
        {"partitions": {"timestampPattern": "dt"}},
        {"partitions": {"strategy": "oldest-first"}},
        {"partitions": {"maxPerRun": 0}},
        {"tags": {"defaultTimeRetained": "0 s"}},
        {"consumers": {"expiration": "0 ms"}},
        {"snapshots": {"expireLimit": 0}},
        {"snapshots": {"state": "On"}},
        {"snapshots": {"minRetained": "ten"}},
    ])
    def test_invalid_values(self, data: dict[str, Any]) -> None:
        with pytest.raises(ValidationError):
            RetentionSpec.model_validate(data)


class TestTag:
    base: dict[str, Any] = {"tableRef": {"name": "orders"}}

    @pytest.mark.parametrize("source", [
        {"snapshotId": 3}, {"fromTimestamp": "2024-07-10T00:00:00Z"}, {"fromLatest": True}])
    def test_one_source(self, source: dict[str, Any]) -> None:
        spec = PaimonTagSpec.model_validate({**self.base, **source})
        assert spec.source == next(iter(source)) and spec.branch == "main"

    @pytest.mark.parametrize("sources", [
        {},
        {"snapshotId": 3, "fromLatest": True},
        {"snapshotId": 3, "fromTimestamp": "2024-07-10T00:00:00Z"},
        {"snapshotId": 3, "fromTimestamp": "2024-07-10T00:00:00Z", "fromLatest": True},
        {"fromLatest": False},
    ])
    def test_not_exactly_one_source(self, sources: dict[str, Any]) -> None:
        exc = cause(error_of(PaimonTagSpec, {**self.base, **sources}))
        assert isinstance(exc, errors.InvalidInputError) and exc.fix

    def test_naive_timestamp_rejected(self) -> None:
        assert error_of(PaimonTagSpec, {**self.base, "fromTimestamp": "2024-07-10T00:00:00"})["type"] == \
            "timezone_aware"

    @pytest.mark.parametrize("name", ["12", "a,b", "a/b", "", " x", "x ", "a..b", "success-file"])
    def test_bad_tag_names(self, name: str) -> None:
        error = error_of(PaimonTagSpec, {**self.base, "fromLatest": True, "tagName": name})
        assert error["loc"] == ("tagName",) and isinstance(cause(error), errors.InvalidNameError)

    @pytest.mark.parametrize("branch", ["bad.branch", "1", "a/b"])
    def test_bad_branch(self, branch: str) -> None:
        error = error_of(PaimonTagSpec, {**self.base, "fromLatest": True, "branch": branch})
        assert error["loc"] == ("branch",) and isinstance(cause(error), errors.InvalidNameError)

    def test_tag_name_defaults_to_metadata_name(self) -> None:
        spec = PaimonTagSpec.model_validate({**self.base, "fromLatest": True})
        assert spec.resolved_tag_name("release-1") == "release-1"
        with pytest.raises(errors.InvalidNameError):
            spec.resolved_tag_name("2024")
        named = PaimonTagSpec.model_validate({**self.base, "fromLatest": True, "tagName": "2024-01-01 10"})
        assert named.resolved_tag_name("ignored") == "2024-01-01 10"

    def test_snapshot_id_positive(self) -> None:
        assert error_of(PaimonTagSpec, {**self.base, "snapshotId": 0})["type"] == "greater_than_equal"


class TestBranch:
    base: dict[str, Any] = {"tableRef": {"name": "orders"}}

    @pytest.mark.parametrize("source", [{"fromTag": "v1"}, {"fromSnapshotId": 5}, {"empty": True}])
    def test_one_source(self, source: dict[str, Any]) -> None:
        assert PaimonBranchSpec.model_validate({**self.base, **source}).source == next(iter(source))

    @pytest.mark.parametrize("sources", [{}, {"fromTag": "v1", "empty": True}, {"fromTag": "v1", "fromSnapshotId": 2},
                                         {"empty": False}])
    def test_not_exactly_one_source(self, sources: dict[str, Any]) -> None:
        assert isinstance(cause(error_of(PaimonBranchSpec, {**self.base, **sources})), errors.InvalidInputError)

    @pytest.mark.parametrize("name", ["main", "123", "a.b", "a/b", "a,b", "a$b", ""])
    def test_bad_branch_names(self, name: str) -> None:
        error = error_of(PaimonBranchSpec, {**self.base, "empty": True, "branchName": name})
        assert error["loc"] == ("branchName",) and isinstance(cause(error), errors.InvalidNameError)

    def test_bad_from_tag(self) -> None:
        assert error_of(PaimonBranchSpec, {**self.base, "fromTag": "1,2"})["loc"] == ("fromTag",)

    def test_ttl_needs_a_limit(self) -> None:
        error_of(PaimonBranchSpec, {**self.base, "empty": True, "ttl": {}})

    def test_branch_name_defaults_to_metadata_name(self) -> None:
        spec = PaimonBranchSpec.model_validate({**self.base, "empty": True})
        assert spec.resolved_branch_name("exp-1") == "exp-1"
        with pytest.raises(errors.InvalidNameError):
            spec.resolved_branch_name("exp.1")


class TestTable:
    @pytest.mark.parametrize(("field", "value"), [
        ("database", "sales.eu"), ("table", "orders$branch_dev"), ("table", "a/b"), ("table", ""),
        ("table", " orders"), ("database", "sa les"),
    ])
    def test_bad_identifiers(self, field: str, value: str) -> None:
        data = {"database": "sales", "table": "orders", field: value}
        assert error_of(PaimonTableSpec, data)["loc"] == (field,)

    @pytest.mark.parametrize(("data", "loc"), [
        ({"deletionPolicy": "Delete"}, ("deletionPolicy",)),
        ({"policyRefs": [{"name": "a"}, {"name": "a"}]}, ("policyRefs",)),
        ({"policyRefs": [{"name": "Gold"}]}, ("policyRefs", 0, "name")),
        ({"maintenance": {"engine": "InProcess"}}, ("maintenance", "engine")),
        ({"maintenance": {"window": {"start": "25:00", "end": "01:00"}}}, ("maintenance", "window", "start")),
        ({"maintenance": {"window": {"start": "01:00", "end": "01:00"}}}, ("maintenance", "window")),
        ({"maintenance": {"spark": {"executor": {"memory": "4 GB"}}}}, ("maintenance", "spark", "executor", "memory")),
        ({"timeZone": "+08:00"}, ("timeZone",)),
        ({"timeZone": "Mars/Olympus"}, ("timeZone",)),
        ({"catalogRef": {"kind": "Catalog", "name": "x"}}, ("catalogRef", "kind")),
        ({"maintenance": {"schedule": "every day"}}, ("maintenance", "schedule")),
    ])
    def test_invalid(self, data: dict[str, Any], loc: tuple[Any, ...]) -> None:
        assert error_of(PaimonTableSpec, {"database": "sales", "table": "orders", **data})["loc"] == loc

    def test_defaults(self) -> None:
        spec = PaimonTableSpec.model_validate({"database": "sales", "table": "orders", "maintenance": {}})
        assert (spec.deletion_policy, spec.enforcement, spec.qualified_name) == ("Retain", "Both", "sales.orders")
        assert spec.maintenance is not None
        assert (spec.maintenance.engine, spec.maintenance.concurrency_policy) == ("Auto", "Forbid")
        assert spec.retention is None


class TestCatalog:
    @pytest.mark.parametrize("warehouse", ["lake/warehouse", "s3://lake/ware house", "", " /data"])
    def test_bad_warehouse(self, warehouse: str) -> None:
        assert error_of(PaimonCatalogSpec, {"warehouse": warehouse})["loc"] == ("warehouse",)

    @pytest.mark.parametrize("key", ["fs.s3.secret-key", "fs.s3.accessKeyId", "fs.oss.accessKeySecret", "token",
                                     "jdbc.password"])
    def test_secret_like_options_rejected(self, key: str) -> None:
        exc = cause(error_of(PaimonCatalogSpec, {"warehouse": "s3://l/w", "options": {key: "x"}}))
        assert isinstance(exc, errors.InvalidInputError) and exc.fix and "credentialsSecretRef" in exc.fix

    def test_harmless_options_accepted(self) -> None:
        PaimonCatalogSpec.model_validate({"warehouse": "s3://l/w", "options": {
            "token.provider": "dlf", "fs.s3.endpoint": "http://x", "fs.s3.path.style.access": "true"}})

    @pytest.mark.parametrize(("uri", "normal"), [
        ("s3a://lake/wh/", "s3://lake/wh"), ("S3N://lake/wh", "s3://lake/wh"), ("file:///data/wh/", "/data/wh"),
        ("/data/wh/", "/data/wh"), ("oss://b/w", "oss://b/w"),
    ])
    def test_normalize_warehouse(self, uri: str, normal: str) -> None:
        assert normalize_warehouse(uri) == normal

    def test_allowed_namespaces(self) -> None:
        allowed = AllowedNamespaces.model_validate({"names": ["a"], "selector": {"matchLabels": {"lake": "yes"}}})
        assert allowed.allows("a", {}) and allowed.allows("b", {"lake": "yes"}) and not allowed.allows("b", {})
        assert not AllowedNamespaces().allows("a", {})
        open_catalog = ClusterPaimonCatalogSpec(warehouse="/w")
        assert open_catalog.allows("anything", {})
        closed = ClusterPaimonCatalogSpec.model_validate({"warehouse": "/w", "allowedNamespaces": {"names": ["a"]}})
        assert closed.allows("a", {}) and not closed.allows("b", {})


class TestPolicy:
    @pytest.mark.parametrize("bound", [{}, {"min": 5, "max": 4}, {"min": 1, "enforcement": "Ignore"}])
    def test_bad_int_bound(self, bound: dict[str, Any]) -> None:
        with pytest.raises(ValidationError):
            IntBound.model_validate(bound)

    def test_bad_duration_bound(self) -> None:
        data = {"constraints": {"snapshots": {"maxAge": {"min": "2 d", "max": "1 d"}}}}
        error = error_of(ClusterPaimonRetentionPolicySpec, data)
        assert error["loc"] == ("constraints", "snapshots", "maxAge")

    def test_bound_type_must_match_field(self) -> None:
        error = error_of(ClusterPaimonRetentionPolicySpec,
                         {"constraints": {"snapshots": {"minRetained": {"min": "1 d"}}}})
        assert error["loc"] == ("constraints", "snapshots", "minRetained", "min")

    def test_label_selector(self) -> None:
        selector = LabelSelector.model_validate({"matchLabels": {"tier": "gold"}, "matchExpressions": [
            {"key": "pii", "operator": "Exists"}, {"key": "env", "operator": "NotIn", "values": ["dev"]}]})
        assert selector.matches({"tier": "gold", "pii": ""})
        assert not selector.matches({"tier": "gold"})
        assert not selector.matches({"tier": "gold", "pii": "1", "env": "dev"})
        assert LabelSelector().matches({})
        with pytest.raises(ValidationError):
            LabelSelector.model_validate({"matchExpressions": [{"key": "a", "operator": "In"}]})
        with pytest.raises(ValidationError):
            LabelSelector.model_validate({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})


class TestRun:
    base: dict[str, Any] = {"tableRef": {"name": "orders"}}

    @pytest.mark.parametrize(("data", "ok"), [
        ({"type": "Rollback"}, False),
        ({"type": "Rollback", "parameters": {"rollbackTo": {"snapshotId": 4}}}, True),
        ({"type": "Rollback", "parameters": {"rollbackTo": {"snapshotId": 4, "tag": "v1"}}}, False),
        ({"type": "ExpireSnapshots", "parameters": {"rollbackTo": {"tag": "v1"}}}, False),
        ({"type": "FastForward"}, False),
        ({"type": "FastForward", "branch": "dev"}, True),
        ({"type": "Compact", "engine": "Python"}, False),
        ({"type": "Compact", "engine": "SparkJob"}, True),
        ({"type": "Vacuum"}, False),
        ({"type": "ExpireSnapshots", "engine": "Auto"}, False),
        ({"type": "ExpireSnapshots", "operations": ["ExpireTags"]}, False),
    ])
    def test_validation(self, data: dict[str, Any], ok: bool) -> None:
        if ok:
            PaimonMaintenanceRunSpec.model_validate({**self.base, **data})
        else:
            with pytest.raises(ValidationError):
                PaimonMaintenanceRunSpec.model_validate({**self.base, **data})

    @pytest.mark.parametrize(("data", "dry"), [
        ({"type": "RemoveOrphanFiles"}, True),
        ({"type": "RemoveOrphanFiles", "parameters": {"retention": {"orphanFiles": {"dryRun": False}}}}, False),
        ({"type": "RemoveOrphanFiles", "parameters": {"dryRun": False}}, False),
        ({"type": "ExpireSnapshots"}, False),
        ({"type": "ExpireSnapshots", "parameters": {"dryRun": True}}, True),
    ])
    def test_effective_dry_run(self, data: dict[str, Any], dry: bool) -> None:
        assert PaimonMaintenanceRunSpec.model_validate({**self.base, **data}).effective_dry_run is dry


def _all_models() -> list[type[SpecModel]]:
    seen: list[type[SpecModel]] = []

    def visit(model: type[SpecModel]) -> None:
        if model in seen:
            return
        seen.append(model)
        for info in model.model_fields.values():
            stack = [info.annotation]
            while stack:
                current = stack.pop()
                if isinstance(current, type) and issubclass(current, SpecModel):
                    visit(current)
                stack.extend(getattr(current, "__args__", ()))

    for model in SPEC_MODELS.values():
        visit(model)
    return seen


@pytest.mark.parametrize("model", _all_models(), ids=lambda m: m.__name__)
def test_every_field_is_documented_and_camel_cased(model: type[SpecModel]) -> None:
    assert model.__doc__
    for name, info in model.model_fields.items():
        assert info.description, f"{model.__name__}.{name} has no description"
        assert info.alias and "_" not in info.alias, f"{model.__name__}.{name}"


@pytest.mark.parametrize("kind", sorted(SPEC_MODELS))
def test_json_schema_generates(kind: str) -> None:
    schema = SPEC_MODELS[kind].model_json_schema(by_alias=True)
    assert schema["type"] == "object" and "surprise" not in schema["properties"]
    assert schema.get("additionalProperties") is False
