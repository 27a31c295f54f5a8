"""When a catalog server cannot be set up, its tier skips with one line naming the missing piece,
and under ``CI=true`` the same failure fails the tests instead. Not marked with a catalog marker:
it needs no server (the setup script is replaced by one that fails), so it runs in every suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import catalogs as C


@pytest.fixture
def failing_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "setup"
    script.write_text("echo 'hms: mvn not found (Java 17 and Maven are needed)' >&2\n"
                      "echo 'catalogs setup: hms failed' >&2\nexit 1\n")
    monkeypatch.setattr(C, "SETUP", script)


def test_outside_ci_a_failed_setup_skips_with_one_line_naming_the_piece(
        failing_setup: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as info:
        C._setup("hms")
    reason = str(info.value)
    assert "\n" not in reason and "hms is not installed" in reason and "mvn not found" in reason
    assert "run scripts/catalogs/setup" in reason


def test_under_ci_a_failed_setup_is_a_test_failure(failing_setup: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="catalog tier cannot run under CI=true: catalogs tier: hms"):
        C._setup("hms")
