"""The trash on every store: expire and clean-orphans with ``--keep-deleted`` move what they
remove into the table's trash on the store (local disk and HDFS a rename, object stores a
server-side copy then a delete, counted as ``copy`` requests), and ``undo`` brings every view
back (pypaimon reads a download of the store's bytes, as in test_scenario.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.maintenance.helpers import IDENT, build_mixed, now_ms, plant, table_root
from tests.stores.conftest import StoreUnderTest
from tests.stores.test_scenario import _cli, _download, _upload
from tests.support.paimon import snapshot_views

DAY_MS = 86_400_000
ROOT = f"wh/{IDENT.split('.')[0]}.db/{IDENT.split('.')[1]}"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("trash-template") / "wh")
    build_mixed(wh)
    plant(f"{table_root(wh)}/dt=a/bucket-0/data-orphan-0.parquet", b"o" * 10)
    return wh


def _views(store: StoreUnderTest, dst: Path) -> dict[str, Any]:
    return snapshot_views(_download(store, "wh", dst), IDENT)


@pytest.mark.timeout(900)
def test_expire_and_clean_orphans_are_undone_on_every_store(store: StoreUnderTest, template: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    wh = _upload(store, template, "wh")
    before = _views(store, tmp_path / "v0")
    runs = []
    for n, args in enumerate([("expire", IDENT, "--retain-min", "1", "--time-retained", "0 ms",
                               "--now", str(now_ms() + 1000)),
                              ("clean-orphans", IDENT, "--now", str(now_ms() + 2 * DAY_MS))]):
        done = _cli(capsys, store, wh, *args, "--keep-deleted", "7 d")
        run = done["trash"]["run"]
        runs.append(run)
        assert done["trash"]["moved_files"] == sum(done["result"]["deleted"].values()) > 0
        # one server-side copy (local disk and HDFS: one rename) per moved file, counted as "copy"
        assert done["requests"].get("copy", 0) == done["trash"]["moved_files"], done["requests"]
        if n == 0:  # the expired snapshots are gone until the undo
            assert set(_views(store, tmp_path / "after")) < set(before)
    assert not store.exists(f"{ROOT}/dt=a/bucket-0/data-orphan-0.parquet")
    assert store.exists(f"{ROOT}/.tablekeeper/trash/{runs[1]}/files/dt=a/bucket-0/data-orphan-0.parquet")
    listed = _cli(capsys, store, wh, "trash", "list", IDENT)
    assert [r["run"] for r in listed["runs"]] == runs and all(r["state"] == "kept" for r in listed["runs"])
    for run in reversed(runs):
        undone = _cli(capsys, store, wh, "undo", IDENT, run)
        assert undone["restored"] > 0
    assert store.exists(f"{ROOT}/dt=a/bucket-0/data-orphan-0.parquet")
    assert store.read(f"{ROOT}/dt=a/bucket-0/data-orphan-0.parquet") == b"o" * 10
    assert _views(store, tmp_path / "v1") == before
    purged = _cli(capsys, store, wh, "trash", "purge", IDENT)  # undone runs go; nothing outside the trash
    assert sorted(purged["purged_runs"]) == sorted(runs)
    assert _views(store, tmp_path / "v2") == before
