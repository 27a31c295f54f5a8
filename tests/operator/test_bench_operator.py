"""``bench/operator_scale.py`` runs end to end on a small cluster and prints its report lines (numbers are
the benchmark's business, not asserted)."""

from __future__ import annotations

import pytest

from tests.support.bench import loaded

pytestmark = pytest.mark.k8s


def test_operator_bench_prints_its_report(capsys: pytest.CaptureFixture[str]) -> None:
    with loaded("operator_scale") as bench:
        assert bench.main(["--tables", "2", "--tags-per-table", "3", "--timeout", "60"]) == 0
    out = capsys.readouterr().out
    assert "6 PaimonTags Ready in" in out and "tags/s" in out
    assert "operator peak RSS" in out
    assert "check:  6 tags in storage (expected 6)" in out
