"""The Java Paimon tier (marker ``javapaimon``): one JVM and one Java-written warehouse per Paimon
version and session; every test works on its own copy of that warehouse."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.javapaimon import streaming as S
from tests.javapaimon import warehouse as W
from tests.support import javapaimon as J


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``newest_paimon`` are judged on the newest Paimon only (to bound the tier's
    time): their older-version instances are deselected at collection, never skipped."""
    keep, drop = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        version = callspec.params.get("java") if callspec is not None else None
        older = version is not None and version != J.VERSIONS[0]
        (drop if older and item.get_closest_marker("newest_paimon") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session", params=J.VERSIONS, ids=lambda v: f"paimon-{v}")
def java(request: pytest.FixtureRequest) -> Iterator[J.JavaPaimon]:
    version: str = request.param
    driver = J.JavaPaimon(J.classpath_or_skip(version), version)
    try:
        yield driver
    finally:
        driver.close()


@pytest.fixture(scope="session")
def java_warehouse(java: J.JavaPaimon, tmp_path_factory: pytest.TempPathFactory) -> W.Built:
    """The warehouse Java Paimon wrote with every feature of issue 13 point 2 (built once)."""
    root = tmp_path_factory.mktemp(f"java-wh-{java.version}") / "wh"
    return W.build(java, str(root))


@pytest.fixture
def wh(java_warehouse: W.Built, tmp_path: Path) -> str:
    """A private copy of the Java-written warehouse (metadata and data are small: copying is cheap)."""
    return _private_copy(java_warehouse.root, tmp_path / "wh")


def _private_copy(root: str, target: Path) -> str:
    shutil.copytree(root, target, copy_function=shutil.copy2)
    return str(target)


@pytest.fixture(scope="session")
def java_streaming(java: J.JavaPaimon, tmp_path_factory: pytest.TempPathFactory) -> S.Built:
    """The tables streaming jobs leave behind (tests/javapaimon/streaming.py), built once."""
    root = tmp_path_factory.mktemp(f"java-stream-{java.version}") / "wh"
    return S.build(java, str(root))


@pytest.fixture
def swh(java_streaming: S.Built, tmp_path: Path) -> str:
    """A private copy of the streaming warehouse."""
    return _private_copy(java_streaming.root, tmp_path / "swh")
