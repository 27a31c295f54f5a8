"""pytest plugin: the store tiers' servers on loopback, one per test session, started on first use.

- ``hdfs_server``: Hadoop's MiniDFSCluster (``scripts/stores/hdfs.sh`` installs it; WebHDFS on).
- ``azurite_server``: Azurite's blob service (``scripts/stores/azurite.sh``).
- ``gcs_server``: fake-gcs-server (``scripts/stores/fake-gcs.sh``; it honours
  ``ifGenerationMatch``, which gcp-storage-emulator ignores).
- OSS: no OSS emulator exists; ``oss://`` runs through OSS's S3-compatible path against the moto
  server of ``tests/support/s3.py``.

A server that cannot start fails the test under ``CI=true`` and skips it elsewhere, with a one-line
reason (:func:`unavailable`). Every server is stopped by its fixture, even when the session dies:
the Java launcher exits when its stdin closes.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = [
    "CACHE",
    "AZURITE_ACCOUNT",
    "AZURITE_KEY",
    "HdfsServer",
    "unavailable",
    "free_port",
    "hdfs_options",
    "azure_options",
    "gcs_options",
    "oss_options",
]

CACHE = Path(os.environ.get("TABLEKEEPER_CACHE", Path.home() / ".cache" / "tablekeeper"))
HADOOP_VERSION = os.environ.get("TABLEKEEPER_HADOOP_VERSION", "3.4.2")
AZURITE_VERSION = os.environ.get("TABLEKEEPER_AZURITE_VERSION", "3.35.0")
FAKE_GCS_VERSION = os.environ.get("TABLEKEEPER_FAKE_GCS_VERSION", "v1.56.1")
#: Azurite's well-known development account (public, documented by Microsoft).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
_START_TIMEOUT_S = 240.0


def unavailable(reason: str) -> None:
    """A store tier that cannot run: fail under CI=true, skip elsewhere (one line)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"store tier cannot start under CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = _START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}: {log.read_text(errors='replace')[-400:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"no answer on port {port} after {timeout:.0f} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


# -- HDFS ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HdfsServer:
    rpc_port: int
    http_port: int

    @property
    def uri(self) -> str:
        return f"hdfs://127.0.0.1:{self.rpc_port}"


def hdfs_options(server: HdfsServer) -> dict[str, str]:
    """Options a Paimon user writes: the NameNode's HTTP address (as in hdfs-site.xml)."""
    return {"dfs.namenode.http-address": f"127.0.0.1:{server.http_port}", "hadoop.user.name": "root"}


@pytest.fixture(scope="session")
def hdfs_server() -> Iterator[HdfsServer]:
    home = CACHE / "hdfs" / HADOOP_VERSION
    java = shutil.which("java")
    if java is None or not (home / "classes" / "MiniHdfs.class").exists():
        unavailable(f"HDFS tier: MiniDFSCluster not installed in {home} (run scripts/stores/setup)")
    base = Path(tempfile.mkdtemp(prefix="tk-minihdfs-"))
    log = base / "minihdfs.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [str(java), "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
             "-cp", f"{home / 'classes'}:{home / 'lib'}/*", "MiniHdfs", str(base / "data")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()  # blocks until the cluster is up (or the JVM dies)
        if not line.strip():
            unavailable(f"HDFS tier: MiniDFSCluster did not start: {log.read_text(errors='replace')[-300:]}")
        ports = json.loads(line)
        yield HdfsServer(int(ports["rpc_port"]), int(ports["http_port"]))
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _stop(proc)
        shutil.rmtree(base, ignore_errors=True)


# -- Azure -------------------------------------------------------------------------------------
def azure_connection_string(port: int) -> str:
    return (f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};")


def azure_options(port: int) -> dict[str, str]:
    return {"fs.azure.connection-string": azure_connection_string(port)}


@pytest.fixture(scope="session")
def azurite_server() -> Iterator[int]:
    binary = CACHE / "azurite" / AZURITE_VERSION / "node_modules" / ".bin" / "azurite-blob"
    if not binary.exists() or shutil.which("node") is None:
        unavailable(f"Azure tier: Azurite not installed at {binary} (run scripts/stores/setup)")
    base = Path(tempfile.mkdtemp(prefix="tk-azurite-"))
    port = free_port()
    log = base / "azurite.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(binary), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--silent", "--skipApiVersionCheck", "--loose", "--inMemoryPersistence"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=base)
    try:
        try:
            _wait_for_port(port, proc, log)
        except RuntimeError as e:
            unavailable(f"Azure tier: Azurite did not start: {e}")
        yield port
    finally:
        _stop(proc)
        shutil.rmtree(base, ignore_errors=True)


# -- GCS ---------------------------------------------------------------------------------------
def gcs_options(endpoint: str) -> dict[str, str]:
    return {"fs.gs.storage.root.url": endpoint, "fs.gs.auth.type": "UNAUTHENTICATED", "fs.gs.project.id": "test"}


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[str]:
    binary = CACHE / "fake-gcs" / FAKE_GCS_VERSION / "fake-gcs-server"
    if not binary.exists():
        unavailable(f"GCS tier: fake-gcs-server not built at {binary} (run scripts/stores/setup)")
    base = Path(tempfile.mkdtemp(prefix="tk-fakegcs-"))
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = base / "fake-gcs.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(binary), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port), "-backend", "memory",
             "-public-host", f"127.0.0.1:{port}", "-external-url", endpoint, "-log-level", "error"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        try:
            _wait_for_port(port, proc, log)
        except RuntimeError as e:
            unavailable(f"GCS tier: fake-gcs-server did not start: {e}")
        yield endpoint
    finally:
        _stop(proc)
        shutil.rmtree(base, ignore_errors=True)


# -- OSS ---------------------------------------------------------------------------------------
def oss_options(s3_endpoint: str) -> dict[str, str]:
    """Paimon's OSS options, pointed at moto (OSS's S3-compatible API; no OSS emulator exists)."""
    from tests.support import s3 as s3support

    return {"fs.oss.endpoint": s3_endpoint, "fs.oss.accessKeyId": s3support.ACCESS_KEY,
            "fs.oss.accessKeySecret": s3support.SECRET_KEY}
