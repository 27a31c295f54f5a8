"""The storage contract (tablekeeper/core/storage/fileio.py), identical on every store."""

from __future__ import annotations

import time

import pytest

from tablekeeper.core.storage import DeleteOutcome
from tests.stores.conftest import StoreUnderTest


def test_create_if_absent_never_overwrites(store: StoreUnderTest) -> None:
    store.io.write_new(store.path("tag/tag-a"), b"first")
    assert store.read("tag/tag-a") == b"first"

    with pytest.raises(FileExistsError):
        store.io.write_new(store.path("tag/tag-a"), b"second")

    assert store.read("tag/tag-a") == b"first"


def test_create_if_absent_refused_by_the_store_itself(store: StoreUnderTest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer created the file after our existence check: the store's own condition
    (link, If-None-Match, ifGenerationMatch=0, overwrite=false) refuses the write."""
    store.put("snapshot/snapshot-5", b"theirs")
    if store.name != "local":
        monkeypatch.setattr(store.io, "exists", lambda path: False)

    with pytest.raises(FileExistsError):
        store.io.write_new(store.path("snapshot/snapshot-5"), b"ours")

    assert store.read("snapshot/snapshot-5") == b"theirs"


def test_listing_carries_sizes_and_mtimes(store: StoreUnderTest) -> None:
    before_ms = int(time.time() * 1000) - 120_000
    store.put("t/a.txt", b"hello")
    store.put("t/b.bin", b"\0" * 1024)
    store.put("t/sub/deep/c", b"c")

    listing = {s.name: s for s in store.io.list_dir(store.path("t"))}

    assert {n: s.is_dir for n, s in listing.items()} == {"a.txt": False, "b.bin": False, "sub": True}
    assert listing["a.txt"].size == 5 and listing["b.bin"].size == 1024
    assert listing["a.txt"].path == store.path("t/a.txt")
    after_ms = int(time.time() * 1000) + 120_000
    assert before_ms <= listing["a.txt"].mtime_ms <= after_ms
    walked = sorted((s.path, s.size) for s in store.io.walk_files(store.path("t")))
    assert walked == sorted([(store.path("t/a.txt"), 5), (store.path("t/b.bin"), 1024), (store.path("t/sub/deep/c"), 1)])
    assert store.io.list_dir(store.path("nope")) == []
    assert store.io.list_dir(store.path("t/a.txt")) == []


def test_stat_read_and_missing(store: StoreUnderTest) -> None:
    store.put("f", b"12345")
    status = store.io.stat(store.path("f"))
    assert status.size == 5 and not status.is_dir and status.mtime_ms > 0
    assert store.io.read_bytes(store.path("f")) == b"12345"
    assert store.io.exists(store.path("f"))
    assert not store.io.exists(store.path("g"))
    with pytest.raises(FileNotFoundError):
        store.io.read_bytes(store.path("g"))
    with pytest.raises(FileNotFoundError):
        store.io.stat(store.path("g"))


def test_bulk_delete_has_one_outcome_per_file(store: StoreUnderTest) -> None:
    """Deleted, missing and directory told apart; a directory is never deleted as a file;
    files not named survive."""
    paths = [store.put(f"data/f-{i}", b"d") for i in range(5)]
    store.put("data/keep", b"k")
    directory = store.make_dir_with("data/dir")
    missing = store.path("data/never-there")

    results = store.io.delete_files([*paths, missing, directory])

    assert [r.path for r in results] == [*paths, missing, directory]
    assert [r.outcome for r in results] == [DeleteOutcome.DELETED] * 5 + [DeleteOutcome.MISSING, DeleteOutcome.FAILED]
    assert "directory" in (results[-1].error or "")
    assert not any(store.exists(f"data/f-{i}") for i in range(5))
    assert store.exists("data/keep") and store.exists("data/dir/inside")

    again = store.io.delete_files(paths)
    assert {r.outcome for r in again} == {DeleteOutcome.MISSING}


def test_overwrite_rename_and_tree(store: StoreUnderTest) -> None:
    store.io.overwrite(store.path("snapshot/LATEST"), "1")
    store.io.overwrite(store.path("snapshot/LATEST"), "2")
    assert store.read("snapshot/LATEST") == b"2"

    store.put("a", b"A")
    store.put("b", b"B")
    with pytest.raises(FileExistsError):
        store.io.rename(store.path("a"), store.path("b"))
    assert store.read("b") == b"B"
    store.io.rename(store.path("a"), store.path("c"))
    assert store.read("c") == b"A" and not store.exists("a")

    store.put("branch/branch-x/snapshot/snapshot-1", b"s")
    store.put("branch/branch-x/schema/schema-0", b"s")
    store.put("branch/branch-y/schema/schema-0", b"s")
    store.io.delete_tree(store.path("branch/branch-x"))
    assert not store.exists("branch/branch-x/snapshot/snapshot-1")
    assert store.exists("branch/branch-y/schema/schema-0")
