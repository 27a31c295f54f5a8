"""``tablekeeper demo``: a local warehouse with a realistic history, then the manifests of
``examples/`` applied through the reconciler, step by step, the way GitOps would:

1. build ``sales.orders`` (primary key, upserts) and ``sales.events`` (append-only), both
   partitioned by day, from eight days of streaming-like commits (four per day; commit times
   back-dated), plus two files a crashed writer left behind three days ago;
2. apply ``01`` + ``02``: manual tags (one with a TTL);
3. apply ``01``..``03``: a branch from a tag, then two commits of its own on that branch;
4. apply ``01``..``04``: a retention policy: daily auto-tags (keep 3), partition expiry,
   snapshot expiry, orphan cleanup;
5. plan again: nothing left to do.

Before and after every step, every retained view (each snapshot, tag and branch of both
tables) is read through pypaimon: views that survive a step must read the same (a table's
latest view may only lose the rows of the partitions the step expired). A before/after report
closes the run."""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import click
import yaml

from tablekeeper import reconcile
from tablekeeper.cli import gitops, render
from tablekeeper.core.paimon import open_table, pypaimon
from tablekeeper.core.policy.specs import PaimonCatalogSpec
from tablekeeper.reconcile import actions as A

__all__ = ["run", "prepare_cluster", "write_cluster_manifests", "CLUSTER_NAMESPACE", "find_examples", "build_history", "load_examples", "ORDERS", "EVENTS", "STEPS"]

ORDERS = "sales.orders"
EVENTS = "sales.events"
DAYS = 8
COMMITS_PER_DAY = 4
STEPS = (
    ("manual tags (01, 02)", ("01", "02")),
    ("a branch from a tag (01..03)", ("01", "02", "03")),
    ("a retention policy (01..04)", ("01", "02", "03", "04")),
)


def find_examples() -> Path | None:
    """``examples/`` of the source tree (next to the ``tablekeeper`` package), or of the CWD."""
    for candidate in (Path(__file__).resolve().parents[2] / "examples", Path.cwd() / "examples"):
        if (candidate / "01-catalog-and-table.yaml").is_file():
            return candidate
    return None


