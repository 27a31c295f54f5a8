"""``FileIO.one_view``: inside one decision a file is read, a directory listed and an existence
asked once; a write ends the view's answers (counted on local disk, one request per call)."""

from __future__ import annotations

from pathlib import Path

from tablekeeper.core.storage import FileIO


def _total(io: FileIO) -> int:
    return io.requests.counts.snapshot()["total"]


def test_repeats_inside_a_view_cost_nothing(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "snapshot-1").write_bytes(b"one")
    with io.one_view():
        before = _total(io)
        assert io.read_bytes(str(tmp_path / "d" / "snapshot-1")) == b"one"
        assert [s.path.rsplit("/", 1)[-1] for s in io.list_dir(str(tmp_path / "d"))] == ["snapshot-1"]
        first = _total(io) - before
        assert first == 2
        (tmp_path / "d" / "snapshot-1").write_bytes(b"changed behind the view")
        assert io.read_bytes(str(tmp_path / "d" / "snapshot-1")) == b"one"  # the decision's moment
        assert io.list_dir(str(tmp_path / "d"))
        # existence answered by the parent's listing, a name it lacks is missing without a request
        assert io.exists(str(tmp_path / "d" / "snapshot-1")) and not io.file_exists(str(tmp_path / "d" / "snapshot-2"))
        try:
            io.read_bytes(str(tmp_path / "d" / "snapshot-2"))
            raise AssertionError("read a file the view's listing lacks")
        except FileNotFoundError:
            pass
        assert _total(io) - before == first
    assert io.read_bytes(str(tmp_path / "d" / "snapshot-1")) == b"changed behind the view"  # outside: fresh


def test_a_write_inside_a_view_starts_its_answers_over(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))
    target = str(tmp_path / "hint")
    with io.one_view():
        assert not io.exists(target)
        io.write_new(target, b"7")
        assert io.exists(target) and io.read_bytes(target) == b"7"
        io.overwrite(target, b"8")
        assert io.read_bytes(target) == b"8"
        io.delete_files([target])
        assert not io.exists(target)


def test_a_write_elsewhere_keeps_the_other_answers(tmp_path: Path) -> None:
    """The lease's heartbeat rewrites its own file during a long decision: the snapshots the
    decision read are not read again for it."""
    io = FileIO.for_uri(str(tmp_path))
    (tmp_path / "snapshot").mkdir()
    (tmp_path / "snapshot" / "snapshot-1").write_bytes(b"one")
    (tmp_path / ".tablekeeper").mkdir()
    snapshot, lease = str(tmp_path / "snapshot" / "snapshot-1"), str(tmp_path / ".tablekeeper" / "lease")
    with io.one_view():
        assert io.read_bytes(snapshot) == b"one"
        io.overwrite(lease, b"renewed")
        before = _total(io)
        assert io.read_bytes(snapshot) == b"one" and _total(io) == before
        assert io.read_bytes(lease) == b"renewed"


def test_a_view_belongs_to_the_thread_that_opened_it(tmp_path: Path) -> None:
    """The operator shares one FileIO per warehouse among its threads: a decision's view on one
    thread must not answer another thread's reads (its verify re-check reads the table as it is now)."""
    import threading

    io = FileIO.for_uri(str(tmp_path))
    path = tmp_path / "snapshot-1"
    path.write_bytes(b"one")
    seen: list[bytes] = []
    with io.one_view():
        assert io.read_bytes(str(path)) == b"one"
        path.write_bytes(b"two")
        other = threading.Thread(target=lambda: seen.append(io.read_bytes(str(path))))
        other.start()
        other.join()
        assert io.read_bytes(str(path)) == b"one"  # this thread's decision keeps its moment
    assert seen == [b"two"]
