"""Fixtures shared by the maintenance suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.maintenance.helpers import build_mixed, copy_tree


@pytest.fixture(scope="module")
def mixed_template(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The ``build_mixed`` table, built once per test module; tests get copies (``mixed``)."""
    wh = str(tmp_path_factory.mktemp("mixed") / "wh")
    build_mixed(wh)
    return wh


@pytest.fixture
def mixed(mixed_template: str, tmp_path: Path) -> str:
    """A fresh copy of the mixed table in ``tmp_path / "wh"``."""
    return copy_tree(mixed_template, tmp_path / "wh")
