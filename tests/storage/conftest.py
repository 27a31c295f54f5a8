"""One behaviour suite, two stores: ``backend`` is a local directory or a moto S3 bucket.

Test setup writes and inspects files *around* ``FileIO`` (plain ``os``/``pathlib`` locally,
s3fs and moto's backend on S3), so the code under test never checks itself."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import s3fs

from tablekeeper.core.storage import FileIO, join
from tests.support import s3 as s3support


@dataclass
class Backend:
    name: str
    io: FileIO
    root: str  # local absolute path or s3://bucket/prefix
    fs: s3fs.S3FileSystem | None = None

    @property
    def is_s3(self) -> bool:
        return self.fs is not None

    def path(self, *parts: str) -> str:
        return join(self.root, *parts)

    def _s3_key(self, rel: str) -> tuple[str, str]:
        bucket, _, prefix = self.root[len("s3://"):].partition("/")
        return bucket, f"{prefix}/{rel}".lstrip("/") if prefix else rel

    def put(self, rel: str, data: bytes = b"x") -> str:
        if self.fs is not None:
            bucket, key = self._s3_key(rel)
            self.fs.pipe_file(f"{bucket}/{key}", data)
        else:
            target = Path(self.path(rel))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return self.path(rel)

    def read(self, rel: str) -> bytes:
        if self.fs is not None:
            bucket, key = self._s3_key(rel)
            return bytes(self.fs.cat_file(f"{bucket}/{key}"))
        return Path(self.path(rel)).read_bytes()

    def exists(self, rel: str) -> bool:
        if self.fs is not None:
            bucket, key = self._s3_key(rel)
            return bool(self.fs.exists(f"{bucket}/{key}"))
        return os.path.lexists(self.path(rel))

    def make_empty_dir(self, rel: str) -> str:
        """A directory with nothing in it: a real one locally, a marker object on S3."""
        if self.fs is not None:
            bucket, key = self._s3_key(rel)
            s3support.put_marker(self.fs, bucket, key)
        else:
            os.makedirs(self.path(rel), exist_ok=True)
        return self.path(rel)

    def set_mtime(self, rel: str, when: datetime) -> None:
        if self.fs is not None:
            bucket, key = self._s3_key(rel)
            s3support.set_mtime(bucket, key, when)
        else:
            ns = int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000
            os.utime(self.path(rel), ns=(ns, ns))

    def backdate(self, rel: str, age: timedelta) -> int:
        """Make ``rel`` ``age`` old; returns the expected mtime in epoch ms (whole seconds:
        S3 keeps LastModified to the second)."""
        when = (datetime.now(UTC) - age).replace(microsecond=0)
        self.set_mtime(rel, when)
        return int(when.timestamp()) * 1000


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "local":
        root = tmp_path / "root"
        root.mkdir()
        yield Backend("local", FileIO.for_uri(str(root)), str(root))
        return
    bucket = request.getfixturevalue("s3_bucket")
    fs = request.getfixturevalue("s3")
    io = request.getfixturevalue("s3_io")
    yield Backend("s3", io, f"s3://{bucket}/root", fs)


@pytest.fixture(scope="session")
def _s3_io_session(s3_endpoint: str) -> FileIO:
    return FileIO.for_uri("s3://lake", s3support.paimon_s3_options(s3_endpoint))


@pytest.fixture
def s3_io(s3_bucket: str, _s3_io_session: FileIO) -> FileIO:
    """A FileIO on the (freshly reset) moto bucket, built from Paimon-style options; the
    client is shared by the session."""
    return _s3_io_session
