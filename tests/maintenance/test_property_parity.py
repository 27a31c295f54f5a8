"""Property test: the in-process evaluator and the Spark job make the same deletions (issue #11, proof).

The state machine of ``test_property.py`` draws a random history (append / primary-key tables,
writes, partition overwrites, tags, branches, fast-forwards, branch drops, tag deletions, its own
in-process expirations and orphan cleanups, Paimon-shaped writer debris). This module adds what the
two-evaluator check needs:

- table options drawn at creation: a decoupled changelog (``changelog.num-retained.*`` /
  ``changelog.time-retained`` retaining more than the snapshots), ``changelog-producer=input`` on
  primary-key tables, ``snapshot.expire.limit`` (the batch size of both expirations) and
  ``snapshot.clean-empty-directories``;
- a rule (and, when an example never drew it, its teardown) that copies the warehouse twice and
  runs the same sequence of 1-2 maintenance runs on both copies: copy A in process (the core
  planners ``plan_expire`` / ``plan_expire_changelog`` / ``plan_orphan_clean`` and
  ``execution.execute``, as the CLI runs them; ``batches`` as repeated plan + execute), copy B
  through the Spark job (``job.run(spark, JobRequest(...))`` on the ``local[2]`` session). The
  machine's own warehouse stays untouched, so its model stays valid.

After each run of the sequence:
1. same deletions: the Spark dry run changes nothing and plans what the first in-process plan
   plans (files and bytes per kind); the real run's planned/deleted counts, written hints and
   removed directories equal the in-process sums; the trees left on storage are identical
   (relative names of every file, and locally of every directory);
2. same tables: pypaimon reads every retained snapshot, tag and branch head on both copies, they
   are equal, and equal to the reads before the run (only expired snapshots disappear);
3. no file that a retained snapshot, tag or long-lived changelog needs is missing on either copy
   (pypaimon's manifest readers as the oracle).
A run rejected as bad input or unsafe must be rejected by both evaluators with the same error
type, and change nothing on either copy.

Example counts are bounded: every example makes one comparison, i.e. 2-3 Spark jobs (a warm
expiration job on these tiny tables costs ~20-30 CPU seconds of JVM + Python workers on the
development VM), so ``TABLEKEEPER_PROPERTY_EXAMPLES`` (default 4 locally) and
``TABLEKEEPER_PROPERTY_S3_EXAMPLES`` (default 2) raise them for a nightly run; with either set,
examples are random instead of derandomized. The in-process-only machine keeps its own counts
(``TK_PROP_EXAMPLES``, 25).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import s3fs
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule, run_state_machine_as_test

from tablekeeper.core import errors
from tablekeeper.core.paimon.table import Table
from tablekeeper.core.plans import execution, plan
from tablekeeper.core.reclaim.expire import planning
from tablekeeper.core.reclaim.expire import retention as retention_settings
from tablekeeper.core.reclaim.orphans import planning as orphans
from tablekeeper.core.values import durations
from tablekeeper.spark import job, job_request
from tests.maintenance.helpers import IDENT, copy_tree, handle, py_roots, py_tables, root_requirements
from tests.maintenance.test_property import MaintenanceMachine, Storage
from tests.support import s3 as s3support
from tests.support.paimon import dir_listing, snapshot_views

DAY_MS = 86_400_000
#: Two tasks per Spark I/O stage and two in-process delete threads.
PARALLELISM = 2
#: What one batch expires, by planned file kind (a batch follows while the previous one expired some).
BATCH_UNIT = {"expire": plan.FileKind.SNAPSHOT.value, "expire-changelog": plan.FileKind.CHANGELOG_META.value}
#: Comparisons a rule may start per example (each starts 2-6 Spark jobs).
MAX_COMPARISONS = 1


@dataclasses.dataclass(frozen=True)
class Run:
    """One maintenance run, as a ``JobRequest`` describes it (the in-process side reads the same
    fields). ``days_ahead`` moves "now" forward, so that every untracked file is old enough."""

    operation: job_request.Operation
    branch: str = "main"
    retain_min: int | None = None
    retain_max: int | None = None
    time_retained: str | None = None
    expire_limit: int | None = None
    batches: int = 1
    older_than: str | None = None
    days_ahead: int = 0

    def request(self, storage: Storage, now: int, *, dry_run: bool) -> job_request.JobRequest:
        return job_request.JobRequest(
            operation=self.operation, warehouse=storage.warehouse, table=IDENT, branch=self.branch,
            options=dict(storage.options or {}), dry_run=dry_run, older_than=self.older_than, now_ms=now,
            retention=self.retention(storage), parallelism=PARALLELISM, batches=self.batches)

    def flags(self) -> retention_settings.RetentionFlags:
        time_retained = (durations.parse_duration(self.time_retained, field="--time-retained")
                         if self.time_retained is not None else None)
        return retention_settings.RetentionFlags(retain_min=self.retain_min, retain_max=self.retain_max,
                                                 time_retained=time_retained, expire_limit=self.expire_limit)

    def retention(self, storage: Storage) -> retention_settings.Retention | None:
        """The one retention value the CLI resolves from the table's options and its flags (None:
        no flags, the job reads the table's options itself)."""
        flags = self.flags()
        if flags.is_empty:
            return None
        options = handle(storage.warehouse, branch=self.branch, file_io=storage.io).options()
        return retention_settings.from_options(options, flags)


