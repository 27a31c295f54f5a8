"""The CLI end to end on real pypaimon-written tables: output, JSON, dry runs, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tablekeeper.cli.main import main
from tests.support import paimon as P


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    P.build_history(str(tmp_path), commits=4)
    return str(tmp_path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_tag_lifecycle_json(warehouse: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = P.snapshot_views(warehouse, "db.orders")
    code, out, _ = run(capsys, "tag", "create", "-w", warehouse, "db.orders", "t1", "--snapshot", "2",
                       "--time-retained", "7 d", "-o", "json")
    created = json.loads(out)
    requests = created.pop("requests")  # storage requests by kind (issue 16): counted, not asserted exactly here
    assert requests["total"] == sum(v for k, v in requests.items() if k != "total") > 0
    assert code == 0 and {k: created[k] for k in ("action", "tag", "snapshot_id", "branch", "operation", "dry_run")} \
        == {"action": "created", "tag": "t1", "snapshot_id": 2, "branch": "main", "operation": "create-tag",
            "dry_run": False}
    assert created["writes"] == [f"{warehouse}/db.db/orders/tag/tag-t1"] and created["total_files"] == 0
    code, out, _ = run(capsys, "tag", "list", "-w", warehouse, "db.orders", "-o", "json")
    [row] = json.loads(out)
    assert row["tag_name"] == "t1" and row["snapshot_id"] == 2 and row["time_retained"] == "PT168H"
    after = P.snapshot_views(warehouse, "db.orders")
    assert after["main@tag-t1"] == before["main@snapshot-2"]
    assert {k: v for k, v in after.items() if k in before} == before


def test_errors_exit_2_and_change_nothing(warehouse: str, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "tag", "create", "-w", warehouse, "db.orders", "t1", "--snapshot", "2")
    listing = P.dir_listing(warehouse)
    for args in (
        ("tag", "create", "-w", warehouse, "db.orders", "t1", "--snapshot", "3"),
        ("tag", "create", "-w", warehouse, "db.orders", "a/b"),
        ("tag", "create", "-w", warehouse, "db.orders", "x", "--time-retained", "1 week"),
        ("tag", "delete", "-w", warehouse, "db.orders", "nope"),
        ("branch", "create", "-w", warehouse, "db.orders", "main", "--from-tag", "t1"),
        ("branch", "create", "-w", warehouse, "db.orders", "a.b", "--from-tag", "t1"),
        ("branch", "drop", "-w", warehouse, "db.orders", "nope"),
        ("show", "-w", warehouse, "db.missing"),
        ("tag", "list", "db.orders"),
    ):
        code, _, err = run(capsys, *args)
        assert code == 2, args
        assert err.startswith("error: "), err
        assert "fix:" in err
    assert P.dir_listing(warehouse) == listing


def test_dry_runs_change_nothing(warehouse: str, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "tag", "create", "-w", warehouse, "db.orders", "t1", "--snapshot", "2")
    run(capsys, "branch", "create", "-w", warehouse, "db.orders", "b1", "--from-tag", "t1")
    listing = P.dir_listing(warehouse)
    for args in (
        ("tag", "create", "-w", warehouse, "db.orders", "t2", "--dry-run"),
        ("tag", "delete", "-w", warehouse, "db.orders", "t1", "--force", "--dry-run"),
        ("tag", "rename", "-w", warehouse, "db.orders", "t1", "t9", "--force", "--dry-run"),
        ("tag", "replace", "-w", warehouse, "db.orders", "t1", "--force", "--dry-run"),
        ("branch", "create", "-w", warehouse, "db.orders", "b2", "--from-snapshot", "3", "--dry-run"),
        ("branch", "drop", "-w", warehouse, "db.orders", "b1", "--dry-run"),
        ("branch", "rename", "-w", warehouse, "db.orders", "b1", "b3", "--dry-run"),
        ("branch", "fast-forward", "-w", warehouse, "db.orders", "b1", "--dry-run"),
        ("branch", "replace-main", "-w", warehouse, "db.orders", "b1", "--backup", "old", "--dry-run"),
    ):
        code, out, err = run(capsys, *args)
        assert code == 0, (args, err)
        assert "would" in out, (args, out)
    assert P.dir_listing(warehouse) == listing


def test_show_draws_branches_and_tags(warehouse: str, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "tag", "create", "-w", warehouse, "db.orders", "t1", "--snapshot", "2")
    run(capsys, "branch", "create", "-w", warehouse, "db.orders", "b1", "--from-tag", "t1")
    P.write(P.branch_table(P.catalog(warehouse), "db.orders", "b1"), P.orders_rows("2026-01-09", 100, 2))
    code, out, _ = run(capsys, "show", "-w", warehouse, "db.orders")
    assert code == 0
    assert "branch b1 (from tag t1)" in out and "tags: t1" in out and "|/" in out
    code, out, _ = run(capsys, "show", "-w", warehouse, "db.orders", "-o", "json")
    data = json.loads(out)
    assert data["branches"][0]["fork_snapshot_id"] == 2
    assert [s["id"] for s in data["main"]["snapshots"]] == [4, 3, 2, 1]
    code, out, _ = run(capsys, "branch", "list", "-w", warehouse, "db.orders", "-o", "json")
    assert json.loads(out)[0]["from_tag"] == "t1"


def test_table_path_without_warehouse(warehouse: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "tag", "create", f"{warehouse}/db.db/orders", "t5", "-o", "json")
    assert code == 0 and json.loads(out)["snapshot_id"] == 4


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for word in ("tag", "branch", "show", "demo"):
        assert word in out
