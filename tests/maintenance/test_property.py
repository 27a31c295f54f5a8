"""Property test: random histories of commits and maintenance on real pypaimon tables.

A hypothesis state machine drives append / primary-key (fixed and dynamic bucket) tables,
partitioned by ``dt``, through writes, partition overwrites, tags, branches with their own
writes, fast-forwards, branch drops, tag deletions with cleanup, snapshot expirations with random retain
settings, partition expirations, orphan cleanups and writer debris (planted unreferenced files
with old mtimes). It keeps its own model of what every snapshot, tag and branch must read.

After every step:
- every retained snapshot, tag and branch reads exactly as the model says (pypaimon reads);
- tablekeeper's listing of snapshots and tags matches the model;
- no file a retained root needs is missing (pypaimon's manifest readers as the oracle).
At the end, after expiring every branch and cleaning orphans with a threshold in the past (all
files aged with os.utime / moto), no unreferenced file remains in manifest/, index/,
statistics/ or any bucket directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import s3fs
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tablekeeper.core import errors
from tablekeeper.core.paimon.table import Table
from tablekeeper.core.plans import execution
from tablekeeper.core.reclaim.expire import planning
from tablekeeper.core.reclaim.orphans import planning as orphans
from tablekeeper.core.reclaim.partitions import expiration
from tablekeeper.core.refs import branches, tags
from tablekeeper.core.storage import FileIO
from tests.maintenance.helpers import (
    IDENT,
    catalog,
    handle,
    py_roots,
    py_tables,
    read_views,
    root_requirements,
    table_root,
    write,
)
from tests.support import s3 as s3support
from tests.support.paimon import ORDERS_SCHEMA, create_table
from tests.support.paimon import overwrite as commit_overwrite  # ``overwrite`` is a rule argument below

PARTITIONS = ("2026-01-01", "2026-01-02", "2099-01-01")
NOW = datetime(2026, 6, 1)  # the 2026 partitions are expired under a 7-day rule, 2099 never
Row = tuple[tuple[str, Any], ...]


def as_row(dt: str, i: int, amount: float) -> Row:
    return (("amount", amount), ("dt", dt), ("id", i))


class Content:
    """What one snapshot reads: a multiset of rows (append) or a key -> row map (primary key)."""

    def __init__(self, pk: bool, rows: Mapping[Any, Row] | list[Row] | None = None) -> None:
        self.pk = pk
        self.rows: dict[Any, Row] | list[Row]
        if pk:
            self.rows = dict(rows) if isinstance(rows, Mapping) else {}
        else:
            self.rows = list(rows) if isinstance(rows, list) else []

    def copy(self) -> Content:
        return Content(self.pk, self.rows)

    def add(self, new: list[Row]) -> Content:
        out = self.copy()
        for r in new:
            if isinstance(out.rows, dict):
                out.rows[(r[1][1], r[2][1])] = r
            else:
                out.rows.append(r)
        return out

    def drop(self, dts: set[str]) -> Content:
        out = self.copy()
        if isinstance(out.rows, dict):
            out.rows = {k: v for k, v in out.rows.items() if k[0] not in dts}
        else:
            out.rows = [r for r in out.rows if r[1][1] not in dts]
        return out

    def partitions(self) -> set[str]:
        values = self.rows.values() if isinstance(self.rows, dict) else self.rows
        return {r[1][1] for r in values}

    def keys_in(self, dt: str) -> list[int]:
        values = self.rows.values() if isinstance(self.rows, dict) else self.rows
        return sorted({r[2][1] for r in values if r[1][1] == dt})

    def expected(self) -> list[Row]:
        values = list(self.rows.values()) if isinstance(self.rows, dict) else list(self.rows)
        return sorted(values, key=repr)


class Storage:
    """Where the warehouse lives: a local directory or a moto S3 bucket."""

    def __init__(self, warehouse: str, options: dict[str, str] | None = None,
                 fs: s3fs.S3FileSystem | None = None) -> None:
        self.warehouse = warehouse
        self.options = options
        self.fs = fs
        self.io = FileIO.for_uri(warehouse, options)  # one client: creating an S3 client costs ~0.2 s

    @property
    def root(self) -> str:
        return table_root(self.warehouse)

    def _key(self, path: str) -> str:
        return path.removeprefix("s3://")

    def plant(self, path: str, age_s: float) -> None:
        if self.fs is None:
            p = Path(path)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(b"debris")
            when = time.time() - age_s
            os.utime(p, (when, when))
            return
        bucket, key = self._key(path).split("/", 1)
        s3support.put_objects(bucket, {key: b"debris"})
        s3support.backdate(bucket, key, timedelta(seconds=age_s))

    def files(self) -> set[str]:
        """Every file of the table (absolute paths as the oracle spells them)."""
        if self.fs is None:
            out = set()
            for dirpath, _dirs, files in os.walk(self.root):
                out.update(os.path.join(dirpath, f) for f in files)
            return out
        return {"s3://" + k for k in self.fs.find(self._key(self.root)) if not k.endswith("/")}

    def exists(self, path: str) -> bool:
        if self.fs is None:
            return os.path.exists(path)
        return bool(self.fs.exists(self._key(path)))

    def age_everything(self, age_s: float) -> None:
        if self.fs is None:
            when = time.time() - age_s
            for p in self.files():
                os.utime(p, (when, when))
            return
        for p in self.files():
            bucket, key = self._key(p).split("/", 1)
            s3support.backdate(bucket, key, timedelta(seconds=age_s))

    def managed(self) -> set[str]:
        """Files in manifest/, index/, statistics/ and bucket directories."""
        out = set()
        for p in self.files():
            rel = p[len(self.root) + 1:]
            parts = rel.split("/")
            if parts[0] in ("manifest", "index", "statistics") or any(x.startswith("bucket-") for x in parts[:-1]):
                if parts[0] != "branch":
                    out.add(p)
        return out


class MaintenanceMachine(RuleBasedStateMachine):
    """See the module docstring. ``storage_factory`` gives each example a fresh warehouse."""

    storage_factory: Any = None

    def __init__(self) -> None:
        super().__init__()
        self.storage: Storage = type(self).storage_factory()
        self.kind = ""
        self.pk = False
        # branch -> {snapshot id: Content}; branch -> {tag: (snapshot id, Content)}
        self.snaps: dict[str, dict[int, Content]] = {}
        self.tags: dict[str, dict[str, tuple[int, Content]]] = {}
        self.debris: set[str] = set()
        self.counter = 0
        self.cache: dict[str, Any] = {}
        self.ready = False

    # -- plumbing --------------------------------------------------------------------------
    @property
    def wh(self) -> str:
        return self.storage.warehouse

    def next_id(self) -> int:
        self.counter += 1
        return self.counter

    def handle(self, branch: str = "main") -> Table:
        return handle(self.wh, branch=branch, file_io=self.storage.io)

    def py_table(self, branch: str) -> Any:
        cat = catalog(self.wh, self.storage.options)
        return cat.get_table(IDENT if branch == "main" else f"{IDENT}$branch_{branch}")

    def latest(self, branch: str) -> tuple[int, Content]:
        sid = max(self.snaps[branch])
        return sid, self.snaps[branch][sid]

    def execute(self, plan: Any, table: Table) -> None:
        result = execution.execute(plan, table.file_io, parallelism=1)
        assert not result.failed, result.failed

    # -- setup -----------------------------------------------------------------------------
    @initialize(kind=st.sampled_from(["append", "pk", "pk-dynamic"]), data=st.data())
    def create(self, kind: str, data: st.DataObject) -> None:
        self.kind = kind
        self.pk = kind != "append"
        options: dict[str, str] = {}
        if kind == "pk":
            options = {"bucket": "2"}
        elif kind == "pk-dynamic":
            options = {"bucket": "-1"}
        options.update(self.table_options(kind, data))
        cat = catalog(self.wh, self.storage.options)
        create_table(cat, IDENT, ORDERS_SCHEMA, primary_keys=["dt", "id"] if self.pk else None,
                     partition_keys=["dt"], options=options)
        self.snaps = {"main": {}}
        self.tags = {"main": {}}
        self.commit("main", "2026-01-01", 2, overwrite=False)
        # a base history, so that short examples still exercise tags, branches and DELETEs
        for _ in range(data.draw(st.integers(1, 4), label="base commits")):
            dt = data.draw(st.sampled_from(PARTITIONS), label="dt")
            self.commit("main", dt, 2, overwrite=data.draw(st.booleans(), label="overwrite"), reuse=1)
        if data.draw(st.booleans(), label="tag and branch"):
            sid = data.draw(st.sampled_from(sorted(self.snaps["main"])), label="tagged")
            tags.create_tag(self.handle(), "base", snapshot_id=sid)
            self.tags["main"]["base"] = (sid, self.snaps["main"][sid])
            branches.create_branch(self.handle(), "b0", from_tag="base")
            self.snaps["b0"] = {sid: self.snaps["main"][sid]}
            self.tags["b0"] = {"base": (sid, self.snaps["main"][sid])}
            self.commit("b0", data.draw(st.sampled_from(PARTITIONS), label="b0 dt"), 1, overwrite=True)
        self.ready = True

    def table_options(self, kind: str, data: st.DataObject) -> dict[str, str]:
        """Extra table options drawn at creation (none here; the two-evaluator machine of
        test_property_parity.py draws retention and changelog options)."""
        return {}

    def commit(self, branch: str, dt: str, n: int, overwrite: bool, reuse: int = 0) -> None:
        base = self.latest(branch)[1] if self.snaps[branch] else Content(self.pk)
        ids = base.keys_in(dt)[:reuse] if self.pk and not overwrite else []
        ids += [self.next_id() * 10 for _ in range(n)]
        stamp = float(self.next_id())
        new = [as_row(dt, i, stamp) for i in ids]
        table = self.py_table(branch)
        data = [{"dt": dt, "id": r[2][1], "amount": r[0][1]} for r in new]
        if overwrite:
            commit_overwrite(table, data, {"dt": dt})
            content = base.drop({dt}).add(new)
        else:
            write(table, data, ORDERS_SCHEMA)
            content = base.add(new)
        sid = (max(self.snaps[branch]) if self.snaps[branch] else 0) + 1
        self.snaps[branch][sid] = content

    # -- commits -------------------------------------------------------------------------------
    @rule(data=st.data(), dt=st.sampled_from(PARTITIONS), n=st.integers(1, 3), reuse=st.integers(0, 2))
    def write_rows(self, data: st.DataObject, dt: str, n: int, reuse: int) -> None:
        branch = data.draw(st.sampled_from(sorted(self.snaps)), label="branch")
        if not self.snaps[branch]:
            return
        self.commit(branch, dt, n, overwrite=False, reuse=reuse)

    @rule(data=st.data(), dt=st.sampled_from(PARTITIONS), n=st.integers(1, 2))
    def overwrite_partition(self, data: st.DataObject, dt: str, n: int) -> None:
        branch = data.draw(st.sampled_from(sorted(self.snaps)), label="branch")
        if not self.snaps[branch]:
            return
        self.commit(branch, dt, n, overwrite=True)

    @rule(data=st.data(), latest=st.booleans())
    def create_tag(self, data: st.DataObject, latest: bool) -> None:
        branch = data.draw(st.sampled_from(sorted(self.snaps)), label="branch")
        if not self.snaps[branch]:
            return
        sid = max(self.snaps[branch]) if latest else data.draw(st.sampled_from(sorted(self.snaps[branch])))
        name = f"t{self.next_id()}"
        tags.create_tag(self.handle(branch), name, snapshot_id=sid)
        self.tags[branch][name] = (sid, self.snaps[branch][sid])

    @precondition(lambda self: len(self.snaps) < 3 and any(self.tags.get("main", {}).values()))
    @rule(data=st.data())
    def create_branch(self, data: st.DataObject) -> None:
        tag = data.draw(st.sampled_from(sorted(self.tags["main"])), label="tag")
        name = f"b{self.next_id()}"
        branches.create_branch(self.handle(), name, from_tag=tag)
        sid, content = self.tags["main"][tag]
        self.snaps[name] = {sid: content}
        self.tags[name] = {tag: (sid, content)}

    @precondition(lambda self: len(self.snaps) > 1)
    @rule(data=st.data())
    def fast_forward(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(b for b in self.snaps if b != "main")), label="branch")
        try:
            branches.fast_forward(self.handle(), name)
        except errors.DivergedBranchError:
            return
        e = min(self.snaps[name])
        main_handle = self.handle()
        kept = {sid: c for sid, c in self.snaps["main"].items() if sid < e}
        kept.update(self.snaps[name])
        self.snaps["main"] = kept
        main_tags = {n: v for n, v in self.tags["main"].items() if v[0] < e or n in self.tags[name]}
        for n, v in self.tags[name].items():
            main_tags.setdefault(n, v)
        self.tags["main"] = main_tags
        assert main_handle.snapshot_ids() == sorted(kept)

    @precondition(lambda self: len(self.snaps) > 1)
    @rule(data=st.data())
    def drop_branch(self, data: st.DataObject) -> None:
        """Metadata only (as Java): the branch's own files become orphans for clean_orphans."""
        name = data.draw(st.sampled_from(sorted(b for b in self.snaps if b != "main")), label="branch")
        branches.drop_branch(self.handle(), name)
        del self.snaps[name]
        del self.tags[name]

    @rule(data=st.data())
    def delete_tag(self, data: st.DataObject) -> None:
        candidates = sorted((b, n) for b, ts in self.tags.items() for n in ts)
        if not candidates:
            return
        branch, name = data.draw(st.sampled_from(candidates), label="tag")
        try:
            plan = tags.plan_delete_tag(self.handle(branch), name)
        except errors.ProtectedObjectError:
            return
        self.execute(plan, self.handle(branch))
        del self.tags[branch][name]

    # -- maintenance -------------------------------------------------------------------------
    @rule(data=st.data(), retain_min=st.integers(1, 4), extra=st.integers(0, 3), limit=st.integers(1, 10),
          by_max=st.booleans())
    def expire_snapshots(self, data: st.DataObject, retain_min: int, extra: int, limit: int, by_max: bool) -> None:
        branch = data.draw(st.sampled_from(sorted(self.snaps)), label="branch")
        retain_max = retain_min + extra
        config = planning.ExpireConfig(retain_min=retain_min, retain_max=retain_max, expire_limit=limit,
                                     time_retained=timedelta(days=1) if by_max else timedelta(0))
        t = self.handle(branch)
        self.execute(planning.plan_expire(t, config, int(time.time() * 1000) + 1000), t)
        ids = sorted(self.snaps[branch])
        earliest, latest = ids[0], ids[-1]
        end = min(latest - retain_min + 1, earliest + limit)
        if by_max:  # every snapshot is younger than a day: only retain_max expires anything
            end = min(end, max(latest - retain_max + 1, earliest))
        self.snaps[branch] = {sid: c for sid, c in self.snaps[branch].items() if sid >= end}
        assert t.snapshot_ids() == sorted(self.snaps[branch])
        assert t.earliest_snapshot_id() == min(self.snaps[branch])

    @rule(data=st.data(), max_expires=st.integers(1, 2))
    def expire_partitions(self, data: st.DataObject, max_expires: int) -> None:
        branch = data.draw(st.sampled_from(sorted(self.snaps)), label="branch")
        t = self.handle(branch)
        config = expiration.PartitionConfig(expiration_time=timedelta(days=7), max_expires=max_expires,
                                            zone_known=True)
        plan = expiration.plan_partition_expiry(t, config, NOW)
        latest_id, content = self.latest(branch)
        expected = sorted(dt for dt in content.partitions() if dt.startswith("2026"))[:max_expires]
        assert [p.values[0] for p in plan.expired] == expected
        if not expected:
            return
        expiration.apply_partition_expiry(t, plan, options=self.storage.options)
        self.snaps[branch][latest_id + 1] = content.drop(set(expected))

    @rule(where=st.sampled_from(["manifest", "index", "statistics", "bucket", "new-partition", "snapshot-tmp"]),
          shaped=st.booleans())
    def writer_debris(self, where: str, shaped: bool) -> None:
        root = self.storage.root
        # Paimon's shape (data-<uuid>-<n>.parquet) is found by key, any other name literally
        name = str(uuid.uuid4()) if shaped else uuid.uuid4().hex
        path = {
            "manifest": f"{root}/manifest/manifest-{name}-0",
            "index": f"{root}/index/index-{name}-0",
            "statistics": f"{root}/statistics/stat-{name}-0",
            "bucket": f"{root}/dt=2026-01-01/bucket-0/data-{name}-0.parquet",
            "new-partition": f"{root}/dt=2030-01-01/bucket-0/data-{name}-0.parquet",
            "snapshot-tmp": f"{root}/snapshot/.snapshot-999.{name}.tmp",
        }[where]
        self.storage.plant(path, age_s=3 * 86400)
        self.debris.add(path)

    @rule(future=st.booleans(), processes=st.sampled_from([1, 2]))
    def clean_orphans(self, future: bool, processes: int) -> None:
        now = int(time.time() * 1000)
        # single writer: a threshold in the future is safe here and makes every orphan eligible
        threshold = now + 60_000 if future else orphans.resolve_older_than(now)
        t = self.handle()
        # processes=2 shares the manifest scan with a forked helper (locally; the local test
        # forks on tables of any size)
        self.execute(orphans.plan_orphan_clean(t, orphans.OrphanConfig(threshold, processes=processes)), t)
        left = {p for p in self.debris if self.storage.exists(p)}
        assert not left, left
        self.debris = set()

    # -- checks ----------------------------------------------------------------------------------
    def expected_views(self) -> dict[str, list[Row]]:
        out: dict[str, list[Row]] = {}
        for branch, snaps in self.snaps.items():
            if not snaps:
                continue
            out[f"{branch}@latest"] = self.latest(branch)[1].expected()
            for sid, content in snaps.items():
                out[f"{branch}@snapshot-{sid}"] = content.expected()
            for name, (_sid, content) in self.tags[branch].items():
                out[f"{branch}@tag-{name}"] = content.expected()
        return out

    def check_reads(self) -> None:
        expected = self.expected_views()
        actual = read_views(self.wh, expected, IDENT, self.storage.options)
        wrong = {k: (actual[k], v) for k, v in expected.items() if actual[k] != v}
        assert not wrong, wrong
        for branch in self.snaps:
            h = self.handle(branch)
            assert h.snapshot_ids() == sorted(self.snaps[branch]), branch
            assert h.tag_names() == sorted(self.tags[branch]), branch

    def check_files(self) -> None:
        main = py_tables(self.wh, IDENT, self.storage.options)["main"]
        missing = {}
        for root in py_roots(self.wh, IDENT, self.storage.options):
            needed, _ = root_requirements(main, root, self.cache)
            gone = sorted(p for p in needed if not self.storage.exists(p))
            if gone:
                missing[root.label] = gone
        assert not missing, missing

    @invariant()
    def everything_reads_as_modelled(self) -> None:
        if not self.ready:
            return
        self.check_reads()
        self.check_files()

    def teardown(self) -> None:
        try:
            if self.ready:
                self.final_check()
        finally:
            if self.storage.fs is None:
                shutil.rmtree(self.wh, ignore_errors=True)

    def final_check(self) -> None:
        """Expire every branch as far as possible, clean orphans with a threshold in the past
        (all files aged), then nothing unreferenced may remain."""
        for branch in sorted(self.snaps):
            t = self.handle(branch)
            self.execute(planning.plan_expire(t, planning.ExpireConfig(retain_min=1, time_retained=timedelta(0),
                                                                   expire_limit=1000),
                                            int(time.time() * 1000) + 1000), t)
            latest = max(self.snaps[branch])
            self.snaps[branch] = {latest: self.snaps[branch][latest]}
        self.storage.age_everything(2 * 86400)
        t = self.handle()
        threshold = orphans.resolve_older_than(int(time.time() * 1000))
        self.execute(orphans.plan_orphan_clean(t, orphans.OrphanConfig(threshold)), t)
        self.check_reads()
        self.check_files()
        main = py_tables(self.wh, IDENT, self.storage.options)["main"]
        referenced: set[str] = set()
        for root in py_roots(self.wh, IDENT, self.storage.options):
            referenced |= root_requirements(main, root, self.cache)[1]
        unreferenced = self.storage.managed() - referenced
        assert not unreferenced, sorted(unreferenced)


SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much],
                "derandomize": False, "print_blob": True}


def test_random_histories_keep_every_retained_view(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tablekeeper.core.reclaim.orphans import references

    monkeypatch.setattr(references, "MIN_NAMES_TO_FORK", 0)

    class Local(MaintenanceMachine):
        pass

    Local.storage_factory = staticmethod(lambda: Storage(tempfile.mkdtemp(dir=tmp_path)))
    run_state_machine_as_test(Local, settings=settings(max_examples=int(os.environ.get("TK_PROP_EXAMPLES", "25")), stateful_step_count=14, **SETTINGS))


@pytest.mark.s3
def test_random_histories_on_s3(s3: s3fs.S3FileSystem, s3_bucket: str, s3_options: dict[str, str]) -> None:
    class OnS3(MaintenanceMachine):
        pass

    OnS3.storage_factory = staticmethod(
        lambda: Storage(f"s3://{s3_bucket}/{uuid.uuid4().hex[:8]}", dict(s3_options), s3))
    run_state_machine_as_test(OnS3, settings=settings(max_examples=int(os.environ.get("TK_PROP_S3_EXAMPLES", "3")), stateful_step_count=6, **SETTINGS))