def draw_run(data: st.DataObject, branches: list[str]) -> Run:
    operation = data.draw(st.sampled_from(["expire", "expire", "expire-changelog", "clean-orphans"]),
                          label="operation")
    if operation == "clean-orphans":
        return Run("clean-orphans", older_than=data.draw(st.sampled_from([None, "2 d", "1 h"]), label="older than"),
                   days_ahead=data.draw(st.sampled_from([0, 3]), label="days ahead"))
    branch = data.draw(st.sampled_from(branches), label="branch")
    batches = data.draw(st.integers(1, 3), label="batches")
    if operation == "expire-changelog":
        return Run("expire-changelog", branch=branch, batches=batches)
    retain_min = data.draw(st.none() | st.integers(1, 4), label="retain min")
    extra = data.draw(st.none() | st.integers(0, 3), label="retain max - min") if retain_min else None
    return Run("expire", branch=branch, retain_min=retain_min,
               retain_max=None if extra is None or retain_min is None else retain_min + extra,
               time_retained=data.draw(st.sampled_from([None, "0 ms", "1 d"]), label="time retained"),
               expire_limit=data.draw(st.none() | st.integers(1, 6), label="expire limit"), batches=batches)


#: Run at the end of an example that never drew a comparison: expire in batches, then expire the
#: long-lived changelog that created when it is decoupled, else clean every orphan.
DEFAULT_EXPIRE = Run("expire", retain_min=1, time_retained="0 ms", expire_limit=2, batches=2)
DEFAULT_DECOUPLED = (DEFAULT_EXPIRE, Run("expire-changelog", batches=2))
DEFAULT_COUPLED = (DEFAULT_EXPIRE, Run("clean-orphans", days_ahead=3))


# -- the in-process evaluator ---------------------------------------------------------------------------
@dataclasses.dataclass
class Outcome:
    """The in-process counterpart of a ``RunResult``: every batch's plan and the summed execution."""

    plans: list[plans.Plan] = dataclasses.field(default_factory=list)
    planned_files: Counter[str] = dataclasses.field(default_factory=Counter)
    planned_bytes: Counter[str] = dataclasses.field(default_factory=Counter)
    deleted: Counter[str] = dataclasses.field(default_factory=Counter)
    deleted_bytes: Counter[str] = dataclasses.field(default_factory=Counter)
    written: list[str] = dataclasses.field(default_factory=list)
    removed_dirs: int = 0


