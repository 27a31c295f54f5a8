"""FileIO behaviour, identical on a local directory and on S3 (moto)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from tablekeeper.core.errors import InvalidInputError
from tablekeeper.core.storage import DeleteOutcome, DeleteResult, FileIO, FileStatus, basename
from tablekeeper.core.values import rails
from tests.storage.conftest import Backend


def _names(statuses: list[FileStatus]) -> dict[str, bool]:
    return {s.name: s.is_dir for s in statuses}


# -- listing -----------------------------------------------------------------------------------
def test_list_dir_returns_files_and_directories_of_one_level(backend: Backend) -> None:
    backend.put("t/a.txt", b"hello")
    backend.put("t/b.bin", b"\0" * 1024)
    backend.put("t/sub/deep/c", b"c")

    listing = backend.io.list_dir(backend.path("t"))

    assert _names(listing) == {"a.txt": False, "b.bin": False, "sub": True}
    by_name = {s.name: s for s in listing}
    assert by_name["a.txt"].size == 5
    assert by_name["b.bin"].size == 1024
    assert by_name["a.txt"].path == backend.path("t/a.txt")
    assert by_name["sub"].path == backend.path("t/sub")


def test_list_dir_of_a_missing_directory_is_empty(backend: Backend) -> None:
    assert backend.io.list_dir(backend.path("nope")) == []
    assert backend.io.list_dir(backend.path("nope/deeper")) == []


def test_list_dir_of_a_file_is_empty(backend: Backend) -> None:
    backend.put("t/a", b"1")
    assert backend.io.list_dir(backend.path("t/a")) == []


def test_list_dir_trailing_slash_is_the_same_directory(backend: Backend) -> None:
    backend.put("t/a", b"1")
    assert _names(backend.io.list_dir(backend.path("t") + "/")) == {"a": False}


def test_scan_dir_and_status_of(backend: Backend) -> None:
    """scan_dir: names and types; object stores carry each status, local entries none until
    status_of asks (one stat); status_of of a vanished entry is None."""
    backend.put("t/a.txt", b"hello")
    backend.put("t/sub/deep/c", b"c")
    entries = {e.name: e for e in backend.io.scan_dir(backend.path("t"))}
    assert {n: e.is_dir for n, e in entries.items()} == {"a.txt": False, "sub": True}
    assert entries["a.txt"].path == backend.path("t/a.txt")
    assert (entries["a.txt"].status is not None) == backend.is_s3
    status = backend.io.status_of(entries["a.txt"])
    assert status is not None and status.size == 5 and not status.is_dir
    backend.io.delete_files([backend.path("t/a.txt")])
    if not backend.is_s3:  # a listed status stays what the listing said; a local stat sees it is gone
        assert backend.io.status_of(entries["a.txt"]) is None
    assert backend.io.scan_dir(backend.path("nope")) == []


def test_list_names_is_local_only(backend: Backend) -> None:
    backend.put("t/a", b"1")
    backend.put("t/sub/b", b"2")
    if backend.is_s3:
        with pytest.raises(InvalidInputError):
            backend.io.list_names(backend.path("t"))
    else:
        assert sorted(backend.io.list_names(backend.path("t"))) == ["a", "sub"]
        assert backend.io.list_names(backend.path("nope")) == []


def test_walk_files_is_recursive_and_yields_files_only(backend: Backend) -> None:
    backend.put("t/a", b"1")
    backend.put("t/sub/b", b"22")
    backend.put("t/sub/deep/c", b"333")
    backend.put("t2/not-mine", b"x")  # sibling whose name starts with the same prefix
    backend.make_empty_dir("t/empty")

    found = {s.path: s for s in backend.io.walk_files(backend.path("t"))}

    assert set(found) == {backend.path("t/a"), backend.path("t/sub/b"), backend.path("t/sub/deep/c")}
    assert {s.size for s in found.values()} == {1, 2, 3}
    assert not any(s.is_dir for s in found.values())


def test_walk_files_of_a_missing_directory_is_empty(backend: Backend) -> None:
    assert list(backend.io.walk_files(backend.path("nope"))) == []


# -- stat / exists / read ----------------------------------------------------------------------
def test_stat_reports_size_and_mtime_as_utc_epoch_ms(backend: Backend) -> None:
    before_ms = time.time() * 1000
    backend.put("t/a", b"abcdef")
    after_ms = time.time() * 1000

    status = backend.io.stat(backend.path("t/a"))

    assert status.size == 6
    assert not status.is_dir
    assert isinstance(status.mtime_ms, int)
    # S3 keeps LastModified to the second; local file systems may use a coarse clock.
    assert before_ms - 2000 <= status.mtime_ms <= after_ms + 2000
    assert status.name == "a"


def test_stat_of_a_directory(backend: Backend) -> None:
    backend.put("t/sub/a", b"1")
    assert backend.io.stat(backend.path("t/sub")).is_dir


def test_backdated_mtime_is_visible_in_stat_list_and_walk(backend: Backend) -> None:
    backend.put("t/old", b"o")
    backend.put("t/new", b"n")
    expected = backend.backdate("t/old", timedelta(days=3, hours=2))

    assert backend.io.stat(backend.path("t/old")).mtime_ms == expected
    assert {s.name: s.mtime_ms for s in backend.io.list_dir(backend.path("t"))}["old"] == expected
    walked = {s.name: s.mtime_ms for s in backend.io.walk_files(backend.path("t"))}
    assert walked["old"] == expected
    assert walked["new"] - walked["old"] >= timedelta(days=3).total_seconds() * 1000


def test_exists_and_is_dir(backend: Backend) -> None:
    backend.put("t/sub/a", b"1")
    io = backend.io
    assert io.exists(backend.path("t/sub/a")) and not io.is_dir(backend.path("t/sub/a"))
    assert io.exists(backend.path("t/sub")) and io.is_dir(backend.path("t/sub"))
    assert not io.exists(backend.path("t/missing"))
    assert not io.is_dir(backend.path("t/missing"))


def test_read_bytes_and_text(backend: Backend) -> None:
    backend.put("t/a", "grüß dich".encode())
    assert backend.io.read_bytes(backend.path("t/a")) == "grüß dich".encode()
    assert backend.io.read_text(backend.path("t/a")) == "grüß dich"


@pytest.mark.parametrize("operation", ["read_bytes", "read_text", "stat"])
def test_missing_files_raise_file_not_found(backend: Backend, operation: str) -> None:
    backend.put("t/other", b"1")
    with pytest.raises(FileNotFoundError):
        getattr(backend.io, operation)(backend.path("t/missing"))
    with pytest.raises(FileNotFoundError):
        getattr(backend.io, operation)(backend.path("no-such-dir/missing"))


# -- writing -----------------------------------------------------------------------------------
def test_write_new_creates_the_file(backend: Backend) -> None:
    backend.io.write_new(backend.path("t/snapshot-1"), '{\n  "id" : 1\n}')
    assert backend.read("t/snapshot-1") == b'{\n  "id" : 1\n}'
    # no temp file is left next to it
    assert _names(backend.io.list_dir(backend.path("t"))) == {"snapshot-1": False}


def test_write_new_refuses_an_existing_file_and_keeps_its_content(backend: Backend) -> None:
    path = backend.path("t/snapshot-1")
    backend.io.write_new(path, b"first")

    with pytest.raises(FileExistsError):
        backend.io.write_new(path, b"second")

    assert backend.read("t/snapshot-1") == b"first"
    assert _names(backend.io.list_dir(backend.path("t"))) == {"snapshot-1": False}


@pytest.mark.parametrize(("existing", "target"), [("t/LATEST", "t/LATEST"), ("t/snapshot-1/inside", "t/snapshot-1")],
                         ids=["a-file-written-by-someone-else", "a-directory-of-that-name"])
def test_write_new_refuses_what_is_already_there(backend: Backend, existing: str, target: str) -> None:
    backend.put(existing, b"old")
    with pytest.raises(FileExistsError):
        backend.io.write_new(backend.path(target), b"new")
    assert backend.read(existing) == b"old"


def test_overwrite_replaces_and_creates(backend: Backend) -> None:
    path = backend.path("t/LATEST")
    backend.io.overwrite(path, "1")
    assert backend.read("t/LATEST") == b"1"
    backend.io.overwrite(path, "2")
    assert backend.read("t/LATEST") == b"2"
    assert _names(backend.io.list_dir(backend.path("t"))) == {"LATEST": False}


def test_copy_new_copies_bytes_verbatim(backend: Backend) -> None:
    raw = b'{\n  "tagCreateTime" : [ 2026, 1, 2, 3, 4, 5, 123456789 ]\n}'
    backend.put("a/tag-x", raw)
    backend.io.copy_new(backend.path("a/tag-x"), backend.path("b/tag-x"))
    assert backend.read("b/tag-x") == raw
    assert backend.read("a/tag-x") == raw


#: FileIO operations that move or copy a file to a path that must not exist yet.
COPY_AND_RENAME = pytest.mark.parametrize("operation", [FileIO.copy_new, FileIO.rename], ids=["copy_new", "rename"])


@COPY_AND_RENAME
def test_copy_new_and_rename_refuse_an_existing_target(backend: Backend,
                                                       operation: Callable[[FileIO, str, str], None]) -> None:
    backend.put("t/src", b"src")
    backend.put("t/dst", b"dst")
    with pytest.raises(FileExistsError):
        operation(backend.io, backend.path("t/src"), backend.path("t/dst"))
    assert backend.read("t/src") == b"src"
    assert backend.read("t/dst") == b"dst"


@COPY_AND_RENAME
def test_copy_new_and_rename_of_a_missing_source(backend: Backend,
                                                 operation: Callable[[FileIO, str, str], None]) -> None:
    with pytest.raises(FileNotFoundError):
        operation(backend.io, backend.path("t/missing"), backend.path("t/dst"))
    assert not backend.exists("t/dst")


def test_rename_moves_a_file(backend: Backend) -> None:
    backend.put("t/.snapshot-3.tmp", b"content")
    backend.io.rename(backend.path("t/.snapshot-3.tmp"), backend.path("t/snapshot-3"))
    assert backend.read("t/snapshot-3") == b"content"
    assert not backend.exists("t/.snapshot-3.tmp")


def test_rename_moves_a_directory(backend: Backend) -> None:
    backend.put("branch/branch-a/snapshot/snapshot-1", b"1")
    backend.put("branch/branch-a/tag/tag-t", b"t")
    backend.io.rename(backend.path("branch/branch-a"), backend.path("branch/branch-b"))
    assert backend.read("branch/branch-b/snapshot/snapshot-1") == b"1"
    assert backend.read("branch/branch-b/tag/tag-t") == b"t"
    assert list(backend.io.walk_files(backend.path("branch/branch-a"))) == []


def test_rename_refuses_an_existing_directory_target(backend: Backend) -> None:
    backend.put("branch/branch-a/x", b"a")
    backend.put("branch/branch-b/y", b"b")
    with pytest.raises(FileExistsError):
        backend.io.rename(backend.path("branch/branch-a"), backend.path("branch/branch-b"))
    assert backend.read("branch/branch-a/x") == b"a"
    assert not backend.exists("branch/branch-b/x")


# -- deleting ----------------------------------------------------------------------------------
def test_delete_files_reports_one_outcome_per_path_in_input_order(backend: Backend) -> None:
    backend.put("d/a", b"a")
    backend.put("d/b", b"b")
    backend.put("d/sub/c", b"c")
    paths = [backend.path(p) for p in ("d/a", "d/missing", "d/sub", "d/b", "elsewhere/nope")]

    results = backend.io.delete_files(paths)

    assert [r.path for r in results] == paths
    assert [r.outcome for r in results] == [
        DeleteOutcome.DELETED, DeleteOutcome.MISSING, DeleteOutcome.FAILED,
        DeleteOutcome.DELETED, DeleteOutcome.MISSING,
    ]
    assert results[2].error is not None and "directory" in results[2].error
    assert all(r.error is None for i, r in enumerate(results) if i != 2)
    assert not backend.exists("d/a") and not backend.exists("d/b")
    # the directory and what is inside it are untouched
    assert backend.read("d/sub/c") == b"c"


def test_delete_files_never_deletes_a_directory_even_when_empty(backend: Backend) -> None:
    backend.put("d/keep", b"k")
    backend.make_empty_dir("d/empty")
    [result] = backend.io.delete_files([backend.path("d/empty")])
    assert result.outcome == DeleteOutcome.FAILED
    assert backend.io.is_dir(backend.path("d/empty"))


def test_delete_files_twice_reports_missing(backend: Backend) -> None:
    backend.put("d/a", b"a")
    assert backend.io.delete_files([backend.path("d/a")]) == [DeleteResult(backend.path("d/a"), DeleteOutcome.DELETED)]
    assert backend.io.delete_files([backend.path("d/a")]) == [DeleteResult(backend.path("d/a"), DeleteOutcome.MISSING)]


def test_delete_files_of_nothing(backend: Backend) -> None:
    assert backend.io.delete_files([]) == []


def test_delete_empty_dir_removes_only_empty_directories(backend: Backend) -> None:
    backend.put("p/full/data-1.parquet", b"d")
    backend.make_empty_dir("p/empty")
    backend.make_empty_dir("p/nested/inner")  # not empty: it holds a directory

    assert backend.io.delete_empty_dir(backend.path("p/full")) is False
    assert backend.read("p/full/data-1.parquet") == b"d"
    assert backend.io.delete_empty_dir(backend.path("p/nested")) is False
    assert backend.io.is_dir(backend.path("p/nested/inner"))
    assert backend.io.delete_empty_dir(backend.path("p/missing")) is False

    assert backend.io.delete_empty_dir(backend.path("p/empty")) is True
    assert not backend.io.exists(backend.path("p/empty"))
    assert _names(backend.io.list_dir(backend.path("p"))) == {"full": True, "nested": True}


def test_delete_empty_dir_of_a_file_is_refused(backend: Backend) -> None:
    backend.put("p/file", b"f")
    assert backend.io.delete_empty_dir(backend.path("p/file")) is False
    assert backend.read("p/file") == b"f"


def test_delete_tree_removes_everything_below(backend: Backend) -> None:
    backend.put("t/branch/branch-x/snapshot/snapshot-1", b"1")
    backend.put("t/branch/branch-x/schema/schema-0", b"0")
    backend.make_empty_dir("t/branch/branch-x/tag")
    backend.put("t/branch/branch-xy/snapshot/snapshot-1", b"sibling")

    backend.io.delete_tree(backend.path("t/branch/branch-x"))

    assert not backend.io.exists(backend.path("t/branch/branch-x"))
    assert backend.read("t/branch/branch-xy/snapshot/snapshot-1") == b"sibling"
    assert _names(backend.io.list_dir(backend.path("t/branch"))) == {"branch-xy": True}


# -- local only --------------------------------------------------------------------------------
def test_write_new_has_exactly_one_winner_among_racing_writers(tmp_path: Path) -> None:
    from tablekeeper.core.storage import FileIO

    io = FileIO.for_uri(str(tmp_path))
    target = str(tmp_path / "snapshot-9")
    outcomes: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def attempt(i: int) -> None:
        start.wait()
        try:
            io.write_new(target, f"writer-{i}")
            result = f"won:{i}"
        except FileExistsError:
            result = "lost"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    winners = [o for o in outcomes if o.startswith("won")]
    assert len(winners) == 1 and outcomes.count("lost") == 7
    assert (tmp_path / "snapshot-9").read_text() == f"writer-{winners[0].split(':')[1]}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snapshot-9"]


def test_local_paths_accept_file_uris(tmp_path: Path) -> None:
    from tablekeeper.core.storage import FileIO

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a").write_bytes(b"abc")
    io = FileIO.for_uri(f"file://{tmp_path}")
    assert io.is_local
    assert io.read_bytes(f"file://{tmp_path}/d/a") == b"abc"
    assert io.stat(f"file:{tmp_path}/d").is_dir
    assert io.stat(f"file://{tmp_path}/d/a").size == 3
    assert [s.name for s in io.list_dir(f"file://{tmp_path}/d")] == ["a"]
    assert io.normalize(f"file://{tmp_path}/d") == f"{tmp_path}/d"


def test_batch_constant_is_the_s3_limit() -> None:
    assert rails.DELETE_BATCH_MAX == 1000
    assert basename("s3://b/k/x/") == "x"


def test_delete_files_refuses_paths_that_name_a_directory(backend: Backend) -> None:
    backend.put("d/a", b"a")
    [result] = backend.io.delete_files([backend.path("d/a") + "/"])
    assert result.outcome == DeleteOutcome.FAILED
    assert backend.read("d/a") == b"a"
