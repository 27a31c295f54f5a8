"""The one retention value (core.retention_settings) and the one batch loop (core.expire_batches)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tablekeeper.core import errors
from tablekeeper.core.policy.duration_field import Duration
from tablekeeper.core.reclaim.expire import batches, planning
from tablekeeper.core.reclaim.expire.retention import INT_MAX, Retention, RetentionFlags, from_options, from_policy


def test_paimon_defaults_and_options() -> None:
    r = from_options({})
    assert (r.retain_min, r.retain_max, r.time_retained, r.expire_limit, r.clean_empty_directories) == \
        (10, INT_MAX, timedelta(hours=1), 50, False)
    assert (r.changelog_retain_min, r.changelog_retain_max, r.changelog_time_retained) == \
        (10, INT_MAX, timedelta(hours=1))
    assert not r.changelog_decoupled
    r = from_options({"snapshot.num-retained.min": "3", "snapshot.expire.limit": "7", "snapshot.time-retained": "2 d",
                      "snapshot.expire.clean-empty-directories": "true"})
    assert (r.retain_min, r.expire_limit, r.time_retained, r.clean_empty_directories) == (3, 7, timedelta(days=2), True)
    assert (r.changelog_retain_min, r.changelog_time_retained) == (3, timedelta(days=2))  # follow the snapshots


def test_flags_win_and_unset_changelog_values_follow_the_resolved_snapshot_values() -> None:
    options = {"snapshot.num-retained.min": "10", "snapshot.expire.limit": "7"}
    r = from_options(options, RetentionFlags(retain_min=3, time_retained=timedelta(0)))
    assert (r.retain_min, r.expire_limit, r.time_retained) == (3, 7, timedelta(0))
    assert r.changelog_retain_min == 3 and not r.changelog_decoupled  # as if the option itself said 3
    assert from_options({**options, "changelog.num-retained.min": "12"}).changelog_decoupled


@pytest.mark.parametrize("changelog, decoupled", [
    ({}, False),
    ({"changelog.num-retained.min": "11"}, True),
    ({"changelog.num-retained.max": "100"}, True),
    ({"changelog.time-retained": "2 h"}, True),
    ({"changelog.num-retained.min": "5"}, False),  # keeps fewer: never outlives its snapshots
])
def test_the_decoupled_rule(changelog: dict[str, str], decoupled: bool) -> None:
    r = from_options({"snapshot.num-retained.max": "50", **changelog})
    assert r.changelog_decoupled is decoupled
    assert planning.expire_config(r, {}).changelog_decoupled is decoupled


@pytest.mark.parametrize("bad, error", [
    ({"snapshot.num-retained.min": "0"}, errors.UnsafePolicyError),
    ({"changelog.num-retained.min": "0"}, errors.UnsafePolicyError),
    ({"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "4"}, errors.UnsafePolicyError),
    ({"changelog.num-retained.min": "5", "changelog.num-retained.max": "4"}, errors.UnsafePolicyError),
    ({"snapshot.expire.limit": "0"}, errors.InvalidInputError),
    ({"snapshot.num-retained.min": "ten"}, errors.InvalidInputError),
    ({"snapshot.time-retained": "soon"}, errors.InvalidDurationError),
])
def test_bad_values_are_typed_errors_with_a_fix(bad: dict[str, str], error: type[Exception]) -> None:
    with pytest.raises(error) as raised:
        from_options(bad)
    assert isinstance(raised.value, errors.TablekeeperError) and raised.value.fix


def test_policy_values_and_the_json_form() -> None:
    values = {"snapshots.minRetained": 2, "snapshots.maxRetained": None, "snapshots.maxAge": Duration("1 h"),
              "snapshots.expireLimit": 1, "snapshots.cleanEmptyDirectories": False,
              "changelog.minRetained": 6, "changelog.maxRetained": None, "changelog.maxAge": Duration("1 h")}
    r = from_policy(values)
    assert (r.retain_min, r.retain_max, r.expire_limit, r.changelog_retain_min) == (2, INT_MAX, 1, 6)
    assert r.changelog_decoupled
    # the changelog config carries the policy's limit (issue #11: not the table option's)
    assert planning.changelog_config(r, {"snapshot.expire.limit": "50"}).expire_limit == 1
    assert Retention.from_dict(r.to_dict()) == r
    assert r.to_dict()["snapshots"] == {"minRetained": 2, "maxAge": "1 h", "expireLimit": 1,
                                        "cleanEmptyDirectories": False}
    assert from_policy({}) == from_options({})
    with pytest.raises(errors.UnsafePolicyError):
        from_policy({**values, "snapshots.minRetained": 0})
    with pytest.raises(errors.InvalidInputError):
        Retention.from_dict({"snapshots": {}})


def test_one_batch_loop() -> None:
    counts = iter([2, 2, 1, 0, 5])
    assert batches.run_batches(lambda n: next(counts), 10) == batches.Batches(4, 5)  # stops after 0
    assert batches.run_batches(lambda n: 3, 2) == batches.Batches(2, 6)  # at most max_batches
    assert batches.run_batches(lambda n: None, 5) == batches.Batches(0, 0)  # nothing to do
    assert batches.run_batches(lambda n: 3, 5, dry_run=True) == batches.Batches(1, 3)
    order: list[str] = []

    def snapshots(n: int) -> int:
        order.append(f"s{n}")
        return 1 if n < 3 else 0

    def changelog(n: int) -> int | None:
        order.append(f"c{n}")
        return None
    first, second = batches.run_with_changelog(snapshots, changelog, changelog_due=True, max_batches=5)
    assert order == ["s1", "s2", "s3", "c1"] and first == batches.Batches(3, 2)
    assert second == batches.Batches(0, 0)
    assert batches.run_with_changelog(snapshots, changelog, changelog_due=False, max_batches=1)[1] is None
