"""``bench/operator_scale.py --apiserver``: the operator benchmark against a real kube-apiserver + etcd.

Same workload as the emulator mode (N PaimonTags over M copies of a small pypaimon table, the
operator as ``tablekeeper operator`` in a subprocess), but the API is a real kube-apiserver started
by ``scripts/k8s-testenv`` (built once into ~/.cache/tablekeeper/k8s-testenv), and the API calls are
the server's own count (``apiserver_request_total`` from ``/metrics``), so nothing in this process
sits between the operator and its API.

Prints: time until every PaimonTag is Ready, the operator's peak RSS, the writes per tag CR until
Ready (successful POST/PATCH/PUT/DELETE of ``paimontags`` and ``paimontags/status`` minus the
bench's own POSTs; refused requests and Events separately), and the writes of one
periodic re-check of every tag that finds nothing to do (goal: 0). Ratios are against the emulator
mode's baseline of the same run when ``--compare`` is given. Nothing is asserted.

With ``audit`` (a path), the server also keeps its audit log of every tablekeeper.io write (copied
to that path) and the bench prints who wrote which fields in each window (bench/apiserver_audit.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench import apiserver_audit
from tests.support.apiserver import Testenv, TestenvUnavailable, ensure_built, metric_counts, start

NS = "bench"
WRITE_VERBS = {"POST", "PATCH", "PUT", "DELETE"}


def _requests(testenv: Testenv) -> Counter[tuple[str, str, str]]:
    """``(resource[/subresource], verb, code)`` -> count, over the server's lifetime."""
    out: Counter[tuple[str, str, str]] = Counter()
    for labels, value in metric_counts(testenv.metrics()):
        resource = labels.get("resource", "") + (f"/{labels['subresource']}" if labels.get("subresource") else "")
        out[(resource, labels.get("verb", ""), labels.get("code", ""))] += int(value)
    return out


def _writes(delta: Counter[tuple[str, str, str]], resource: str) -> int:
    """Successful writes (2xx) of ``resource``: a refused request (409/422) changes nothing in etcd
    and is reported separately."""
    return sum(v for (res, verb, code), v in delta.items()
               if res == resource and verb in WRITE_VERBS and code.startswith("2"))


def _ready(testenv: Testenv, plural: str, names: set[str]) -> int:
    import requests

    try:
        listed = testenv.admin.get(f"/apis/tablekeeper.io/v1alpha1/namespaces/{NS}/{plural}") or {}
    except requests.RequestException:  # a busy server (a loaded machine): count again next time
        return 0
    count = 0
    for item in listed.get("items") or []:
        if item["metadata"]["name"] in names:
            conds = (item.get("status") or {}).get("conditions") or []
            count += any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
    return count


def _wait_ready(testenv: Testenv, plural: str, names: set[str], timeout: float,
                proc: subprocess.Popen[bytes]) -> float:
    t0 = time.monotonic()
    while _ready(testenv, plural, names) < len(names):
        if proc.poll() is not None:
            raise RuntimeError(f"the operator exited with {proc.returncode}")
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"only {_ready(testenv, plural, names)} of {len(names)} {plural} Ready after {timeout} s")
        time.sleep(2.0)  # listing 1,000 objects is not free for the server under test
    return time.monotonic() - t0


