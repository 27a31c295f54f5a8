"""The manifest benchmark runs end to end on a small manifest and prints its verdict lines
(timings are not asserted: they belong to the benchmark's own report)."""

from __future__ import annotations

import pytest

from tests.support.bench import loaded


def test_manifest_bench_prints_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    with loaded("manifests") as bench:
        assert bench.main(["--entries", "2000", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "2,000 entries" in out
    for line in ("ratio ours vs pypaimon (read_manifest):", "ratio ours vs raw fastavro (read_manifest,",
                 "ratio ours vs pypaimon (read_manifest_refs):", "ratio ours vs raw fastavro (read_manifest_refs,"):
        matching = [x for x in out.splitlines() if x.startswith(line)]
        assert len(matching) == 1, line
        assert matching[0].rstrip().endswith(("PASS", "MISS"))
    assert "peak Python heap" in out
