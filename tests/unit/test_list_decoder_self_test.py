"""The manifest-list decoders can be trusted on their part of the self-test alone (issue 13, CLI
start-up): orphan cleanup decodes lists only and never pays for the entry decoders' test; once
the whole test ran, or a test forced a verdict, its verdict holds for lists too. The native
list programs' part runs on records encoded without fastavro (core/paimon/manifests/self_test.py), so
orphan cleanup does not import fastavro at all; the generated Python decoders' part (machines
without the native module) and fastavro's reader find the same orphans."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tablekeeper.core.paimon.manifests import decoding, native
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.reclaim.orphans import planning
from tests.support import paimon as P


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    P.build_history(str(tmp_path), commits=3)
    return str(tmp_path)


def _plan_paths(warehouse: str) -> list[str]:
    plan = planning.plan_orphan_clean(open_table(warehouse, "db.orders"),
                                     planning.OrphanConfig(int(time.time() * 1000) - 86_400_000, processes=1))
    return [f.path for s in plan.steps for f in getattr(s, "files", ())]


def test_orphan_planning_runs_only_the_list_self_test(warehouse: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decoding, "_fast_enabled", None)
    monkeypatch.setattr(decoding, "_fast_lists_enabled", None)
    monkeypatch.setattr(native, "_enabled", None)
    monkeypatch.setattr(native, "_lists_enabled", None)
    orphan = P.plant_orphan(Path(warehouse, "db.db", "orders"), "data-00000000-0000-0000-0000-000000000000-0.parquet")
    assert _plan_paths(warehouse) == [str(orphan)]
    if native._NATIVE is not None:  # the native lists' test only
        assert native._lists_enabled is True and native._enabled is None
        assert decoding._fast_lists_enabled is None and decoding._fast_enabled is None
        # without the native module: the generated Python list decoders' test only
        monkeypatch.setattr(native, "_enabled", False)
        assert _plan_paths(warehouse) == [str(orphan)]
    assert decoding._fast_lists_enabled is True and decoding._fast_enabled is None
    # the fastavro.reader path (compiled decoders off) finds the same orphans
    monkeypatch.setattr(decoding, "_fast_enabled", False)
    assert decoding.fast_lists_usable() is False
    assert _plan_paths(warehouse) == [str(orphan)]
