"""Bad command lines: every one exits 2 with one error (``error: ...`` and its ``fix:``, or click's
``Error:`` line for a malformed option) and changes nothing in the warehouse (names, sizes and
mtimes of every file and directory). One table serves every case, since none may change it."""

from __future__ import annotations

import pytest

from tablekeeper.cli.main import main
from tests.support import paimon as P

T = "db.orders"
W = "@WH@"  # replaced by the warehouse

CASES = [
    # tables and warehouses
    ("show", "-w", W, "db.missing"), ("show", "-w", W, "no_dot"), ("show", "-w", W, "a.b.c"),
    ("show", "-w", W, "../etc.passwd"), ("tag", "list", T), ("show", "-w", W, T, "--option", "no-equals-sign"),
    ("show", "-w", W, T, "-b", "nope"), ("show", "-w", W, T, "--output", "yaml"),
    # tags
    ("tag", "create", "-w", W, T, "a/b"), ("tag", "create", "-w", W, T, "42"), ("tag", "create", "-w", W, T, ""),
    ("tag", "create", "-w", W, T, "x", "--snapshot", "99"), ("tag", "create", "-w", W, T, "x", "--snapshot", "0"),
    ("tag", "create", "-w", W, T, "x", "--snapshot", "two"),
    ("tag", "create", "-w", W, T, "x", "--time-retained", "1 week"),
    ("tag", "create", "-w", W, T, "x", "--time-retained", "-5 min"),
    ("tag", "create", "-w", W, T, "x", "--timestamp", "not a time"),
    ("tag", "create", "-w", W, T, "x", "--snapshot", "1", "--timestamp", "1"),
    ("tag", "delete", "-w", W, T, "nope"), ("tag", "rename", "-w", W, T, "nope", "x"),
    ("tag", "replace", "-w", W, T, "nope"), ("tag", "create", "-w", W, T, "x", "--branch", "nope"),
    # branches
    ("branch", "create", "-w", W, T, "main", "--from-tag", "t1"), ("branch", "create", "-w", W, T, "a.b"),
    ("branch", "create", "-w", W, T, "nb", "--from-tag", "nope"),
    ("branch", "create", "-w", W, T, "nb", "--from-snapshot", "99"),
    ("branch", "create", "-w", W, T, "nb", "--from-tag", "t1", "--from-snapshot", "1"),
    ("branch", "drop", "-w", W, T, "nope"), ("branch", "drop", "-w", W, T, "main"),
    ("branch", "fast-forward", "-w", W, T, "nope"), ("branch", "rename", "-w", W, T, "nope", "x"),
    ("branch", "replace-main", "-w", W, T, "nope"),
    # maintenance
    ("expire", "-w", W, T, "--retain-min", "0"), ("expire", "-w", W, T, "--retain-min", "5", "--retain-max", "2"),
    ("expire", "-w", W, T, "--time-retained", "forever"), ("expire", "-w", W, T, "--max-deletes", "x"),
    ("expire", "-w", W, T, "--engine", "flink"), ("expire", "-w", W, T, "--wait", "soon"),
    ("expire", "-w", W, T, "--max-requests-per-second", "0"),
    ("clean-orphans", "-w", W, T, "--older-than", "yesterday"), ("clean-orphans", "-w", W, T, "--older-than", "5 min"),
    ("clean-orphans", "-w", W, T, "--plan-processes", "0"),
    ("clean-orphans", "-w", W, T, "--listing", "/nonexistent/manifest.json"),
    ("expire-partitions", "-w", W, T), ("expire-partitions", "-w", W, T, "--expiration-time", "a while"),
    ("expire-partitions", "-w", W, T, "--strategy", "random"),
    # manifests
    ("plan", "-f", "/nonexistent/manifests"), ("apply", "-f", "/nonexistent/manifests"), ("plan",),
    # commands and options that do not exist
    ("retag", "-w", W, T), ("tag", "create", "-w", W, T, "x", "--snapshots", "1"),
]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("cli-bad") / "wh")
    P.build_history(wh, T, commits=3)
    assert main(["tag", "create", "-w", wh, T, "t1", "--snapshot", "1"]) == 0
    return wh


@pytest.mark.parametrize("args", CASES, ids=[" ".join(a).replace(W, "WH") for a in CASES])
def test_a_bad_command_line_exits_2_with_one_error_and_changes_nothing(
        warehouse: str, args: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    before = P.dir_listing(warehouse)
    code = main([warehouse if a == W else a for a in args])
    out, err = capsys.readouterr()
    assert code == 2, (args, out, err)
    lines = err.strip().splitlines()
    ours = [line for line in lines if line.startswith("error: ")]
    clicks = [line for line in lines if line.startswith("Error: ")]
    assert len(ours) + len(clicks) == 1, err
    if ours:  # our errors: the problem on one line, the fix on the next
        assert lines[0] == ours[0] and len(lines) == 2 and lines[1].startswith("  fix: "), err
    assert "Traceback" not in out + err
    assert P.dir_listing(warehouse) == before


def test_there_are_at_least_25_cases() -> None:
    assert len(CASES) >= 25
