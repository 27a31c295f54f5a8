"""Fixtures for the reconcile tests: the demo warehouse (eight days of back-dated commits into
sales.orders and sales.events, two planted orphans), built once per session and copied per test
with mtimes preserved."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tablekeeper.cli import demo

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, datetime]]:
    root = tmp_path_factory.mktemp("demo-template")
    built_at = datetime.now(UTC)
    demo.build_history(str(root / ".tablekeeper-demo"), built_at)
    yield root / ".tablekeeper-demo", built_at


@pytest.fixture
def demo_wh(demo_template: tuple[Path, datetime], tmp_path: Path) -> Path:
    """A fresh copy of the demo warehouse at ``tmp_path/.tablekeeper-demo``."""
    src, _ = demo_template
    dst = tmp_path / ".tablekeeper-demo"
    shutil.copytree(src, dst, copy_function=shutil.copy2)
    return dst


@pytest.fixture
def examples() -> Path:
    return EXAMPLES
