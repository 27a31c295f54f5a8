"""How fast dependents react: from a catalog becoming Ready to N children Ready.

The Kubernetes API is the operator tests' emulator (kmock + CRD admission, in this process); the
operator is the real one (``tablekeeper.operator.main.register``) in a thread, with the default
intervals (periodic check 300 s, retries from 10 s, no jitter): only the operator's reaction to a
dependency becoming Ready can bring the children to Ready within seconds.

1. baseline: a catalog and a table that are Ready, then N PaimonTags applied at once: seconds
   until every one is Ready;
2. reaction: a catalog whose warehouse does not exist yet, its table and N PaimonTags (all
   ``TableNotReady``, their retries backing off); the warehouse appears and the catalog is asked
   for a re-check (``tablekeeper.io/recheck``): seconds from the catalog's ``Ready`` to every
   child's, and the ratio against the baseline.

Nothing is asserted.

    .venv/bin/python bench/operator_reactions.py [--children 100]
"""

from __future__ import annotations

import sys

if __package__ in (None, "") and __name__ == "__main__":
    # run as a script, bench/ comes first on sys.path and this file would shadow the standard
    # library's ``operator``: put the repository root there instead, before anything imports it
    sys.path[0] = __file__.rsplit("/", 2)[0] if __file__.count("/") >= 2 else "."

import argparse  # noqa: E402
import asyncio  # noqa: E402
import importlib.util  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import kmock  # noqa: E402

from tablekeeper.operator import main as operator_main  # noqa: E402
from tablekeeper.operator.settings import OperatorConfig  # noqa: E402
from tests.operator.conftest import OPERATOR_NAMESPACE, Harness, obj  # noqa: E402
from tests.support import paimon as P  # noqa: E402
from tests.support.k8s import eventually, load_crds, register_crds  # noqa: E402

_SCALE = Path(__file__).resolve().with_name("operator_scale.py")
_spec = importlib.util.spec_from_file_location("tk_bench_operator_scale", _SCALE)
assert _spec is not None and _spec.loader is not None
operator_scale = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(operator_scale)  # its emulator without kmock's quadratic request scan


def _settings() -> Any:
    settings = operator_main.build_settings()
    settings.process.ultimate_exiting_timeout = None
    settings.watching.server_timeout = 5
    settings.watching.client_timeout = 10
    settings.networking.error_backoffs = [0.1, 0.2]
    return settings


def _ready(h: Harness, kind: str, namespace: str, names: list[str]) -> bool:
    for name in names:
        cond = h.condition(kind, name, namespace=namespace)
        if not cond or cond["status"] != "True":
            return False
    return True


async def _objects(h: Harness, namespace: str, warehouse: Path, children: int) -> list[str]:
    h.add_namespace(namespace)
    await h.apply(obj("PaimonCatalog", "lake", {"warehouse": str(warehouse), "writerTimeZone": "UTC"},
                      namespace=namespace))
    await h.apply(obj("PaimonTable", "orders", {"catalogRef": {"kind": "PaimonCatalog", "name": "lake"},
                                                "database": "sales", "table": "orders"}, namespace=namespace))
    return [f"t{i:04d}" for i in range(children)]


async def _tags(h: Harness, namespace: str, names: list[str]) -> None:
    await asyncio.gather(*(h.apply(obj("PaimonTag", name, {"tableRef": {"name": "orders"}, "snapshotId": i % 3 + 1},
                                       namespace=namespace)) for i, name in enumerate(names)))


async def run(children: int, timeout: float) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="tk-bench-operator-"))
    template = work / "template"
    P.build_history(str(template), "sales.orders", commits=3)
    config = OperatorConfig(initial_jitter=0, schedule_jitter=0, cache_ttl=0, operator_namespace=OPERATOR_NAMESPACE)
    out: dict[str, float] = {}
    try:
        async with operator_scale.BenchEmulator() as emu, kmock.Server(emu):
            kinds = register_crds(emu, load_crds())
            h = Harness(emu, kinds, _settings())
            h.add_namespace(OPERATOR_NAMESPACE)
            await h.start(replace(config))
            try:
                # 1. baseline: everything it depends on is Ready already
                shutil.copytree(template, work / "ready")
                names = await _objects(h, "ready", work / "ready", children)
                await eventually(lambda: _ready(h, "PaimonTable", "ready", ["orders"]), timeout=timeout)
                t0 = time.monotonic()
                await _tags(h, "ready", names)
                await eventually(lambda: _ready(h, "PaimonTag", "ready", names), timeout=timeout, interval=0.02)
                out["baseline"] = time.monotonic() - t0

                # 2. reaction: the catalog becomes Ready while every child waits for it
                late = work / "late"
                names = await _objects(h, "late", late, children)
                await _tags(h, "late", names)

                def all_waiting() -> bool:
                    return all((h.condition("PaimonTag", n, namespace="late") or {}).get("reason") == "TableNotReady"
                               for n in names)
                await eventually(all_waiting, timeout=timeout, interval=0.05)
                shutil.copytree(template, late)
                await h.patch("PaimonCatalog", "lake", {"metadata": {"annotations": {
                    "tablekeeper.io/recheck": "bench"}}}, namespace="late")
                await eventually(lambda: _ready(h, "PaimonCatalog", "late", ["lake"]), timeout=timeout, interval=0.02)
                t1 = time.monotonic()
                await eventually(lambda: _ready(h, "PaimonTag", "late", names), timeout=timeout, interval=0.02)
                out["reaction"] = time.monotonic() - t1
            finally:
                await h.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=100, help="PaimonTags of the one table (default 100)")
    parser.add_argument("--timeout", type=float, default=300.0, help="give up after this many seconds per phase")
    args = parser.parse_args(argv)
    with operator_scale._fast_membership():
        result = asyncio.run(run(args.children, args.timeout))
    n = args.children
    print(f"baseline: {n} PaimonTags applied on a Ready table -> all Ready in {result['baseline']:.2f} s")
    print(f"reaction: catalog Ready -> its table and {n} waiting PaimonTags Ready in {result['reaction']:.2f} s "
          f"({result['reaction'] / result['baseline']:.2f}x the baseline; periodic check 300 s, retries from 10 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
