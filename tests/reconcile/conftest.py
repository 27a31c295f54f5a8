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


#: The examples' cluster warehouse, and what the reconcile tests point it at instead: the demo
#: warehouse, as a path relative to the directory it is in (``tmp_path``), which plan/apply resolve.
CLUSTER_WAREHOUSE = "warehouse: /data/warehouse"
LOCAL_WAREHOUSE = "warehouse: .tablekeeper-demo"


@pytest.fixture(scope="session")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/ with the catalog pointed at ``.tablekeeper-demo`` (relative)."""
    out = tmp_path_factory.mktemp("examples")
    for src in EXAMPLES.glob("*.yaml"):
        (out / src.name).write_text(src.read_text().replace(CLUSTER_WAREHOUSE, LOCAL_WAREHOUSE))
    assert CLUSTER_WAREHOUSE in (EXAMPLES / "01-catalog-and-table.yaml").read_text()
    return out
