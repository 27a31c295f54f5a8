"""The trash on every store: expire and clean-orphans with ``--keep-deleted`` move what they
remove into the table's trash on the store (local disk and HDFS a rename, object stores a
server-side copy then a delete, counted as ``copy`` requests), a writer commits, and ``undo``
brings every view of before the runs back beside the writer's commit (pypaimon reads a download
of the store's bytes, as in test_scenario.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.maintenance.helpers import IDENT, build_mixed, now_ms, plant, reload, rows, table_root, write
from tests.stores.conftest import StoreUnderTest
from tests.stores.test_scenario import _cli, _download, _upload
from tests.support.paimon import dir_listing, snapshot_views

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


def _writer_commits(store: StoreUnderTest, dst: Path) -> dict[str, Any]:
    """A writer's commit on the store between the runs and their undo: pypaimon appends to a copy
    of the store's table and what it wrote (data, manifests, the snapshot, the LATEST hint) is put on
    the store, as a writer's files appear there. Returns the table's views right after it."""
    local = _download(store, "wh", dst)
    before = dir_listing(local)
    write(reload(local), rows("a", 500))
    after = dir_listing(local)
    changed = [rel for rel, stat in after.items() if not rel.endswith("/") and before.get(rel) != stat]
    assert any(rel.endswith("/snapshot/LATEST") for rel in changed) and len(changed) > 3, changed
    for rel in changed:
        store.put(f"wh/{rel}", Path(local, rel).read_bytes())
    return snapshot_views(local, IDENT)


def _assert_undone_beside_the_writer(before: dict[str, Any], written: dict[str, Any], after: dict[str, Any]) -> None:
    """Every view of before the runs reads as it did, the writer's snapshot stays the latest."""
    assert {k: v for k, v in after.items() if k != "main@latest"} == \
        {**{k: v for k, v in before.items() if k != "main@latest"},
         **{k: v for k, v in written.items() if k not in before}}
    assert after["main@latest"] == written["main@latest"] != before["main@latest"]


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
    written = _writer_commits(store, tmp_path / "writer")
    for run in reversed(runs):
        undone = _cli(capsys, store, wh, "undo", IDENT, run)
        assert undone["restored"] > 0
    assert store.exists(f"{ROOT}/dt=a/bucket-0/data-orphan-0.parquet")
    assert store.read(f"{ROOT}/dt=a/bucket-0/data-orphan-0.parquet") == b"o" * 10
    after = _views(store, tmp_path / "v1")
    _assert_undone_beside_the_writer(before, written, after)
    purged = _cli(capsys, store, wh, "trash", "purge", IDENT)  # undone runs go; nothing outside the trash
    assert sorted(purged["purged_runs"]) == sorted(runs)
    assert _views(store, tmp_path / "v2") == after
