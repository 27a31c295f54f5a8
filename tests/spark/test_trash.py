"""``--engine spark --keep-deleted``: the Spark job's delete stage moves core's planned files into
the command's trash run (core/safety/trash, the same move as in process), and ``undo`` brings every view
back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.maintenance.helpers import IDENT, backdate_tree, build_mixed, now_ms, plant, table_root
from tests.support.json_output import cli_json
from tests.support.paimon import snapshot_views

DAY_MS = 86_400_000


def test_spark_runs_move_into_the_trash_and_are_undone(spark: Any, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path / "wh")
    build_mixed(wh)
    root = table_root(wh)
    plant(os.path.join(root, "dt=a", "bucket-0", "data-orphan-0.parquet"), b"orphan")
    backdate_tree(root, 3 * 3600)
    before = snapshot_views(wh, IDENT)
    runs = []
    for args in (["expire", IDENT, "--retain-min", "1", "--time-retained", "0 ms", "--now", str(now_ms() + 1000)],
                 ["clean-orphans", IDENT, "--now", str(now_ms() + 2 * DAY_MS)]):
        done = cli_json(capsys, *args, "-w", wh, "--engine", "spark", "--keep-deleted", "7 d")
        assert done["trash"]["moved_files"] == sum(done["result"]["deleted"].values()) > 0, done
        runs.append(done["trash"]["run"])
    assert os.path.exists(os.path.join(root, ".tablekeeper", "trash", runs[1], "files", "dt=a", "bucket-0",
                                       "data-orphan-0.parquet"))
    for run in reversed(runs):
        undone = cli_json(capsys, "undo", IDENT, run, "-w", wh)
        assert undone["restored"] > 0
    assert snapshot_views(wh, IDENT) == before
