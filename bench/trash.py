"""The cost of a trash window against deleting, per store: expire and clean-orphans of a
synthetic table (``bench/_synth.py``), each run twice on fresh copies in this process, once
deleting and once with a window (``trash.keeping``), then the window's run undone. Stores: local
disk (a rename per file), S3 (a moto server in this process: a server-side copy, then the batch
delete) and S3 with versioning Enabled (a HEAD for the version id, then the batch delete; undo
copies the version back). Prints wall time and storage requests by kind of each, and the ratios
window / delete and undo / delete. Timings are printed, never asserted.

    .venv/bin/python bench/trash.py [--files 20000] [--snapshots 200] [--orphans 5000]
                                    [--stores local,s3,s3-versioned] [--s3-files 2000]
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
from s3 import BUCKET, Moto  # noqa: E402

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


def _run(warehouse: str, operation: Any, window: bool,
         options: dict[str, str] | None = None) -> tuple[float, dict[str, int], float, int, dict[str, int]]:
    t = open_table(warehouse, IDENT, options=options)
    before = t.file_io.requests.counts.snapshot()
    t0 = time.perf_counter()
    with trash.keeping(t.file_io, t.root, "bench", timedelta(days=1) if window else None) as run:
        operation(t)
    seconds = time.perf_counter() - t0
    counted = {k: v - before.get(k, 0) for k, v in t.file_io.requests.counts.snapshot().items()}
    undo_s, moved, undo_req = 0.0, 0, {}
    if run is not None and run.started:
        moved = run.moved
        mark = t.file_io.requests.counts.snapshot()
        t1 = time.perf_counter()
        trash.undo(t.file_io, t.root, run.run_id)
        undo_s = time.perf_counter() - t1
        undo_req = {k: v - mark.get(k, 0) for k, v in t.file_io.requests.counts.snapshot().items() if v - mark.get(k, 0)}
    return seconds, counted, undo_s, moved, undo_req


def _copies(store: str, template: str, tmp: str, moto: Moto | None) -> tuple[Any, dict[str, str]]:
    """A function making a fresh copy of ``template`` on ``store`` (its warehouse URI), and the
    storage options to open it with."""
    if store == "local":
        def local(label: str) -> str:
            copy = f"{tmp}/{label}"
            _synth.copy_tree(template, copy)
            return copy
        return local, {}
    assert moto is not None
    options = {"s3.endpoint": moto.endpoint, "s3.access-key": "testing", "s3.secret-key": "testing",
               "s3.region": "us-east-1", "s3.path.style.access": "true"}

    def on_s3(label: str) -> str:
        moto.fresh_copy(template, label)
        if store == "s3-versioned":  # the objects uploaded before are versioned too (their null version)
            moto.backend().put_bucket_versioning(BUCKET, "Enabled")
            moto.fresh_copy_keep_bucket(template, label)
        return f"s3://{BUCKET}/{label}"
    return on_s3, options


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=20_000)
    p.add_argument("--snapshots", type=int, default=200)
    p.add_argument("--orphans", type=int, default=5_000)
    p.add_argument("--stores", default="local,s3,s3-versioned")
    p.add_argument("--s3-files", type=int, default=2_000, help="data files of the S3 table (moto is slow)")
    args = p.parse_args()
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    moto = Moto() if any(s != "local" for s in stores) else None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for store in stores:
                files = args.files if store == "local" else args.s3_files
                orphan_count = args.orphans if store == "local" else max(1, args.orphans * files // args.files)
                template = f"{tmp}/template-{files}"
                if not Path(template).exists():
                    built = _synth.build_table(template, spec_for(args.snapshots, files, orphan_count, 20, "pypaimon"))
                    age_table(built, 2 * 86_400)
                    print(f"table of {files}: {built.data_files} data files, {built.manifest_files} manifests, "
                          f"{len(built.snapshot_ids)} snapshots, {orphan_count} orphans")
                fresh, options = _copies(store, template, tmp, moto)
                print(f"\n{store}")
                for name, operation in (("expire", _expire), ("clean-orphans", _orphans)):
                    rows = {}
                    for window in (False, True):
                        rows[window] = _run(fresh(f"{store}-{name}-{window}"), operation, window, options)
                    (d_s, d_req, _, _, _), (w_s, w_req, u_s, moved, u_req) = rows[False], rows[True]
                    d_total, w_total = d_req.get("total", sum(d_req.values())), w_req.get("total", sum(w_req.values()))
                    print(f"  {name}: delete {d_s:.2f} s, window {w_s:.2f} s (x{w_s / d_s:.2f}), undo {u_s:.2f} s "
                          f"(x{u_s / d_s:.2f} of the delete), {moved} files moved")
                    print(f"    requests delete: {d_total} {dict(sorted(d_req.items()))}")
                    print(f"    requests window: {w_total} (x{w_total / max(1, d_total):.2f}) "
                          f"{dict(sorted(w_req.items()))}")
                    print(f"    requests undo:   {u_req.get('total', sum(u_req.values()))} {dict(sorted(u_req.items()))}")
    finally:
        if moto is not None:
            moto.stop()


if __name__ == "__main__":
    main()
