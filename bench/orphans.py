"""Orphan-cleanup benchmark: tablekeeper's plan_orphan_clean vs ``find`` + a set difference.

Builds a synthetic Paimon table directly (``bench/_synth.py``; by default as pypaimon writes it:
no manifest merging, so every manifest ever written stays reachable) with at least 200,000
files, nearly all referenced, plants unreferenced data files and manifests ("orphans"), ages
every file by two days, checks the table with pypaimon, then measures in one process:

  (t) tablekeeper ``plan_orphan_clean`` (listing first, then the used set of every snapshot
      and tag, default 1-day threshold) with its default processes (one per CPU, at most 4:
      forked helpers share the manifest scan), again in one process (``processes=1``), and
      separately its execution;
  (b) the baseline: ``find <table> -type f`` in a subprocess plus a Python set difference of
      the listed names against the referenced names (known to the builder, so the baseline
      reads no metadata at all).

The three sides run in interleaved rounds (best of ``--repeat`` each), after an ``os.sync()``.
It checks that the plan deletes exactly the planted orphans and that, after execution, every
file a snapshot or tag reaches still exists and pypaimon still reads the table. Timings are
printed, never asserted.

    .venv/bin/python bench/orphans.py [--snapshots N] [--files N] [--orphans N] [--scale X]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _synth  # noqa: E402

from tablekeeper.core.paimon.table import open_table  # noqa: E402
from tablekeeper.core.plans import execution
from tablekeeper.core.reclaim.orphans import planning, references  # noqa: E402

GOAL_VS_FIND = 2.0
AGE_S = 2 * 86_400


def spec_for(snapshots: int, files: int, orphan_files: int, orphan_manifests: int, writer: str) -> _synth.SynthSpec:
    return _synth.SynthSpec(
        snapshots=snapshots, files=files, snapshots_per_partition=max(2, snapshots // 40),
        compact_every=10 if snapshots >= 100 else 5, tag_every=max(5, snapshots // 8),
        merge_min_count=30, manifest_target=max(200, min(8_000, files // 25)),
        full_compaction_deletes=max(1_000, min(40_000, files // 5)), writer=writer,
        orphan_files=orphan_files, orphan_manifests=orphan_manifests, seed=11)


def age_table(built: _synth.SynthTable, seconds: int) -> None:
    """Backdate every file of the table (data files share a few template inodes)."""
    past = time.time() - seconds
    for dirpath, _dirs, names in os.walk(built.warehouse):
        for name in names:
            path = os.path.join(dirpath, name)
            if "/bucket-" in dirpath and not dirpath.endswith("/.templates"):
                continue  # hard links of the templates: aged with them
            os.utime(path, (past, past), follow_symlinks=False)


def build_elsewhere(warehouse: str, spec: _synth.SynthSpec, early: list[int]) -> tuple[_synth.SynthTable, list[str]]:
    """Build, age and validate the table in a forked child, so that the measuring process is as
    lean as a ``tablekeeper clean-orphans`` run (the builder's heap and pypaimon's readers stay
    in the child); the ground truth comes back pickled."""
    import pickle

    from tablekeeper.core.reclaim.reach import child_process

    def build(_send: child_process.Send) -> bytes:
        built = _synth.build_table(warehouse, spec, track_referenced=True, sample_live=early)
        age_table(built, AGE_S)
        return pickle.dumps((built, list(_synth.validate_with_pypaimon(built, early))))

    if not child_process.available():
        built = _synth.build_table(warehouse, spec, track_referenced=True, sample_live=early)
        age_table(built, AGE_S)
        return built, list(_synth.validate_with_pypaimon(built, early))
    built, valid = pickle.loads(child_process.ForkedCall(build).result())  # noqa: S301 - our own child
    return built, valid


def baseline(root: str, referenced: set[str]) -> tuple[int, set[str]]:
    out = subprocess.run(["find", root, "-type", "f"], capture_output=True, text=True, check=True).stdout
    listed: dict[str, str] = {}
    for line in out.splitlines():
        listed[line.rsplit("/", 1)[-1]] = line
    unreferenced = listed.keys() - referenced
    return len(listed), {listed[n] for n in unreferenced}


def file_set(root: str) -> set[str]:
    return {os.path.join(d, n) for d, _s, names in os.walk(root) for n in names}


def referenced_intact(root: str, before: set[str], planned: set[str], referenced: set[str]) -> tuple[bool, str]:
    """After execution exactly the planned files are gone, and every file whose name a
    snapshot or tag references (the builder's ground truth) still exists."""
    after = file_set(root)
    gone = before - after
    lost = [p for p in before - after if p.rsplit("/", 1)[-1] in referenced]
    ok = gone == planned and not lost and after <= before
    return ok, (f"{len(gone):,} files gone (== planned: {gone == planned}), {len(lost)} referenced files lost, "
                f"{len(after):,} files left")


def instrumented_phases(warehouse: str, config: planning.OrphanConfig) -> dict[str, float]:
    """One extra run, not counted in the ratio, with the planner's phases in this process wrapped
    by timers: listing, reading the roots, building the name scanner (keys of every listed name),
    walking the manifest lists (or adopting the first helper's walk: "adopt" is the wait for it),
    scanning this process's share of the manifests, waiting for the forked helpers and merging
    what their scanners did not see. The helpers walk the lists, build their scanners and scan
    their shares meanwhile, in other processes."""
    from tablekeeper.core.reclaim.orphans import name_scan, references
    from tablekeeper.core.reclaim.reach import child_process

    acc: dict[str, float] = {}
    patched: list[tuple[Any, str, Any]] = []

    def wrap(owner: Any, attr: str, label: str) -> None:
        original = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                acc[label] = acc.get(label, 0.0) + time.perf_counter() - start

        patched.append((owner, attr, original))
        setattr(owner, attr, timed)

    wrap(planning, "list_candidates", "listing")
    wrap(planning, "read_roots", "roots")
    wrap(name_scan.NameScanner, "__init__", "scanner")
    wrap(references._Walk, "walk", "walk")
    wrap(references._Walk, "adopt_walk", "adopt")
    wrap(references._Walk, "scan_shared", "scan")
    wrap(child_process.ForkedCall, "result", "wait")
    wrap(name_scan.NameScanner, "merge_state", "merge")
    try:
        start = time.perf_counter()
        planning.plan_orphan_clean(open_table(warehouse, _synth.IDENTIFIER), config)
        acc["total"] = time.perf_counter() - start
    finally:
        for owner, attr, original in reversed(patched):
            setattr(owner, attr, original)
    return acc


def naive_used_set(warehouse: str) -> set[str]:
    """The used set as a straightforward tool builds it: every reachable manifest list and manifest
    of every snapshot and tag decoded with plain ``fastavro.reader``, names collected."""
    import fastavro

    from tablekeeper.core.paimon import layout

    table = open_table(warehouse, _synth.IDENTIFIER)
    manifest_dir = table.shared_dir(layout.MANIFEST_DIR)
    roots = [table.snapshot(sid) for sid in table.snapshot_ids()]
    roots += [table.tag(name).snapshot for name in table.tag_names()]
    lists: set[str] = set()
    for snap in roots:
        lists.update(snap.manifest_lists)
    metas: set[str] = set()
    for name in lists:
        with open(os.path.join(manifest_dir, name), "rb") as f:
            metas.update(cast(dict[str, Any], r)["_FILE_NAME"] for r in fastavro.reader(f))
    used = set(lists) | metas
    for name in metas:
        with open(os.path.join(manifest_dir, name), "rb") as f:
            for r in fastavro.reader(f):
                used.add(cast(dict[str, Any], r)["_FILE"]["_FILE_NAME"])
    return used


def run(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--snapshots", type=int, default=500, help="snapshots (all retained; default 500)")
    parser.add_argument("--files", type=int, default=200_000, help="level-0 data files written (default 200000)")
    parser.add_argument("--orphans", type=int, default=4_000, help="planted orphan data files (default 4000)")
    parser.add_argument("--orphan-manifests", type=int, default=50, help="planted orphan manifests (default 50)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply snapshots, files and orphans")
    parser.add_argument("--writer", choices=("pypaimon", "java"), default="pypaimon",
                        help="manifest layout: pypaimon (never merged, default) or java (merged)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each side (best kept)")
    parser.add_argument("--workdir", default=None, help="where to build (default: a temp dir, removed)")
    args = parser.parse_args(argv)
    spec = spec_for(max(10, int(args.snapshots * args.scale)), max(100, int(args.files * args.scale)),
                    max(1, int(args.orphans * args.scale)), max(1, int(args.orphan_manifests * args.scale)),
                    args.writer)
    workdir = args.workdir or tempfile.mkdtemp(prefix="tk-bench-orphans-")
    os.makedirs(workdir, exist_ok=True)
    try:
        return _run(workdir, spec, args)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def _run(workdir: str, spec: _synth.SynthSpec, args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    warehouse = os.path.join(workdir, "wh")
    # pypaimon decodes ~6k entries/s: validate early (small) snapshots; the format is the same later
    early = sorted({1, min(10, spec.snapshots)})
    built, valid = build_elsewhere(warehouse, spec, early)
    n_files = sum(len(names) for _d, _s, names in os.walk(built.root))
    print(f"synthetic table ({spec.writer} manifests): {spec.snapshots:,} snapshots, {len(built.tags)} tags, "
          f"{n_files:,} files ({built.data_files:,} data files incl. {spec.orphan_files:,} planted orphans, "
          f"{built.manifest_files:,} manifest files incl. {spec.orphan_manifests} planted, "
          f"{built.entries_written:,} manifest entries); built in {built.build_seconds:.1f}s")
    for line in valid:
        print("  valid:", line)
    print(f"this (measuring) process: {_synth.max_rss_mb():.0f} MB max RSS before planning")
    now_ms = int(time.time() * 1000)
    config = planning.OrphanConfig(planning.resolve_older_than(now_ms))  # default: 1 day ago
    planted = set(built.orphan_paths)

    os.sync()  # the build's writeback must not land in anyone's timing
    phases: list[_synth.Phase] = []
    best: dict[str, _synth.Phase] = {}
    plan = None
    found: set[str] = set()
    listed = 0
    single_config = planning.OrphanConfig(config.older_than_ms, processes=1)

    def keep(key: str, p: _synth.Phase) -> None:
        phases.append(p)
        if key not in best or p.seconds < best[key].seconds:
            best[key] = p

    for i in range(max(1, args.repeat)):  # interleaved rounds: all sides see the same machine
        with _synth.phase(f"tablekeeper plan_orphan_clean (run {i + 1})") as p:
            plan = planning.plan_orphan_clean(open_table(warehouse, _synth.IDENTIFIER), config)
        keep("tk", p)
        with _synth.phase(f"tablekeeper plan_orphan_clean, one process (run {i + 1})") as p:
            planning.plan_orphan_clean(open_table(warehouse, _synth.IDENTIFIER), single_config)
        keep("single", p)
        with _synth.phase(f"baseline find -type f + set difference (run {i + 1})") as p:
            listed, found = baseline(built.root, built.referenced_names)
        keep("base", p)
    assert plan is not None
    best_tk, single, best_base = best["tk"], best["single"], best["base"]
    decode = instrumented_phases(warehouse, config)
    planned = {f.path for f in plan.files}
    exact = planned == planted
    print(f"tablekeeper plans {len(planned):,} deletions; == planted orphans: {exact} "
          f"({len(planned - planted)} extra, {len(planted - planned)} missed); {plan.notes[0]}")
    print(f"baseline: find listed {listed:,} files, {len(found):,} unreferenced by name "
          f"(planted {len(planted):,}; the rest are snapshot/schema/tag/hint files orphan cleanup never touches)")

    before = file_set(built.root)
    with _synth.phase("tablekeeper execute") as p_exec:
        result = execution.execute(plan, open_table(warehouse, _synth.IDENTIFIER).file_io)
    phases.append(p_exec)
    deleted = sum(result.deleted.values())
    ok, detail = referenced_intact(built.root, before, planned, built.referenced_names)
    print(f"executed: {deleted:,} deleted, {len(result.failed)} failed; after cleanup: {detail}")
    first_tag = min(built.tags, key=built.tags.__getitem__)
    reads = []
    for label, live, metas in _synth.reachable_with_pypaimon(warehouse, early, [first_tag]):
        lost = [p for p in (*live, *metas) if not os.path.exists(p)]
        ok = ok and not lost
        reads.append(f"{label} ({len(live):,} live files{', MISSING ' + lost[0] if lost else ''})")
    print("  pypaimon still reads:", ", ".join(reads))

    print()
    for p in phases:
        print(_synth.fmt_phase(p))
    print()
    ratio = best_tk.seconds / best_base.seconds
    print(f"ratio tablekeeper plan_orphan_clean vs find + set difference: {best_tk.seconds:.2f}s vs "
          f"{best_base.seconds:.2f}s = {ratio:.2f}x  goal <= {GOAL_VS_FIND:.0f}x  {_synth.verdict(ratio <= GOAL_VS_FIND)}")
    print(f"  (planning used {references.default_processes()} process(es) on {os.cpu_count()} CPU(s): this one and "
          f"{references.default_processes() - 1} forked helper(s) sharing the manifest scan)")
    print(f"ratio with one process (processes=1): {single.seconds:.2f}s vs {best_base.seconds:.2f}s = "
          f"{single.seconds / best_base.seconds:.2f}x")
    steps = ("listing", "roots", "scanner", "walk", "adopt", "scan", "wait", "merge")
    rest = max(0.0, decode["total"] - sum(decode.get(k, 0.0) for k in ("listing", "roots", "scanner", "walk", "adopt",
                                                                        "scan")))
    print("  (instrumented run, this process: " + ", ".join(f"{k} {decode.get(k, 0.0):.3f}s" for k in steps)
          + f", everything else {rest:.3f}s; total {decode['total']:.2f}s; wait and merge are part of scan)")
    with _synth.phase("naive used set (plain fastavro.reader over every reachable manifest) + find") as p_naive:
        naive_used = naive_used_set(warehouse)
        naive_listed, _naive_found = baseline(built.root, naive_used)
    print(_synth.fmt_phase(p_naive))
    print(f"  for scale: tablekeeper plan_orphan_clean vs a naive tool that decodes the used set with fastavro "
          f"and lists with find: {best_tk.seconds:.2f}s vs {p_naive.seconds:.2f}s = "
          f"{best_tk.seconds / p_naive.seconds:.2f}x (not the goal; the goal's baseline reads no metadata)")
    print(f"max RSS of this process: {_synth.max_rss_mb():.0f} MB")
    print(f"bench wall time: {time.perf_counter() - started:.0f}s")
    return {"ratio": ratio, "exact": exact, "deleted": deleted, "failed": len(result.failed),
            "retained_ok": ok, "files": n_files, "planned": len(planned)}


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

