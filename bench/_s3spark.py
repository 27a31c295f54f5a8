"""The Spark half of ``bench/s3.py``: expire and clean-orphans in process vs ``--engine spark``
on fresh copies of the same moto table, requests by kind (tablekeeper's own count, which
includes the executors' since issue 16's Spark side, and the server's), the computed minimum, the
ratio, and the wall time with the injected latency.

Each (operation, engine) pair runs on its own fresh copy, first without latency (the counts),
then, when ``latency_ms`` > 0 and ``bench/s3.py`` was not given ``--no-latency``, again on
another fresh copy with it (the time). The in-process run is the baseline of the same process:
the Spark line prints its time as a ratio to it. Spark runs ``local[2]`` with ``--parallelism``
(default 8, as the in-process deletes). The minimum is ``bench/s3.py``'s (``minimum_of``: the
distinct keys the server saw read and written, the flat listing's pages of the objects under the
table's prefix, the deletes per step, the lease, an expiration's intent and verify re-reads from
the table's shape before the run). With ``--breakdown`` each run's requests are broken down by
kind and file category, with the most repeated keys."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import _s3count

from tablekeeper.core.plans import request_minimum

ENGINES = ("local", "spark")


def compare(moto: Any, local: str, warehouse: str, ops: Sequence[tuple[str, list[str]]], table_prefix: str,
            latency_ms: float, cli_json: Callable[[list[str], str, str], tuple[dict[str, Any], float]],
            minimum_of: Callable[..., request_minimum.RequestMinimum], fmt: Callable[[dict[str, int]], str],
            parallelism: int) -> dict[str, Any]:
    """Run ``ops`` (name, CLI args) on both engines; returns the figures (also printed)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    _session()
    results: dict[str, Any] = {}
    print(f"\nin process vs --engine spark (local[2], --parallelism {parallelism}; fresh copy per run):")
    print(f"  {'operation':<14} {'engine':<6} {'counted by tablekeeper':<46} {'seen by the server':<50} "
          f"{'minimum':<34} ratio    seconds")
    breakdown = "--breakdown" in sys.argv
    if "--no-latency" in sys.argv:
        latency_ms = 0.0
    for name, args in ops:
        for engine in ENGINES:
            moto.fresh_copy(local, "wh")
            objects, shape = moto.objects_under(table_prefix), moto.shape(table_prefix)
            extra = ["--engine", "spark", "--parallelism", str(parallelism)] if engine == "spark" else []
            with _s3count.counting_proxy(moto.endpoint) as counts:
                out, seconds = cli_json([*args, *extra], counts.url, warehouse)
                server = counts.snapshot()
            files = _files_by_step(out)
            minimum = minimum_of(name, {"files": files}, counts, objects, shape)
            ratio = request_minimum.ratio(server, minimum)
            mine = out.get("requests", {})
            results[f"{name} {engine}"] = {"client": mine, "server": server, "minimum": minimum.as_dict(),
                                           "ratio": ratio, "seconds": seconds, "objects": objects}
            print(f"  {name:<14} {engine:<6} {fmt(mine):<46} {fmt(server):<50} {fmt(minimum.as_dict()):<34} "
                  f"{ratio:5.2f}x  {seconds:7.1f}s")
            if breakdown:
                print("\n".join(_s3count.breakdown(counts)))
    if latency_ms > 0:
        print(f"\n  with {latency_ms:g} ms per request:")
        for name, args in ops:
            base = None
            for engine in ENGINES:
                moto.fresh_copy(local, "wh")
                extra = ["--engine", "spark", "--parallelism", str(parallelism)] if engine == "spark" else []
                with _s3count.counting_proxy(moto.endpoint, latency_ms / 1000.0) as counts:
                    _out, seconds = cli_json([*args, *extra], counts.url, warehouse)
                    server = counts.snapshot()
                base = seconds if base is None else base
                results[f"{name} {engine} latency"] = {"seconds": seconds, "server": server}
                print(f"  {name:<14} {engine:<6} {seconds:8.1f}s  ({seconds / base:.2f}x in process)  "
                      f"server {fmt(server)}")
    return results


def _files_by_step(out: dict[str, Any]) -> dict[str, int]:
    """Deleted files by kind: the in-process JSON's ``files``, the Spark JSON's executed counts."""
    files = out.get("files")
    if isinstance(files, dict):
        return {k: int(v) for k, v in files.items()}
    executed = (out.get("executed") or {}).get("deleted") or {}
    return {k: int(v) for k, v in executed.items()}


def _session() -> Any:
    """The local[2] session every ``--engine spark`` run of this process reuses (started here,
    so its start-up is not in the first run's time)."""
    from tablekeeper.spark import session

    t0 = time.perf_counter()
    spark = session.local_session("local[2]", {"spark.ui.enabled": "false"})
    print(f"  (Spark session started in {time.perf_counter() - t0:.0f}s)")
    return spark
