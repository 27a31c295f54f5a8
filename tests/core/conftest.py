"""Fixtures shared by the tests of tablekeeper.core."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def wh(tmp_path: Path) -> str:
    """A warehouse path below ``tmp_path`` (not created: the first table write creates it)."""
    return str(tmp_path / "wh")