def build_history(warehouse: str, now: datetime) -> dict[str, Any]:
    """Eight days of commits ending an hour before ``now``: every 6 hours one upsert batch into
    sales.orders (new orders of the day plus corrections of yesterday's) and one batch of events;
    then two orphan files dated three days back. Returns what was built."""
    pypaimon.create_orders_table(warehouse, ORDERS)
    pypaimon.create_events_table(warehouse, EVENTS)
    total = DAYS * COMMITS_PER_DAY
    step = timedelta(hours=24 // COMMITS_PER_DAY)
    first = now - timedelta(hours=1) - step * (total - 1)
    for k in range(total):
        at = first + step * k
        dt = at.strftime("%Y-%m-%d")
        prev = (at - timedelta(days=1)).strftime("%Y-%m-%d")
        at_ms = int(at.timestamp() * 1000)
        orders = [{"dt": dt, "order_id": k * 10 + i, "amount": round(10.0 + k + i * 0.5, 2)} for i in range(6)]
        if k >= COMMITS_PER_DAY:  # late corrections of yesterday's orders (upserts)
            orders += [{"dt": prev, "order_id": (k - COMMITS_PER_DAY) * 10 + i, "amount": -1.0} for i in range(2)]
        pypaimon.commit_rows(warehouse, ORDERS, orders, at_ms=at_ms)
        events = [{"dt": dt, "event_id": k * 100 + i, "kind": ("view", "click", "buy")[i % 3],
                   "payload": f"session-{k}-{i}"} for i in range(8)]
        pypaimon.commit_rows(warehouse, EVENTS, events, schema=pypaimon.EVENTS, at_ms=at_ms)
    orphans = _plant_orphans(warehouse, now)
    return {"commits_per_table": total, "first_commit": first.isoformat(timespec="minutes"),
            "last_commit": (first + step * (total - 1)).isoformat(timespec="minutes"), "orphans_planted": orphans}


def _plant_orphans(warehouse: str, now: datetime) -> list[str]:
    """What a writer that crashed three days ago leaves: a data file and a manifest no snapshot
    references."""
    root = Path(warehouse) / "sales.db" / "orders"
    bucket = next(p for p in sorted(root.glob("dt=*/bucket-*")) if any(p.glob("*.parquet")))
    data = next(bucket.glob("*.parquet")).read_bytes()
    planted = [bucket / f"data-{uuid.uuid4()}-0.parquet", root / "manifest" / f"manifest-{uuid.uuid4()}-0"]
    planted[0].write_bytes(data)
    planted[1].write_bytes(b"\x00" * 2048)
    stamp = (now - timedelta(days=3)).timestamp()
    for path in planted:
        os.utime(path, (stamp, stamp))
    return [str(p.relative_to(warehouse)) for p in planted]


def _views(warehouse: str) -> dict[str, dict[str, Any]]:
    out = {}
    for ident in (ORDERS, EVENTS):
        table = open_table(warehouse, ident)
        spec = {t.branch: (t.snapshot_ids(), t.tag_names()) for t in table.all_branches()}
        out[ident] = pypaimon.table_views(warehouse, ident, spec)
    return out


def _stats(warehouse: str, ident: str) -> dict[str, Any]:
    table = open_table(warehouse, ident)
    files = 0
    size = 0
    for dirpath, _dirs, names in os.walk(table.root):
        for name in names:
            files += 1
            size += os.path.getsize(os.path.join(dirpath, name))
    ids = table.snapshot_ids()
    return {"snapshots": len(ids), "range": f"{ids[0]}..{ids[-1]}" if ids else "-",
            "tags": table.tag_names(), "branches": table.branch_names(), "files": files, "bytes": size}


def load_examples(examples: Path, prefixes: tuple[str, ...], warehouse: str) -> reconcile.DesiredState:
    """The examples whose file names start with ``prefixes``, their catalog pointed at ``warehouse``."""
    files = [p for p in sorted(examples.glob("*.yaml")) if p.name[:2] in prefixes]
    resources = reconcile.load_manifests([str(p) for p in files])
    pointed = []
    for r in resources:  # the examples' catalog points at the demo's own warehouse
        if isinstance(r.spec, PaimonCatalogSpec):
            r = dataclasses.replace(r, spec=r.spec.model_copy(update={"warehouse": warehouse}))
        pointed.append(r)
    return reconcile.build_desired_state(pointed)


def _verify(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]],
            dropped: dict[str, set[str]], moved: set[str]) -> int:
    """Every view present before and after reads the same; a table's latest view may only lose
    the rows of its dropped partitions; ``moved`` views (committed to) are not compared."""
    checked = 0
    for ident, views in before.items():
        for key, rows in views.items():
            if key not in after[ident] or f"{ident}:{key}" in moved:
                continue
            expected = rows
            if key == "main@latest" and dropped.get(ident):
                expected = [r for r in rows if f"dt={dict(r)['dt']}" not in dropped[ident]]
            if after[ident][key] != expected:
                raise RuntimeError(f"view {ident} {key} changed: {len(expected)} rows expected, "
                                   f"{len(after[ident][key])} read")
            checked += 1
    return checked


def write_local_manifests(examples_dir: Path, warehouse: str) -> str:
    """Copies of the examples with every catalog's ``warehouse`` set to the demo's, in
    ``<warehouse>-manifests/`` (recreated): what ``plan/apply -f`` runs against locally. The
    examples themselves carry cluster paths (the CRDs accept no relative ones)."""
    out = Path(f"{warehouse.rstrip('/')}-manifests")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for src in sorted(examples_dir.glob("*.yaml")):
        # only tablekeeper.io objects: plan/apply -f reject Kubernetes' own (examples/00's Namespace)
        docs = [d for d in yaml.safe_load_all(src.read_text())
                if isinstance(d, dict) and str(d.get("apiVersion", "")).startswith("tablekeeper.io/")]
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") in ("PaimonCatalog", "ClusterPaimonCatalog"):
                doc.setdefault("spec", {})["warehouse"] = warehouse
        (out / src.name).write_text(f"# {src.name} from {examples_dir}, warehouse set to the demo's ({warehouse})\n"
                                    + yaml.safe_dump_all(docs, sort_keys=False))
    return str(out)


#: The namespace ``tablekeeper demo --manifests`` writes the examples for: a fresh one, so an
#: earlier ``kubectl apply -f examples/`` (namespace ``demo``, catalog at ``/data/warehouse``) never
#: collides with it (a catalog's warehouse cannot change).
CLUSTER_NAMESPACE = "tablekeeper-demo"


