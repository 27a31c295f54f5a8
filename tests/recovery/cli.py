"""Running the CLI as a user would, for the bad-day tests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tablekeeper.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``tablekeeper ARGS``."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def ok(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    """The JSON document of ``tablekeeper ARGS -o json``; fails the test on a non-zero exit."""
    code, out, err = run(capsys, *args, "-o", "json")
    assert code == 0, err + out
    return json.loads(out)
