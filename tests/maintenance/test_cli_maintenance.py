"""The maintenance commands of the CLI: expire, expire-changelog, expire-partitions and
clean-orphans. ``--dry-run`` changes nothing; ``-o json`` prints counts and bytes per kind;
options come from the table when flags are absent; bad input exits 2 having changed nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.cli.main import main as cli_main
from tests.maintenance.helpers import (
    IDENT,
    append_table,
    backdate_tree,
    check_retained,
    dir_listing,
    handle,
    overwrite,
    plant,
    read_view,
    rows,
    table_root,
    views,
    write,
)

FAR = "2099-01-01T00:00:00"  # --now for plans that must see every snapshot as old


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    capsys.readouterr()
    code = cli_main(list(args))
    out, err = capsys.readouterr()
    try:
        payload = json.loads(out) if "-o" in args or "--output" in args else out
    except json.JSONDecodeError:
        payload = out
    return code, payload, err


def sizes_on_disk(paths: list[str]) -> int:
    return sum(os.path.getsize(p) for p in paths)


# -- expire ------------------------------------------------------------------------------------


def test_expire_dry_run_changes_nothing_and_reports_the_plan(mixed: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = dir_listing(mixed)
    code, summary, _ = cli(capsys, "expire", "-w", mixed, IDENT, "--retain-min", "1", "--time-retained", "0 ms",
                           "--dry-run", "-o", "json")
    assert code == 0
    assert dir_listing(mixed) == before
    assert summary["dry_run"] is True and summary["operation"] == "expire-snapshots"
    assert summary["files"] == {"data": 3, "manifest": summary["files"]["manifest"], "snapshot": 6}
    assert summary["total_files"] == sum(summary["files"].values())
    assert set(summary["bytes"]) == set(summary["files"])
    assert summary["writes"] == [f"{table_root(mixed)}/snapshot/EARLIEST"]
    assert summary["expired_snapshots"] == 6 and summary["end_exclusive"] == 7
    # the same command without --dry-run deletes what the dry run announced
    vs = views(mixed)
    code, done, _ = cli(capsys, "expire", "-w", mixed, IDENT, "--retain-min", "1", "--time-retained", "0 ms",
                        "-o", "json")
    assert code == 0 and done["dry_run"] is False
    assert done["result"]["deleted"] == summary["files"] and done["result"]["failed_count"] == 0
    assert handle(mixed).snapshot_ids() == [7]
    check_retained(mixed, vs, gone={f"main@snapshot-{i}" for i in range(1, 7)})


def test_expire_text_output(mixed: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "expire", "-w", mixed, IDENT, "--retain-min", "1", "--time-retained", "0 ms",
                       "--dry-run")
    assert code == 0 and "(dry run)" in out and "would delete 6 snapshot file(s)" in out


def test_expire_json_reports_the_bytes_of_each_kind(mixed: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, summary, _ = cli(capsys, "expire", "-w", mixed, IDENT, "--retain-min", "1", "--time-retained", "0 ms",
                           "--dry-run", "-o", "json")
    from tablekeeper.core.reclaim.expire import planning

    plan = planning.plan_expire(handle(mixed), planning.ExpireConfig(retain_min=1, time_retained=__import__(
        "datetime").timedelta(0)), 2**42)
    by_kind: dict[str, list[str]] = {}
    for f in plan.files:
        by_kind.setdefault(f.kind.value, []).append(f.path)
    assert summary["bytes"] == {k: sizes_on_disk(v) for k, v in by_kind.items()}


def test_expire_takes_options_from_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh, partitioned=False, options={"snapshot.num-retained.min": "3",
                                                     "snapshot.time-retained": "1 ms",
                                                     "snapshot.expire.limit": "2"})
    for i in range(8):
        write(t, rows("x", 10 * i))
    code, summary, _ = cli(capsys, "expire", "-w", wh, IDENT, "-o", "json")
    assert code == 0 and summary["stop_reason"] == "snapshot.expire.limit=2"
    assert handle(wh).snapshot_ids() == list(range(3, 9))
    code, _, _ = cli(capsys, "expire", "-w", wh, IDENT, "--max-deletes", "10", "-o", "json")
    assert code == 0 and handle(wh).snapshot_ids() == [6, 7, 8]  # retain 3 from the table options
    code, _, _ = cli(capsys, "expire", "-w", wh, IDENT, "--retain-min", "1", "--max-deletes", "10", "-o", "json")
    assert code == 0 and handle(wh).snapshot_ids() == [8]
    # the table's time retention is honoured when no flag is given (an hour is not over yet)
    t2 = append_table(wh, "db.young", partitioned=False, options={"snapshot.num-retained.min": "1"})
    for i in range(3):
        write(t2, rows("x", i))
    code, summary, _ = cli(capsys, "expire", "-w", wh, "db.young", "-o", "json")
    assert code == 0 and summary["total_files"] == 0 and handle(wh, "db.young").snapshot_ids() == [1, 2, 3]
    code, summary, _ = cli(capsys, "expire", "-w", wh, "db.young", "--now", FAR, "-o", "json")
    assert code == 0 and handle(wh, "db.young").snapshot_ids() == [3]


def test_expire_a_branch_by_table_path(mixed: str, capsys: pytest.CaptureFixture[str]) -> None:
    vs = views(mixed)
    code, summary, _ = cli(capsys, "expire", table_root(mixed), "--branch", "b1", "--retain-min", "1",
                           "--time-retained", "0 ms", "-o", "json")
    assert code == 0 and summary["branch"] == "b1"
    assert handle(mixed, branch="b1").snapshot_ids() == [6]
    check_retained(mixed, vs, gone={"b1@snapshot-3", "b1@snapshot-4", "b1@snapshot-5"})


# -- expire-changelog ----------------------------------------------------------------------------

DECOUPLED = {"snapshot.num-retained.min": "1", "changelog.num-retained.min": "2", "snapshot.time-retained": "0 ms"}


@pytest.fixture
def decoupled(tmp_path: Path) -> str:
    wh = str(tmp_path / "wh")
    t = append_table(wh, options=DECOUPLED)
    for i in range(6):
        write(t, rows("a", 10 * i))
    h = handle(wh)
    from tablekeeper.core.plans import execution
    from tablekeeper.core.reclaim.expire import planning

    execution.execute(planning.plan_expire(h, planning.config_from_options(h.options()), 2**42), h.file_io)
    assert h.changelog_ids() == [1, 2, 3, 4, 5]
    return wh


def test_expire_changelog_dry_run_then_run(decoupled: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = dir_listing(decoupled)
    code, summary, _ = cli(capsys, "expire-changelog", "-w", decoupled, IDENT, "--dry-run", "--now", FAR,
                           "-o", "json")
    assert code == 0 and dir_listing(decoupled) == before
    assert summary["operation"] == "expire-changelog" and summary["dry_run"] is True
    # table options: changelog.num-retained.min=2 of latest 6 -> changelog-1..4 expire (5 stays)
    assert summary["expired_changelogs"] == 4 and summary["files"]["changelog-meta"] == 4
    assert summary["writes"] == [f"{table_root(decoupled)}/changelog/EARLIEST"]
    vs = views(decoupled)
    code, done, _ = cli(capsys, "expire-changelog", "-w", decoupled, IDENT, "--now", FAR, "-o", "json")
    assert code == 0 and done["result"]["deleted"]["changelog-meta"] == 4
    assert handle(decoupled).changelog_ids() == [5]
    check_retained(decoupled, vs)


def test_expire_changelog_on_a_table_without_changelogs(mixed: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = dir_listing(mixed)
    code, summary, _ = cli(capsys, "expire-changelog", "-w", mixed, IDENT, "-o", "json")
    assert code == 0 and summary["total_files"] == 0 and dir_listing(mixed) == before


# -- expire-partitions ------------------------------------------------------------------------------


@pytest.fixture
def daily(tmp_path: Path) -> str:
    wh = str(tmp_path / "wh")
    t = append_table(wh, options={"partition.expiration-time": "7 d",
                                  "partition.timestamp-formatter": "yyyyMMdd"})
    for i, dt in enumerate(["20260101", "20260102", "20260119", "bogus"]):
        write(t, rows(dt, 10 * i))
    return wh


def test_expire_partitions_dry_run_then_run_with_table_options(daily: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    before = dir_listing(daily)
    now = "2026-01-20T12:00:00"
    code, summary, _ = cli(capsys, "expire-partitions", "-w", daily, IDENT, "--zone-known", "--now", now,
                           "--dry-run", "-o", "json")
    assert code == 0 and dir_listing(daily) == before
    assert summary["dry_run"] is True and summary["dropped"] is None and summary["result"] is None
    assert summary["expired"] == ["dt=20260101", "dt=20260102"] and summary["partition_files"] == 2
    assert summary["unparseable"] == ["dt=bogus"] and summary["live_partitions"] == 4
    code, done, _ = cli(capsys, "expire-partitions", "-w", daily, IDENT, "--zone-known", "--now", now, "-o", "json")
    assert code == 0 and done["dropped"] == 2 and done["dry_run"] is False
    assert handle(daily).latest_snapshot().commit_kind == "OVERWRITE"  # type: ignore[union-attr]
    assert {dict(r)["id"] for r in read_view(daily, IDENT)} == {20, 21, 30, 31}


def test_expire_partitions_flags_override_table_options(daily: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, summary, _ = cli(capsys, "expire-partitions", "-w", daily, IDENT, "--zone-known", "--now",
                           "2026-01-20T12:00:00", "--expiration-time", "30 d", "--max-expires", "1", "--dry-run",
                           "-o", "json")
    assert code == 0 and summary["expired"] == []
    code, summary, _ = cli(capsys, "expire-partitions", "-w", daily, IDENT, "--zone-known", "--now",
                           "2026-01-20T12:00:00", "--max-expires", "1", "--dry-run", "-o", "json")
    assert code == 0 and summary["expired"] == ["dt=20260101"]
    code, out, _ = cli(capsys, "expire-partitions", "-w", daily, IDENT, "--zone-known", "--now",
                       "2026-01-20T12:00:00", "--dry-run")
    assert code == 0 and "would drop 2 partition(s)" in out and "kept (value does not parse): dt=bogus" in out


def test_expire_partitions_without_expiration_time_is_refused(mixed: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = dir_listing(mixed)
    code, _, err = cli(capsys, "expire-partitions", "-w", mixed, IDENT)
    assert code == 2 and "partition expiration is off" in err
    assert dir_listing(mixed) == before


# -- clean-orphans -------------------------------------------------------------------------------------


def test_clean_orphans_dry_run_then_run(mixed: str, capsys: pytest.CaptureFixture[str]) -> None:
    root = table_root(mixed)
    planted = [plant(f"{root}/dt=a/bucket-0/data-0a0a-orphan-0.parquet", b"x" * 100),
               plant(f"{root}/manifest/manifest-0a0a-orphan-0", b"x" * 10),
               plant(f"{root}/dt=zz/bucket-0/data-0a0a-orphan-1.parquet", b"x" * 7)]
    backdate_tree(mixed, 3 * 86400)
    before = dir_listing(mixed)
    code, summary, _ = cli(capsys, "clean-orphans", "-w", mixed, IDENT, "--dry-run", "-o", "json")
    assert code == 0 and dir_listing(mixed) == before
    assert summary["files"] == {"data": 2, "manifest": 1} and summary["bytes"] == {"data": 107, "manifest": 10}
    assert summary["total_bytes"] == 117 and summary["dry_run"] is True
    vs = views(mixed)
    code, done, _ = cli(capsys, "clean-orphans", "-w", mixed, IDENT, "-o", "json")
    assert code == 0
    assert done["result"]["deleted"] == {"data": 2, "manifest": 1}
    assert done["result"]["deleted_bytes"] == {"data": 107, "manifest": 10}
    assert not any(os.path.exists(p) for p in planted) and not os.path.exists(f"{root}/dt=zz")
    check_retained(mixed, vs)


def test_clean_orphans_older_than_forms(mixed: str, capsys: pytest.CaptureFixture[str]) -> None:
    root = table_root(mixed)
    two_days = plant(f"{root}/dt=a/bucket-0/data-0a0a-orphan-0.parquet", age_s=2 * 86400)
    two_hours = plant(f"{root}/dt=a/bucket-0/data-0a0a-orphan-1.parquet", age_s=2 * 3600)
    code, summary, _ = cli(capsys, "clean-orphans", "-w", mixed, IDENT, "--dry-run", "-o", "json")
    assert code == 0 and summary["total_files"] == 1  # default: older than 1 day
    code, summary, _ = cli(capsys, "clean-orphans", "-w", mixed, IDENT, "--older-than", "1 h", "--dry-run", "-o",
                           "json")
    assert code == 0 and summary["total_files"] == 2
    code, summary, _ = cli(capsys, "clean-orphans", "-w", mixed, IDENT, "--older-than", "2000-01-01T00:00:00",
                           "--dry-run", "-o", "json")
    assert code == 0 and summary["total_files"] == 0
    code, summary, _ = cli(capsys, "clean-orphans", "-w", mixed, IDENT, "--older-than", "10 min", "--force",
                           "-o", "json")
    assert code == 0 and summary["result"]["deleted"] == {"data": 2}
    assert not os.path.exists(two_days) and not os.path.exists(two_hours)


@pytest.mark.parametrize("processes", ["1", "2"])
def test_clean_orphans_plan_processes(mixed: str, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch, processes: str) -> None:
    """--plan-processes 2 shares the manifest scan with a forked helper (on a table of any size
    here) and plans the same as one process."""
    import uuid

    from tablekeeper.core.reclaim.orphans import references

    monkeypatch.setattr(references, "MIN_NAMES_TO_FORK", 0)
    root = table_root(mixed)
    planted = plant(f"{root}/dt=a/bucket-0/data-{uuid.uuid4()}-0.parquet", b"x" * 5)
    backdate_tree(mixed, 3 * 86400)
    before = dir_listing(mixed)
    code, _summary, err = cli(capsys, "clean-orphans", "-w", mixed, IDENT, "--plan-processes", "0")
    assert code == 2 and "--plan-processes" in err
    assert dir_listing(mixed) == before  # bad input changes nothing
    vs = views(mixed)
    code, summary, _ = cli(capsys, "clean-orphans", "-w", mixed, IDENT, "--plan-processes", processes, "-o", "json")
    assert code == 0 and summary["result"]["deleted"] == {"data": 1}
    assert not os.path.exists(planted)
    check_retained(mixed, vs)


# -- bad input: exit 2, nothing changed ------------------------------------------------------------------


BAD = [
    ["expire", "-w", "{wh}", "db.nope"],
    ["expire", "-w", "{wh}", "orders"],
    ["expire", "orders"],
    ["expire", "-w", "{wh}", IDENT, "--branch", "nope"],
    ["expire", "-w", "{wh}", IDENT, "--retain-min", "abc"],
    ["expire", "-w", "{wh}", IDENT, "--retain-min", "0"],
    ["expire", "-w", "{wh}", IDENT, "--retain-min", "3", "--retain-max", "2"],
    ["expire", "-w", "{wh}", IDENT, "--time-retained", "5 parsecs"],
    ["expire", "-w", "{wh}", IDENT, "--time-retained", "-1 h"],
    ["expire", "-w", "{wh}", IDENT, "--now", "yesterday"],
    ["expire", "-w", "{wh}", IDENT, "--option", "novalue"],
    ["expire", "-w", "{wh}", IDENT, "--output", "xml"],
    ["expire-changelog", "-w", "{wh}", "db.nope"],
    ["expire-partitions", "-w", "{wh}", IDENT, "--expiration-time", "7 d", "--strategy", "bogus"],
    ["expire-partitions", "-w", "{wh}", IDENT, "--expiration-time", "soon"],
    ["expire-partitions", "-w", "{wh}", IDENT, "--expiration-time", "7 d", "--timestamp-formatter", "yyyy-ww"],
    ["expire-partitions", "-w", "{wh}", IDENT, "--expiration-time", "7 d", "--max-expires", "0"],
    ["clean-orphans", "-w", "{wh}", IDENT, "--older-than", "10 min"],
    ["clean-orphans", "-w", "{wh}", IDENT, "--older-than", "2999-01-01T00:00:00"],
    ["clean-orphans", "-w", "{wh}", IDENT, "--older-than", "2999-01-01T00:00:00", "--force"],
    ["clean-orphans", "-w", "{wh}", IDENT, "--older-than", "0 s", "--force"],
    ["clean-orphans", "-w", "{wh}", IDENT, "--older-than", "a while"],
    ["clean-orphans", "-w", "{wh}", "db.nope"],
]


@pytest.mark.parametrize("args", BAD, ids=lambda a: " ".join(a[:1] + a[3:]))
def test_bad_input_exits_2_and_changes_nothing(mixed: str, args: list[str],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    root = table_root(mixed)
    plant(f"{root}/dt=a/bucket-0/data-0a0a-orphan-0.parquet", age_s=3 * 86400)
    before = dir_listing(mixed)
    code = cli_main([a.replace("{wh}", mixed) for a in args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.strip()
    assert dir_listing(mixed) == before


def test_broken_protection_set_exits_2_and_changes_nothing(mixed: str, capsys: pytest.CaptureFixture[str]) -> None:
    t = handle(mixed)
    os.unlink(f"{table_root(mixed)}/manifest/{t.tag('t3').snapshot.base_manifest_list}")
    before = dir_listing(mixed)
    for args in (["expire", "-w", mixed, IDENT, "--retain-min", "1", "--time-retained", "0 ms"],
                 ["clean-orphans", "-w", mixed, IDENT, "--older-than", "2 d"]):
        assert cli_main(args) == 2
        assert "fix:" in capsys.readouterr().err
    assert dir_listing(mixed) == before


def test_environment_warehouse(mixed: str, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLEKEEPER_WAREHOUSE", mixed)
    code, summary, _ = cli(capsys, "expire", IDENT, "--retain-min", "1", "--time-retained", "0 ms", "--dry-run",
                           "-o", "json")
    assert code == 0 and summary["expired_snapshots"] == 6


def test_expire_after_an_overwrite_through_the_cli_keeps_old_tags(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh)
    write(t, rows("a", 0))
    t.create_tag("keep")
    overwrite(t, rows("a", 10), {"dt": "a"})
    overwrite(t, rows("a", 20), {"dt": "a"})
    vs = views(wh)
    assert cli_main(["expire", "-w", wh, IDENT, "--retain-min", "1", "--time-retained", "0 ms"]) == 0
    check_retained(wh, vs, gone={"main@snapshot-1", "main@snapshot-2"})
    assert read_view(wh, IDENT, options={"scan.tag-name": "keep"}) == vs["main@tag-keep"]
