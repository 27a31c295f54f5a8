"""``--engine spark`` where PySpark is not installed (``scripts/bootstrap`` leaves the spark extra
out unless asked): one line naming the extra to install, exit 2, the table untouched (no lease
taken, nothing planned)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tablekeeper.cli.main import main
from tests.support import paimon as P


@pytest.mark.parametrize("command", ["expire", "clean-orphans"])
def test_engine_spark_without_pyspark_is_bad_input(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    P.build_history(str(tmp_path), commits=3)
    listing = P.dir_listing(str(tmp_path))
    monkeypatch.setitem(sys.modules, "pyspark", None)  # Python's own "not importable" marker
    code = main([command, "-w", str(tmp_path), "db.orders", "--engine", "spark"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == ["error: --engine spark needs PySpark, which is not installed",
                                "  fix: install the spark extra: bash scripts/bootstrap spark "
                                "(or pip install 'tablekeeper[spark]')"]
    assert P.dir_listing(str(tmp_path)) == listing
