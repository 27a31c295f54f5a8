"""Every destructive command with a window on local disk: what it removed is in the table's trash,
and ``undo`` brings the table back, every view reading as before (pypaimon), also with a writer's
commit in between; a chain undone newest first gives the original table; bad input exits 2 and
changes nothing."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tablekeeper.cli.main import main as cli_main
from tests.maintenance.helpers import IDENT, backdate_tree, dir_listing, plant, reload, rows, table_root, views, write

FAR = "2099-01-01T00:00:00"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    capsys.readouterr()
    code = cli_main([*args, "-o", "json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def table_files(wh: str) -> dict[str, tuple[int, int]]:
    """The table's own files (the trash and the lease area left out), names to sizes and mtimes."""
    return {k: v for k, v in dir_listing(table_root(wh)).items()
            if not k.startswith(".tablekeeper") and not k.endswith("/")}


COMMANDS: dict[str, list[str]] = {
    "expire": ["expire", IDENT, "--retain-min", "1", "--time-retained", "0 ms", "--now", FAR],
    "expire-changelog": ["expire-changelog", IDENT, "--now", FAR],
    "clean-orphans": ["clean-orphans", IDENT, "--older-than", "1 h"],
    "tag delete": ["tag", "delete", IDENT, "t3", "--force"],
    "branch drop": ["branch", "drop", IDENT, "b1"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_run_with_a_window_is_undone_and_every_view_reads_as_before(
        command: str, mixed: str, capsys: pytest.CaptureFixture[str]) -> None:
    root = table_root(mixed)
    orphan = plant(os.path.join(root, "dt=a", "bucket-0", "data-orphan.parquet"), b"orphan bytes")
    backdate_tree(root, 3 * 3600)
    before, files = views(mixed), table_files(mixed)
    code, done, err = cli(capsys, *COMMANDS[command], "-w", mixed, "--keep-deleted", "7 d")
    assert code == 0, err
    if command == "expire-changelog":  # nothing of this table is a long-lived changelog
        assert "trash" not in done
        return
    run = done["trash"]["run"]
    assert done["trash"]["moved_files"] > 0
    assert table_files(mixed) != files
    if command == "clean-orphans":
        assert not os.path.exists(orphan)
        assert os.path.exists(os.path.join(root, ".tablekeeper", "trash", run, "files", "dt=a", "bucket-0",
                                           "data-orphan.parquet"))
    # a writer commits between the run and the undo
    write(reload(mixed), rows("z", 500))
    after_write = views(mixed)
    code, undone, err = cli(capsys, "undo", IDENT, run, "-w", mixed)
    assert code == 0, err
    assert undone["restored"] == done["trash"]["moved_files"]
    restored = views(mixed)
    new = set(restored) - set(before)
    for key, value in before.items():
        if key.endswith("@latest") and key.startswith("main"):
            continue  # the writer's commit moved main's latest
        assert restored[key] == value, key
    assert restored["main@latest"] == after_write["main@latest"]
    assert all(k.startswith("main@snapshot-") for k in new) and len(new) == 1
    now = table_files(mixed)
    for name, (size, mtime) in files.items():
        if name.endswith(("EARLIEST", "LATEST")):
            continue
        assert now[name] == (size, mtime), name  # the same bytes, the same file (a rename keeps its mtime)


def test_the_trash_is_never_an_orphan_candidate(mixed: str, capsys: pytest.CaptureFixture[str]) -> None:
    root = table_root(mixed)
    plant(os.path.join(root, "dt=a", "bucket-0", "data-orphan.parquet"))
    backdate_tree(root, 3 * 3600)
    code, done, _ = cli(capsys, *COMMANDS["expire"], "-w", mixed, "--keep-deleted", "1 d")
    assert code == 0
    backdate_tree(root, 3 * 86400)  # the trash is old enough for any threshold
    code, plan, _ = cli(capsys, "clean-orphans", IDENT, "-w", mixed, "--older-than", "1 h", "--dry-run")
    assert code == 0
    trash_files = [p for p in dir_listing(root) if p.startswith(".tablekeeper/trash/") and not p.endswith("/")]
    assert trash_files
    assert plan["total_files"] == 1, plan  # only the planted orphan
    kept = {p: v for p, v in dir_listing(root).items() if p.startswith(".tablekeeper/trash/")}
    code, cleaned, err = cli(capsys, "clean-orphans", IDENT, "-w", mixed, "--older-than", "1 h", "--keep-deleted", "1 d")
    assert code == 0, err
    assert cleaned["result"]["deleted"] == {"data": 1}, cleaned
    after = dir_listing(root)
    assert all(after.get(p) == v for p, v in kept.items())  # the earlier run's trash is untouched
    assert [p for p in after if p.startswith(f".tablekeeper/trash/{cleaned['trash']['run']}/files/")
            and not p.endswith("/")] == [f".tablekeeper/trash/{cleaned['trash']['run']}/files/dt=a/bucket-0/data-orphan.parquet"]


def test_a_chain_undone_newest_first_gives_the_original_table(mixed: str, capsys: pytest.CaptureFixture[str]) -> None:
    root = table_root(mixed)
    plant(os.path.join(root, "dt=b", "bucket-0", "data-orphan.parquet"))
    backdate_tree(root, 3 * 3600)
    before, files = views(mixed), table_files(mixed)
    runs = []
    for command in ("tag delete", "expire", "clean-orphans"):
        code, done, err = cli(capsys, *COMMANDS[command], "-w", mixed, "--keep-deleted", "7 d")
        assert code == 0, err
        runs.append(done["trash"]["run"])
    assert views(mixed) != before
    # the oldest first is refused, naming the run to undo first; nothing changes
    listing = dir_listing(root)
    code, error, err = cli(capsys, "undo", IDENT, runs[0], "-w", mixed)
    assert code == 2 and runs[2] in err and error["error"]
    assert dir_listing(root) == listing
    for run in reversed(runs):
        code, _, err = cli(capsys, "undo", IDENT, run, "-w", mixed)
        assert code == 0, err
    assert views(mixed) == before
    now = table_files(mixed)
    assert {k: v for k, v in now.items() if not k.endswith("EARLIEST")} == \
        {k: v for k, v in files.items() if not k.endswith("EARLIEST")}
    code, listed, _ = cli(capsys, "trash", "list", IDENT, "-w", mixed)
    assert [r["state"] for r in listed["runs"]] == ["undone"] * 3


def test_bad_input_exits_2_and_changes_nothing(mixed: str, capsys: pytest.CaptureFixture[str]) -> None:
    root = table_root(mixed)
    code, done, _ = cli(capsys, *COMMANDS["tag delete"], "-w", mixed, "--keep-deleted", "7 d")
    run = done["trash"]["run"]
    listing = dir_listing(root)
    code, _, err = cli(capsys, "undo", IDENT, "20990101T000000000Z-expire-abcdef", "-w", mixed)
    assert code == 2 and "no trash run" in err and dir_listing(root) == listing
    # a file of the run's place now holds other bytes: refused, nothing restored
    tag = os.path.join(root, "tag", "tag-t3")
    with open(tag, "w") as f:
        f.write("{}")
    listing = dir_listing(root)
    code, _, err = cli(capsys, "undo", IDENT, run, "-w", mixed)
    assert code == 2 and "other bytes" in err and dir_listing(root) == listing
    os.unlink(tag)
    # purged: gone for good, and said so
    code, purged, err = cli(capsys, "trash", "purge", IDENT, "-w", mixed, "--older-than", "0 s")
    assert code == 0, err
    assert purged["purged_runs"] == [run] and purged["purged_files"] == done["trash"]["moved_files"]
    listing = dir_listing(root)
    code, _, err = cli(capsys, "undo", IDENT, run, "-w", mixed)
    assert code == 2 and "purged" in err and dir_listing(root) == listing
    code, _, err = cli(capsys, *COMMANDS["expire"], "-w", mixed, "--keep-deleted", "0 s")
    assert code == 2 and "--keep-deleted" in err and dir_listing(root) == listing
    code, _, err = cli(capsys, "expire-partitions", IDENT, "-w", mixed, "--expiration-time", "1 d",
                       "--keep-deleted", "1 d")
    assert code == 2 and "expire-partitions deletes no file" in err and dir_listing(root) == listing


def test_the_window_comes_from_the_flag_else_the_table_option() -> None:
    from datetime import timedelta

    from tablekeeper.core import errors
    from tablekeeper.core.safety import trash

    assert trash.keep_window(None, {}) is None
    assert trash.keep_window(None, {"trash.keep": "3 d"}) == timedelta(days=3)
    assert trash.keep_window("2 h", {"trash.keep": "3 d"}) == timedelta(hours=2)
    with pytest.raises(errors.InvalidInputError, match="trash.keep"):
        trash.keep_window(None, {"trash.keep": "0 s"})


def test_expire_changelog_with_a_window_is_undone(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.maintenance.helpers import append_table, handle

    wh = str(tmp_path / "wh")
    t = append_table(wh, options={"snapshot.num-retained.min": "1", "changelog.num-retained.min": "2",
                                  "snapshot.time-retained": "0 ms"})
    for i in range(6):
        write(t, rows("a", 10 * i))
    code, _, err = cli(capsys, "expire", IDENT, "-w", wh, "--now", FAR)  # leaves long-lived changelog-N files
    assert code == 0, err
    assert handle(wh).changelog_ids() == [1, 2, 3, 4, 5]
    before, files = views(wh), table_files(wh)
    code, done, err = cli(capsys, "expire-changelog", IDENT, "-w", wh, "--now", FAR, "--keep-deleted", "1 d")
    assert code == 0, err
    assert done["result"]["deleted"]["changelog-meta"] == 4 and handle(wh).changelog_ids() == [5]
    assert done["trash"]["moved_files"] == sum(done["result"]["deleted"].values())
    code, undone, err = cli(capsys, "undo", IDENT, done["trash"]["run"], "-w", wh)
    assert code == 0, err
    assert handle(wh).changelog_ids() == [1, 2, 3, 4, 5] and "changelog/EARLIEST=1" in undone["hints"]
    assert views(wh) == before
    assert {k: v for k, v in table_files(wh).items() if not k.endswith("EARLIEST")} == \
        {k: v for k, v in files.items() if not k.endswith("EARLIEST")}