def plan_in_process(run: Run, table: Table, now: int) -> plan.Plan:
    """What ``tablekeeper expire / expire-changelog / clean-orphans`` plan for these arguments."""
    if run.operation == "clean-orphans":
        age = durations.parse_duration(run.older_than, field="--older-than") if run.older_than else None
        threshold = orphans.resolve_older_than(now, older_than_age=age)
        return orphans.plan_orphan_clean(table, orphans.OrphanConfig(threshold))
    if run.operation == "expire-changelog":
        return planning.plan_expire_changelog(table, planning.changelog_config_from_options(table.options()), now)
    options = table.options()
    return planning.plan_expire(table, planning.expire_config(retention_settings.from_options(options, run.flags()), options),
                              now)


def run_in_process(run: Run, storage: Storage, now: int) -> Outcome:
    """Plan and execute up to ``run.batches`` times, each on the table the previous batch left,
    while the previous batch expired something."""
    out = Outcome()
    for _ in range(run.batches):
        table = handle(storage.warehouse, branch=run.branch, file_io=storage.io)
        plan = plan_in_process(run, table, now)
        summary = plan.summary()
        out.plans.append(plan)
        out.planned_files.update(summary["files"])
        out.planned_bytes.update(summary["bytes"])
        result = execution.execute(plan, table.file_io, parallelism=PARALLELISM)
        assert not result.failed, result.failed
        out.deleted.update(result.deleted)
        out.deleted_bytes.update(result.deleted_bytes)
        out.written.extend(result.written)
        out.removed_dirs += len(result.removed_dirs)
        unit = BATCH_UNIT.get(run.operation)
        if unit is None or not summary["files"].get(unit):
            break
    return out


# -- copies of a warehouse ------------------------------------------------------------------------------
def copy_storage(src: Storage, name: str) -> Storage:
    """A copy of the whole warehouse beside it, every file with its modification time."""
    if src.fs is None:
        return Storage(copy_tree(src.warehouse, f"{src.warehouse}-{name}"))
    bucket, prefix = src.warehouse.removeprefix("s3://").split("/", 1)
    target = f"{prefix}-{name}"
    for key in objects(src.fs, src.warehouse):  # directory markers (``dir/``) too, as pyarrow wrote them
        rel = key[len(f"{bucket}/{prefix}/"):]
        body = b"" if key.endswith("/") else src.fs.cat_file(key)
        s3support.put_objects(bucket, {f"{target}/{rel}": body})
        s3support.set_mtime(bucket, f"{target}/{rel}", s3support.get_mtime(bucket, f"{prefix}/{rel}"))
    return Storage(f"s3://{bucket}/{target}", src.options, src.fs)


def objects(fs: s3fs.S3FileSystem, uri: str) -> list[str]:
    """Every object key below ``uri`` as ``bucket/key`` (``find`` without ``detail`` strips the
    trailing ``/`` of directory markers, which would make them look like files)."""
    return sorted(fs.find(uri.removeprefix("s3://"), detail=True))


def remove_storage(storage: Storage) -> None:
    if storage.fs is None:
        shutil.rmtree(storage.warehouse, ignore_errors=True)
    else:
        storage.fs.rm(storage.warehouse.removeprefix("s3://"), recursive=True)


def tree(storage: Storage) -> set[str]:
    """Relative names of everything in the warehouse: files and directories (``name/``) locally,
    object keys on S3 (directory markers excluded: S3 has no directories)."""
    if storage.fs is None:
        # The Spark job holds the table lease and writes its intent under ``.tablekeeper/`` as the
        # CLI does (copy A's bare planners do not): the empty directories left there are not
        # compared; a file left there (a lease not released, an intent not removed) still is.
        return _without_bookkeeping_dirs(set(dir_listing(storage.warehouse)))
    prefix = storage.warehouse.removeprefix("s3://")
    return {k[len(prefix) + 1:] for k in objects(storage.fs, storage.warehouse) if not k.endswith("/")}


def _without_bookkeeping_dirs(names: set[str]) -> set[str]:
    """``names`` without the directories of tablekeeper's own ``.tablekeeper/`` (lease, intents)."""
    return {n for n in names if not (n.endswith("/") and "/.tablekeeper/" in f"/{n}")}


