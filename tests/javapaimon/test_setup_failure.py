"""Issue 13 point 1: when the Java Paimon judge cannot be set up, the tier skips with one line,
and under ``CI=true`` the same failure fails the tests instead. Not marked ``javapaimon``: it
needs no Java (the setup script is replaced by one that fails), so it runs in every suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import javapaimon as J


@pytest.fixture
def failing_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "javapaimon-setup"
    script.write_text("echo 'javapaimon-setup: Maven could not resolve paimon-bundle 9.9.9' >&2\nexit 1\n")
    monkeypatch.setattr(J, "SETUP", script)


def test_outside_ci_a_failed_setup_skips_with_one_line(failing_setup: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as info:
        J.classpath_or_skip("9.9.9")
    reason = str(info.value)
    assert "\n" not in reason and "Java Paimon 9.9.9 unavailable" in reason and "could not resolve" in reason


def test_under_ci_a_failed_setup_is_a_test_failure(failing_setup: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="Java Paimon 9.9.9 unavailable"):
        J.classpath_or_skip("9.9.9")
