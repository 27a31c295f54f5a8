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
