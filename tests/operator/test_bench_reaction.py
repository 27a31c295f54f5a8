"""``bench/operator_reactions.py`` runs end to end with a few children and prints both numbers (the
seconds are the benchmark's business, never asserted)."""

from __future__ import annotations

import pytest

from tests.support.bench import loaded

pytestmark = pytest.mark.k8s


def test_reaction_bench_prints_its_report(capsys: pytest.CaptureFixture[str]) -> None:
    with loaded("operator_reactions") as bench:
        assert bench.main(["--children", "4", "--timeout", "60"]) == 0
    out = capsys.readouterr().out
    assert "baseline: 4 PaimonTags applied on a Ready table -> all Ready in" in out
    assert "reaction: catalog Ready -> its table and 4 waiting PaimonTags Ready in" in out
