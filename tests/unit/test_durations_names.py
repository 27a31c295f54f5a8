"""Duration syntax (Paimon's TimeUtils plus ISO-8601) and tag/branch name rules."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tablekeeper.core import errors
from tablekeeper.core.values.durations import format_duration, parse_duration
from tablekeeper.core.values.names import MAIN_BRANCH, validate_branch_name, validate_tag_name


# -- durations ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "expected"), [
    ("30 min", timedelta(minutes=30)),
    ("1 h", timedelta(hours=1)),
    ("7 d", timedelta(days=7)),
    ("1d", timedelta(days=1)),
    ("500", timedelta(milliseconds=500)),  # no unit = milliseconds, as Paimon
    ("2 hours", timedelta(hours=2)),
    ("PT24H", timedelta(hours=24)),  # ISO-8601, as pypaimon reports tag retention
    ("PT1H30M", timedelta(minutes=90)),
    ("P1D", timedelta(days=1)),
    ("PT0.5S", timedelta(milliseconds=500)),
    ("1H", timedelta(hours=1)),
    ("1 MIN", timedelta(minutes=1)),
    ("1 m", timedelta(minutes=1)),
    ("86400 s", timedelta(days=1)),
    ("10ms", timedelta(milliseconds=10)),
    ("3 days", timedelta(days=3)),
    ("  3 h ", timedelta(hours=3)),
    ("0", timedelta(0)),
])
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", [
    "", "   ", "abc", "-1 h", "1 week", "1.5h", "h", "1 hx", "1 h 30 min", "P", "PT", "P1W", "1,5 h",
])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(errors.InvalidDurationError) as info:
        parse_duration(text, field="snapshot.time-retained")
    assert "snapshot.time-retained" in str(info.value)
    assert info.value.fix  # every error says what to do
    assert isinstance(info.value, errors.InvalidInputError)


def test_parse_duration_rejects_non_strings() -> None:
    with pytest.raises(errors.InvalidDurationError):
        parse_duration(None)  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidDurationError):
        parse_duration(5)  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "text"), [
    (timedelta(days=7), "7 d"),
    (timedelta(hours=24), "1 d"),
    (timedelta(hours=1), "1 h"),
    (timedelta(minutes=90), "90 min"),
    (timedelta(seconds=30), "30 s"),
    (timedelta(milliseconds=1500), "1500 ms"),
    (timedelta(microseconds=7), "7 us"),
])
def test_format_duration_uses_the_largest_exact_unit(value: timedelta, text: str) -> None:
    assert format_duration(value) == text
    assert parse_duration(text) == value


# -- branch names ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [
    ".", "..", "123", "0", "main", "/", "a/b", "\\", "a\\b", "", " ", " x", "x ", ",", "a,b",
    "a.b", "a..b", "a$b", "tab\there", "nul\0",
])
def test_branch_names_rejected(name: str) -> None:
    with pytest.raises(errors.InvalidNameError) as info:
        validate_branch_name(name)
    assert info.value.fix
    assert isinstance(info.value, errors.InvalidInputError)


@pytest.mark.parametrize("name", ["dev", "feature-1", "b_2", "release2026", "x", "Main", "v1-rc", "main2"])
def test_branch_names_accepted(name: str) -> None:
    assert validate_branch_name(name) == name


def test_main_is_the_main_branch() -> None:
    assert MAIN_BRANCH == "main"


# -- tag names ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [
    "/", "a/b", "\\", "a\\b", ",", "a,b", "..", "a..b", ".", "", " ", "\t", " x", "x ", "123", "20260101",
])
def test_tag_names_rejected(name: str) -> None:
    with pytest.raises(errors.InvalidNameError):
        validate_tag_name(name)


@pytest.mark.parametrize("name", [
    "nightly", "2026-01-01", "2026-01-01 10", "v1.2", "savepoint-1", "rollback-to-as-latest-5", "t_1", "x",
])
def test_tag_names_accepted(name: str) -> None:
    assert validate_tag_name(name) == name


@pytest.mark.parametrize("text", ["9" * 40 + " d", "9" * 40, "P" + "9" * 30 + "D", "PT" + "9" * 400 + "S",
                                  "1000000000 d"])
def test_a_duration_beyond_timedeltas_range_is_one_typed_error(text: str) -> None:
    """Found by fuzzing the CR specs: a huge number overflowed timedelta (an OverflowError escaped)."""
    with pytest.raises(errors.InvalidDurationError, match="longer than any duration") as e:
        parse_duration(text, field="snapshots.maxAge")
    assert e.value.fix and "snapshots.maxAge" in e.value.message
