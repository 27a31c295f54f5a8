"""Local deletes are one ``unlink`` per file (no stat first): outcomes stay per file, a
directory is refused and kept, a missing file is reported missing (storage contract)."""

from __future__ import annotations

from pathlib import Path

from tablekeeper.core.storage import DeleteOutcome, FileIO


def test_local_delete_outcomes(tmp_path: Path) -> None:
    io = FileIO.for_uri(str(tmp_path))
    (tmp_path / "f").write_bytes(b"x")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "inside").write_bytes(b"y")
    (tmp_path / "link").symlink_to(tmp_path / "d")
    paths = [str(tmp_path / n) for n in ("f", "gone", "d", "link")]
    results = io.delete_files(paths)
    assert [r.path for r in results] == paths
    assert [r.outcome for r in results] == [DeleteOutcome.DELETED, DeleteOutcome.MISSING, DeleteOutcome.FAILED,
                                             DeleteOutcome.DELETED]
    assert results[2].error == "is a directory: never deleted"
    assert (tmp_path / "d" / "inside").exists() and not (tmp_path / "link").exists()


def test_the_executor_deletes_local_files_in_one_thread_and_counts_as_before(tmp_path: Path) -> None:
    from tablekeeper.core.plans import execution
    from tablekeeper.core.plans import plan as plans

    io = FileIO.for_uri(str(tmp_path))
    assert execution.default_parallelism(io) == 1
    for i in range(600):
        (tmp_path / f"data-{i}").write_bytes(b"x" * i)
    (tmp_path / "dir").mkdir()
    data = [plans.PlannedFile(str(tmp_path / f"data-{i}"), plans.FileKind.DATA, i) for i in range(600)]
    odd = [plans.PlannedFile(str(tmp_path / "gone"), plans.FileKind.DATA, 7),
           plans.PlannedFile(str(tmp_path / "dir"), plans.FileKind.DATA, 9)]
    only_missing = [plans.PlannedFile(str(tmp_path / "gone-too"), plans.FileKind.MANIFEST, 5)]
    plan = plans.Plan("t", "db.t", (plans.DeleteStep(plans.FileKind.DATA, (*data[:300], *odd, *data[300:])),
                                    plans.DeleteStep(plans.FileKind.MANIFEST, tuple(only_missing))))
    before = io.requests.counts.snapshot().get("delete", 0)
    result = execution.execute(plan, io)
    assert dict(result.deleted) == {"data": 600}
    assert dict(result.deleted_bytes) == {"data": sum(range(600))}
    assert dict(result.missing) == {"data": 1, "manifest": 1}
    assert [(r.path, r.outcome) for r in result.failed] == [(str(tmp_path / "dir"), DeleteOutcome.FAILED)]
    assert result.order == ["delete:data", "delete:manifest"]
    assert io.requests.counts.snapshot()["delete"] - before == 603  # one unlink request per file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir"]
