"""The peer benchmark (``bench/peer.py``) runs end to end at a tiny scale against Java Paimon: it
prints the three ratio lines (expiration; orphan cleanup on the table as built and on the expired
table), and Java's ExpireSnapshots / LocalOrphanFilesClean and tablekeeper's CLI
delete the same files on the two copies (the planted orphans among them), and Java's own orphan
clean then finds nothing more on tablekeeper's copy. Timings are never asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import javapaimon as J
from tests.support.bench import loaded

pytestmark = pytest.mark.javapaimon


def test_peer_bench_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    J.classpath_or_skip("1.4.2")  # CI=true: a failed setup fails; elsewhere a one-line skip
    with loaded("peer", siblings=True) as module:
        result = module.run(["--scale", "0.02", "--workdir", str(tmp_path)])
    out = capsys.readouterr().out
    for prefix in ("ratio expire Java / tablekeeper", "ratio orphans Java / tablekeeper",
                   "ratio orphans-after-expire Java / tablekeeper"):
        lines = [x for x in out.splitlines() if x.startswith(prefix)]
        assert len(lines) == 1 and lines[0].rstrip().endswith(("PASS", "MISS")), out
    expire = result["expire"]
    assert expire["same"] and expire["deleted_tk"] > 0, out
    # orphan cleanup on the table as built, then on the expired table: the planted orphans, on both sides
    for orphans in (result["orphans"], result["orphans_after_expire"]):
        assert orphans["same"] and orphans["planted_deleted_by_tk"] and orphans["deleted_tk"] == 41, out
        assert orphans["same_every_round"] and len(orphans["rounds_tk"]) == len(orphans["rounds_java"]) == 5, out
        assert "deleted_tk_set" not in orphans
    assert result["java_after_tk"]["orphans_left"] == 0 and result["java_after_tk"]["latest"] == 24
