"""One contract, every store: ``store`` is local disk, S3 (moto), OSS (moto through OSS's
S3-compatible path), HDFS (MiniDFSCluster), Azure (Azurite) or GCS (fake-gcs-server).

The FileIO under test is built from Paimon-style options (``FileIO.for_uri``). Test setup writes
and inspects files *around* it with each store's own fsspec client, built directly (not through
tablekeeper's option mapping), so the code under test never checks itself. Every test gets a
fresh root prefix.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec
import pytest

from tablekeeper.core.storage import FileIO, join
from tests.support import s3 as s3support
from tests.support import stores as storesupport

STORES = [
    "local",
    pytest.param("s3", marks=[pytest.mark.s3, pytest.mark.storage]),
    pytest.param("oss", marks=[pytest.mark.oss, pytest.mark.storage]),
    pytest.param("hdfs", marks=[pytest.mark.hdfs, pytest.mark.storage]),
    pytest.param("azure", marks=[pytest.mark.azure, pytest.mark.storage]),
    pytest.param("gcs", marks=[pytest.mark.gcs, pytest.mark.storage]),
]


@dataclass
class StoreUnderTest:
    name: str
    io: FileIO
    root: str  # URI (or local path) of this test's root
    fs: Any  # the store's own fsspec client
    raw_root: str  # ``root`` in that client's path syntax
    options: dict[str, str]

    def path(self, *parts: str) -> str:
        return join(self.root, *parts)

    def raw(self, rel: str) -> str:
        return join(self.raw_root, rel)

    def put(self, rel: str, data: bytes = b"x") -> str:
        if self.name == "local":
            target = Path(self.raw(rel))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        else:
            self.fs.pipe_file(self.raw(rel), data)
        return self.path(rel)

    def read(self, rel: str) -> bytes:
        return bytes(self.fs.cat_file(self.raw(rel)))

    def exists(self, rel: str) -> bool:
        self.fs.invalidate_cache()
        return bool(self.fs.exists(self.raw(rel)))

    def make_dir_with(self, rel: str) -> str:
        """A directory (prefix) that holds one file: a directory on every store."""
        self.put(f"{rel}/inside", b"i")
        return self.path(rel)


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreUnderTest]:
    name = request.param
    unique = uuid.uuid4().hex[:8]
    if name == "local":
        root = tmp_path / "root"
        root.mkdir()
        yield StoreUnderTest(name, FileIO.for_uri(str(root)), str(root), fsspec.filesystem("file"), str(root), {})
    elif name in ("s3", "oss"):
        bucket = request.getfixturevalue("s3_bucket")
        endpoint = request.getfixturevalue("s3_endpoint")
        options = (s3support.paimon_s3_options(endpoint) if name == "s3" else storesupport.oss_options(endpoint))
        yield StoreUnderTest(name, FileIO.for_uri(f"{name}://{bucket}", options), f"{name}://{bucket}/{unique}",
                             request.getfixturevalue("s3"), f"{bucket}/{unique}", options)
    elif name == "hdfs":
        server = request.getfixturevalue("hdfs_server")
        from fsspec.implementations.webhdfs import WebHDFS

        fs = WebHDFS(host="127.0.0.1", port=server.http_port, user="root", skip_instance_cache=True)
        options = storesupport.hdfs_options(server)
        yield StoreUnderTest(name, FileIO.for_uri(server.uri + "/", options), f"{server.uri}/{unique}", fs,
                             f"/{unique}", options)
    elif name == "azure":
        port = request.getfixturevalue("azurite_server")
        import adlfs

        fs = adlfs.AzureBlobFileSystem(connection_string=storesupport.azure_connection_string(port),
                                       skip_instance_cache=True)
        container = f"c{unique}"
        fs.mkdir(container)
        options = storesupport.azure_options(port)
        base = f"abfs://{container}@{storesupport.AZURITE_ACCOUNT}.dfs.core.windows.net"
        yield StoreUnderTest(name, FileIO.for_uri(base, options), f"{base}/root", fs, f"{container}/root", options)
    else:
        endpoint = request.getfixturevalue("gcs_server")
        import gcsfs

        fs = gcsfs.GCSFileSystem(endpoint_url=endpoint, token="anon", project="test", skip_instance_cache=True)
        bucket = f"b{unique}"
        fs.mkdir(bucket)
        options = storesupport.gcs_options(endpoint)
        yield StoreUnderTest(name, FileIO.for_uri(f"gs://{bucket}", options), f"gs://{bucket}/root", fs,
                             f"{bucket}/root", options)
