"""``bench/s3.py`` runs end to end at a tiny scale on moto: it prints the requests, the minimum and
the ratio of every operation and the latency run, the server saw at least what tablekeeper
counted, and orphan cleanup deleted the planted orphans. Timings are never asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench import loaded


@pytest.mark.s3
def test_s3_bench_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with loaded("s3", siblings=True) as module:
        result = module.run(["--scale", "0.005", "--latency-ms", "1", "--workdir", str(tmp_path)])
    out = capsys.readouterr().out
    assert set(result["ops"]) == {"expire", "expire-partitions", "tag delete", "clean-orphans"}
    for name, row in result["ops"].items():
        assert f"{name} " in out and f"{row['ratio']:.2f}x" in out
        client, server = row["client"], row["server"]
        assert all(server.get(kind, 0) >= n for kind, n in client.items()), (name, client, server)
        assert 0 < row["minimum"]["total"] <= server["total"], (name, row)
    spec_ = module.spec_for(0.005)
    assert result["ops"]["clean-orphans"]["files"] >= spec_.orphan_files + spec_.orphan_manifests
    assert result["ops"]["expire"]["files"] > 0
    assert set(result["latency"]) == {"clean-orphans local", "expire local"}
    assert "floor" in out and "bench wall time" in out
    floor = result["latency"]["clean-orphans local"]["measured_floor"]
    assert "measured floor" in out and floor["list_pages"] >= 1 and floor["gets"] > 0
    assert floor["deletes"] >= 1 and floor["server"]["bulk_delete"] == floor["deletes"]
