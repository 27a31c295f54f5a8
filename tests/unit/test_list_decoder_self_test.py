"""The manifest-list decoders have their own self-test (issue 13, CLI start-up): orphan cleanup
decodes lists only, so it never pays for the entry decoders' test; each family falls back to
fastavro.reader on its own, with the same results."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tablekeeper.core import orphans
from tablekeeper.core.paimon import manifest_decoding
from tablekeeper.core.paimon import manifests as m
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.storage import FileIO, join
from tests.support import paimon as P

IO = FileIO.for_uri("/")


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    P.build_history(str(tmp_path), commits=3)
    return str(tmp_path)


def test_list_readers_fall_back_to_fastavro_with_equal_results(warehouse: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    manifest_dir = join(warehouse, "db.db", "orders", "manifest")
    lists = [join(manifest_dir, n) for n in sorted(os.listdir(manifest_dir)) if n.startswith("manifest-list-")]
    assert manifest_decoding.fast_lists_usable() is True  # this fastavro build passes the list test
    compiled = [m.read_manifest_list(IO, p) for p in lists]
    monkeypatch.setattr(manifest_decoding, "_fast_lists_enabled", False)
    assert [m.read_manifest_list(IO, p) for p in lists] == compiled
    assert sum(len(x) for x in compiled) > 0


def test_orphan_planning_runs_only_the_list_self_test(warehouse: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifest_decoding, "_fast_enabled", None)
    monkeypatch.setattr(manifest_decoding, "_fast_lists_enabled", None)
    bucket = next(Path(warehouse, "db.db", "orders").glob("dt=*/bucket-*"))
    orphan = bucket / "data-00000000-0000-0000-0000-000000000000-0.parquet"
    orphan.write_bytes(b"x")
    past = time.time() - 2 * 86_400
    os.utime(orphan, (past, past))
    plan = orphans.plan_orphan_clean(open_table(warehouse, "db.orders"),
                                     orphans.OrphanConfig(int(time.time() * 1000) - 86_400_000, processes=1))
    assert [f.path for s in plan.steps for f in getattr(s, "files", ())] == [str(orphan)]
    assert manifest_decoding._fast_lists_enabled is True and manifest_decoding._fast_enabled is None
