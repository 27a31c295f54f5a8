"""A local FileIO works through ``os`` and makes its fsspec filesystem only when a caller asks
for it (the pypaimon bridge): commands on local tables never import fsspec (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablekeeper.core import errors
from tablekeeper.core.storage import FileIO


def test_local_fileio_makes_its_fsspec_filesystem_on_demand(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x")
    io = FileIO.for_uri(str(tmp_path))
    assert [e.name for e in io.scan_dir(str(tmp_path))] == ["a"] and io.read_bytes(str(tmp_path / "a")) == b"x"
    fs = io.fs  # made now, once
    assert fs is io.fs and "file" in fs.protocol
    assert [p.rsplit("/", 1)[-1] for p in fs.ls(str(tmp_path), detail=False)] == ["a"]


def test_a_remote_fileio_without_a_filesystem_is_refused() -> None:
    with pytest.raises(errors.InvalidInputError, match="no filesystem configured for s3://"):
        _ = FileIO("s3", None).fs
