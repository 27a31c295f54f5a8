"""Fixtures of the trash suite: the maintenance suite's mixed table, one fresh copy per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.maintenance.helpers import build_mixed, copy_tree


@pytest.fixture(scope="module")
def mixed_template(tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("mixed") / "wh")
    build_mixed(wh)
    return wh


@pytest.fixture
def mixed(mixed_template: str, tmp_path: Path) -> str:
    return copy_tree(mixed_template, tmp_path / "wh")
