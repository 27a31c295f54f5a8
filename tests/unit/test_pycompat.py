"""core.pycompat: what the job's side uses of Python 3.11 behaves the same on 3.10. The 3.10 stand-in
is held here to 3.11's own class (this suite runs on 3.11); the Python 3.10 tier of
tests/spark_versions runs the job with it."""

from __future__ import annotations

import enum
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from tablekeeper.core import pycompat


class Kind310(pycompat.StrValueEnum):
    DATA = "data"
    MANIFEST = "manifest"


class Kind311(enum.StrEnum):
    DATA = "data"
    MANIFEST = "manifest"


@pytest.mark.parametrize("kind", [Kind310, Kind311])
def test_the_stand_in_reads_as_its_value_as_strenum_does(kind: Any) -> None:
    member = kind("data")
    assert member is kind["DATA"]
    assert str(member) == f"{member}" == format(member) == member.value == "data"
    assert f"{member:>6}" == "  data"
    assert member == "data" and hash(member) == hash("data")
    assert json.dumps({member: [member]}) == '{"data": ["data"]}'
    assert sorted(kind, key=str) == [kind("data"), kind("manifest")]
    assert isinstance(member, str)


def test_strenum_is_the_standard_librarys_on_311() -> None:
    assert pycompat.StrEnum is enum.StrEnum


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-01-31", datetime(2026, 1, 31)),
    ("2026-01-31T23:00:00", datetime(2026, 1, 31, 23)),
    ("2026-01-31 23:00:00", datetime(2026, 1, 31, 23)),
    ("2026-01-31T23:00:00Z", datetime(2026, 1, 31, 23, tzinfo=timezone.utc)),
    ("2026-01-31T23:00:00.5Z", datetime(2026, 1, 31, 23, 0, 0, 500000, tzinfo=timezone.utc)),
    ("2026-01-31T23:00:00.123+02:00", datetime(2026, 1, 31, 23, 0, 0, 123000, tzinfo=timezone(timedelta(hours=2)))),
    # Java's LocalDateTime with nanoseconds (a Paimon tag's tagCreateTime as a string)
    ("2026-01-31T23:00:00.123456789", datetime(2026, 1, 31, 23, 0, 0, 123456)),
    ("2026-01-31T23:00:00,25", datetime(2026, 1, 31, 23, 0, 0, 250000)),
])
def test_fromisoformat_reads_the_forms_311_reads(text: str, expected: datetime) -> None:
    assert pycompat.fromisoformat(text) == expected
    assert datetime.fromisoformat(text) == expected  # what 3.11 answers, which 3.10 must match


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-01", "2026-01-31T25:00:00"])
def test_fromisoformat_refuses_what_is_not_a_time(text: str) -> None:
    with pytest.raises(ValueError):
        pycompat.fromisoformat(text)
