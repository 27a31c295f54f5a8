"""Start-up of a CLI process (issue 13, point 7): which modules ``tablekeeper --help``, a local
``clean-orphans``, ``expire`` and ``tag list`` load. A module-set assertion, never a time one: each command imports the
engine modules it runs when it runs, and a local table is served by ``os`` alone, so fsspec,
asyncio, pyarrow, pypaimon and friends (tenths of a second of every process) stay unloaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import paimon as P

#: Runs the CLI in a fresh interpreter, then writes its exit code and ``sorted(sys.modules)``.
_PROBE = """
import sys
from tablekeeper.cli.main import main
code = main(sys.argv[2:])
import json
with open(sys.argv[1], "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""

#: Never needed by a command on a local table.
HEAVY = ("fsspec", "asyncio", "aiohttp", "s3fs", "aiobotocore", "botocore", "pyarrow", "pandas", "numpy",
         "pypaimon", "importlib.metadata", "email", "multiprocessing", "pyspark", "kopf", "kubernetes", "rich",
         "tablekeeper.spark", "tablekeeper.reconcile", "tablekeeper.operator",
         # manifest lists are decoded natively, trusted on a self-test encoded without fastavro
         "fastavro", "cramjam")
#: Not loaded by ``--help`` (nor by a bad command line): the storage layer and the plan types come
#: with the first table a command opens.
HELP_UNUSED = ("tablekeeper.core.storage", "tablekeeper.core.plans", "tablekeeper.core.paimon.table")
#: Object-store support a local table never needs: retries and their jitter (local calls are not
#: retried), segmented S3 listings, credential masking (error messages of remote stores), the
#: remote stores' implementations.
REMOTE_ONLY = ("tablekeeper.core.storage.layers.retry", "tablekeeper.core.storage.backends.segmented",
               "tablekeeper.core.storage.secrets", "tablekeeper.core.storage.backends.oss_headers", "random",
               "tablekeeper.core.storage.backends.fsspec_io", "tablekeeper.core.storage.backends.remote_deletes",
               "tablekeeper.core.storage.backends.object_store", "tablekeeper.core.storage.backends.s3",
               "tablekeeper.core.storage.backends.gcs", "tablekeeper.core.storage.backends.azure",
               "tablekeeper.core.storage.backends.hdfs")
#: Not on the path of a local clean-orphans either (a tag's retention, a host name by socket, thread
#: pools with logging: one delete thread on local disk; URLs of remote stores; the forked manifest
#: decoder and its pipes, signals and tracebacks; root metadata, partition paths, consumers and
#: hint writes, which only expirations read or write; the duration parser: the thresholds are
#: points in time or defaults; the crash-test kill switch's signal module).
ORPHANS_UNUSED = ("decimal", "socket", "concurrent.futures", "logging", "urllib.parse",
                  "tablekeeper.core.reclaim.reach.forked_decode", "tablekeeper.core.reclaim.reach.child_process", "mmap", "select", "signal",
                  "traceback", "tablekeeper.core.reclaim.reach.root_metadata", "tablekeeper.core.paimon.pypaimon.adapter",
                  "tablekeeper.core.paimon.partition_paths", "tablekeeper.core.paimon.metadata.consumer",
                  "tablekeeper.core.safety.concurrency.hint_writes", "tablekeeper.core.values.durations",
                  "tablekeeper.core.reclaim.expire.decision") + REMOTE_ONLY
#: ``tag list`` reads tag files only: nothing that reads manifests or decides deletions.
TAG_LIST_UNUSED = ("tablekeeper.core.reclaim.reach.reachability", "tablekeeper.core.reclaim.orphans.decision", "tablekeeper.core.paimon.manifests",
                   "tablekeeper.core.paimon.manifests.readers", "tablekeeper.core.paimon.manifests.avro_container",
                   "tablekeeper.core.plans.execution", "tablekeeper.core.safety.concurrency.lease", "zstandard") + REMOTE_ONLY
#: Needed by no command's start-up either; loaded by the commands that use them.
ENGINE = ("fastavro", "zstandard", "tablekeeper.core.reclaim.orphans", "tablekeeper.core.reclaim.expire", "tablekeeper.core.refs.tags",
          "tablekeeper.core.refs.branches", "tablekeeper.core.reclaim.orphans.inventory", "tablekeeper.core.paimon.manifests")


def _modules(tmp_path: Path, *args: str) -> tuple[int, set[str]]:
    out = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TABLEKEEPER_")}
    done = subprocess.run([sys.executable, "-c", _PROBE, str(out), *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert out.exists(), done.stderr
    result: dict[str, Any] = json.loads(out.read_text())
    return int(result["code"]), set(result["modules"])


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The ``names`` (packages count with their sub-modules) among ``modules``."""
    return sorted(n for n in names if n in modules or any(m.startswith(n + ".") for m in modules))


def test_help_loads_no_engine_module(tmp_path: Path) -> None:
    code, modules = _modules(tmp_path, "--help")
    assert code == 0
    assert _loaded(modules, HEAVY + ENGINE + HELP_UNUSED) == []
    assert "click" in modules and "tablekeeper.cli.main" in modules  # the probe ran the CLI


def test_root_help_lists_every_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The help text is built from the commands themselves, each with its one-line help."""
    from tablekeeper.cli.main import cli, main

    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    assert set(cli.commands) >= {"tag", "branch", "expire", "expire-changelog", "expire-partitions",
                                 "clean-orphans", "show", "plan", "apply", "demo", "operator"}
    for name, command in cli.commands.items():
        line = next(line for line in text.splitlines() if line.strip().startswith(name + " "))
        assert command.get_short_help_str(limit=40).split()[0] in line, (name, line)


@pytest.fixture
def orphaned(tmp_path: Path) -> tuple[str, Path, dict[str, Any]]:
    """A pypaimon-written table with one planted orphan data file, two days old."""
    warehouse = tmp_path / "wh"
    P.build_history(str(warehouse), commits=3)
    orphan = P.plant_orphan(warehouse / "db.db" / "orders", "data-00000000-0000-0000-0000-000000000000-0.parquet",
                            b"not referenced by any snapshot")
    return str(warehouse), orphan, P.snapshot_views(str(warehouse), "db.orders")


def test_local_clean_orphans_loads_no_remote_store_or_pypaimon(
        tmp_path: Path, orphaned: tuple[str, Path, dict[str, Any]]) -> None:
    warehouse, orphan, views = orphaned
    code, dry = _modules(tmp_path, "clean-orphans", "-w", warehouse, "db.orders", "--dry-run", "-o", "json")
    assert code == 0 and orphan.exists()
    code, modules = _modules(tmp_path, "clean-orphans", "-w", warehouse, "db.orders", "-o", "json")
    assert code == 0 and not orphan.exists()  # the whole path ran: listing, roots, manifests, delete
    code, at = _modules(tmp_path, "clean-orphans", "-w", warehouse, "db.orders", "--older-than", "1000",
                        "--dry-run", "-o", "json")  # a threshold given as a time, as the peer bench does
    assert code == 0
    for loaded in (dry, modules, at):
        assert _loaded(loaded, HEAVY + ORPHANS_UNUSED) == []
        assert "tablekeeper.core.reclaim.orphans" in loaded and "tablekeeper.core.reclaim.expire" not in loaded
    assert P.snapshot_views(warehouse, "db.orders") == views  # pypaimon reads every snapshot as before


def test_local_expire_of_common_partition_types_loads_no_pypaimon(tmp_path: Path) -> None:
    """Data paths of STRING (and the other common) partitions are rendered without pypaimon
    (``core/paimon/partition_paths.py``): a local expiration that deletes data files of
    overwritten partitions, escaping-worthy values included, never imports it."""
    warehouse = tmp_path / "wh"
    t = P.append_table(str(warehouse))
    for i, dt in enumerate(["2026-01-01", "a b/c:d", "", "2026-01-01", "a b/c:d", ""]):
        P.overwrite(t, P.rows(dt, i * 10, 2), {"dt": dt})
    root = warehouse / "db.db" / "orders"
    before = P.files_under(root)
    latest = P.snapshot_views(str(warehouse), "db.orders")["main@latest"]
    code, modules = _modules(tmp_path, "expire", "-w", str(warehouse), "db.orders", "--retain-min", "1",
                             "--retain-max", "1", "--time-retained", "0 s", "-o", "json")
    assert code == 0
    gone = before - P.files_under(root)
    assert {p.split("/", 1)[0] for p in gone if "/bucket-" in p} == {
        "dt=2026-01-01", "dt=a b%2Fc%3Ad", "dt=__DEFAULT_PARTITION__"}, gone  # data of every partition went
    assert _loaded(modules, ("pypaimon", "pyarrow", "numpy", "pandas", "fsspec", "pyspark") + REMOTE_ONLY) == []
    assert "tablekeeper.core.reclaim.expire" in modules
    views = P.snapshot_views(str(warehouse), "db.orders")
    assert views["main@latest"] == latest and len([k for k in views if "@snapshot-" in k]) == 1


def test_local_tag_list_reads_no_manifest_module(tmp_path: Path) -> None:
    """Listing tags reads the tag files (and fork points) only: the manifest readers, the
    reachability engine, decisions, the executor and the lease stay unloaded."""
    warehouse = tmp_path / "wh"
    P.build_history(str(warehouse), commits=2)
    assert main_ok(["tag", "create", "-w", str(warehouse), "db.orders", "nightly", "--time-retained", "7 d"])
    code, modules = _modules(tmp_path, "tag", "list", "-w", str(warehouse), "db.orders", "-o", "json")
    assert code == 0
    assert _loaded(modules, HEAVY + TAG_LIST_UNUSED) == []
    assert "tablekeeper.core.refs.tags" in modules


def main_ok(argv: list[str]) -> bool:
    from tablekeeper.cli.main import main

    return main(argv) == 0
