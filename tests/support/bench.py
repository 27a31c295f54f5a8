"""Loading a script of ``bench/`` in a test: each benchmark's smoke test runs the benchmark's own
code (no copy), under a module name of its own, and unloads it afterwards. With ``siblings``,
``bench/`` is importable while it loads (benchmarks that import ``_synth``, ``_s3count``...);
otherwise not. No script of ``bench/`` is named like a standard-library module: ``python
bench/X.py`` puts ``bench/`` first on ``sys.path``, where it would shadow it in every benchmark
(tests/bench/test_bench_names.py)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"

__all__ = ["BENCH", "loaded"]


@contextmanager
def loaded(name: str, *, siblings: bool = False) -> Iterator[ModuleType]:
    """``bench/<name>.py`` as module ``tk_bench_<name>``; it and the sibling modules it imported
    are removed from ``sys.modules`` on exit."""
    before = set(sys.modules)
    if siblings:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"tk_bench_{name.lstrip('_')}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        try:
            spec.loader.exec_module(module)
        finally:
            if siblings:
                sys.path.remove(str(BENCH))
        yield module
    finally:
        siblings = {p.stem for p in BENCH.glob("*.py")}
        for added in set(sys.modules) - before:
            if added == spec.name or added in siblings:
                sys.modules.pop(added, None)
