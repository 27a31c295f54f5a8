"""Snapshot-expiration benchmark: tablekeeper vs a naive pypaimon mark-and-sweep vs the I/O floor.

Builds a synthetic Paimon table directly (``bench/_synth.py``: pypaimon's Avro writer schemas,
Java-style manifest merging, APPEND / COMPACT / OVERWRITE commits, tags, empty data files),
checks it with pypaimon (``get_table``, ManifestListManager, read_entries_parallel), makes three
hard-link copies and, on separate copies, measures:

  (t) tablekeeper: ``plan_expire`` + ``execute`` (the planned deletions, in Paimon's order);
  (f) the floor: raw ``fastavro.reader`` decoding of exactly the Avro files tablekeeper read
      (each once) plus a serial ``os.unlink`` of exactly the files it deleted;
  (n) a naive mark-and-sweep on pypaimon's readers: for every expiring snapshot and every
      retained root (snapshots, tags) the merged live files via
      ``ManifestFileManager.read_entries_parallel(ManifestListManager.read_all(s))``, set
      difference, unlink (data files, then manifests, then snapshot files, then EARLIEST).
      The naive is given a per-manifest-file memo (each manifest decoded by pypaimon once);
      without it, it would decode every manifest once per snapshot: that cost is measured on a
      sample of snapshots and extrapolated on a separate line. With ``--writer pypaimon`` (no
      manifest merging: every snapshot's state spans every manifest ever written) the full naive
      would take hours, so by default it is *estimated*: the time to decode every manifest once
      plus the mean per-root merge time (memo warm, measured on a sample of roots) times the
      number of roots, plus the floor's unlink time.

tablekeeper's timed run is preceded by an untimed dry run in the same process (imports, Avro
decoder compilation, page cache), and is reported separately. It then checks that
tablekeeper's data deletions equal the naive's (full naive only), that every file any retained
snapshot or tag reaches still exists, and that pypaimon still reads sampled retained roots.
Finally it builds a table with twice the history and files but the same number of expiring
snapshots and compares planning times. Timings are printed, never asserted.

    .venv/bin/python bench/expire.py [--snapshots N] [--files N] [--expire N] [--scale X]
                                     [--writer java|pypaimon] [--naive auto|full|estimate]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import fastavro

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _synth  # noqa: E402

from tablekeeper.core.paimon.table import open_table  # noqa: E402
from tablekeeper.core.plans import execution
from tablekeeper.core.plans import plan as plans
from tablekeeper.core.reclaim.expire import planning  # noqa: E402
from tablekeeper.core.reclaim.reach.reachability import Reachability  # noqa: E402
from tablekeeper.core.storage import FileIO  # noqa: E402

GOAL_VS_NAIVE = 10.0
GOAL_VS_FLOOR = 1.5
GOAL_SIZE_RATIO = 1.3


class RecordingFileIO(FileIO):
    """Local FileIO that records every Avro file read under ``manifest/`` (for the floor)."""

    def __init__(self) -> None:
        base = FileIO.for_uri("/")
        super().__init__(base.scheme, base.fs)
        self.avro_reads: list[str] = []
        self._lock = threading.Lock()

    def read_bytes(self, path: str) -> bytes:
        if "/manifest/" in path:
            with self._lock:
                self.avro_reads.append(path)
        return super().read_bytes(path)


def spec_for(snapshots: int, files: int, writer: str = "java", seed: int = 7) -> _synth.SynthSpec:
    """The default layout (2,000 snapshots: 40 day partitions, 20 kept, a tag every 250
    commits), scaled down proportionally for small runs."""
    per_partition = max(5, snapshots // 40)
    return _synth.SynthSpec(
        snapshots=snapshots, files=files, snapshots_per_partition=per_partition,
        compact_every=10 if snapshots >= 100 else 5, tag_every=max(5, snapshots // 8),
        merge_min_count=30 if snapshots >= 300 else 10,
        manifest_target=max(200, min(4_000, files // 25)),
        full_compaction_deletes=max(1_000, min(20_000, files // 5)), writer=writer, seed=seed)


def expire_config(retain: int) -> planning.ExpireConfig:
    return planning.ExpireConfig(retain_min=retain, time_retained=timedelta(0), expire_limit=10_000_000)


def table_of(warehouse: str, file_io: FileIO | None = None) -> Any:
    return open_table(warehouse, _synth.IDENTIFIER, file_io=file_io)


# -- (n) naive mark-and-sweep on pypaimon's readers ------------------------------------------------
class NaivePypaimon:
    def __init__(self, warehouse: str, memo: bool = True) -> None:
        from pypaimon import CatalogFactory
        from pypaimon.manifest.manifest_file_manager import ManifestFileManager
        from pypaimon.manifest.manifest_list_manager import ManifestListManager
        from pypaimon.tag.tag_manager import TagManager

        self.table = CatalogFactory.create({"warehouse": warehouse}).get_table(_synth.IDENTIFIER)
        self.root = self.table.table_path.rstrip("/").removeprefix("file:")
        self.sm = self.table.snapshot_manager()
        self.mlm = ManifestListManager(self.table)
        self.mfm = ManifestFileManager(self.table)
        self.tags = TagManager(self.table.file_io, self.table.table_path)
        self.factory = self.table.path_factory()
        self._dirs: dict[tuple[Any, int], str] = {}
        if memo:
            cache: dict[str, Any] = {}
            original = self.mfm.read

            def read(name: str, *args: Any, **kwargs: Any) -> Any:
                found = cache.get(name)
                if found is None:
                    found = cache[name] = original(name, *args, **kwargs)
                return found

            self.mfm.read = read  # type: ignore[method-assign]

    def reached(self, snap: Any) -> tuple[set[str], set[str]]:
        """(live data files + extra files, manifest lists + manifests) of one root."""
        metas = self.mlm.read_all(snap)
        manifest_dir = f"{self.root}/manifest"
        meta = {f"{manifest_dir}/{snap.base_manifest_list}", f"{manifest_dir}/{snap.delta_manifest_list}"}
        meta.update(f"{manifest_dir}/{m.file_name}" for m in metas)
        data: set[str] = set()
        for e in self.mfm.read_entries_parallel(metas):
            key = (tuple(e.partition.values), e.bucket)
            d = self._dirs.get(key)
            if d is None:
                d = self._dirs[key] = str(self.factory.bucket_path(key[0], e.bucket)).removeprefix("file:")
            data.add(f"{d}/{e.file.file_name}")
            data.update(f"{d}/{x}" for x in e.file.extra_files)
        return data, meta

    def estimate(self, earliest: int, end: int, sample: int) -> dict[str, Any]:
        """Estimated time of ``run`` without running it: decode every manifest once (the memo),
        then time ``reached`` on ``sample`` roots spread over the expiring and retained ones."""
        latest = self.sm.get_latest_snapshot().id
        tags = [self.tags.get(n).trim_to_snapshot() for n in self.tags.list_tags()]
        names = {m.file_name for sid in (end - 1, latest) for m in self.mlm.read_all(self.sm.get_snapshot_by_id(sid))}
        names |= {m.file_name for t in tags for m in self.mlm.read_all(t)}
        start = time.perf_counter()
        for name in sorted(names):
            self.mfm.read(name)
        decode = time.perf_counter() - start
        roots = list(range(earliest, latest + 1))
        picks = [roots[int(i * (len(roots) - 1) / max(1, sample - 1))] for i in range(sample)]
        start = time.perf_counter()
        for sid in picks:
            self.reached(self.sm.get_snapshot_by_id(sid))
        per_root = (time.perf_counter() - start) / len(picks)
        n_roots = len(roots) + len(tags)
        return {"decode": decode, "per_root": per_root, "roots": n_roots, "manifests": len(names),
                "seconds": decode + per_root * n_roots}

    def run(self, earliest: int, end: int, *, unlink: bool = True) -> dict[str, Any]:
        latest = self.sm.get_latest_snapshot().id
        dead_data: set[str] = set()
        dead_meta: set[str] = set()
        for sid in range(earliest, end):
            data, meta = self.reached(self.sm.get_snapshot_by_id(sid))
            dead_data |= data
            dead_meta |= meta
        retained = [self.sm.get_snapshot_by_id(i) for i in range(end, latest + 1)]
        retained += [self.tags.get(n).trim_to_snapshot() for n in self.tags.list_tags()]
        for snap in retained:
            data, meta = self.reached(snap)
            dead_data -= data
            dead_meta -= meta
        snapshot_files = [f"{self.root}/snapshot/snapshot-{i}" for i in range(earliest, end)]
        if unlink:
            for group in (sorted(dead_data), sorted(dead_meta), snapshot_files):
                for p in group:
                    try:
                        os.unlink(p)
                    except FileNotFoundError:
                        pass
            tmp = f"{self.root}/snapshot/.EARLIEST.naive.tmp"
            with open(tmp, "w") as f:  # never write into a hard-linked inode shared with other copies
                f.write(str(end))
            os.replace(tmp, f"{self.root}/snapshot/EARLIEST")
        return {"data": dead_data, "meta": dead_meta, "snapshots": snapshot_files, "retained_roots": len(retained)}


# -- (f) the floor ----------------------------------------------------------------------------------
def floor_decode(paths: Iterable[str]) -> int:
    n = 0
    for p in paths:
        with open(p, "rb") as f:
            data = f.read()
        for _ in fastavro.reader(io.BytesIO(data)):
            n += 1
    return n


def distinct_blocks(paths: Iterable[str]) -> list[bytes]:
    """One small Avro container per distinct (schema, block) among ``paths``: what a reader
    that never decodes the same block twice must decode at least."""
    from tablekeeper.core.paimon.manifests import avro_container

    seen: set[tuple[bytes, int, bytes]] = set()
    out: list[bytes] = []
    for p in paths:
        with open(p, "rb") as f:
            data = f.read()
        framed = avro_container.frame(data)
        if framed is None:
            out.append(data)
            continue
        meta = data[4:framed.header_end - 16]
        for b in framed.blocks:
            key = (meta, b.records, data[b.payload:b.end - 16])
            if key not in seen:
                seen.add(key)
                out.append(data[:framed.header_end] + data[b.start:b.end])
    return out


def floor_decode_blobs(blobs: Iterable[bytes]) -> int:
    n = 0
    for data in blobs:
        for _ in fastavro.reader(io.BytesIO(data)):
            n += 1
    return n


def floor_unlink(paths: Iterable[str]) -> int:
    n = 0
    for p in paths:
        try:
            os.unlink(p)
            n += 1
        except FileNotFoundError:
            pass
    return n


def relocate(paths: Iterable[str], src_root: str, dst_root: str) -> list[str]:
    return [dst_root + p[len(src_root):] for p in paths]


# -- checks ----------------------------------------------------------------------------------------
def retained_intact(warehouse: str) -> tuple[bool, str]:
    """Every file any remaining snapshot or tag reaches exists (tablekeeper's reader, all roots)."""
    table = table_of(warehouse)
    reach = Reachability(table)
    roots = table.snapshots() + [t.snapshot for t in table.tags()]
    missing: list[str] = []
    checked: set[str] = set()
    for root in roots:
        paths = [m.path for m in reach.meta_files(root)]
        for ref in reach.live_files(root).values():
            paths.extend(reach.data_paths(ref))
        for p in paths:
            if p not in checked:
                checked.add(p)
                if not os.path.exists(p):
                    missing.append(p)
    return not missing, (f"{len(roots)} retained roots, {len(checked):,} reachable files, "
                         f"{len(missing)} missing" + (f" (e.g. {missing[0]})" if missing else ""))


def pypaimon_reads(warehouse: str, snapshot_ids: list[int], tags: list[str]) -> list[str]:
    lines = []
    for label, live, manifests in _synth.reachable_with_pypaimon(warehouse, snapshot_ids, tags):
        missing = [p for p in (*live, *manifests) if not os.path.exists(p)]
        if missing:
            raise AssertionError(f"after expiration pypaimon's {label} reaches a missing file: {missing[0]}")
        lines.append(f"{label} ({len(live):,} live data files)")
    return lines


# -- main ------------------------------------------------------------------------------------------
def run(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--snapshots", type=int, default=2_000, help="snapshots in the table (default 2000)")
    parser.add_argument("--files", type=int, default=100_000, help="level-0 data files written (default 100000)")
    parser.add_argument("--expire", type=int, default=None, help="snapshots to expire (default: snapshots - 100)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply snapshots, files and --expire")
    parser.add_argument("--workdir", default=None, help="where to build (default: a temp dir, removed)")
    parser.add_argument("--no-large", action="store_true", help="skip the twice-as-large table")
    parser.add_argument("--writer", choices=("java", "pypaimon"), default="java",
                        help="manifest layout: java (merged, default) or pypaimon (never merged)")
    parser.add_argument("--naive", choices=("auto", "full", "estimate"), default="auto",
                        help="run the naive in full, or estimate it (auto: full for java, estimate for pypaimon)")
    parser.add_argument("--naive-sample", type=int, default=12, help="roots timed by --naive estimate")
    parser.add_argument("--naive-extrapolate-sample", type=int, default=None,
                        help="snapshots timed without the memo to extrapolate the un-memoised naive "
                             "(0: skip; default 8 with --writer java, 0 with pypaimon)")
    args = parser.parse_args(argv)
    snapshots = max(10, int(args.snapshots * args.scale))
    files = max(100, int(args.files * args.scale))
    n_expire = int((args.expire if args.expire is not None else args.snapshots - 100) * args.scale)
    n_expire = max(1, min(n_expire, snapshots - 1))
    retain = snapshots - n_expire
    spec = spec_for(snapshots, files, args.writer)
    result: dict[str, Any] = {}
    workdir = args.workdir or tempfile.mkdtemp(prefix="tk-bench-expire-")
    os.makedirs(workdir, exist_ok=True)
    try:
        result.update(_run(workdir, spec, retain, n_expire, args))
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return result


def _run(workdir: str, spec: _synth.SynthSpec, retain: int, n_expire: int, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    started = time.perf_counter()
    phases: list[_synth.Phase] = []
    pristine = os.path.join(workdir, "pristine")
    built = _synth.build_table(pristine, spec, sample_live=[1, min(10, spec.snapshots), n_expire + 1, spec.snapshots])
    print(f"synthetic table ({spec.writer} manifests): {spec.snapshots:,} snapshots, {built.data_files:,} data files "
          f"({spec.files_per_append} per APPEND), {built.manifest_files:,} manifest files "
          f"({built.entries_written:,} entries), {len(built.tags)} tags; built in {built.build_seconds:.1f}s")
    for line in _synth.validate_with_pypaimon(built, [1, n_expire + 1, spec.snapshots] if spec.writer == "java"
                                              else [1, min(10, spec.snapshots)]):
        print("  valid:", line)
    now_ms = int(time.time() * 1000)
    config = expire_config(retain)
    copies = {}
    for name in ("tablekeeper", "floor", "naive"):
        copies[name] = os.path.join(workdir, name)
        _synth.copy_tree(pristine, copies[name])
    root_of = {k: os.path.join(v, f"{_synth.DB}.db", _synth.TABLE) for k, v in copies.items()}

    # (t) tablekeeper; first a dry run on the pristine copy, so one-time costs of the process
    # (imports, compiling the Avro decoders, their self-test) and a cold page cache are not
    # charged to the timed run (the floor's fastavro is warm by then too)
    with _synth.phase("tablekeeper plan_expire, first call (warm-up, not in the ratios)") as p_warm:
        planning.plan_expire(table_of(pristine), config, now_ms)
    phases.append(p_warm)
    rec = RecordingFileIO()
    table = table_of(copies["tablekeeper"], rec)
    with _synth.phase("tablekeeper plan_expire") as p_plan:
        plan = planning.plan_expire(table, config, now_ms)
    with _synth.phase("tablekeeper execute", release=False) as p_exec:
        executed = execution.execute(plan, table.file_io)
    phases += [p_plan, p_exec]
    t_total = p_plan.seconds + p_exec.seconds
    summary = plan.summary()
    deleted = dict(executed.deleted)
    print(f"tablekeeper expired {summary['expired_snapshots']:,} snapshots: deleted {deleted} "
          f"(failed {len(executed.failed)}, missing {dict(executed.missing)})")
    data_deleted = {p.path for p in plan.files if p.kind == plans.FileKind.DATA}
    out.update(expired=summary["expired_snapshots"], deleted=deleted, deleted_data=deleted.get("data", 0),
               failed=len(executed.failed))

    # (f) floor
    distinct_reads = list(dict.fromkeys(rec.avro_reads))
    floor_reads = relocate(distinct_reads, root_of["tablekeeper"], root_of["floor"])
    floor_deletes = relocate([f.path for f in plan.files], root_of["tablekeeper"], root_of["floor"])
    blobs = distinct_blocks(floor_reads)  # before the unlinks below remove these files
    with _synth.phase("floor: raw fastavro decode of the same Avro files") as p_fd:
        records = floor_decode(floor_reads)
    with _synth.phase("floor: raw unlink of the same files", release=False) as p_fu:
        unlinked = floor_unlink(floor_deletes)
    with _synth.phase("strict floor: raw decode of each distinct Avro block once") as p_fb:
        block_records = floor_decode_blobs(blobs)
    phases += [p_fd, p_fu, p_fb]
    floor_total = p_fd.seconds + p_fu.seconds
    strict_floor = p_fb.seconds + p_fu.seconds
    print(f"floor: {len(floor_reads):,} Avro files ({records:,} records; tablekeeper read {len(rec.avro_reads):,} "
          f"times), {unlinked:,} unlinks; strict floor: {len(blobs):,} distinct blocks ({block_records:,} records)")

    # (n) naive
    naive_mode = args.naive if args.naive != "auto" else ("full" if spec.writer == "java" else "estimate")
    naive = NaivePypaimon(copies["naive"])
    if naive_mode == "full":
        with _synth.phase("naive pypaimon mark-and-sweep (memoised reads)") as p_naive:
            sweep = naive.run(1, 1 + n_expire)
        phases.append(p_naive)
        naive_seconds = p_naive.seconds
        naive_data = set(relocate(sweep["data"], root_of["naive"], root_of["tablekeeper"]))
        same = naive_data == data_deleted
        print(f"naive: {len(sweep['data']):,} data files, {len(sweep['meta']):,} manifest files, "
              f"{len(sweep['snapshots']):,} snapshot files over {sweep['retained_roots']} retained roots; "
              f"data files deleted {'==' if same else '!='} tablekeeper's")
        out["naive_equal"] = same
        del sweep
    else:
        with _synth.phase("naive pypaimon mark-and-sweep (ESTIMATED, see below)") as p_naive:
            est = naive.estimate(1, 1 + n_expire, args.naive_sample)
        phases.append(p_naive)
        naive_seconds = est["seconds"] + p_fu.seconds
        print(f"naive (estimated): pypaimon decodes {est['manifests']:,} manifests once in {est['decode']:.1f}s, "
              f"then {est['per_root']:.2f}s per root (mean of {args.naive_sample}, memo warm) x {est['roots']:,} "
              f"roots + {p_fu.seconds:.2f}s unlink = ~{naive_seconds:,.0f}s")
    del naive
    extrapolated = None
    if args.naive_extrapolate_sample is None:
        args.naive_extrapolate_sample = 8 if spec.writer == "java" else 0
    if args.naive_extrapolate_sample > 0:
        sample = min(args.naive_extrapolate_sample, n_expire)
        cold = NaivePypaimon(pristine, memo=False)
        step = max(1, n_expire // sample)
        ids = list(range(1, 1 + n_expire, step))[:sample]
        seconds, _ = _synth.timed(lambda: [cold.reached(cold.sm.get_snapshot_by_id(i)) for i in ids])
        roots = n_expire + (spec.snapshots - n_expire) + len(built.tags)
        extrapolated = seconds / len(ids) * roots
        del cold

    # checks
    ok, detail = retained_intact(copies["tablekeeper"])
    print(f"after expiration: {detail}")
    tk_table = table_of(copies["tablekeeper"])
    tag_names = [t.name for t in tk_table.tags()]
    if spec.writer == "java":
        sample_ids = sorted({tk_table.earliest_snapshot_id() or 0, spec.snapshots})
        sample_tags = sorted({tag_names[0], tag_names[-1]}) if tag_names else []
    else:  # every state spans every manifest ever written: pypaimon needs ~40s per root here
        sample_ids, sample_tags = [tk_table.earliest_snapshot_id() or 0], tag_names[:1]
    read_lines = pypaimon_reads(copies["tablekeeper"], sample_ids, sample_tags)
    print("  pypaimon still reads:", "; ".join(read_lines))
    out.update(retained_ok=ok and bool(read_lines), earliest_after=tk_table.earliest_snapshot_id())

    # twice as large
    plan_small = p_plan.seconds
    plan_large = None
    if not args.no_large:
        shutil.rmtree(copies["floor"], ignore_errors=True)
        shutil.rmtree(copies["naive"], ignore_errors=True)
        large_spec = replace(spec, snapshots=spec.snapshots * 2, files=spec.files * 2)
        large_dir = os.path.join(workdir, "large")
        big = _synth.build_table(large_dir, large_spec)
        print(f"large table: {large_spec.snapshots:,} snapshots, {big.data_files:,} data files, "
              f"{big.manifest_files:,} manifest files, {len(big.tags)} tags; built in {big.build_seconds:.1f}s")
        large_config = expire_config(large_spec.snapshots - n_expire)
        with _synth.phase("plan_expire, 1x table (again, dry run)") as p_small:
            planning.plan_expire(table_of(pristine), config, now_ms)
        with _synth.phase("plan_expire, 2x table (dry run)") as p_large:
            large_plan = planning.plan_expire(table_of(large_dir), large_config, now_ms)
        phases += [p_small, p_large]
        plan_small, plan_large = p_small.seconds, p_large.seconds
        print(f"  2x table plan expires {large_plan.summary()['expired_snapshots']:,} snapshots, "
              f"{large_plan.summary()['total_files']:,} files")

    print()
    for p in phases:
        print(_synth.fmt_phase(p))
    print()
    vs_naive = naive_seconds / t_total
    vs_floor = t_total / floor_total
    print(f"tablekeeper total (plan {p_plan.seconds:.2f}s + execute {p_exec.seconds:.2f}s): {t_total:.2f}s")
    print(f"ratio tablekeeper vs naive pypaimon mark-and-sweep{' (ESTIMATED)' if naive_mode != 'full' else ''}: "
          f"{vs_naive:.1f}x faster  goal >= {GOAL_VS_NAIVE:.0f}x  {_synth.verdict(vs_naive >= GOAL_VS_NAIVE)}")
    if extrapolated is not None:
        print(f"  (naive without the per-manifest memo, extrapolated from {args.naive_extrapolate_sample} "
              f"snapshots: ~{extrapolated:,.0f}s, ~{extrapolated / t_total:,.0f}x)")
    print(f"ratio tablekeeper vs floor (raw fastavro decode + raw unlink): {vs_floor:.2f}x the floor  "
          f"goal <= {GOAL_VS_FLOOR}x  {_synth.verdict(vs_floor <= GOAL_VS_FLOOR)}")
    vs_strict = t_total / strict_floor
    print(f"  (vs the strict floor, each distinct Avro block decoded once + raw unlink: {vs_strict:.2f}x)")
    if plan_large is not None:
        size_ratio = plan_large / plan_small
        print(f"ratio planning time 2x table vs 1x table: {plan_large:.2f}s vs {plan_small:.2f}s = {size_ratio:.2f}  "
              f"goal <= {GOAL_SIZE_RATIO}  {_synth.verdict(size_ratio <= GOAL_SIZE_RATIO)}")
        out["size_ratio"] = size_ratio
    print(f"max RSS of this process: {_synth.max_rss_mb():.0f} MB")
    print(f"bench wall time: {time.perf_counter() - started:.0f}s")
    out.update(vs_naive=vs_naive, vs_floor=vs_floor, vs_strict_floor=vs_strict, tablekeeper_seconds=t_total)
    return out


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
