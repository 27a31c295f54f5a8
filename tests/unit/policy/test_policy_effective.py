"""Effective-policy resolution: precedence per field and level, sources, constraints, rails."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest

from tablekeeper.core import errors
from tablekeeper.core.policy import ObjectReference, UnsafeSpecError
from tablekeeper.core.policy.effective.leaves import BUILTIN_DEFAULTS, LEAF_PATHS, RETENTION_LEAVES
from tablekeeper.core.policy.effective.resolution import resolve_effective_policy
from tablekeeper.core.policy.effective.result import (
    ClusterPolicy,
    EffectivePolicy,
    NamespacedPolicy,
    PolicyNotFoundError,
    TableContext,
)
from tablekeeper.core.policy.specs import (
    ClusterPaimonRetentionPolicySpec,
    PaimonRetentionPolicySpec,
    PaimonTableSpec,
    RetentionSpec,
)
from tablekeeper.core.policy.specs.policy import DurationBound, IntBound, RetentionConstraints
from tablekeeper.core.policy.specs.retention import PAIMON_OPTIONS
from tablekeeper.core.policy.validation import InvalidSpecError

NS = "sales"

# Two distinct valid values per leaf: A is set at the level under test, B at every level below.
# Chosen so that either value is consistent with the built-in defaults of the other fields.
VALUES: dict[str, tuple[Any, Any]] = {
    "snapshots.state": ("Disabled", "Enabled"),
    "snapshots.minRetained": (3, 5),
    "snapshots.maxRetained": (100, 200),
    "snapshots.maxAge": ("2 h", "3 h"),
    "snapshots.expireLimit": (7, 9),
    "snapshots.cleanEmptyDirectories": (True, False),
    "changelog.state": ("Disabled", "Enabled"),
    "changelog.minRetained": (3, 5),
    "changelog.maxRetained": (100, 200),
    "changelog.maxAge": ("2 h", "3 h"),
    "partitions.state": ("Disabled", "Enabled"),
    "partitions.expiration": ("30 d", "60 d"),
    "partitions.checkInterval": ("2 h", "3 h"),
    "partitions.strategy": ("update-time", "values-time"),
    "partitions.timestampFormatter": ("yyyyMMdd", "yyyy-MM-dd"),
    "partitions.timestampPattern": ("$dt", "$day"),
    "partitions.maxPerRun": (7, 9),
    "tags.state": ("Disabled", "Enabled"),
    "tags.defaultTimeRetained": ("30 d", "60 d"),
    "tags.autoCreate.mode": ("process-time", "watermark"),
    "tags.autoCreate.period": ("hourly", "two-hours"),
    "tags.autoCreate.periodDuration": ("30 min", "45 min"),
    "tags.autoCreate.delay": ("10 min", "20 min"),
    "tags.autoCreate.nameFormat": ("without_dashes", "without_dashes_and_spaces"),
    "tags.autoCreate.maxRetained": (7, 9),
    "tags.autoCreate.catchUp": (True, False),
    "orphanFiles.state": ("Enabled", "Disabled"),
    "orphanFiles.olderThan": ("2 d", "3 d"),
    "orphanFiles.dryRun": (False, True),
    "orphanFiles.schedule": ("@daily", "@weekly"),
    "orphanFiles.listing": ("s3://inv/lake/cfg/2026-01-01T00-00Z/manifest.json", "/tmp/files.csv"),
    "consumers.state": ("Disabled", "Enabled"),
    "consumers.expiration": ("7 d", "14 d"),
    "consumers.warnAboveSnapshots": (200, 50),
    "trash.keep": ("7 d", "2 d"),
}

LEVELS = (
    "inline",
    "policyRef-first",
    "policyRef-second",
    "namespaced-high",
    "namespaced-low",
    "cluster-high",
    "cluster-low",
    "operator",
    "table-option",
    "builtin",
)
EXPECTED_SOURCE = {
    "inline": "inline",
    "policyRef-first": "policyRef/ref-a",
    "policyRef-second": "policyRef/ref-b",
    "namespaced-high": f"policy/{NS}/ns-high",
    "namespaced-low": f"policy/{NS}/ns-low",
    "cluster-high": "cluster/cl-high",
    "cluster-low": "cluster/cl-low",
    "operator": "operator-default",
}


def nested(path: str, value: Any) -> dict[str, Any]:
    """``nested("a.b.c", 1) == {"a": {"b": {"c": 1}}}``."""
    out: dict[str, Any] = {}
    node = out
    parts = path.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return out


def retention(**by_path: Any) -> RetentionSpec:
    """A RetentionSpec from dotted camelCase paths: ``retention(**{"snapshots.maxAge": "2 h"})``."""
    merged: dict[str, Any] = {}
    for path, value in by_path.items():
        node = merged
        parts = path.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return RetentionSpec.model_validate(merged)


def table(retention_spec: RetentionSpec | None = None, refs: tuple[str, ...] = (), *,
          labels: dict[str, str] | None = None, namespace_labels: dict[str, str] | None = None,
          database: str = "sales", name: str = "orders") -> TableContext:
    spec = PaimonTableSpec(
        database=database,
        table=name,
        retention=retention_spec,
        policy_refs=tuple(ObjectReference(name=ref) for ref in refs),
    )
    return TableContext(name=name, namespace=NS, spec=spec, labels=labels or {},
                        namespace_labels=namespace_labels or {})


def ns_policy(name: str, spec: RetentionSpec | None = None, *, priority: int = 0, namespace: str = NS,
              selector: dict[str, Any] | None = None) -> NamespacedPolicy:
    return NamespacedPolicy(name, namespace, PaimonRetentionPolicySpec.model_validate(
        {"priority": priority, "defaults": (spec or RetentionSpec()).to_dict(), "selector": selector}))


def cluster_policy(name: str, spec: RetentionSpec | None = None, *, priority: int = 0,
                   constraints: dict[str, Any] | None = None, enforcement: str = "Clamp",
                   selector: dict[str, Any] | None = None) -> ClusterPolicy:
    return ClusterPolicy(name, ClusterPaimonRetentionPolicySpec.model_validate(
        {"priority": priority, "defaults": (spec or RetentionSpec()).to_dict(), "constraints": constraints,
         "enforcement": enforcement, "selector": selector}))


def option_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def build_levels(path: str, winner: str, a: Any, b: Any) -> dict[str, Any]:
    """Inputs with ``a`` at level ``winner`` and ``b`` at every level below it."""
    index = LEVELS.index(winner)

    def value_at(level: str) -> RetentionSpec | None:
        position = LEVELS.index(level)
        if position < index:
            return None
        return retention(**{path: a if position == index else b})

    options: dict[str, str] = {}
    if path in PAIMON_OPTIONS and LEVELS.index("table-option") >= index:
        options[PAIMON_OPTIONS[path][0]] = option_text(a if winner == "table-option" else b)
    return {
        "table": table(value_at("inline"), refs=("ref-a", "ref-b")),
        "policies": [
            ns_policy("ref-a", value_at("policyRef-first")),
            ns_policy("ref-b", value_at("policyRef-second")),
            # the lower-priority policy is named first: priority must beat name order
            ns_policy("ns-high", value_at("namespaced-high"), priority=10),
            ns_policy("ns-a-low", None, priority=5),
            ns_policy("ns-low", value_at("namespaced-low"), priority=5),
        ],
        "cluster_policies": [
            cluster_policy("cl-high", value_at("cluster-high"), priority=10),
            cluster_policy("cl-a-low", None, priority=5),
            cluster_policy("cl-low", value_at("cluster-low"), priority=5),
        ],
        "operator_defaults": value_at("operator"),
        "table_options": options,
    }


def builtin(path: str, resolved: EffectivePolicy) -> Any:
    default, _ = BUILTIN_DEFAULTS[path]
    if hasattr(default, "path"):  # changelog.* follow snapshots.*
        return resolved.values[default.path]
    return default


def _cases() -> list[Any]:
    cases = []
    for path in LEAF_PATHS:
        for level in LEVELS:
            if level == "table-option" and path not in PAIMON_OPTIONS:
                continue
            cases.append(pytest.param(path, level, id=f"{path}@{level}"))
    return cases


def test_every_leaf_has_test_values() -> None:
    assert set(VALUES) == set(LEAF_PATHS)


@pytest.mark.parametrize(("path", "level"), _cases())
def test_each_level_wins_over_every_level_below(path: str, level: str) -> None:
    a, b = VALUES[path]
    result = resolve_effective_policy(**build_levels(path, level, a, b))
    value = result.values[path]
    if level == "builtin":
        assert value == builtin(path, result)
        assert result.sources[path] in ("paimon-default", "tablekeeper-default")
        return
    assert (str(value) if isinstance(value, str) else value) == a
    if level == "table-option":
        assert result.sources[path] == f"table-option/{PAIMON_OPTIONS[path][0]}"
    else:
        assert result.sources[path] == EXPECTED_SOURCE[level]
    # the resolved spec carries the same value
    node: Any = result.retention
    for leaf in RETENTION_LEAVES:
        if leaf.path == path:
            for attr in leaf.attrs:
                node = getattr(node, attr)
    assert node == value


def test_sources_cover_every_leaf_and_only_leaves() -> None:
    result = resolve_effective_policy(table())
    assert set(result.sources) == set(LEAF_PATHS)
    assert set(result.values) == set(LEAF_PATHS)
    assert not result.clamped and not result.warnings and result.policies == ()


def test_defaults_alone() -> None:
    result = resolve_effective_policy(table())
    r = result.retention
    assert r.snapshots is not None and r.orphan_files is not None and r.tags is not None
    assert (r.snapshots.min_retained, r.snapshots.max_retained, r.snapshots.max_age, r.snapshots.expire_limit) == (
        10, None, "1 h", 50)
    assert (r.orphan_files.state, r.orphan_files.dry_run, r.orphan_files.older_than) == ("Disabled", True, "1 d")
    assert r.partitions is not None and r.partitions.max_per_run == 100
    assert result.sources["snapshots.maxAge"] == "paimon-default"
    assert result.sources["orphanFiles.dryRun"] == "tablekeeper-default"
    assert result.explicit_paths() == ()


def test_mixed_sources_per_field() -> None:
    result = resolve_effective_policy(
        table(retention(**{"snapshots.maxAge": "7 d"}), refs=("gold",)),
        policies=[ns_policy("gold", retention(**{"snapshots.minRetained": 20, "snapshots.maxAge": "1 d"}))],
        cluster_policies=[cluster_policy("base", retention(**{"snapshots.expireLimit": 10,
                                                              "snapshots.minRetained": 5}))],
        operator_defaults=retention(**{"consumers.expiration": "3 d"}),
        table_options={"snapshot.num-retained.max": "500"},
    )
    assert {path: result.sources[path] for path in (
        "snapshots.maxAge", "snapshots.minRetained", "snapshots.expireLimit", "consumers.expiration",
        "snapshots.maxRetained", "snapshots.cleanEmptyDirectories")} == {
        "snapshots.maxAge": "inline",
        "snapshots.minRetained": "policyRef/gold",
        "snapshots.expireLimit": "cluster/base",
        "consumers.expiration": "operator-default",
        "snapshots.maxRetained": "table-option/snapshot.num-retained.max",
        "snapshots.cleanEmptyDirectories": "paimon-default",
    }
    assert result.values["snapshots.maxRetained"] == 500
    assert result.policies == ("policyRef/gold", "cluster/base")
    assert set(result.explicit_paths()) >= {"snapshots.maxAge", "snapshots.minRetained", "consumers.expiration"}
    assert "snapshots.maxRetained" not in result.explicit_paths()


class TestPrecedenceDetails:
    def test_equal_priority_is_ordered_by_name(self) -> None:
        result = resolve_effective_policy(
            table(),
            policies=[ns_policy("b", retention(**{"snapshots.maxAge": "3 h"})),
                      ns_policy("a", retention(**{"snapshots.maxAge": "2 h"}))],
            cluster_policies=[cluster_policy("y", retention(**{"snapshots.expireLimit": 9})),
                              cluster_policy("x", retention(**{"snapshots.expireLimit": 7}))],
        )
        assert (result.values["snapshots.maxAge"], result.sources["snapshots.maxAge"]) == ("2 h", f"policy/{NS}/a")
        assert (result.values["snapshots.expireLimit"], result.sources["snapshots.expireLimit"]) == (7, "cluster/x")

    def test_policy_refs_in_list_order_even_against_priority(self) -> None:
        result = resolve_effective_policy(
            table(refs=("low", "high")),
            policies=[ns_policy("high", retention(**{"snapshots.maxAge": "3 h"}), priority=100),
                      ns_policy("low", retention(**{"snapshots.maxAge": "2 h"}), priority=-5)],
        )
        assert result.sources["snapshots.maxAge"] == "policyRef/low"
        assert result.policies == ("policyRef/low", "policyRef/high")

    def test_referenced_policy_is_not_counted_again_by_selector(self) -> None:
        result = resolve_effective_policy(
            table(refs=("gold",)), policies=[ns_policy("gold", retention(**{"snapshots.maxAge": "2 h"}))])
        assert result.policies == ("policyRef/gold",)

    def test_referenced_policy_applies_even_if_its_selector_does_not_match(self) -> None:
        gold = ns_policy("gold", retention(**{"snapshots.maxAge": "2 h"}),
                         selector={"tableSelector": {"matchLabels": {"tier": "gold"}}})
        assert resolve_effective_policy(table(refs=("gold",)), policies=[gold]).sources[
            "snapshots.maxAge"] == "policyRef/gold"
        assert resolve_effective_policy(table(), policies=[gold]).sources["snapshots.maxAge"] == "paimon-default"

    def test_missing_policy_ref_fails_closed(self) -> None:
        with pytest.raises(PolicyNotFoundError, match="gold") as info:
            resolve_effective_policy(table(refs=("gold",)), policies=[ns_policy("gold", namespace="other")])
        assert info.value.fix and "gold" in info.value.fix

    def test_policies_of_other_namespaces_are_ignored(self) -> None:
        result = resolve_effective_policy(
            table(), policies=[ns_policy("x", retention(**{"snapshots.maxAge": "2 h"}), namespace="other")])
        assert result.sources["snapshots.maxAge"] == "paimon-default"

    @pytest.mark.parametrize(("selector", "matches"), [
        ({"tableSelector": {"matchLabels": {"tier": "gold"}}}, True),
        ({"tableSelector": {"matchLabels": {"tier": "bronze"}}}, False),
        ({"tableSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "x"]}]}},
         True),
        ({"tableSelector": {"matchExpressions": [{"key": "pii", "operator": "DoesNotExist"}]}}, True),
        ({"tableSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]}},
         False),
        ({"tableNames": ["sales.*"]}, True),
        ({"tableNames": ["other.*", "sales.ord?rs"]}, True),
        ({"tableNames": ["Sales.*"]}, False),
        ({"tableNames": ["sales.*"], "tableSelector": {"matchLabels": {"tier": "bronze"}}}, False),
        ({}, True),
    ])
    def test_namespaced_selector(self, selector: dict[str, Any], matches: bool) -> None:
        result = resolve_effective_policy(
            table(labels={"tier": "gold"}),
            policies=[ns_policy("p", retention(**{"snapshots.maxAge": "2 h"}), selector=selector)])
        assert (result.sources["snapshots.maxAge"] == f"policy/{NS}/p") is matches

    @pytest.mark.parametrize(("selector", "matches"), [
        ({"namespaces": [NS]}, True),
        ({"namespaces": ["other"]}, False),
        ({"namespaceSelector": {"matchLabels": {"team": "sales"}}}, True),
        ({"namespaceSelector": {"matchLabels": {"team": "ops"}}}, False),
        ({"namespaces": [NS], "namespaceSelector": {"matchLabels": {"team": "ops"}}}, False),
        ({"namespaces": [NS], "tableNames": ["sales.orders"]}, True),
        ({"namespaces": [NS], "tableNames": ["sales.events"]}, False),
    ])
    def test_cluster_selector(self, selector: dict[str, Any], matches: bool) -> None:
        result = resolve_effective_policy(
            table(namespace_labels={"team": "sales"}),
            cluster_policies=[cluster_policy("c", retention(**{"snapshots.maxAge": "2 h"}), selector=selector)])
        assert (result.sources["snapshots.maxAge"] == "cluster/c") is matches

    def test_explicit_disabled_sticks_and_inherit_is_unset(self) -> None:
        base = cluster_policy("base", retention(**{"snapshots.state": "Enabled", "tags.state": "Disabled"}))
        result = resolve_effective_policy(
            table(retention(**{"snapshots.state": "Disabled", "tags.state": "Inherit"})), cluster_policies=[base])
        assert (result.values["snapshots.state"], result.sources["snapshots.state"]) == ("Disabled", "inline")
        assert (result.values["tags.state"], result.sources["tags.state"]) == ("Disabled", "cluster/base")

    def test_period_and_period_duration_resolve_together(self) -> None:
        result = resolve_effective_policy(
            table(retention(**{"tags.autoCreate.period": "hourly"})),
            cluster_policies=[cluster_policy("c", retention(**{"tags.autoCreate.periodDuration": "30 min"}))])
        assert result.values["tags.autoCreate.period"] == "hourly"
        assert result.values["tags.autoCreate.periodDuration"] is None
        assert result.sources["tags.autoCreate.periodDuration"] == "inline"

        below = resolve_effective_policy(
            table(retention(**{"tags.autoCreate.periodDuration": "30 min"})),
            cluster_policies=[cluster_policy("c", retention(**{"tags.autoCreate.period": "hourly"}))])
        assert below.values["tags.autoCreate.period"] is None
        assert below.values["tags.autoCreate.periodDuration"] == "30 min"

    def test_table_options_with_period_and_duration_take_the_duration(self) -> None:
        result = resolve_effective_policy(
            table(), table_options={"tag.creation-period": "hourly", "tag.creation-period-duration": "90 min"})
        assert result.values["tags.autoCreate.period"] is None
        assert result.values["tags.autoCreate.periodDuration"] == "90 min"

    def test_changelog_follows_resolved_snapshot_values(self) -> None:
        result = resolve_effective_policy(
            table(retention(**{"snapshots.minRetained": 20, "snapshots.maxRetained": 300})),
            table_options={"snapshot.time-retained": "2h"})
        assert result.values["changelog.minRetained"] == 20
        assert result.values["changelog.maxRetained"] == 300
        assert result.values["changelog.maxAge"] == "2 h"
        assert result.sources["changelog.maxAge"] == "paimon-default"

    @pytest.mark.parametrize(("options", "path", "value"), [
        ({"snapshot.expire.clean-empty-directories": "TRUE"}, "snapshots.cleanEmptyDirectories", True),
        ({"snapshot.time-retained": "90 min"}, "snapshots.maxAge", "90 min"),
        ({"snapshot.time-retained": "3600000"}, "snapshots.maxAge", "1 h"),  # bare number = ms, as Paimon
        ({"tag.automatic-creation": "PROCESS-TIME"}, "tags.autoCreate.mode", "process-time"),
        ({"partition.expiration-time": " 7 d "}, "partitions.expiration", "7 d"),
        ({"snapshot.num-retained.min": ""}, "snapshots.minRetained", 10),
    ])
    def test_table_option_parsing(self, options: dict[str, str], path: str, value: Any) -> None:
        assert resolve_effective_policy(table(), table_options=options).values[path] == value

    def test_bad_table_option_only_fails_when_it_decides(self) -> None:
        options = {"snapshot.num-retained.min": "lots"}
        with pytest.raises(errors.InvalidInputError, match="snapshot.num-retained.min"):
            resolve_effective_policy(table(), table_options=options)
        decided = resolve_effective_policy(table(retention(**{"snapshots.minRetained": 4})), table_options=options)
        assert decided.values["snapshots.minRetained"] == 4


class TestConstraints:
    def test_clamp_raises_a_default_to_the_minimum(self) -> None:
        result = resolve_effective_policy(
            table(), cluster_policies=[cluster_policy(
                "prod", constraints={"snapshots": {"maxAge": {"min": "24 h", "max": "30 d"}}})])
        assert (result.values["snapshots.maxAge"], result.sources["snapshots.maxAge"]) == ("24 h", "cluster/prod")
        record = result.clamped["snapshots.maxAge"]
        assert (record.original, record.original_source, record.bound) == ("1 h", "paimon-default", "min")
        assert result.notes == ("snapshots.maxAge 1 h raised to cluster minimum 24 h (cluster/prod)",)
        assert result.to_status()["snapshots.maxAge"] == {
            "value": "24 h", "source": "cluster/prod", "clampedFrom": "1 h"}
        # changelog follows the clamped snapshot value
        assert result.values["changelog.maxAge"] == "24 h"
        assert not result.warnings

    def test_clamp_lowers_an_inline_value_to_the_maximum(self) -> None:
        result = resolve_effective_policy(
            table(retention(**{"snapshots.maxRetained": 5000})),
            cluster_policies=[cluster_policy("prod", constraints={"snapshots": {"maxRetained": {"max": 400}}})])
        assert result.values["snapshots.maxRetained"] == 400
        assert result.clamped["snapshots.maxRetained"].original_source == "inline"
        assert "lowered to cluster maximum 400" in result.notes[0]

    def test_clamp_never_invents_a_limit_for_an_unset_value(self) -> None:
        result = resolve_effective_policy(
            table(), cluster_policies=[cluster_policy("prod", constraints={"partitions": {"expiration": {
                "max": "400 d"}}})])
        assert result.values["partitions.expiration"] is None
        assert not result.clamped
        [warning] = result.warnings
        assert (warning.path, warning.reason, warning.policy) == ("partitions.expiration", "PolicyViolation",
                                                                  "cluster/prod")
        assert "unset" in warning.message

    def test_a_trash_minimum_gives_a_table_without_a_window_the_minimum(self) -> None:
        # unset trash.keep means no window at all (not unlimited): a cluster minimum applies to it
        guard = cluster_policy("undo", constraints={"trash": {"keep": {"min": "3 d"}}})
        result = resolve_effective_policy(table(), cluster_policies=[guard])
        assert (result.values["trash.keep"], result.sources["trash.keep"]) == ("3 d", "cluster/undo")
        assert result.clamped["trash.keep"].original is None
        short = resolve_effective_policy(table(retention(**{"trash.keep": "1 d"})), cluster_policies=[guard])
        assert short.values["trash.keep"] == "3 d" and short.clamped["trash.keep"].original_source == "inline"
        longer = resolve_effective_policy(table(retention(**{"trash.keep": "7 d"})), cluster_policies=[guard])
        assert (longer.values["trash.keep"], longer.sources["trash.keep"]) == ("7 d", "inline")
        # the table's own option is a level too (the lowest)
        option = resolve_effective_policy(table(), table_options={"trash.keep": "2 d"})
        assert (option.values["trash.keep"], option.sources["trash.keep"]) == ("2 d", "table-option/trash.keep")

    def test_a_rejected_trash_minimum_refuses_a_table_without_a_window(self) -> None:
        guard = cluster_policy("undo", enforcement="Reject", constraints={"trash": {"keep": {"min": "3 d"}}})
        with pytest.raises(errors.UnsafePolicyError, match=r"trash.keep = unset \(none\) .* below the minimum 3 d"):
            resolve_effective_policy(table(), cluster_policies=[guard])

    def test_a_cluster_default_window_applies_to_every_table(self) -> None:
        result = resolve_effective_policy(table(), cluster_policies=[cluster_policy(
            "undo", retention(**{"trash.keep": "5 d"}))])
        assert (result.values["trash.keep"], result.sources["trash.keep"]) == ("5 d", "cluster/undo")

    def test_value_within_bounds_is_untouched(self) -> None:
        result = resolve_effective_policy(
            table(retention(**{"snapshots.maxAge": "2 d"})),
            cluster_policies=[cluster_policy("prod", constraints={"snapshots": {"maxAge": {"min": "1 d"}}})])
        assert result.sources["snapshots.maxAge"] == "inline" and not result.clamped and not result.warnings

    def test_reject_names_policy_field_and_source(self) -> None:
        with pytest.raises(errors.UnsafePolicyError) as info:
            resolve_effective_policy(
                table(retention(**{"orphanFiles.olderThan": "2 d"})),
                cluster_policies=[cluster_policy("guard", enforcement="Reject",
                                                 constraints={"orphanFiles": {"olderThan": {"min": "3 d"}}})])
        text = str(info.value)
        assert "cluster/guard" in text and "orphanFiles.olderThan" in text and "inline" in text
        assert "3 d" in text and info.value.fix and "cluster/guard" in info.value.fix
        assert isinstance(info.value, UnsafeSpecError)

    def test_reject_of_unset_value_under_maximum(self) -> None:
        with pytest.raises(errors.UnsafePolicyError, match="tags.defaultTimeRetained = unset"):
            resolve_effective_policy(table(), cluster_policies=[cluster_policy(
                "guard", enforcement="Reject", constraints={"tags": {"defaultTimeRetained": {"max": "400 d"}}})])

    def test_warn_keeps_the_value(self) -> None:
        result = resolve_effective_policy(
            table(retention(**{"snapshots.expireLimit": 1000})),
            cluster_policies=[cluster_policy("soft", enforcement="Warn",
                                             constraints={"snapshots": {"expireLimit": {"max": 100}}})])
        assert (result.values["snapshots.expireLimit"], result.sources["snapshots.expireLimit"]) == (1000, "inline")
        [warning] = result.warnings
        assert warning.reason == "PolicyViolation" and warning.policy == "cluster/soft"
        assert "snapshots.expireLimit" in str(warning) and "100" in str(warning)
        assert not result.clamped

    def test_bound_enforcement_overrides_the_policy_default(self) -> None:
        policy = cluster_policy("mixed", enforcement="Reject", constraints={"snapshots": {
            "maxAge": {"min": "1 d", "enforcement": "Clamp"},
            "expireLimit": {"max": 10, "enforcement": "Warn"}}})
        result = resolve_effective_policy(table(), cluster_policies=[policy])
        assert result.values["snapshots.maxAge"] == "1 d"
        assert result.values["snapshots.expireLimit"] == 50 and len(result.warnings) == 1

    def test_constraints_of_unmatched_policies_do_not_apply(self) -> None:
        policy = cluster_policy("other", enforcement="Reject", selector={"namespaces": ["elsewhere"]},
                                constraints={"snapshots": {"maxAge": {"min": "1 d"}}})
        assert resolve_effective_policy(table(), cluster_policies=[policy]).values["snapshots.maxAge"] == "1 h"

    def test_conflicting_clamps_highest_precedence_wins_with_warning(self) -> None:
        result = resolve_effective_policy(table(), cluster_policies=[
            cluster_policy("strict", priority=10, constraints={"snapshots": {"maxAge": {"max": "6 h"}}}),
            cluster_policy("lenient", priority=1, constraints={"snapshots": {"maxAge": {"min": "12 h"}}}),
        ])
        assert (result.values["snapshots.maxAge"], result.sources["snapshots.maxAge"]) == ("6 h", "cluster/strict")
        [warning] = result.warnings
        assert "conflict" in warning.message and warning.policy == "cluster/lenient"

    def test_reject_and_warn_judge_the_clamped_value(self) -> None:
        result = resolve_effective_policy(table(), cluster_policies=[
            cluster_policy("guard", priority=10, enforcement="Reject",
                           constraints={"snapshots": {"maxAge": {"min": "1 d"}}}),
            cluster_policy("base", constraints={"snapshots": {"maxAge": {"min": "2 d"}}}),
        ])
        assert (result.values["snapshots.maxAge"], result.sources["snapshots.maxAge"]) == ("2 d", "cluster/base")
        assert not result.warnings

    def test_clamp_that_breaks_min_le_max_is_refused(self) -> None:
        with pytest.raises(UnsafeSpecError, match="snapshots.minRetained = 50 .from cluster/prod.") as info:
            resolve_effective_policy(
                table(retention(**{"snapshots.maxRetained": 20})),
                cluster_policies=[cluster_policy("prod", constraints={"snapshots": {"minRetained": {"min": 50}}})])
        assert "snapshots.maxRetained = 20 (from inline)" in str(info.value)

    def test_every_constraint_bounds_a_leaf_of_the_matching_type(self) -> None:
        leaves = {leaf.path: leaf for leaf in RETENTION_LEAVES}

        def walk(model: type[Any], prefix: str = "") -> list[tuple[str, type[Any]]]:
            out = []
            for name, info in model.model_fields.items():
                annotation = [a for a in info.annotation.__args__ if a is not type(None)][0]
                path = f"{prefix}{info.alias or name}"
                if annotation in (IntBound, DurationBound):
                    out.append((path, annotation))
                else:
                    out.extend(walk(annotation, path + "."))
            return out

        bounds = walk(RetentionConstraints)
        assert len(bounds) >= 12
        for path, bound in bounds:
            assert path in leaves, path
            assert leaves[path].kind == ("int" if bound is IntBound else "duration"), path


class TestRailsOnTheMergedResult:
    def test_min_above_max_across_levels_names_both_sources(self) -> None:
        with pytest.raises(UnsafeSpecError) as info:
            resolve_effective_policy(
                table(retention(**{"snapshots.minRetained": 50}), refs=("p",)),
                policies=[ns_policy("p", retention(**{"snapshots.maxRetained": 20}))])
        text = str(info.value)
        assert "snapshots.minRetained = 50 (from inline)" in text
        assert "snapshots.maxRetained = 20 (from policyRef/p)" in text
        assert info.value.fields == ("snapshots.minRetained", "snapshots.maxRetained")

    def test_changelog_max_below_followed_snapshot_min(self) -> None:
        with pytest.raises(UnsafeSpecError, match="changelog.maxRetained = 5"):
            resolve_effective_policy(table(retention(**{"changelog.maxRetained": 5})))

    def test_zero_min_retained_from_table_options(self) -> None:
        with pytest.raises(UnsafeSpecError, match="table-option/snapshot.num-retained.min"):
            resolve_effective_policy(table(), table_options={"snapshot.num-retained.min": "0"})

    def test_delay_not_shorter_than_a_period_from_another_level(self) -> None:
        with pytest.raises(InvalidSpecError, match="tags.autoCreate.delay = 3 h .from inline."):
            resolve_effective_policy(
                table(retention(**{"tags.autoCreate.delay": "3 h"})),
                cluster_policies=[cluster_policy("c", retention(**{"tags.autoCreate.period": "hourly"}))])

    def test_invalid_table_option_value_names_its_source(self) -> None:
        with pytest.raises(InvalidSpecError, match="partitions.expiration.*table-option/partition.expiration-time"):
            resolve_effective_policy(table(), table_options={"partition.expiration-time": "0 d"})


def test_result_is_frozen_and_round_trips() -> None:
    result = resolve_effective_policy(table(retention(**{"snapshots.maxAge": "7 d"})))
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.warnings = ()  # type: ignore[misc]
    with pytest.raises(Exception, match="frozen"):
        result.retention.snapshots = None
    assert RetentionSpec.model_validate(result.retention.to_dict()) == result.retention
    assert result.retention.snapshots is not None
    assert result.retention.snapshots.max_age is not None
    assert result.retention.snapshots.max_age.to_timedelta() == timedelta(days=7)
