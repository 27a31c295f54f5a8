"""The expiration and orphan-cleanup benchmarks run end to end at a tiny scale: they print their
ratio lines, the expiration really deletes files and leaves the retained snapshots readable,
and orphan cleanup deletes exactly the planted orphans. Timings are never asserted."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.bench import loaded


@pytest.fixture
def bench_module() -> Iterator[Callable[[str], ModuleType]]:
    with ExitStack() as stack:
        yield lambda name: stack.enter_context(loaded(name, siblings=True))


def _ratio_line(out: str, prefix: str) -> str:
    lines = [x for x in out.splitlines() if x.startswith(prefix)]
    assert len(lines) == 1, (prefix, out)
    assert lines[0].rstrip().endswith(("PASS", "MISS")), lines[0]
    return lines[0]


def test_expire_bench_tiny(bench_module: Callable[[str], ModuleType], tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    module = bench_module("expire")
    result = module.run(["--snapshots", "50", "--files", "2000", "--expire", "40",
                         "--workdir", str(tmp_path), "--naive-sample", "4", "--naive-extrapolate-sample", "2"])
    out = capsys.readouterr().out
    _ratio_line(out, "ratio tablekeeper vs naive pypaimon mark-and-sweep")
    _ratio_line(out, "ratio tablekeeper vs floor")
    _ratio_line(out, "ratio planning time 2x table vs 1x table")
    assert "peak RSS" in out
    assert result["expired"] == 40
    assert result["deleted_data"] > 0 and result["deleted"].get("manifest", 0) > 0 and result["failed"] == 0
    assert result["naive_equal"]  # the naive mark-and-sweep deleted the same data files
    assert result["retained_ok"] and result["earliest_after"] == 41


def test_expire_bench_tiny_pypaimon_layout(bench_module: Callable[[str], ModuleType], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    module = bench_module("expire")
    result = module.run(["--snapshots", "50", "--files", "2000", "--expire", "40", "--writer", "pypaimon",
                         "--no-large", "--workdir", str(tmp_path), "--naive-sample", "3"])
    out = capsys.readouterr().out
    assert "(ESTIMATED)" in _ratio_line(out, "ratio tablekeeper vs naive pypaimon mark-and-sweep")
    _ratio_line(out, "ratio tablekeeper vs floor")
    assert result["deleted_data"] > 0 and result["retained_ok"]


def test_orphans_bench_tiny(bench_module: Callable[[str], ModuleType], tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    module = bench_module("orphans")
    result = module.run(["--snapshots", "20", "--files", "2000", "--orphans", "40", "--orphan-manifests", "3",
                         "--repeat", "1", "--workdir", str(tmp_path)])
    out = capsys.readouterr().out
    _ratio_line(out, "ratio tablekeeper plan_orphan_clean vs find + set difference")
    assert "peak RSS" in out
    assert result["exact"] and result["planned"] == 43 and result["deleted"] == 43 and result["failed"] == 0
    assert result["retained_ok"]
