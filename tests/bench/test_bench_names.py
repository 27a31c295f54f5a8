"""``python bench/X.py`` puts ``bench/`` first on ``sys.path``: a script there named like a
standard-library module (``operator.py``, ``trace.py``...) shadows it in every benchmark, which then
fails at its first import. Also each documented benchmark starts: ``--help`` exits 0."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.bench import BENCH


def test_no_benchmark_is_named_like_a_standard_library_module() -> None:
    clashes = sorted(p.name for p in BENCH.glob("*.py") if p.stem in sys.stdlib_module_names)
    assert clashes == [], f"rename {clashes}: they shadow the standard library in every python bench/*.py"


@pytest.mark.parametrize("script", ["trash.py", "s3.py", "orphans.py", "expire.py"])
def test_a_benchmark_starts_as_its_docs_run_it(script: str) -> None:
    proc = subprocess.run([sys.executable, str(BENCH / script), "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage:" in proc.stdout