def relative(paths: list[str], storage: Storage) -> list[str]:
    return sorted(p.removeprefix("file:").replace(storage.warehouse, "") for p in paths)


def missing_needed(storage: Storage) -> dict[str, list[str]]:
    """{root: [needed files that are gone]} over every retained snapshot, tag and long-lived
    changelog of every branch (pypaimon's manifest readers)."""
    main = py_tables(storage.warehouse, IDENT, storage.options)["main"]
    cache: dict[str, Any] = {}
    out = {}
    for root in py_roots(storage.warehouse, IDENT, storage.options):
        needed, _ = root_requirements(main, root, cache)
        gone = sorted(p for p in needed if not storage.exists(p))
        if gone:
            out[root.label] = gone
    return out


# -- the machine ----------------------------------------------------------------------------------------
class ParityMachine(MaintenanceMachine):
    """``MaintenanceMachine`` plus retention options and the two-evaluator comparison."""

    spark: Any = None

    def __init__(self) -> None:
        super().__init__()
        self.compared = 0
        self.copies = 0

    def table_options(self, kind: str, data: st.DataObject) -> dict[str, str]:
        options: dict[str, str] = {}
        changelog = data.draw(st.sampled_from(["coupled", "decoupled-min", "decoupled-time"]), label="changelog")
        if changelog != "coupled":
            options.update({"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"})
        if changelog == "decoupled-min":
            options.update({"changelog.num-retained.min": str(data.draw(st.integers(2, 4), label="changelog min"))})
        elif changelog == "decoupled-time":
            options.update({"changelog.time-retained": "1 d"})
        if kind != "append" and data.draw(st.booleans(), label="changelog-producer input"):
            options["changelog-producer"] = "input"
        limit = data.draw(st.none() | st.integers(1, 3), label="snapshot.expire.limit")
        if limit is not None:
            options["snapshot.expire.limit"] = str(limit)
        if data.draw(st.booleans(), label="clean empty directories"):
            options["snapshot.clean-empty-directories"] = "true"
        return options

    @precondition(lambda self: self.ready and self.compared < MAX_COMPARISONS)
    @rule(data=st.data(), n=st.integers(1, 2))
    def compare_evaluators(self, data: st.DataObject, n: int) -> None:
        branches = sorted(b for b in self.snaps if self.snaps[b])
        self.compare([draw_run(data, branches) for _ in range(n)])

    def teardown(self) -> None:
        try:
            if self.ready and not self.compared:
                decoupled = planning.config_from_options(self.handle().options()).changelog_decoupled
                self.compare(list(DEFAULT_DECOUPLED if decoupled else DEFAULT_COUPLED))
        finally:
            super().teardown()

    def compare(self, runs: list[Run]) -> None:
        self.compared += 1
        self.copies += 1
        a = copy_storage(self.storage, f"local{self.copies}")
        b = copy_storage(self.storage, f"spark{self.copies}")
        try:
            before = snapshot_views(a.warehouse, IDENT, a.options)
            assert before == self.expected_views()  # the copy reads as the model says
            for i, run in enumerate(runs):  # a dry run first (Spark jobs are the cost: one per comparison)
                before = self.compare_one(run, a, b, before, dry_run=i == 0)
        finally:
            remove_storage(a)
            remove_storage(b)

    def compare_one(self, run: Run, a: Storage, b: Storage, before: dict[str, Any], *,
                    dry_run: bool) -> dict[str, Any]:
        now = int(time.time() * 1000) + 1000 + run.days_ahead * DAY_MS
        trees = tree(a), tree(b)
        assert trees[0] == trees[1]
        try:
            local = run_in_process(run, a, now)
        except errors.TablekeeperError as e:  # bad input or unsafe: both reject it, neither changes anything
            assert tree(a) == trees[0]
            with pytest.raises(type(e)):
                job.run(self.spark, run.request(b, now, dry_run=False))
            assert tree(b) == trees[1]
            return before

        if dry_run:
            dry = job.run(self.spark, run.request(b, now, dry_run=True))
            assert tree(b) == trees[1], "a Spark dry run changed the warehouse"
            first = local.plans[0].summary()
            assert (dry.planned_files, dry.planned_bytes) == (first["files"], first["bytes"]), (run, first["notes"])
            assert dry.deleted == {}

        real = job.run(self.spark, run.request(b, now, dry_run=False))
        assert real.failed_count == 0, real.failure_sample
        assert (real.planned_files, real.planned_bytes) == (dict(local.planned_files), dict(local.planned_bytes)), run
        assert (real.deleted, real.deleted_bytes) == (dict(local.deleted), dict(local.deleted_bytes)), run
        assert relative(real.written, b) == relative(local.written, a), run
        assert real.removed_dirs == local.removed_dirs, run
        assert real.details.get("batches", 1) == len(local.plans), run

        # (1) the same deletion set: identical trees
        left_a, left_b = tree(a), tree(b)
        assert left_a == left_b, (run, sorted(left_a ^ left_b))
        # (2) the same tables, reading as before apart from expired snapshots
        after = snapshot_views(a.warehouse, IDENT, a.options)
        assert snapshot_views(b.warehouse, IDENT, b.options) == after, run
        changed = {k for k in after if k not in before or after[k] != before[k]}
        assert not changed, (run, sorted(changed))
        gone = set(before) - set(after)
        assert all("@snapshot-" in k for k in gone), (run, sorted(gone))
        for branch in {k.split("@")[0] for k in before}:
            ha, hb = handle(a.warehouse, branch=branch, file_io=a.io), handle(b.warehouse, branch=branch, file_io=b.io)
            assert ha.snapshot_ids() == hb.snapshot_ids() and ha.changelog_ids() == hb.changelog_ids(), (run, branch)
            assert ha.tag_names() == hb.tag_names() == sorted(self.tags[branch]), (run, branch)
        # (3) nothing a retained root needs is missing
        assert not missing_needed(a), run
        assert not missing_needed(b), run
        return after