def _reconciles(port: int, kind: str) -> float:
    import requests

    try:
        text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    except requests.RequestException:
        return 0.0
    return sum(v for labels, v in metric_counts(text, "tablekeeper_reconciliations_total")
               if labels.get("kind") == kind)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(tables: int, tags_per_table: int, timeout: float, recheck: float, build_warehouse: Any,
        peak_rss_kib: Any, *, audit: Path | None = None) -> dict[str, Any]:
    try:
        ensure_built()
    except TestenvUnavailable as err:
        raise SystemExit(f"--apiserver needs the control plane: {err}") from err
    from tablekeeper.core.paimon.table import open_table

    with tempfile.TemporaryDirectory(prefix="tk-bench-apiserver-") as tmp:
        root = Path(tmp)
        t0 = time.monotonic()
        warehouse = build_warehouse(root, tables)
        print(f"warehouse: {tables} tables x 2 snapshots in {time.monotonic() - t0:.1f} s")
        policy = apiserver_audit.write_policy(root) if audit is not None else None
        testenv = start(root / "testenv", audit_policy=policy)
        proc: subprocess.Popen[bytes] | None = None
        try:
            testenv.kubectl("apply", "--server-side", "-f", "crds/")
            testenv.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", "crds/")
            testenv.ensure_namespace(NS)
            port = _free_port()
            env = {**os.environ, "KUBECONFIG": str(testenv.kubeconfig), "POD_NAMESPACE": NS,
                   "TABLEKEEPER_RECONCILE_INTERVAL": str(recheck), "TABLEKEEPER_INITIAL_JITTER": str(recheck),
                   "TABLEKEEPER_RETRY_BASE_DELAY": "0.5", "TABLEKEEPER_RETRY_MAX_DELAY": "5"}
            log = (root / "operator.log").open("wb")
            proc = subprocess.Popen([sys.executable, "-m", "tablekeeper.cli.main", "operator", "--liveness=",
                                     f"--metrics-port={port}"], env=env, stdout=log, stderr=subprocess.STDOUT)
            rest = testenv.admin
            base = f"/apis/tablekeeper.io/v1alpha1/namespaces/{NS}"
            resp = rest.create(f"{base}/paimoncatalogs", {
                "apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonCatalog", "metadata": {"name": "lake"},
                "spec": {"warehouse": str(warehouse), "writerTimeZone": "UTC"}})
            assert resp.status_code == 201, resp.text
            table_names = {f"t{i:03d}" for i in range(tables)}
            for name in sorted(table_names):
                resp = rest.create(f"{base}/paimontables", {
                    "apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonTable", "metadata": {"name": name},
                    "spec": {"catalogRef": {"kind": "PaimonCatalog", "name": "lake"}, "database": "bench",
                             "table": name}})
                assert resp.status_code == 201, resp.text
            tables_s = _wait_ready(testenv, "paimontables", table_names, timeout, proc)
            before = _requests(testenv)
            n = tables * tags_per_table
            tags = [{"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonTag",
                     "metadata": {"name": f"t{i:03d}-tag{j:02d}"},
                     "spec": {"tableRef": {"name": f"t{i:03d}"}, "snapshotId": 1 + j % 2}}
                    for j in range(tags_per_table) for i in range(tables)]
            started = time.monotonic()
            wall = [time.time()]  # window boundaries for the audit log: tags posted, Ready, re-check, end
            for body in tags:
                resp = rest.create(f"{base}/paimontags", body)
                assert resp.status_code == 201, resp.text
            posted = time.monotonic() - started
            tags_s = _wait_ready(testenv, "paimontags", {t["metadata"]["name"] for t in tags}, timeout, proc) + posted
            time.sleep(2)  # writes right after Ready (a finalizer, a label) still count for the tag
            after = _requests(testenv)
            wall.append(time.time())
            delta = after - before
            rss = peak_rss_kib(proc.pid)
            # one periodic re-check of every tag: wait until the operator counted n more tag reconciles
            checks0 = _reconciles(port, "PaimonTag")
            recheck_before = _requests(testenv)
            wall.append(time.time())
            deadline = time.monotonic() + recheck * 3 + timeout / 4
            while _reconciles(port, "PaimonTag") < checks0 + n and time.monotonic() < deadline:
                time.sleep(1)
            rechecked = _reconciles(port, "PaimonTag") - checks0
            recheck_delta = _requests(testenv) - recheck_before
            wall.append(time.time())
        except BaseException:
            if proc is not None:
                print((root / "operator.log").read_text(errors="replace")[-4000:], file=sys.stderr)
            raise
        finally:
            if proc is not None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
            if audit is not None and (root / "testenv" / "audit.log").exists():
                shutil.copyfile(root / "testenv" / "audit.log", audit)  # stop removes the state directory
            testenv.stop()
        if audit is not None and len(wall) == 4:
            writes = apiserver_audit.read(audit)
            print("audit: writes from the tags' POSTs to Ready (client verb resource code: fields changed)")
            print(apiserver_audit.table(writes, wall[0], wall[1]))
            print("audit: writes during the idle re-check")
            print(apiserver_audit.table(writes, wall[2], wall[3]))
        in_storage = sum(len(open_table(str(warehouse), f"bench.t{i:03d}").tag_names()) for i in range(tables))
    tag_writes = _writes(delta, "paimontags") + _writes(delta, "paimontags/status") - n  # minus our POSTs
    events = _writes(delta, "events")
    forbidden = sum(v for (_, _, code), v in delta.items() if code == "403")
    refused = sum(v for (res, verb, code), v in delta.items()
                  if res.startswith("paimontags") and verb in WRITE_VERBS and code in ("409", "422"))
    print(f"tables: {tables} PaimonTables Ready in {tables_s:.1f} s ({tables / tables_s:.1f}/s)")
    print(f"tags:   {n} PaimonTags Ready in {tags_s:.1f} s -> {n / tags_s:.1f} tags/s (POSTing took {posted:.1f} s)")
    print(f"writes: {tag_writes / n:.2f} PaimonTag writes per tag to Ready (goal <= 3), "
          f"{events / n:.2f} Events per tag (separate objects), {refused / n:.2f} requests refused (409/422, "
          f"nothing written), {forbidden} answers 403")
    print(f"recheck: {rechecked:.0f} tag re-checks, {_writes(recheck_delta, 'paimontags') + _writes(recheck_delta, 'paimontags/status')}"
          f" PaimonTag writes, {_writes(recheck_delta, 'events')} Events (goal 0)")
    print(f"rss:    operator peak RSS {rss / 1024:.0f} MiB" if rss is not None else "rss:    unavailable (no /proc)")
    print(f"check:  {in_storage} tags in storage (expected {n})")
    return {"tags_s": tags_s, "writes_per_tag": tag_writes / n, "rss_kib": rss}
