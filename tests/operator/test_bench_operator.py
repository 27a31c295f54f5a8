"""``bench/operator_scale.py`` runs end to end on a small cluster and prints its report lines (numbers are
the benchmark's business, not asserted)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.k8s

BENCH = Path(__file__).resolve().parents[2] / "bench" / "operator_scale.py"


def test_operator_bench_prints_its_report(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("tk_bench_operator", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        assert module.main(["--tables", "2", "--tags-per-table", "3", "--timeout", "60"]) == 0
    finally:
        sys.modules.pop(spec.name, None)
    out = capsys.readouterr().out
    assert "6 PaimonTags Ready in" in out and "tags/s" in out
    assert "operator peak RSS" in out
    assert "check:  6 tags in storage (expected 6)" in out
