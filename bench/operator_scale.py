"""Operator benchmark: N PaimonTag CRs over M tables, reconciled by the real operator.

The Kubernetes API is the operator tests' emulator (kmock + CRD admission, in this process); the
operator is ``tablekeeper operator`` in a subprocess, logged in through a kubeconfig, so its peak
RSS is its own. Tables are copies of one small pypaimon table (2 snapshots) in a local warehouse.
After the PaimonTables are Ready, the PaimonTags are POSTed at once; the clock stops when every
one is ``Ready`` (tag created in storage, status written).

Prints: table and tag reconcile throughput, API requests the operator made per tag, the operator's
peak RSS (VmHWM), and a check that storage holds exactly the tags. Nothing is asserted.

    .venv/bin/python bench/operator_scale.py [--tables 100] [--tags-per-table 10] [--apiserver]

``--apiserver`` then runs the same workload against a real kube-apiserver (bench/operator_apiserver.py)
and prints its numbers with the ratios against this emulator run; ``--audit LOG`` adds the server's
audit log and a table of which client wrote which fields (bench/apiserver_audit.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import attrs  # noqa: E402
import kmock  # noqa: E402
import yaml  # noqa: E402

from tablekeeper.core.paimon.table import open_table  # noqa: E402
from tests.support import paimon as P  # noqa: E402
from tests.support.k8s import OperatorEmulator, load_crds, register_crds, url_of  # noqa: E402

NS = "bench"
#: The last emulator run's numbers (the baseline of ``--apiserver``).
LAST_RUN: dict[str, Any] = {}


@contextlib.contextmanager
def _fast_membership() -> Iterator[None]:
    """kmock decides which reaction serves a request by ``request in view``, which scans every
    request ever received through the view's filters: quadratic over a benchmark's tens of
    thousands of requests. Evaluate the filter chain on the one request instead (same answer for
    the filter/priority chains the emulator uses; other views keep kmock's own check)."""
    from kmock._internal import dsl, rendering

    original = dsl.View.__contains__

    def contains(self: Any, item: Any) -> bool:
        if isinstance(item, rendering.Request):
            if isinstance(self, dsl.Root):
                return True
            if type(self) is dsl.Filter:
                return bool(self.criteria(item)) and contains(self._source, item)
            if type(self) is dsl.Priority:
                return contains(self._source, item)
        return bool(original(self, item))

    dsl.View.__contains__ = contains  # type: ignore[method-assign]
    try:
        yield
    finally:
        dsl.View.__contains__ = original  # type: ignore[method-assign]


@attrs.define(kw_only=True)
class BenchEmulator(OperatorEmulator):
    """The emulator, keeping only its latest requests (the benchmark never asserts on them)."""

    async def __call__(self, raw_request: Any) -> Any:
        try:
            return await super().__call__(raw_request)
        finally:
            if len(self._requests) > 4096:
                del self._requests[:-512]


def build_warehouse(root: Path, tables: int) -> Path:
    """``bench.t000`` .. : copies of one 2-snapshot table."""
    template = root / "template"
    P.build_history(str(template), "bench.template", commits=2)
    warehouse = root / "wh"
    (warehouse / "bench.db").mkdir(parents=True)
    for i in range(tables):
        shutil.copytree(template / "bench.db" / "template", warehouse / "bench.db" / f"t{i:03d}")
    return warehouse


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "emulator",
        "clusters": [{"name": "emulator", "cluster": {"server": server}}],
        "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "user": "bench", "namespace": NS}}],
        "users": [{"name": "bench", "user": {"token": "bench"}}],
    }))
    return path


def peak_rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def ready(emu: OperatorEmulator, keys: list[tuple[Any, str, str]]) -> int:
    """How many of the objects ``keys`` have ``Ready=True``."""
    count = 0
    for key in keys:
        if key not in emu.objects:
            continue
        for cond in (emu.objects[key].raw.get("status") or {}).get("conditions") or ():
            if cond.get("type") == "Ready" and cond.get("status") == "True":
                count += 1
    return count


async def wait_for(emu: OperatorEmulator, keys: list[tuple[Any, str, str]], timeout: float,
                   proc: subprocess.Popen[bytes]) -> float:
    start = time.monotonic()
    while ready(emu, keys) < len(keys):
        if proc.poll() is not None:
            raise RuntimeError(f"the operator exited with {proc.returncode}")
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"only {ready(emu, keys)} of {len(keys)} objects Ready after {timeout} s")
        await asyncio.sleep(0.2)
    return time.monotonic() - start


async def post_all(emu: OperatorEmulator, url: str, bodies: list[dict[str, Any]], batch: int = 50) -> None:
    for i in range(0, len(bodies), batch):
        responses = await asyncio.gather(*(emu.post(url, json=b) for b in bodies[i:i + batch]))
        for resp in responses:
            if resp.status != 201:
                raise RuntimeError(f"POST {url}: {resp.status} {await resp.text()}")


