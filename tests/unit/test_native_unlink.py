"""tablekeeper.core.storage.native_unlink: the native batch unlink (``_fs_native``) gives exactly
the outcomes of the ``os.unlink`` loop it replaces: per path the same errno, OSError subclass and
message; through ``FileIO.delete_files`` the same results (missing, directories, a non-directory
parent, names it hands to the loop); through the executor the same counts, bytes, failures and
request counts; with its helper threads too; and without the module built."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core.plans import execution
from tablekeeper.core.plans import plan as plans
from tablekeeper.core.storage import DeleteOutcome, FileIO
from tablekeeper.core.storage import native_unlink as nu

if os.environ.get("CI") == "true":
    assert nu.native_built(), "the native unlink was not built (scripts/bootstrap: pip install -e .)"
needs_native = pytest.mark.skipif(not nu.native_built(), reason="the native unlink is not built here (no C compiler)")


@pytest.fixture
def python_loop() -> Iterator[Callable[[bool], None]]:
    """``use(False)`` forces the Python loop, ``use(True)`` the native module; restored after."""

    def use(native: bool) -> None:
        nu._enabled = native

    yield use
    nu._enabled = None


def _tree(root: Path) -> list[str]:
    """Files in several directories and every odd case a plan can hold, as raw paths."""
    for d in range(3):
        (root / f"d{d}").mkdir()
        for i in range(40):
            (root / f"d{d}" / f"f{i}").write_bytes(b"x" * i)
    (root / "dir").mkdir()
    (root / "dir" / "inside").write_bytes(b"y")
    (root / "link-to-dir").symlink_to(root / "dir")
    (root / "plain").write_bytes(b"z")
    (root / "dangling").symlink_to(root / "nowhere")
    odd = ["gone", "dir", "link-to-dir", "plain/child", "plain", "dangling", "d0/f3", "x" * 300, "n\u00e9e"]
    (root / "n\u00e9e").write_bytes(b"")
    paths = [str(root / f"d{d}" / f"f{i}") for d in range(3) for i in range(40)]
    return paths[:50] + [str(root / o) for o in odd] + paths[50:]  # d0/f3 twice: missing the second time


def _outcomes(failed: list[tuple[int, OSError]], root: str = "") -> list[tuple[int, type, int | None, str]]:
    return [(i, type(e), e.errno, str(e).replace(root, "R") if root else str(e)) for i, e in failed]


def _remaining(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir() or any(p.iterdir()))


@needs_native
@pytest.mark.parametrize("threads, slow_ns", [(1, None), (4, 0), (4, None)])
def test_native_unlinks_give_the_python_loops_outcomes(tmp_path: Path, python_loop: Callable[[bool], None],
                                                       threads: int, slow_ns: int | None) -> None:
    outcomes, left = [], []
    for native in (False, True):
        root = tmp_path / str(native)
        root.mkdir()
        raws = _tree(root)
        python_loop(native)
        outcomes.append(_outcomes(nu.unlink_all(raws, threads, slow_ns=slow_ns), str(root)))
        left.append(_remaining(root))
    python, native_ = outcomes
    assert native_ == python
    assert {o[1] for o in python} >= {FileNotFoundError, IsADirectoryError, NotADirectoryError, OSError}
    assert left[0] == left[1] == ["dir", "dir/inside"]


@needs_native
def test_many_files_on_helper_threads_all_go_and_failures_keep_their_index(tmp_path: Path,
                                                                          python_loop: Callable[[bool], None]) -> None:
    python_loop(True)
    raws = []
    for d in range(8):
        (tmp_path / f"d{d}").mkdir()
        for i in range(120):
            (tmp_path / f"d{d}" / f"f{i}").write_bytes(b"")
            raws.append(str(tmp_path / f"d{d}" / f"f{i}"))
    missing = {7, 640, 959}
    for i in missing:
        os.unlink(raws[i])
    failed = nu.unlink_all(raws, 4, slow_ns=0)  # helpers from the first window on
    assert [(i, type(e)) for i, e in failed] == [(i, FileNotFoundError) for i in sorted(missing)]
    assert all(not any(p.iterdir()) for p in tmp_path.iterdir())


@needs_native
def test_paths_the_native_module_does_not_take_go_through_the_loop(tmp_path: Path,
                                                                   python_loop: Callable[[bool], None]) -> None:
    python_loop(True)
    surrogate = os.fsdecode(str(tmp_path).encode() + b"/raw-\xff")  # not UTF-8: surrogateescape
    with open(os.fsencode(surrogate), "wb"):
        pass
    (tmp_path / "before").write_bytes(b"")
    (tmp_path / "after").write_bytes(b"")
    raws = [str(tmp_path / "before"), surrogate, str(tmp_path / "after"), str(tmp_path / "gone")]
    assert _outcomes(nu.unlink_all(raws, 2)) == [(3, FileNotFoundError, 2, f"[Errno 2] No such file or directory: "
                                                                            f"{raws[3]!r}")]
    assert not any(tmp_path.iterdir())
    # a NUL: os.unlink's ValueError, with the paths before it unlinked and none after it
    for name in ("a", "b"):
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(ValueError, match="embedded null"):
        nu.unlink_all([str(tmp_path / "a"), str(tmp_path / "x\0y"), str(tmp_path / "b")], 2)
    assert [p.name for p in tmp_path.iterdir()] == ["b"]


def test_without_the_module_the_python_loop_serves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nu, "_NATIVE", None)
    monkeypatch.setattr(nu, "_enabled", None)
    assert not nu.native_usable()
    raws = _tree(tmp_path)
    failed = _outcomes(nu.unlink_all(raws, 4))
    assert [o[1] for o in failed] == [FileNotFoundError, IsADirectoryError, NotADirectoryError, FileNotFoundError,
                                      OSError]
    assert _remaining(tmp_path) == ["dir", "dir/inside"]


def _delete_results(root: Path) -> list[tuple[str, DeleteOutcome, str | None]]:
    io = FileIO.for_uri(str(root))
    return [(r.path, r.outcome, r.error) for r in io.delete_files(_tree(root))]


@needs_native
def test_delete_files_results_are_equal_with_and_without_the_module(tmp_path: Path,
                                                                    python_loop: Callable[[bool], None]) -> None:
    results = []
    for native in (False, True):
        python_loop(native)
        (tmp_path / str(native)).mkdir()
        results.append([(p.replace(f"/{native}/", "/R/"), o, e and e.replace(f"/{native}/", "/R/"))
                        for p, o, e in _delete_results(tmp_path / str(native))])
    assert results[0] == results[1]
    outcomes = [o for _, o, _ in results[0]]
    assert outcomes.count(DeleteOutcome.MISSING) == 2 and outcomes.count(DeleteOutcome.FAILED) == 3
    assert ("is a directory: never deleted") in [e for _, _, e in results[0]]


def _plan(root: Path, repeated: bool = True) -> plans.Plan:
    """Every odd case; ``repeated``: d0/f3 twice, with two sizes (the last one counts)."""
    raws = _tree(root)
    data = [plans.PlannedFile(p, plans.FileKind.DATA, None if i == 60 else i) for i, p in enumerate(raws)]
    if not repeated:
        data = [f for i, f in enumerate(data) if not f.path.endswith("/d0/f3") or i < 50]
    meta = [plans.PlannedFile(str(root / "m" / f"manifest-{i}"), plans.FileKind.MANIFEST, 3) for i in range(5)]
    (root / "m").mkdir()
    for f in meta[1:]:
        Path(f.path).write_bytes(b"m")
    return plans.Plan("t", "db.t", (plans.DeleteStep(plans.FileKind.DATA, tuple(data)),
                                    plans.DeleteStep(plans.FileKind.MANIFEST, tuple(meta))))


class _Wrapped(FileIO):
    """``delete_files`` overridden: the executor takes its result-per-file path (the old one)."""

    def delete_files(self, paths: Any, *, tell_missing: bool = True) -> Any:
        return super().delete_files(list(paths), tell_missing=tell_missing)


@needs_native
@pytest.mark.parametrize("batch_size, repeated", [(None, True), (7, True), (None, False)])
def test_the_executor_counts_the_same_with_and_without_the_module(tmp_path: Path, python_loop: Callable[[bool], None],
                                                                  batch_size: int | None, repeated: bool) -> None:
    seen = []
    for how in ("python", "native", "per-file results"):
        python_loop(how == "native")
        root = tmp_path / how
        root.mkdir()
        io = FileIO.for_uri(str(root))
        if how == "per-file results":
            io = _Wrapped(io.scheme, io.fs)
        calls: list[tuple[str, int, int]] = []
        plan = _plan(root, repeated)
        # a file the plan could not size is sized by a stat before it is deleted
        stat = {f.path: os.path.getsize(f.path) for f in plan.files if f.size is None and os.path.isfile(f.path)}
        result = execution.execute(plan, io, batch_size=batch_size,
                                   progress=lambda k, d, t, calls=calls: calls.append((k, d, t)))
        failed = [(r.path.replace(str(root), "R"), r.outcome, (r.error or "").replace(str(root), "R"))
                  for r in result.failed]
        # the bytes rule, computed here: each deleted path once, at its last planned size
        last = {f.path: f.size if f.size is not None else stat.get(f.path, 0) for f in plan.files
                if f.kind is plans.FileKind.DATA}
        kept = {str(root / n) for n in ("gone", "dir", "plain/child", "x" * 300)}
        assert result.deleted_bytes["data"] == sum(size for path, size in last.items() if path not in kept)
        seen.append((json.dumps({**result.as_dict(), "failed": []}, sort_keys=True), failed, calls[-1],
                     io.requests.counts.snapshot().get("delete"), _remaining(root), len(plan.files)))
    assert seen[0] == seen[1] == seen[2]
    summary = json.loads(seen[0][0])
    assert summary["deleted"] == {"data": 124, "manifest": 4}
    assert summary["already_gone"] == {"data": 2 if repeated else 1, "manifest": 1}
    assert [f[1] for f in seen[0][1]] == [DeleteOutcome.FAILED] * 3
    assert seen[0][2] == ("manifest", 5, 5)
    assert seen[0][3] == seen[0][5] == (134 if repeated else 133)  # one unlink request per file


def test_a_wrapped_delete_files_still_sees_every_batch(tmp_path: Path) -> None:
    """A subclass overriding ``delete_files`` (tests, instrumented stores) keeps being called."""
    calls: list[int] = []

    class Counting(FileIO):
        def delete_files(self, paths: Any, *, tell_missing: bool = True) -> Any:
            paths = list(paths)
            calls.append(len(paths))
            return super().delete_files(paths, tell_missing=tell_missing)

    base = FileIO.for_uri(str(tmp_path))
    io = Counting(base.scheme, base.fs)
    result = execution.execute(_plan(tmp_path), io, batch_size=50)
    assert calls == [50, 50, 29, 5] and result.deleted["data"] == 124


def _unprivileged(fn: Callable[[], Any]) -> Any:
    """``fn()`` in a forked child running as ``nobody`` when we are root (root passes directory
    permission checks, so EACCES needs another user); its JSON result."""
    if os.geteuid() != 0:
        return fn()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            nobody = pwd.getpwnam("nobody")
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            os.write(write, json.dumps(fn()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        out = f.read()
    os.waitpid(pid, 0)
    return json.loads(out)


@needs_native
def test_a_read_only_directory_gives_eacces_both_ways(python_loop: Callable[[bool], None]) -> None:
    base = tempfile.mkdtemp(prefix="tk-unlink-")
    try:
        os.chmod(base, 0o755)
        for name in ("ro-py", "ro-native"):
            os.mkdir(f"{base}/{name}")
            for f in ("a", "b"):
                Path(f"{base}/{name}/{f}").write_bytes(b"")
            os.chmod(f"{base}/{name}", 0o555)

        def both() -> list[Any]:
            out = []
            for native in (False, True):
                python_loop(native)
                d = f"{base}/ro-{'native' if native else 'py'}"
                io = FileIO.for_uri(d)
                out.append([(r.outcome.value, (r.error or "").replace(d, "D"))
                            for r in io.delete_files([f"{d}/a", f"{d}/gone", f"{d}/b"])])
            return out

        python, native = _unprivileged(both)
        assert python == native
        assert python[0] == ["failed", "PermissionError: [Errno 13] Permission denied: 'D/a'"]
        assert python[1] == ["missing", ""]
        for name in ("ro-py", "ro-native"):
            assert sorted(os.listdir(f"{base}/{name}")) == ["a", "b"]
    finally:
        for name in ("ro-py", "ro-native"):
            if os.path.isdir(f"{base}/{name}"):
                os.chmod(f"{base}/{name}", 0o755)
        shutil.rmtree(base)


def test_file_uris_are_unlinked_as_their_paths(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))
    for name in ("a", "b"):
        (tmp_path / name).write_bytes(b"")
    paths = [f"file://{tmp_path}/a", str(tmp_path / "b"), f"file:{tmp_path}/gone"]
    assert [(r.path, r.outcome) for r in io.delete_files(paths)] == [
        (paths[0], DeleteOutcome.DELETED), (paths[1], DeleteOutcome.DELETED), (paths[2], DeleteOutcome.MISSING)]
    assert not any(tmp_path.iterdir())

