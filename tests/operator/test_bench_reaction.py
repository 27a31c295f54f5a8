"""``bench/operator.py`` runs end to end with a few children and prints both numbers (the
seconds are the benchmark's business, never asserted)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.k8s

BENCH = Path(__file__).resolve().parents[2] / "bench" / "operator.py"


def test_reaction_bench_prints_its_report(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("tk_bench_reaction", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        assert module.main(["--children", "4", "--timeout", "60"]) == 0
    finally:
        sys.modules.pop(spec.name, None)
    out = capsys.readouterr().out
    assert "baseline: 4 PaimonTags applied on a Ready table -> all Ready in" in out
    assert "reaction: catalog Ready -> its table and 4 waiting PaimonTags Ready in" in out