async def run(tables: int, tags_per_table: int, timeout: float) -> int:
    with tempfile.TemporaryDirectory(prefix="tk-bench-operator-") as tmp:
        root = Path(tmp)
        t0 = time.monotonic()
        warehouse = build_warehouse(root, tables)
        print(f"warehouse: {tables} tables x 2 snapshots in {time.monotonic() - t0:.1f} s")
        async with BenchEmulator() as emu, kmock.Server(emu):
            kinds = register_crds(emu, load_crds())
            server = str(emu.url).rstrip("/")
            env = {**os.environ, "KUBECONFIG": str(kubeconfig(root / "kubeconfig", server)),
                   "TABLEKEEPER_RECONCILE_INTERVAL": "3600", "TABLEKEEPER_INITIAL_JITTER": "3600",
                   "TABLEKEEPER_RETRY_BASE_DELAY": "0.5", "TABLEKEEPER_RETRY_MAX_DELAY": "5",
                   "POD_NAMESPACE": NS}
            log = (root / "operator.log").open("wb")
            profile = ["-m", "cProfile", "-o", os.environ["TK_BENCH_PROFILE"]] if os.environ.get("TK_BENCH_PROFILE") else []
            proc = subprocess.Popen([sys.executable, *profile, "-m", "tablekeeper.cli.main", "operator", "--liveness=",
                                     "--metrics-port=0"], env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                await post_all(emu, url_of("paimoncatalogs", NS), [{
                    "apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonCatalog", "metadata": {"name": "lake"},
                    "spec": {"warehouse": str(warehouse), "writerTimeZone": "UTC"}}])
                await post_all(emu, url_of("paimontables", NS), [{
                    "apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonTable", "metadata": {"name": f"t{i:03d}"},
                    "spec": {"catalogRef": {"kind": "PaimonCatalog", "name": "lake"}, "database": "bench",
                             "table": f"t{i:03d}"}} for i in range(tables)])
                table_keys = [(kinds["PaimonTable"], NS, f"t{i:03d}") for i in range(tables)]
                tables_s = await wait_for(emu, table_keys, timeout, proc)
                calls_before = sum(1 for c in emu.api_calls if c[0].startswith("kopf"))
                n = tables * tags_per_table
                tags = [{"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonTag",
                         "metadata": {"name": f"t{i:03d}-tag{j:02d}"},
                         "spec": {"tableRef": {"name": f"t{i:03d}"}, "snapshotId": 1 + j % 2}}
                        for j in range(tags_per_table) for i in range(tables)]
                start = time.monotonic()
                await post_all(emu, url_of("paimontags", NS), tags)
                posted = time.monotonic() - start
                tag_keys = [(kinds["PaimonTag"], NS, t["metadata"]["name"]) for t in tags]
                tags_s = await wait_for(emu, tag_keys, timeout, proc) + posted
                calls = sum(1 for c in emu.api_calls if c[0].startswith("kopf")) - calls_before
                rss = peak_rss_kib(proc.pid)
            except BaseException:
                log.flush()
                print((root / "operator.log").read_text(errors="replace")[-4000:], file=sys.stderr)
                raise
            finally:
                proc.send_signal(signal.SIGTERM)
                try:
                    await asyncio.to_thread(proc.wait, 30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                log.close()
        in_storage = sum(len(open_table(str(warehouse), f"bench.t{i:03d}").tag_names()) for i in range(tables))
        if os.environ.get("TK_BENCH_LOG"):
            shutil.copy(root / "operator.log", os.environ["TK_BENCH_LOG"])
    print(f"tables: {tables} PaimonTables Ready in {tables_s:.1f} s ({tables / tables_s:.1f}/s)")
    print(f"tags:   {n} PaimonTags Ready in {tags_s:.1f} s -> {n / tags_s:.1f} tags/s "
          f"(POSTing them took {posted:.1f} s)")
    print(f"api:    {calls} requests by the operator while reconciling the tags ({calls / n:.1f} per tag)")
    print(f"rss:    operator peak RSS {rss / 1024:.0f} MiB" if rss is not None else "rss:    unavailable (no /proc)")
    print(f"check:  {in_storage} tags in storage (expected {n})")
    LAST_RUN.update(tags_s=tags_s, calls_per_tag=calls / n, rss_kib=rss)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--tags-per-table", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for Ready")
    parser.add_argument("--apiserver", action="store_true",
                        help="also run against a real kube-apiserver + etcd (scripts/k8s-testenv; bench/operator_apiserver.py); "
                             "the emulator run of the same size is the baseline")
    parser.add_argument("--recheck", type=float, default=20.0,
                        help="--apiserver: the operator's periodic re-check interval, seconds")
    parser.add_argument("--audit", type=Path, default=None, metavar="LOG",
                        help="--apiserver: keep the server's audit log of tablekeeper.io writes in LOG and print "
                             "who wrote which fields (bench/apiserver_audit.py)")
    args = parser.parse_args(argv)
    with _fast_membership():
        code = asyncio.run(run(args.tables, args.tags_per_table, args.timeout))
    if code or not args.apiserver:
        return code
    from bench import operator_apiserver

    print("--- the same against a real kube-apiserver + etcd")
    real = operator_apiserver.run(args.tables, args.tags_per_table, args.timeout, args.recheck,
                                  build_warehouse, peak_rss_kib, audit=args.audit)
    print(f"ratio:  apiserver/emulator time to all Ready {real['tags_s'] / LAST_RUN['tags_s']:.2f}x, "
          f"operator peak RSS {real['rss_kib'] / LAST_RUN['rss_kib']:.2f}x"
          if real["rss_kib"] and LAST_RUN.get("rss_kib") else "ratio:  unavailable")
    return 0


if __name__ == "__main__":
    sys.exit(main())