def write_cluster_manifests(examples_dir: Path, warehouse: str, out: Path, namespace: str = CLUSTER_NAMESPACE
                            ) -> list[Path]:
    """The examples ready for ``kubectl apply -f``: every namespaced object (and the Namespace of
    ``examples/00``) moved to ``namespace``, every catalog's ``warehouse`` set to ``warehouse``
    (absolute), written to ``out`` (recreated) under the examples' file names. Returns the files."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    written = []
    for src in sorted(examples_dir.glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(src.read_text()) if isinstance(d, dict)]
        for doc in docs:
            meta = doc.setdefault("metadata", {})
            if doc.get("kind") == "Namespace":
                meta["name"] = namespace
            elif "namespace" in meta:
                meta["namespace"] = namespace
            if doc.get("kind") in ("PaimonCatalog", "ClusterPaimonCatalog"):
                doc.setdefault("spec", {})["warehouse"] = warehouse
        target = out / src.name
        target.write_text(f"# {src.name} from {examples_dir}: namespace {namespace}, warehouse {warehouse}\n"
                          + yaml.safe_dump_all(docs, sort_keys=False))
        written.append(target)
    return written


def prepare_cluster(warehouse: str, manifests: str, *, namespace: str = CLUSTER_NAMESPACE, echo: bool = True,
                    examples: str | None = None) -> dict[str, Any]:
    """``tablekeeper demo --manifests DIR``: build the demo warehouse (recreated; the examples are
    not applied: the operator applies them) and write the examples for it, ready for ``kubectl
    apply``, into ``manifests``."""
    say = click.echo if echo else (lambda *_a, **_k: None)
    examples_dir = _examples_dir(examples)
    shutil.rmtree(warehouse, ignore_errors=True)
    history = build_history(warehouse, datetime.now(timezone.utc))
    files = write_cluster_manifests(examples_dir, warehouse, Path(manifests), namespace)
    out = os.path.relpath(manifests)
    out = manifests if out.startswith("..") else out
    say(f"demo warehouse: {warehouse} ({history['commits_per_table']} commits into {ORDERS} and {EVENTS})")
    say(f"the examples for it, in namespace {namespace}: {manifests}")
    say("next (with tablekeeper operator running against the same cluster and this machine's files):")
    say(f"  kubectl apply -f {out}/00-namespace.yaml -f {out}/01-catalog-and-table.yaml "
        f"-f {out}/02-tags.yaml -f {out}/03-branch-from-tag.yaml")
    say(f"  kubectl -n {namespace} wait --for=condition=Ready --timeout=120s paimon --all")
    say(f"  kubectl apply -f {out}/04-retention-policy.yaml")
    return {"warehouse": warehouse, "manifests": manifests, "namespace": namespace, "history": history,
            "files": [str(f) for f in files]}


def _examples_dir(examples: str | None) -> Path:
    examples_dir = Path(examples) if examples else find_examples()
    if examples_dir is None:
        from tablekeeper.core import errors

        raise errors.InvalidInputError("cannot find the examples/ directory",
                                       fix="run the demo from the repository root or pass --examples DIR")
    return examples_dir


def run(warehouse: str, *, echo: bool = True, examples: str | None = None) -> dict[str, Any]:
    """Build the demo warehouse under ``warehouse`` (recreated) and apply the examples."""
    say = click.echo if echo else (lambda *_a, **_k: None)
    started = time.monotonic()
    examples_dir = _examples_dir(examples)
    shutil.rmtree(warehouse, ignore_errors=True)
    t0 = datetime.now(timezone.utc)
    history = build_history(warehouse, t0)
    say(f"demo warehouse: {warehouse}")
    say(f"  {history['commits_per_table']} commits into {ORDERS} (primary key) and {EVENTS} (append-only), "
        f"{history['first_commit']} .. {history['last_commit']}; 2 orphan files planted 3 days back")
    before_stats = {ident: _stats(warehouse, ident) for ident in (ORDERS, EVENTS)}
    opener = reconcile.Opener()
    store = reconcile.WarehouseRecordStore(opener.file_io)  # records live in the warehouse, as for the CLI
    views = _views(warehouse)
    steps: list[dict[str, Any]] = []
    verified = 0
    reclaimed_files = reclaimed_bytes = 0
    for title, prefixes in STEPS:
        desired = load_examples(examples_dir, prefixes, warehouse)
        now = datetime.now(timezone.utc)
        say(f"\n=== apply {title}: examples/{{{','.join(prefixes)}}}-*.yaml")
        result = reconcile.converge(desired, now=now, store=store, opener=opener)
        first = result.plans[0]
        if echo:
            for tp in first.tables:
                for a in tp.actions:
                    mark, text = gitops.action_line(a)
                    say(f"  {mark} {tp.target.location.identifier}: {text}")
            for r in result.results:
                gitops.render_result(r)
        if not result.ok:
            raise RuntimeError(f"step {title!r} failed: {[r.message for r in result.results if r.status == 'failed']}")
        dropped: dict[str, set[str]] = {}
        for p in result.plans:
            for a in p.changes:
                if isinstance(a, A.ExpirePartitions):
                    dropped.setdefault(a.table, set()).update(a.partitions)
        moved: set[str] = set()
        if "03" in prefixes and not any(s["step"] == "branch commits" for s in steps):
            after = _views(warehouse)
            verified += _verify(views, after, dropped, moved)
            views = after
            _branch_commits(warehouse)
            steps.append({"step": "branch commits", "commits": 2})
            say("  + 2 commits of its own on branch 'backfill' of sales.orders")
            moved = {f"{ORDERS}:backfill@latest"}
        after = _views(warehouse)
        checked = _verify(views, after, dropped, moved)
        verified += checked
        views = after
        totals = [r.totals() for r in result.applied]
        files = sum(t["deletedFiles"] for t in totals)
        size = sum(t["deletedBytes"] for t in totals)
        reclaimed_files += files
        reclaimed_bytes += size
        steps.append({"step": title, "actions": len(result.results), "passes": len(result.applied),
                      "deleted_files": files, "deleted_bytes": size, "views_verified": checked,
                      "dropped_partitions": {k: sorted(v) for k, v in dropped.items()}})
        say(f"  verified: {checked} retained views re-read identically"
            + (" (latest views minus the expired partitions)" if dropped else ""))
    final = reconcile.plan(load_examples(examples_dir, STEPS[-1][1], warehouse), now=datetime.now(timezone.utc), store=store,
                           opener=opener)
    if not final.is_empty:
        raise RuntimeError(f"a plan right after apply is not empty: {[a.kind for a in final.changes]}")
    say("\n=== plan again: no changes (storage matches the manifests)")
    after_stats = {ident: _stats(warehouse, ident) for ident in (ORDERS, EVENTS)}
    if echo:
        _report(before_stats, after_stats, reclaimed_files, reclaimed_bytes)
        say("\nsales.orders now:")
        render.timeline(render.build_timeline(open_table(warehouse, ORDERS)))
    elapsed = time.monotonic() - started
    say(f"\nverified {verified} view reads across {len(steps)} steps in {elapsed:.0f} s: OK")
    manifests = write_local_manifests(examples_dir, warehouse)
    shown = os.path.relpath(manifests)
    say(f"\nthe examples, pointed at this warehouse: {manifests}")
    say(f"next: tablekeeper plan -f {manifests if shown.startswith('..') else shown}")
    return {"warehouse": warehouse, "manifests": manifests, "history": history, "steps": steps, "views_verified": verified,
            "before": before_stats, "after": after_stats,
            "reclaimed": {"files": reclaimed_files, "bytes": reclaimed_bytes}, "seconds": round(elapsed, 1)}


def _branch_commits(warehouse: str) -> None:
    pypaimon.commit_rows(warehouse, ORDERS, [{"dt": "2000-01-01", "order_id": 1, "amount": 99.0}], "backfill")
    pypaimon.commit_rows(warehouse, ORDERS, [{"dt": "2000-01-01", "order_id": 2, "amount": 98.0}], "backfill")


def _report(before: dict[str, Any], after: dict[str, Any], files: int, size: int) -> None:
    click.echo("\n=== before / after")
    click.echo(f"  {'table':<14}{'snapshots':>12}{'tags':>9}{'branches':>10}{'files':>12}{'size':>24}")
    for ident in (ORDERS, EVENTS):
        b, a = before[ident], after[ident]
        sizes = f"{gitops.human_bytes(b['bytes'])} -> {gitops.human_bytes(a['bytes'])}"
        click.echo(f"  {ident:<14}{b['snapshots']:>5} -> {a['snapshots']:<3}{len(b['tags']):>4} -> "
                   f"{len(a['tags']):<2}{len(b['branches']):>5} -> {len(a['branches']):<2}"
                   f"{b['files']:>5} -> {a['files']:<4}{sizes:>24}")
    for ident in (ORDERS, EVENTS):
        a = after[ident]
        click.echo(f"  {ident}: snapshots {a['range']}; tags {', '.join(a['tags']) or '-'}"
                   + (f"; branches {', '.join(a['branches'])}" if a["branches"] else ""))
    click.echo(f"  reclaimed by tablekeeper: {files} file(s), {gitops.human_bytes(size)}")
