"""Spark engine benchmark: driver memory, throughput vs the in-process engine, crossover size.

For each size (data files in a synthetic table, ``bench/_synth.py``: pypaimon's Avro schemas,
Java-style manifest merging, tags, ~1% planted orphan files + a few orphan manifests) the
operation (default ``clean-orphans``, the whole-table one: list every file, read every manifest
of every root) runs on two hard-link copies of the table, each in a fresh subprocess:

  (l) in-process: ``tablekeeper.spark.dispatch.run_local`` (core planner + thread-pool executor);
  (s) Spark:      ``tablekeeper.spark.job.run`` on a new ``local[N]`` session.

Reported per size: seconds (Spark: the job on a warmed-up session, and with session start-up
and warm-up (JVM, first Python workers), which every spark-submit run pays), throughput (table
files covered per second), peak RSS of the in-process run, of the Spark *Python driver* (what tablekeeper's driver code holds: the goal
is flat in the file count, within 1.2x from the smallest to the largest size) and of the JVM
(in local mode the JVM is the driver *and* the executors, so it grows with the data; on a
cluster the executors' share moves to executor pods). Both engines must plan the same counts.
The crossover (where Spark starts winning) is the first measured size where it is faster, or
extrapolated from a linear fit of both engines' times. Nothing is asserted; timings are
printed.

    .venv/bin/python bench/spark.py [--sizes 100000,1000000] [--snapshots 500] [--master local[2]]
                                     [--operation clean-orphans|expire] [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
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

GOAL_MEMORY_RATIO = 1.2
DAY_MS = 86_400_000
_RESULT = "BENCH-RESULT "


def spec_for(files: int, snapshots: int) -> _synth.SynthSpec:
    """bench/expire.py's layout (Java-style manifest merging), with the snapshot count fixed
    across sizes so only the file count changes; ~1% orphan data files, 20 orphan manifests."""
    return _synth.SynthSpec(
        snapshots=snapshots, files=files, snapshots_per_partition=max(5, snapshots // 40),
        compact_every=10 if snapshots >= 100 else 5, tag_every=max(5, snapshots // 8),
        merge_min_count=30 if snapshots >= 300 else 10, manifest_target=max(200, min(4_000, files // 25)),
        full_compaction_deletes=max(1_000, min(20_000, files // 5)), writer="java",
        orphan_files=max(10, files // 100), orphan_manifests=20)


# -- measurement in a child process --------------------------------------------------------------
def _vm_hwm_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _request(args: argparse.Namespace) -> Any:
    from tablekeeper.core.reclaim.expire import retention
    from tablekeeper.spark import job_request

    now = int(time.time() * 1000)
    if args.operation == "clean-orphans":
        return job_request.JobRequest("clean-orphans", args.warehouse, _synth.IDENTIFIER, now_ms=now + 2 * DAY_MS,
                                      dry_run=args.dry_run, parallelism=args.parallelism or None)
    kept = retention.from_options({}, retention.RetentionFlags(
        retain_min=args.retain, time_retained=timedelta(0), expire_limit=10_000_000))
    return job_request.JobRequest("expire", args.warehouse, _synth.IDENTIFIER, retention=kept, now_ms=now,
                                  dry_run=args.dry_run, parallelism=args.parallelism or None)


def child(args: argparse.Namespace) -> int:
    out: dict[str, Any] = {"engine": args.child}
    if args.child == "local":
        from tablekeeper.spark import dispatch

        base = _rss_kb(os.getpid())
        t0 = time.perf_counter()
        result = dispatch.run_local(_request(args))
        out["seconds"] = time.perf_counter() - t0
        out["session_seconds"] = 0.0
        out["python_base_kb"] = base
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        from tablekeeper.spark import job, stages

        t0 = time.perf_counter()
        builder = SparkSession.builder.master(args.master).appName("tablekeeper-bench")
        for key, value in {"spark.driver.memory": args.driver_memory, "spark.ui.enabled": "false",
                           "spark.ui.showConsoleProgress": "false", "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
                           "spark.sql.shuffle.partitions": str(args.parallelism or 8),
                           "spark.default.parallelism": str(args.parallelism or 8)}.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        job.worker_pids(spark, 2)  # warm-up: Python workers started, JVM past its first job
        out["session_seconds"] = time.perf_counter() - t0
        out["python_base_kb"] = _rss_kb(os.getpid())
        t1 = time.perf_counter()
        result = job.run(spark, _request(args))
        out["seconds"] = time.perf_counter() - t1
        gateway = getattr(spark.sparkContext, "_gateway", None)
        proc = getattr(gateway, "proc", None)
        out["jvm_peak_kb"] = _vm_hwm_kb(proc.pid) if proc is not None else 0
        out["phases"] = dict(stages.PHASES)
        out["spark_jobs"] = result.spark_jobs
        out["python_peak_kb"] = _vm_hwm_kb(os.getpid())
        spark.stop()
    # VmHWM, not ru_maxrss: Linux carries the parent's RSS at fork into a child's ru_maxrss
    # across exec (the parent just built a large table), VmHWM counts this image only
    out.setdefault("python_peak_kb", _vm_hwm_kb(os.getpid()))
    out["planned"] = result.planned_files
    out["deleted"] = result.deleted
    out["candidates"] = result.details.get("candidates")
    out["status"] = result.status
    print(_RESULT + json.dumps(out), flush=True)
    return 0


def measure(engine_name: str, warehouse: str, args: argparse.Namespace) -> dict[str, Any]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", engine_name, "--warehouse", warehouse,
            "--operation", args.operation, "--master", args.master, "--driver-memory", args.driver_memory,
            "--retain", str(args.retain), "--parallelism", str(args.parallelism)]
    if args.dry_run:
        argv.append("--dry-run")
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    lines = [x for x in done.stdout.splitlines() if x.startswith(_RESULT)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{engine_name} run failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return dict(json.loads(lines[-1][len(_RESULT):]))


# -- orchestration ---------------------------------------------------------------------------------
def _mb(kb: float) -> str:
    return f"{kb / 1024:7.0f} MB"


def _fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least-squares t = a + b * n."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / var if var else 0.0
    return mean_y - slope * mean_x, slope


def crossover(rows: list[dict[str, Any]], key: str) -> str:
    for row in rows:
        if row["spark"][key] < row["local"][key]:
            return f"{row['files']:,} files (first measured size where Spark is faster)"
    if len(rows) < 2:
        return "not within the measured size (one size only: no extrapolation)"
    a_l, b_l = _fit([(r["table_files"], r["local"][key]) for r in rows])
    a_s, b_s = _fit([(r["table_files"], r["spark"][key]) for r in rows])
    if b_l <= b_s:
        return (f"not within measured sizes; Spark's time grows at least as fast per file here "
                f"({b_s * 1e6:.1f} vs {b_l * 1e6:.1f} s per million files): no crossover on this machine")
    n = (a_s - a_l) / (b_l - b_s)
    return f"~{n:,.0f} table files (extrapolated from a linear fit; not measured)"


def run(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--sizes", default="100000,1000000", help="data files per table, comma-separated")
    p.add_argument("--snapshots", type=int, default=500, help="snapshots per table (same for every size)")
    p.add_argument("--operation", choices=("clean-orphans", "expire"), default="clean-orphans")
    p.add_argument("--retain", type=int, default=50, help="expire: snapshots retained")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--driver-memory", default="3g")
    p.add_argument("--parallelism", type=int, default=8, help="partitions of every Spark I/O stage")
    p.add_argument("--dry-run", action="store_true", help="plan only (no deletions) in both engines")
    p.add_argument("--workdir", help="where tables are built (default: a temp dir, removed afterwards)")
    p.add_argument("--keep", action="store_true", help="keep the workdir")
    p.add_argument("--child", choices=("local", "spark"), help=argparse.SUPPRESS)
    p.add_argument("--warehouse", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args)
        return {}
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    workdir = args.workdir or tempfile.mkdtemp(prefix="tk-bench-spark-")
    rows: list[dict[str, Any]] = []
    print(f"bench/spark.py: {args.operation}{' (dry run)' if args.dry_run else ''}, master {args.master}, "
          f"parallelism {args.parallelism}, {args.snapshots} snapshots per table, cpu count {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    try:
        for size in sizes:
            base = os.path.join(workdir, f"t{size}")
            if not os.path.exists(base):
                t0 = time.perf_counter()
                built = _synth.build_table(base, spec_for(size, args.snapshots))
                print(f"\n{size:,} files: built in {time.perf_counter() - t0:.1f}s "
                      f"({built.data_files:,} data files incl. extra/orphans, {built.manifest_files:,} manifest files)")
                table_files = built.data_files + built.manifest_files + args.snapshots
                del built
                _synth.release_memory()  # children fork from this process
            else:
                table_files = sum(len(f) for _, _, f in os.walk(base))
                print(f"\n{size:,} files: reusing {base}")
            from tablekeeper.spark import engine_choice, job_request, run_steps

            estimate = engine_choice.estimate_plan_size(run_steps.open_request_table(
                job_request.JobRequest("clean-orphans", base, _synth.IDENTIFIER)))
            print(f"  engine=auto estimate: {estimate:,} (Spark above {engine_choice.spark_threshold():,})")
            result: dict[str, Any] = {"files": size, "table_files": table_files, "estimate": estimate}
            for name in ("local", "spark"):
                copy = os.path.join(workdir, f"{name}-{size}")
                shutil.rmtree(copy, ignore_errors=True)
                _synth.copy_tree(base, copy)
                m = measure(name, copy, args)
                m["total"] = m["seconds"] + m["session_seconds"]
                result[name] = m
                shutil.rmtree(copy, ignore_errors=True)
            loc, spk = result["local"], result["spark"]
            same = loc["planned"] == spk["planned"] and loc["deleted"] == spk["deleted"]
            print(f"  planned {spk['planned']} deleted {spk['deleted']}: "
                  f"{'same as in-process' if same else 'DIFFERENT from in-process ' + str(loc['planned'])}")
            print(f"  in-process  {loc['seconds']:8.1f}s  {table_files / loc['seconds']:10,.0f} files/s"
                  f"   peak RSS {_mb(loc['python_peak_kb'])}")
            print(f"  spark job   {spk['seconds']:8.1f}s  {table_files / spk['seconds']:10,.0f} files/s"
                  f"   + session start {spk['session_seconds']:.1f}s = {spk['total']:.1f}s"
                  f" ({table_files / spk['total']:,.0f} files/s)")
            print(f"  spark driver (Python) peak RSS {_mb(spk['python_peak_kb'])} "
                  f"(+{(spk['python_peak_kb'] - spk['python_base_kb']) / 1024:.0f} MB during the job); "
                  f"JVM (driver + local executors) peak RSS {_mb(spk['jvm_peak_kb'])}")
            print(f"  ratio spark/in-process time: job {spk['seconds'] / loc['seconds']:.2f}x, "
                  f"with start-up {spk['total'] / loc['total']:.2f}x")
            print(f"  Spark jobs of the run: {spk.get('spark_jobs')}")
            slow = sorted(spk.get("phases", {}).items(), key=lambda kv: -kv[1])[:4]
            print("  slowest Spark planning phases: " + ", ".join(f"{k} {v:.1f}s" for k, v in slow))
            result["same"] = same
            rows.append(result)
        print("\nsummary")
        print(f"  {'files':>10} {'in-process s':>13} {'spark job s':>12} {'spark+start s':>14} "
              f"{'in-proc RSS':>12} {'driver RSS':>11} {'JVM RSS':>9}")
        for r in rows:
            print(f"  {r['files']:>10,} {r['local']['seconds']:>13.1f} {r['spark']['seconds']:>12.1f} "
                  f"{r['spark']['total']:>14.1f} {r['local']['python_peak_kb'] / 1024:>10.0f}MB "
                  f"{r['spark']['python_peak_kb'] / 1024:>9.0f}MB {r['spark']['jvm_peak_kb'] / 1024:>7.0f}MB")
        if len(rows) >= 2:
            small, large = rows[0], rows[-1]
            ratio = large["spark"]["python_peak_kb"] / small["spark"]["python_peak_kb"]
            local_ratio = large["local"]["python_peak_kb"] / small["local"]["python_peak_kb"]
            verdict = "PASS" if ratio <= GOAL_MEMORY_RATIO else "MISS"
            print(f"  driver peak RSS {large['files']:,} vs {small['files']:,} files: {ratio:.2f}x "
                  f"(goal <= {GOAL_MEMORY_RATIO}x) {verdict}; in-process: {local_ratio:.2f}x; "
                  f"JVM: {large['spark']['jvm_peak_kb'] / max(1, small['spark']['jvm_peak_kb']):.2f}x")
        print(f"  Spark starts winning (job only):       {crossover(rows, 'seconds')}")
        print(f"  Spark starts winning (with start-up):  {crossover(rows, 'total')}")
        print(f"  both engines planned the same counts at every size: {all(r['same'] for r in rows)}")
        return {"rows": rows}
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
