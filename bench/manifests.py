"""Manifest decode benchmark: pypaimon vs raw fastavro vs tablekeeper, in one process.

Writes a real table with pypaimon, replicates one of its manifest entries into a synthetic
manifest of N entries (same writer schema and codec, unique file names, varied buckets), then
times on the same bytes:

  (a) pypaimon ``ManifestFileManager.read(name, drop_stats=False)``
  (b) raw ``fastavro.reader`` decoding every record (iterated, not kept: the strict baseline)
  (c) tablekeeper ``read_manifest`` (every field)
  (d) tablekeeper ``read_manifest_refs`` (planning projection)

and prints entries/s, the goal ratios with PASS/MISS, and peak Python heap per reader
(tracemalloc, in separate untimed runs). Nothing is asserted.

    .venv/bin/python bench/manifests.py [--entries N] [--repeat R]
"""

from __future__ import annotations

import argparse
import copy
import gc
import io
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tablekeeper.core.paimon import manifests  # noqa: E402
from tablekeeper.core.paimon.pypaimon.sample_data import commit_rows, create_orders_table  # noqa: E402
from tablekeeper.core.storage import FileIO  # noqa: E402

GOAL_VS_PYPAIMON = 10.0
GOAL_VS_RAW = 1 / 1.3  # raw_time / our_time
IDENTIFIER = "bench.orders"
MANIFEST_NAME = "manifest-bench-synthetic-0"


def build_manifest(workdir: str, entries: int) -> tuple[str, str]:
    """A pypaimon-written table plus a synthetic manifest of ``entries`` entries in its
    manifest directory. Returns (warehouse, manifest path)."""
    warehouse = os.path.join(workdir, "warehouse")
    create_orders_table(warehouse, IDENTIFIER, buckets=4)
    for day in range(3):
        commit_rows(warehouse, IDENTIFIER, [{"dt": f"2026-01-0{day + 1}", "order_id": i, "amount": i * 1.5}
                                            for i in range(day * 100, day * 100 + 100)])
    manifest_dir = os.path.join(warehouse, "bench.db", "orders", "manifest")
    source = next(os.path.join(manifest_dir, n) for n in sorted(os.listdir(manifest_dir))
                  if n.startswith("manifest-") and not n.startswith("manifest-list-"))
    with open(source, "rb") as f:
        reader = fastavro.reader(f)
        schema, codec = reader.writer_schema, reader.codec
        templates = [r for r in reader if isinstance(r, dict)]

    def records() -> Any:
        for i in range(entries):
            record = copy.deepcopy(templates[i % len(templates)])
            record["_BUCKET"] = i % 4
            record["_FILE"]["_FILE_NAME"] = f"data-{i:032x}-0.parquet"
            yield record

    path = os.path.join(manifest_dir, MANIFEST_NAME)
    with open(path, "wb") as f:
        fastavro.writer(f, schema, records(), codec=codec, sync_interval=16000)
    return warehouse, path


def _best(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        count = fn()
        best = min(best, time.perf_counter() - start)
    return best, count


def _peak_bytes(fn: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        tracemalloc.stop()
    return peak


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000, help="entries in the synthetic manifest")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per reader (best kept); pypaimon runs once")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc runs")
    args = parser.parse_args(argv)

    from pypaimon import CatalogFactory
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager

    with tempfile.TemporaryDirectory(prefix="tk-bench-manifests-") as workdir:
        t0 = time.perf_counter()
        warehouse, path = build_manifest(workdir, args.entries)
        size = os.path.getsize(path)
        print(f"synthetic manifest: {args.entries:,} entries, {size / 1e6:.1f} MB, built in "
              f"{time.perf_counter() - t0:.1f}s")
        file_io = FileIO.for_uri(path)
        table = CatalogFactory.create({"warehouse": warehouse}).get_table(IDENTIFIER)
        pypaimon_mgr = ManifestFileManager(table)

        def pypaimon_read() -> list[Any]:
            result: list[Any] = pypaimon_mgr.read(MANIFEST_NAME, drop_stats=False)
            return result

        def raw_iterate() -> int:
            with open(path, "rb") as f:
                data = f.read()
            n = 0
            for _ in fastavro.reader(io.BytesIO(data)):
                n += 1
            return n

        def raw_list() -> list[Any]:
            with open(path, "rb") as f:
                return list(fastavro.reader(io.BytesIO(f.read())))

        readers: dict[str, Callable[[], int]] = {
            "pypaimon ManifestFileManager.read": lambda: len(pypaimon_read()),
            "raw fastavro.reader (iterate)": raw_iterate,
            "raw fastavro.reader (list)": lambda: len(raw_list()),
            "tablekeeper read_manifest": lambda: len(manifests.read_manifest(file_io, path)),
            "tablekeeper read_manifest_refs": lambda: len(manifests.read_manifest_refs(file_io, path)),
        }
        times: dict[str, float] = {}
        for label, fn in readers.items():
            seconds, count = _best(fn, 1 if label.startswith("pypaimon") else args.repeat)
            if count != args.entries:
                print(f"  !! {label} returned {count} entries, expected {args.entries}")
            times[label] = seconds
            print(f"{label:<38} {seconds:8.3f}s  {args.entries / seconds:12,.0f} entries/s")

        pyp = times["pypaimon ManifestFileManager.read"]
        raw = times["raw fastavro.reader (iterate)"]
        ours = times["tablekeeper read_manifest"]
        refs = times["tablekeeper read_manifest_refs"]
        print()
        print(f"ratio ours vs pypaimon (read_manifest): {pyp / ours:.1f}x  goal >= {GOAL_VS_PYPAIMON:.0f}x  "
              f"{_verdict(pyp / ours >= GOAL_VS_PYPAIMON)}")
        print(f"ratio ours vs pypaimon (read_manifest_refs): {pyp / refs:.1f}x  goal >= {GOAL_VS_PYPAIMON:.0f}x  "
              f"{_verdict(pyp / refs >= GOAL_VS_PYPAIMON)}")
        print(f"ratio ours vs raw fastavro (read_manifest, raw_time/our_time): {raw / ours:.2f}  "
              f"goal >= {GOAL_VS_RAW:.2f}  {_verdict(raw / ours >= GOAL_VS_RAW)}")
        print(f"ratio ours vs raw fastavro (read_manifest_refs, raw_time/our_time): {raw / refs:.2f}  "
              f"goal >= {GOAL_VS_RAW:.2f}  {_verdict(raw / refs >= GOAL_VS_RAW)}")

        if not args.no_memory:
            print()
            print("peak Python heap (tracemalloc, untimed runs):")
            memory: dict[str, Callable[[], Any]] = {
                "pypaimon ManifestFileManager.read": pypaimon_read,
                "raw fastavro.reader (list)": raw_list,
                "tablekeeper read_manifest": lambda: manifests.read_manifest(file_io, path),
                "tablekeeper read_manifest_refs": lambda: manifests.read_manifest_refs(file_io, path),
            }
            for label, fn in memory.items():
                peak = _peak_bytes(fn)
                print(f"{label:<38} {peak / 1e6:8.1f} MB  {peak / args.entries:8.0f} B/entry")
        print(f"max RSS of this process: {_max_rss_mb():.0f} MB")
    return 0


def _max_rss_mb() -> float:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX
        return float("nan")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    raise SystemExit(main())