# -- tests ----------------------------------------------------------------------------------------------
def _examples(env: str, default: int) -> tuple[int, bool]:
    """(examples, derandomize): bounded and reproducible by default, random when raised."""
    raw = os.environ.get(env)
    return (int(raw), False) if raw else (default, True)


def _settings(env: str, default: int, steps: int) -> settings:
    examples, derandomize = _examples(env, default)
    return settings(max_examples=examples, stateful_step_count=steps, deadline=None, derandomize=derandomize,
                    database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.fixture
def machine_spark(spark: Any) -> Iterator[Any]:
    ParityMachine.spark = spark
    try:
        yield spark
    finally:
        ParityMachine.spark = None


@pytest.mark.spark
@pytest.mark.timeout(1800)  # a hang guard only: a loaded 2-core machine runs Spark jobs 10x slower
def test_in_process_and_spark_delete_the_same_files(machine_spark: Any, tmp_path: Path) -> None:
    class Local(ParityMachine):
        pass

    Local.storage_factory = staticmethod(lambda: Storage(tempfile.mkdtemp(dir=tmp_path)))
    run_state_machine_as_test(Local, settings=_settings("TABLEKEEPER_PROPERTY_EXAMPLES", 4, 8))


@pytest.mark.spark
@pytest.mark.s3
@pytest.mark.timeout(1800)
def test_in_process_and_spark_delete_the_same_files_on_s3(machine_spark: Any, s3: s3fs.S3FileSystem,
                                                          s3_bucket: str, s3_options: dict[str, str]) -> None:
    class OnS3(ParityMachine):
        pass

    OnS3.storage_factory = staticmethod(
        lambda: Storage(f"s3://{s3_bucket}/{uuid.uuid4().hex[:8]}", dict(s3_options), s3))
    run_state_machine_as_test(OnS3, settings=_settings("TABLEKEEPER_PROPERTY_S3_EXAMPLES", 2, 5))
