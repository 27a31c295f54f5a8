"""The cost of a trash window against deleting, on local disk: expire and clean-orphans of a
synthetic table (``bench/_synth.py``), each run twice on fresh copies in this process, once
deleting and once with a window (``trash.keeping``), then the window's run undone. Prints wall
time and storage requests by kind of each, and the ratios window / delete and undo / delete.
Timings are printed, never asserted.

    .venv/bin/python bench/trash.py [--files 20000] [--snapshots 200] [--orphans 5000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _synth  # noqa: E402
from orphans import age_table, spec_for  # noqa: E402

from tablekeeper.core.paimon.table import open_table  # noqa: E402
from tablekeeper.core.plans import execution
from tablekeeper.core.reclaim.expire import commit, planning, retention
from tablekeeper.core.reclaim.orphans import planning as orphans
from tablekeeper.core.safety import trash  # noqa: E402

IDENT = _synth.IDENTIFIER
FAR_MS = 4_102_444_800_000  # 2100-01-01: every snapshot is old


def _expire(t: Any) -> None:
    config = planning.expire_config(retention.from_options(t.options(), retention.RetentionFlags(
        retain_min=10, time_retained=timedelta(0), expire_limit=1_000_000)), t.options())
    commit.run_expire(t, config, FAR_MS, lambda p: execution.execute(p, t.file_io))


def _orphans(t: Any) -> None:
    config = orphans.OrphanConfig(orphans.resolve_older_than(FAR_MS, older_than_age=timedelta(hours=1)))
    execution.execute(orphans.plan_orphan_clean(t, config), t.file_io)


def _run(warehouse: str, operation: Any, window: bool) -> tuple[float, dict[str, int], float, int]:
    t = open_table(warehouse, IDENT)
    before = t.file_io.requests.counts.snapshot()
    t0 = time.perf_counter()
    with trash.keeping(t.file_io, t.root, "bench", timedelta(days=1) if window else None) as run:
        operation(t)
    seconds = time.perf_counter() - t0
    counted = {k: v - before.get(k, 0) for k, v in t.file_io.requests.counts.snapshot().items()}
    undo_s, moved = 0.0, 0
    if run is not None and run.started:
        moved = run.moved
        t1 = time.perf_counter()
        trash.undo(t.file_io, t.root, run.run_id)
        undo_s = time.perf_counter() - t1
    return seconds, counted, undo_s, moved


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=20_000)
    p.add_argument("--snapshots", type=int, default=200)
    p.add_argument("--orphans", type=int, default=5_000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        template = f"{tmp}/template"
        built = _synth.build_table(template, spec_for(args.snapshots, args.files, args.orphans, 20, "pypaimon"))
        age_table(built, 2 * 86_400)
        print(f"table: {built.data_files} data files, {built.manifest_files} manifests, "
              f"{len(built.snapshot_ids)} snapshots, {args.orphans} orphans")
        for name, operation in (("expire", _expire), ("clean-orphans", _orphans)):
            rows = {}
            for window in (False, True):
                copy = f"{tmp}/{name}-{window}"
                _synth.copy_tree(template, copy)
                rows[window] = _run(copy, operation, window)
            (d_s, d_req, _, _), (w_s, w_req, u_s, moved) = rows[False], rows[True]
            print(f"{name}: delete {d_s:.2f} s, window {w_s:.2f} s (x{w_s / d_s:.2f}), undo {u_s:.2f} s "
                  f"(x{u_s / d_s:.2f} of the delete), {moved} files moved")
            print(f"  requests delete: {d_req.get('total', sum(d_req.values()))} {dict(sorted(d_req.items()))}")
            print(f"  requests window: {w_req.get('total', sum(w_req.values()))} {dict(sorted(w_req.items()))}")


if __name__ == "__main__":
    main()
