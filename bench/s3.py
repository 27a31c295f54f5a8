"""S3 request-cost benchmark: requests by kind against the computed minimum, and wall time with
20 ms per request.

Builds a synthetic Paimon table (``bench/_synth.py``; >= 100,000 files at ``--scale 1``, with
planted orphan data files and manifests), uploads it into a moto S3 server on loopback (straight
into moto's backend, every object backdated two days), and runs through the CLI in this process,
with ``--output json``, against a counting proxy on loopback (``bench/_s3count.py``):

  expire, expire-partitions, tag delete, clean-orphans (one after the other on one copy)

For each: the requests tablekeeper counted itself (the JSON's ``requests``), the requests the
server saw by kind (the figure that does not depend on tablekeeper's counting; it also includes
the lease release after the JSON was printed), the computed minimum
(``tablekeeper.core.plans.request_minimum``: distinct keys read and written as the server saw them,
LIST pages needed, ``ceil(keys / 1000)`` DeleteObjects per ordered delete step, for clean-orphans
one flat listing of the table's prefix; plus the requests safety needs, from the table's tags
and snapshots), the ratio, and moto's own time per request. Goal: at most 1.2x the minimum for
every operation. ``--breakdown`` prints every operation's requests by kind and file category
with the distinct keys, and the most repeated keys.

Then, on fresh copies, with ``--latency-ms`` (default 20) slept by the proxy before every request:
clean-orphans and expire in process. ``--spark`` adds ``bench/_s3spark.py``: expire and
clean-orphans in process vs ``--engine spark`` (local[2]) on fresh copies, requests by kind
(tablekeeper's count includes the executors'), minimum, ratio, and the wall time with latency. The orphan goal: at most 2x
``LIST pages x latency + DeleteObjects x latency / parallelism``. Since moto's own service time is
far from S3's, clean-orphans' run is compared with a *measured* floor in the same process
(``bench/_s3floor.py``: the minimum's requests sent with plain boto3 through the same proxy, with
the same latency, to the same moto and objects); the formula floor and moto's own time per
request kind are printed too. Timings are printed, never asserted.

    .venv/bin/python bench/s3.py [--scale X] [--latency-ms 20] [--spark]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _s3count  # noqa: E402
import _s3floor  # noqa: E402
import _synth  # noqa: E402

from tablekeeper.core.plans import request_minimum  # noqa: E402

GOAL_VS_MINIMUM = 1.2
GOAL_LATENCY = 2.0
BUCKET = "bench"
FAKE_AWS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_REGION": "us-east-1", "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
                "AWS_EC2_METADATA_DISABLED": "true"}
DELETE_PARALLELISM = 8


def spec_for(scale: float) -> _synth.SynthSpec:
    files = max(200, int(100_000 * scale))
    snapshots = max(20, int(400 * scale))
    return _synth.SynthSpec(
        snapshots=snapshots, files=files, snapshots_per_partition=max(2, snapshots // 40), buckets=4,
        compact_every=10 if snapshots >= 100 else 5, tag_every=max(5, snapshots // 8), merge_min_count=30,
        manifest_target=max(200, min(8_000, files // 25)), full_compaction_deletes=max(1_000, min(40_000, files // 5)),
        writer="java", orphan_files=max(5, int(2_000 * scale)), orphan_manifests=max(1, int(20 * scale)), seed=5)


# -- moto ----------------------------------------------------------------------------------------
class Moto:
    """A moto server in this process, and uploads straight into its backend."""

    def __init__(self) -> None:
        import logging

        from moto.server import ThreadedMotoServer

        for k, v in FAKE_AWS_ENV.items():
            os.environ[k] = v
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"

    def backend(self) -> Any:
        from moto.core.models import DEFAULT_ACCOUNT_ID
        from moto.s3.models import s3_backends

        return s3_backends[DEFAULT_ACCOUNT_ID]["aws"]

    def fresh_copy(self, local_warehouse: str, prefix: str) -> int:
        """Empty S3, then ``local_warehouse`` uploaded under ``s3://bench/<prefix>``, backdated two
        days; returns the number of objects."""
        import requests

        requests.post(f"{self.endpoint}/moto-api/reset", timeout=30).raise_for_status()
        self.backend().create_bucket(BUCKET, "us-east-1")
        return self.fresh_copy_keep_bucket(local_warehouse, prefix)

    def fresh_copy_keep_bucket(self, local_warehouse: str, prefix: str) -> int:
        """:meth:`fresh_copy` into the bucket as it is (its versioning kept)."""
        backend = self.backend()
        when = (datetime.now(UTC) - timedelta(days=2)).replace(tzinfo=None, microsecond=0)
        n = 0
        cache: dict[tuple[int, int], bytes] = {}
        for dirpath, _dirs, names in os.walk(local_warehouse):
            if dirpath.endswith("/.templates"):
                continue
            for name in names:
                full = os.path.join(dirpath, name)
                st = os.stat(full)
                if st.st_nlink > 1:  # the builder's hard-linked data files: read each inode once
                    data = cache.get((st.st_dev, st.st_ino))
                    if data is None:
                        data = cache[(st.st_dev, st.st_ino)] = Path(full).read_bytes()
                else:
                    data = Path(full).read_bytes()
                key = f"{prefix}/{os.path.relpath(full, local_warehouse)}"
                backend.put_object(BUCKET, key, data).last_modified = when
                n += 1
        return n

    def shape(self, table_prefix: str) -> dict[str, int]:
        """Tags and snapshots of the table's main branch (for the minimum's verify re-reads)."""
        keys = [k for k in self.backend().get_bucket(BUCKET).keys if k.startswith(table_prefix + "/")]
        return {"tags": sum(1 for k in keys if k.startswith(f"{table_prefix}/tag/tag-")),
                "snapshots": sum(1 for k in keys if k.startswith(f"{table_prefix}/snapshot/snapshot-"))}

    def keys_under(self, prefix: str) -> set[str]:
        """The keys below ``prefix`` (straight from moto's backend, no request)."""
        return {k for k in self.backend().get_bucket(BUCKET).keys if k.startswith(prefix.rstrip("/") + "/")}

    def restore(self, local_warehouse: str, prefix: str, keys: list[str]) -> None:
        """Put ``keys`` (deleted by a run) back from ``local_warehouse``, backdated as
        :meth:`fresh_copy` does (no request through the proxy)."""
        backend = self.backend()
        when = (datetime.now(UTC) - timedelta(days=2)).replace(tzinfo=None, microsecond=0)
        for key in keys:
            local = Path(local_warehouse) / key[len(prefix) + 1:]
            backend.put_object(BUCKET, key, local.read_bytes()).last_modified = when

    def objects_under(self, prefix: str) -> int:
        return sum(1 for k in self.backend().get_bucket(BUCKET).keys if k.startswith(prefix.rstrip("/") + "/"))

    def stop(self) -> None:
        self.server.stop()


# -- the CLI, in this process --------------------------------------------------------------------
def cli_json(args: list[str], endpoint: str, warehouse: str) -> tuple[dict[str, Any], float]:
    from click.testing import CliRunner

    from tablekeeper.cli.main import cli

    options = {"s3.endpoint": endpoint, "s3.access-key": "testing", "s3.secret-key": "testing",
               "s3.region": "us-east-1", "s3.path.style.access": "true"}
    argv = [*args, "--warehouse", warehouse, "--output", "json"]
    for k, v in options.items():
        argv += ["--option", f"{k}={v}"]
    t0 = time.perf_counter()
    result = CliRunner().invoke(cli, argv, catch_exceptions=True)
    seconds = time.perf_counter() - t0
    if result.exit_code != 0:
        raise RuntimeError(f"{' '.join(args)} exited {result.exit_code}: {result.output[-2000:]} {result.exception!r}")
    return json.loads(result.output), seconds


def minimum_of(op: str, out: dict[str, Any], counts: _s3count.Counts, objects: int,
               shape: dict[str, int]) -> request_minimum.RequestMinimum:
    """The floor (distinct keys read and written as the server saw them, LIST pages, deletes per
    step) plus what safety needs on top (``request_minimum``: the lease, the intent and verify
    plan of an unpublishing operation, a commit's re-read at the commit point), from the
    table's ``shape`` before the operation (tags, snapshots)."""
    files = out.get("files")
    steps = [int(n) for n in files.values()] if isinstance(files, dict) else []  # expire-partitions deletes nothing
    reads, writes = len(counts.read_keys), len(counts.written_keys)
    pages = request_minimum.list_pages(objects) if op == "clean-orphans" else len(counts.list_pages)
    floor = request_minimum.minimum(distinct_reads=reads, listed_pages=pages, writes=writes, delete_steps=steps)
    floor = floor + request_minimum.LEASE
    if op == "expire":
        floor = floor + request_minimum.INTENT + request_minimum.expire_verify(tags=shape["tags"])
    elif op == "tag delete":
        floor = floor + request_minimum.INTENT + request_minimum.tag_verify(tags=shape["tags"],
                                                                            snapshots=shape["snapshots"])
    elif op == "expire-partitions":
        floor = floor + request_minimum.COMMIT_POINT
    return floor


def fmt_kinds(counts: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in counts.items() if k != "total") + f" total={counts.get('total', 0)}"


def partition_expiry_args(built: _synth.SynthTable, table_root: str) -> list[str]:
    """Expire the older half of the live partitions (dates from the partition names)."""
    days = sorted(name[3:] for name in os.listdir(table_root) if name.startswith("dt="))
    live = days[-built.spec.keep_partitions:] if len(days) > built.spec.keep_partitions else days
    cut = datetime.strptime(live[len(live) // 2], "%Y-%m-%d").replace(tzinfo=UTC)
    age_days = (datetime.now(UTC) - cut).days
    return ["--expiration-time", f"{age_days} d", "--timestamp-formatter", "yyyy-MM-dd", "--max-expires", "10000",
            "--zone-known"]


def run(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1.0: >= 100,000 files")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="injected latency per request (default 20)")
    parser.add_argument("--spark", action="store_true", help="also run expire and clean-orphans with --engine spark")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--breakdown", action="store_true",
                        help="print each operation's requests by kind and file category, and the repeated keys")
    parser.add_argument("--no-latency", action="store_true", help="skip the latency runs")
    parser.add_argument("--latency-ops", default="clean-orphans,expire",
                        help="operations of the latency runs (default: clean-orphans,expire)")
    args = parser.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="tk-bench-s3-")
    try:
        return _run(workdir, spec_for(args.scale), args)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def _run(workdir: str, spec: _synth.SynthSpec, args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    local = os.path.join(workdir, "wh")
    built = _synth.build_table(local, spec)
    moto = Moto()
    results: dict[str, Any] = {"ops": {}, "latency": {}}
    try:
        objects = moto.fresh_copy(local, "wh")
        print(f"synthetic table on moto: {spec.snapshots:,} snapshots, {len(built.tags)} tags, {objects:,} objects "
              f"({spec.orphan_files:,} planted orphan data files, {spec.orphan_manifests} orphan manifests); "
              f"built and uploaded in {time.perf_counter() - started:.0f}s")
        warehouse = f"s3://{BUCKET}/wh"
        table = _synth.IDENTIFIER
        table_prefix = f"wh/{_synth.DB}.db/{_synth.TABLE}"
        tags = sorted(built.tags, key=lambda n: built.tags[n])
        ops: list[tuple[str, list[str]]] = [
            ("expire", ["expire", table, "--retain-max", str(max(2, spec.snapshots // 2)), "--retain-min", "1",
                        "--time-retained", "1 ms", "--max-deletes", str(spec.snapshots)]),
            ("expire-partitions", ["expire-partitions", table, *partition_expiry_args(built, built.root)]),
            ("tag delete", ["tag", "delete", table, tags[len(tags) // 2]]),
            ("clean-orphans", ["clean-orphans", table, "--parallelism", str(DELETE_PARALLELISM)]),
        ]
        print(f"\n{'operation':<18} {'counted by tablekeeper':<44} {'seen by the server':<50} "
              f"{'minimum':<40} ratio")
        with _s3count.counting_proxy(moto.endpoint) as counts:
            for name, cli_args in ops:
                before_objects = moto.objects_under(table_prefix)
                shape = moto.shape(table_prefix)
                counts.reset()
                out, seconds = cli_json(cli_args, counts.url, warehouse)
                server = counts.snapshot()
                minimum = minimum_of(name, out, counts, before_objects, shape)
                ratio = request_minimum.ratio(server, minimum)
                moto_ms = 1000 * counts.upstream_s / max(1, server.get("total", 0))
                results["ops"][name] = {"moto_ms_per_request": moto_ms, "client": out.get("requests", {}), "server": server,
                                        "minimum": minimum.as_dict(), "ratio": ratio, "seconds": seconds,
                                        "files": out.get("total_files"), "objects": before_objects}
                print(f"{name:<18} {fmt_kinds(out.get('requests', {})):<44} {fmt_kinds(server):<50} "
                      f"{fmt_kinds(minimum.as_dict()):<40} {ratio:.2f}x "
                      f"({'goal met' if ratio <= GOAL_VS_MINIMUM else f'goal {GOAL_VS_MINIMUM}x missed'}); "
                      f"{out.get('total_files', 0)} files deleted; {seconds:.1f}s, moto {moto_ms:.1f} ms a request")
                if args.breakdown:
                    print("\n".join(_s3count.breakdown(counts)))
        latency_s = args.latency_ms / 1000.0
        engines = ["local"]  # --spark: bench/_s3spark.py, below
        wanted = [] if args.no_latency else [w.strip() for w in args.latency_ops.split(",")]
        if wanted:
            print(f"\nwith {args.latency_ms:g} ms per request (fresh copy each):")
        for name, cli_args in [op for op in (ops[3], ops[0]) if op[0] in wanted]:
            for engine in engines:
                objects = moto.fresh_copy(local, "wh")
                keys_before = moto.keys_under(table_prefix)
                with _s3count.counting_proxy(moto.endpoint, latency_s) as counts:
                    extra = ["--engine", engine] if engine == "spark" else []
                    out, seconds = cli_json([*cli_args, *extra], counts.url, warehouse)
                    server = counts.snapshot()
                    service = _s3count.service_ms(counts)
                    read_keys = set(counts.read_keys)
                    flat_pages = counts.by_key[("list", f"{table_prefix}/?delimiter=")]
                    segments = counts.started_after
                pages = request_minimum.list_pages(objects)
                files = out.get("files")
                deletes = sum(request_minimum.delete_requests(int(n)) for n in files.values()) \
                    if isinstance(files, dict) else 0
                floor = pages * latency_s + deletes * latency_s / DELETE_PARALLELISM
                moto_ms = 1000 * counts.upstream_s / max(1, server.get("total", 0))
                row: dict[str, Any] = {"seconds": seconds, "server": server,
                                       "floor_s": floor if name == "clean-orphans" else None,
                                       "moto_ms_per_request": moto_ms, "moto_ms_by_kind": service}
                results["latency"][f"{name} {engine}"] = row
                line = (f"  {name:<14} {engine:<6} {seconds:7.2f}s  server {fmt_kinds(server)}; moto's own time "
                        f"{moto_ms:.1f} ms a request on top of the injected {args.latency_ms:g} ms ("
                        + ", ".join(f"{k} {v:.1f}" for k, v in service.items()) + ")")
                if name == "clean-orphans":
                    row["flat_listing"] = {"requests": flat_pages, "segments": segments}
                    line += (f"\n    flat listing: {flat_pages} LIST pages: the first, then {segments} segment(s) "
                             f"listed at once (+ 1 LIST of the top-level directories when there are more than one)")
                    # the measured floor: the minimum's requests with plain boto3, same proxy,
                    # same latency, same moto, on the same objects (the deleted ones put back)
                    deleted = sorted(keys_before - moto.keys_under(table_prefix))
                    moto.restore(local, "wh", deleted)
                    with _s3count.counting_proxy(moto.endpoint, latency_s) as floor_counts:
                        measured = _s3floor.measured_floor(floor_counts.url, BUCKET, table_prefix, read_keys, deleted,
                                                           DELETE_PARALLELISM)
                        floor_server = floor_counts.snapshot()
                    row["measured_floor"] = {**measured, "server": floor_server}
                    ratio = seconds / measured["seconds"]
                    row["vs_measured_floor"] = ratio
                    line += (f"\n    measured floor {measured['seconds']:.2f}s (plain boto3, same proxy and moto: "
                             f"{measured['list_pages']} LIST pages one after the other {measured['list_s']:.2f}s, "
                             f"{measured['gets']} GETs {_s3floor.GET_PARALLELISM} at a time {measured['get_s']:.2f}s, "
                             f"{measured['deletes']} DeleteObjects {DELETE_PARALLELISM} at a time "
                             f"{measured['delete_s']:.2f}s; server {fmt_kinds(floor_server)}): {ratio:.2f}x "
                             f"({'goal met' if ratio <= GOAL_LATENCY else f'goal {GOAL_LATENCY}x missed'})"
                             f"\n    formula floor {floor:.2f}s (LIST pages {pages} x {args.latency_ms:g} ms + "
                             f"DeleteObjects {deletes} x {args.latency_ms:g} ms / {DELETE_PARALLELISM}): "
                             f"{seconds / floor:.2f}x")
                print(line)
        if args.spark:  # in process vs --engine spark, on fresh copies (bench/_s3spark.py)
            import _s3spark

            results["spark"] = _s3spark.compare(moto, local, warehouse, [ops[3], ops[0]], table_prefix,
                                                args.latency_ms, cli_json, minimum_of, fmt_kinds, DELETE_PARALLELISM)
    finally:
        moto.stop()
    print(f"\nbench wall time: {time.perf_counter() - started:.0f}s")
    return results


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
