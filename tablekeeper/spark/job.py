"""The driver of the tablekeeper Spark jobs: core's decisions, evaluated distributed.

Nothing here decides what is safe to delete. Each job asks core for a decision
(:mod:`tablekeeper.core.orphans.decision`) and evaluates it at scale; what is distributed is what grows
with the table: listing, manifest reads, set differences and deletes. The driver holds root
descriptors, bucket directories, error rows, per-kind counts and a sample of at most
``safety.STATUS_SAMPLE_MAX`` paths — never a list of files, except an object store's flat
listing for orphan cleanup (one LIST page per 1,000 objects is the minimum; hash-partitioned
segments across executors would need a listing that starts after a key, which core does not
offer yet).

Orphan cleanup evaluates ``orphans.decide_orphan_clean`` (spark-jobs.md §5.1):
  1. candidates first: the decision's candidate directories and the bucket directories of its
     data roots (first partition level listed on the driver, deeper levels walked in executors
     with core's directory predicates), listed per directory in executors with core's
     candidate-name filter — on an object store instead core's ``orphans.list_candidates``
     within one flat listing of the table's prefix (``FileIO.flat_listing``) on the driver —
     materialised (``localCheckpoint``) before any root is read (Paimon #3075);
  2. roots from ``orphans.enumerate_roots``; the used set in executors: root JSON -> manifest
     lists -> distinct manifests -> names, scoped to candidate names by a semi-join (Paimon
     #4287); read errors travel as rows and are judged on the driver with
     ``guarantees.RULES`` (a reference Paimon lets dangle is ignored and reported) and
     ``decisions.missing_reference_aborts``;
  3. orphans = candidates left-anti-join used (by name), materialised once; counts and sample;
  4. deletes per stage (``plans.stage_of``) in batches of ``execution.delete_batch_size`` keys
     numbered across tasks (:func:`_delete_stages`), summary rows; then the bucket directories
     the deletes may have emptied (``decisions.may_empty``), non-recursively.

Expiration evaluates ``expire.decide_expire`` / ``decide_expire_changelog`` (§5.2): each
``RootUse`` of the decision is one row; manifest lists, manifests and index manifests are read in
executors, each manifest list and manifest once per run (``_Ctx.lists``, ``_Ctx.entries``), in two passes (the candidates' deltas and changelogs first, then the protecting uses,
scoped to candidate names). Core's rules are applied where the data is: deletions within one
delta by ``expire_decisions.effective_deletions``, live files by ``manifests.merge_kinds`` in manifest
order, a root's metadata by ``core.root_metadata``, every read error by
``expire_decisions.judge_missing`` (abort, skip a cleaned delta, or a broken tag). Deletes run stage by
stage in executors, then the decision's tail (changelog copies, snapshot or changelog files,
EARLIEST) through core's executor on the driver.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from tablekeeper.core import concurrency, errors, expire, orphans, paimon, plans, reach, values
from tablekeeper.core.expire import ReadOutcome, RootUse
from tablekeeper.core.paimon import Table, manifests, open_table
from tablekeeper.core.paimon.pypaimon import PartitionPathResolver
from tablekeeper.core.reach import ListRole
from tablekeeper.core.storage import DeleteOutcome, DeleteResult
from tablekeeper.spark import executor as ex
from tablekeeper.spark import job_request, request_tally, result_artifact, run_steps

__all__ = ["run", "run_to_result", "local_session", "worker_pids", "SESSION_DEFAULTS"]

log = logging.getLogger(__name__)

#: A name no Paimon file can have: error rows carry it through the semi-join with candidates.
_ERROR_NAME = "\x00tablekeeper-read-error"
_DATA, _CHANGELOG = plans.FileKind.DATA.value, plans.FileKind.CHANGELOG_DATA.value
_MANIFEST, _INDEX, _STATS = plans.FileKind.MANIFEST.value, plans.FileKind.INDEX.value, plans.FileKind.STATISTICS.value
_ERROR_COLLECT_MAX = 1_000

#: Spark settings tablekeeper sessions start from (spark-jobs.md §6.3, §7).
SESSION_DEFAULTS: Mapping[str, str] = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


# -- sessions ----------------------------------------------------------------------------------------
def local_session(master: str | None = None, conf: Mapping[str, str] | None = None,
                  app_name: str = "tablekeeper") -> SparkSession:
    """A Spark session for ``python -m tablekeeper.spark`` and the CLI's ``--engine spark``:
    the master given (or ``local[*]`` unless spark-submit set one), executors on this
    interpreter (``PYSPARK_PYTHON``)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    settings = dict(SESSION_DEFAULTS)
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:  # not started by spark-submit
        master = "local[*]"
    if master:
        builder = builder.master(master)
        if master.startswith("local"):  # results larger than 1 MB are fetched from the driver's address
            settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    for key, value in {**settings, **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _parallelism(spark: SparkSession, request: job_request.JobRequest) -> int:
    if request.parallelism:
        return request.parallelism
    try:
        default = int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext
        default = 0
    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions") or 200)
    return max(1, default, shuffle)


# -- context ----------------------------------------------------------------------------------------
class _Ctx:
    def __init__(self, spark: SparkSession, request: job_request.JobRequest, result: result_artifact.RunResult,
                 fault: Mapping[str, Any] | None) -> None:
        self.spark = spark
        self.request = request
        self.result = result
        self.fault = dict(fault) if fault else None
        self.n = _parallelism(spark, request)
        self._kept: list[DataFrame] = []
        self.tally = request_tally.active() or request_tally.Tally(spark)
        #: manifest lists read so far in this run (names; their rows, materialised)
        self._lists: tuple[set[str], DataFrame] | None = None
        #: manifests read so far in this run: their entries (materialised), and their names
        self._entries: tuple[DataFrame, DataFrame] | None = None
        self._resolver: tuple[str, PartitionPathResolver] | None = None

    def df(self, rows: Iterable[Sequence[Any]], fields: ex.Fields) -> DataFrame:
        return self.spark.createDataFrame([tuple(r) for r in rows], ex.ddl(fields))

    def io(self, df: DataFrame, fn: Callable[..., Iterator[Any]], out: ex.Fields, spec: Mapping[str, Any],
           key: str | None = None) -> DataFrame:
        """An I/O stage: explicit partition count first (AQE would merge small I/O tasks)."""
        df = df.repartition(self.n, key) if key else df.repartition(self.n)
        return df.mapInArrow(self.tally.bind(fn, spec), ex.ddl(out))

    def keep(self, df: DataFrame) -> DataFrame:
        """Materialise once; never recomputed later (lost blocks fail the job, they are not
        silently re-derived from a newer table state)."""
        kept = df.localCheckpoint(eager=True)
        self._kept.append(kept)
        return kept

    def lists(self, names: Iterable[str], spec: Mapping[str, Any]) -> DataFrame:
        """The rows of manifest lists ``names`` (``ex.read_lists``), each list read once per run:
        the driver knows every list a decision needs (from its roots), so only the ones not
        read before are read, by one task per list name, and kept."""
        wanted = set(names)
        seen, rows = self._lists if self._lists is not None else (set(), None)
        fresh = sorted(wanted - seen)
        if fresh or rows is None:
            read = self.keep(self.io(self.df([(n,) for n in fresh], ex.NAME_FIELDS), ex.read_lists, ex.LIST_FIELDS,
                                     spec, key="name"))
            rows = read if rows is None else rows.unionByName(read)
            seen = seen | set(fresh)
            self._lists = (seen, rows)
        return rows.filter(F.col("list_name").isin(sorted(wanted))) if len(wanted) < len(seen) else rows

    def entries(self, names: DataFrame, spec: Mapping[str, Any]) -> DataFrame:
        """The entries (``ex.read_entries``) of the manifests ``names`` (a column ``name``), each
        manifest read once per run: the names not read before are read, by one task per name,
        and kept; both passes of an evaluation and core's verify evaluation share them."""
        if self._entries is None:
            fresh = names
        else:
            fresh = names.join(self._entries[1], "name", "left_anti")
        read = self.keep(self.io(fresh.distinct(), ex.read_entries, ex.ENTRY_FIELDS, spec, key="name"))
        rows = read if self._entries is None else self._entries[0].unionByName(read)
        self._entries = (rows, rows.select(F.col("manifest_name").alias("name")).distinct())
        return rows.join(names.select(F.col("name").alias("manifest_name")).distinct(), "manifest_name", "left_semi")

    def resolver(self, main: Table) -> PartitionPathResolver:
        """The table's partition path resolver, built once per run (it reads the schema: the
        partition keys cannot change, and core's verify evaluation would read it again)."""
        if self._resolver is None or self._resolver[0] != main.root:
            self._resolver = (main.root, PartitionPathResolver(main))
        return self._resolver[1]

    def release(self) -> None:
        self._lists = None
        self._entries = None
        for df in self._kept:
            try:
                df.unpersist()
            except Exception:  # pragma: no cover - best effort
                pass
        self._kept.clear()

    def spec(self, table: Table, **extra: Any) -> dict[str, Any]:
        main = table.on_branch(paimon.MAIN)
        return {"storage": {"uri": main.root,
                            "options": request_tally.executor_options(self.request.options, self.spark),
                            "env_options": list(self.request.env_options)}, "root": main.root,
                "manifest_dir": main.shared_dir(paimon.MANIFEST_DIR),
                "batch_size": plans.delete_batch_size(main.file_io, self.request.batch_size), **extra}


# -- shared helpers ----------------------------------------------------------------------------------
def _is_null(name: str) -> Column:
    return F.col(name).isNull()


def _error_sentinel(name_col: str) -> Column:
    return F.when(F.col("error_kind").isNotNull(), F.lit(_ERROR_NAME)).otherwise(F.col(name_col))


#: Rows of a delete plan per stage and per partition of the (materialised) plan:
#: ``{stage: {partition id: rows}}``, stages in Paimon's order.
Stages = dict[int, dict[int, int]]


def _record_planned(ctx: _Ctx, planned: DataFrame) -> Stages:
    """Per-kind counts and bytes, a bounded sample; returns the stages present with their rows
    per partition of ``planned`` (what :func:`_delete_stages` numbers its batches from)."""
    rows = planned.groupBy("stage", "kind", F.spark_partition_id().alias("pid")).agg(
        F.count(F.lit(1)).alias("n"), F.sum("size").alias("bytes"),
        F.sum(F.when(F.col("size").isNull(), 1).otherwise(0)).alias("unsized")).collect()
    files: dict[str, int] = {}
    nbytes: dict[str, int] = {}
    stages: Stages = {}
    for r in rows:
        files[r["kind"]] = files.get(r["kind"], 0) + int(r["n"])
        nbytes[r["kind"]] = nbytes.get(r["kind"], 0) + int(r["bytes"] or 0)
        if r["unsized"]:
            ctx.result.planned_unsized[r["kind"]] = ctx.result.planned_unsized.get(r["kind"], 0) + int(r["unsized"])
        per_task = stages.setdefault(int(r["stage"]), {})
        per_task[int(r["pid"])] = per_task.get(int(r["pid"]), 0) + int(r["n"])
    for kind, n in files.items():
        ctx.result.planned_files[kind] = ctx.result.planned_files.get(kind, 0) + n
        ctx.result.planned_bytes[kind] = ctx.result.planned_bytes.get(kind, 0) + nbytes[kind]
    room = values.STATUS_SAMPLE_MAX - len(ctx.result.sample)
    if room > 0 and files:
        ctx.result.sample.extend(r["path"] for r in planned.select("path").limit(room).collect())
    return dict(sorted(stages.items()))


def _delete_stages(ctx: _Ctx, planned: DataFrame, stages: Stages, spec: Mapping[str, Any]) -> None:
    """One Spark action per stage, strictly in order: a stage starts after the previous one
    returned. A stage's rows are numbered across the partitions of ``planned`` (materialised,
    so its partitions are stable; ``stages`` holds their row counts) and cut into batches of
    ``spec["batch_size"]`` keys: ``ceil(rows / batch)`` bulk deletes per stage, as in process,
    spread over up to ``ctx.n`` tasks. The executors return one summary row per (stage, kind)
    and task, summed here."""
    fault = ctx.fault
    batch = int(spec["batch_size"])
    for stage, per_task in stages.items():
        concurrency.point(f"before:spark-delete:{stage}")  # core's re-checks and the lease run here
        offsets: dict[str, int] = {}
        total = 0
        for pid in sorted(per_task):
            offsets[str(pid)] = total
            total += per_task[pid]
        stage_spec = {**spec, "fault": fault} if fault else spec
        numbered = _numbered(planned.filter(F.col("stage") == stage), offsets, batch)
        tasks = max(1, min(ctx.n, -(-total // batch)))
        numbered = numbered.repartition(tasks, "batch").sortWithinPartitions("batch")
        try:
            rows = numbered.mapInArrow(ctx.tally.bind(ex.delete_files, stage_spec),
                                       ex.ddl(ex.SUMMARY_FIELDS)).collect()
        except Exception as e:
            raise errors.StorageError(
                f"deletion stage {stage} failed after Spark's task retries: {_short(e)}",
                fix="rerun the same job: it plans again and finishes the work (deleted files count as missing)") from e
        _add_summary(ctx.result, rows)


def _numbered(part: DataFrame, offsets: Mapping[str, int], batch: int) -> DataFrame:
    """``ex.number_batches``'s rule as Spark expressions, without a Python stage: a row's batch
    is ``(offsets[partition] + position in the partition) // batch``. ``part`` is a filter of
    the materialised plan (no shuffle in between), so ``spark_partition_id`` is the partition
    the driver counted, and the low 33 bits of ``monotonically_increasing_id`` are the row's
    position among the filtered rows of that partition (Spark numbers them in the projection
    right above the filter)."""
    pid = F.spark_partition_id()
    position = F.monotonically_increasing_id() - F.shiftleft(pid.cast("long"), 33)
    pairs = sorted((int(p), int(n)) for p, n in offsets.items())
    offset = F.create_map(*[F.lit(x) for pair in pairs for x in pair])[pid]
    names = [n for n, _ in ex.DELETE_FIELDS]
    return part.select(*names, (offset.cast("long") + position).alias("n")).select(
        *names, F.expr(f"n div {max(1, batch)}").cast("long").alias("batch"))


def _add_summary(result: result_artifact.RunResult, rows: Iterable[Any]) -> None:
    for r in rows:
        kind = r["kind"]
        if r["deleted"]:
            result.deleted[kind] = result.deleted.get(kind, 0) + int(r["deleted"])
            result.deleted_bytes[kind] = result.deleted_bytes.get(kind, 0) + int(r["bytes"])
        if r["missing"]:
            result.missing[kind] = result.missing.get(kind, 0) + int(r["missing"])
        if r["unsized"]:
            result.unsized[kind] = result.unsized.get(kind, 0) + int(r["unsized"])
        result.failed_count += int(r["failed"])
        for line in r["failure_sample"] or ():
            if len(result.failure_sample) < values.STATUS_SAMPLE_MAX:
                path, _, error = line.partition(": ")
                result.failure_sample.append({"path": path, "error": error})


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    tail = [line for line in text if "Error" in line or "Exception" in line]
    return (tail[-1] if tail else (text[0] if text else type(error).__name__))[:500]


#: Seconds per planning phase of the current run (copied into ``RunResult.timings``).
_PHASES: dict[str, float] = {}


def _planning(fn: Callable[[], Any], what: str) -> Any:
    """Run a planning action: an executor failure (after Spark's retries) fails closed."""
    t0 = time.perf_counter()
    try:
        return fn()
    except errors.TablekeeperError:
        raise
    except Exception as e:
        raise errors.IncompleteProtectionSetError(
            f"{what} failed in Spark: {_short(e)}",
            fix="nothing was deleted; check storage access from the executors and rerun") from e
    finally:
        _PHASES[what] = _PHASES.get(what, 0.0) + time.perf_counter() - t0
        log.debug("%s: %.2fs", what, time.perf_counter() - t0)


# -- orphan cleanup ------------------------------------------------------------------------------------
def _clean_orphans(ctx: _Ctx) -> None:
    request, result = ctx.request, ctx.result
    main = open_table(request.warehouse, request.table, options=request.storage_options()).on_branch(paimon.MAIN)
    now = request.now_ms if request.now_ms is not None else values.now_ms()
    io = main.file_io
    with io.one_view():  # branches, options, schema: each read once (FileIO.one_view), as in process
        decision = orphans.decide_orphan_clean(main, orphans.OrphanConfig(run_steps.orphan_threshold(request, now)))
        producer = main.options().get("changelog-producer", "none").strip().lower()
    threshold = decision.older_than_ms
    depth = decision.partition_depth
    spec = ctx.spec(main, older_than_ms=threshold, depth=depth, changelog_producer=producer,
                    changelog_prefixes=list(decision.changelog_prefixes))
    t0 = time.perf_counter()

    # 1. candidates, listed and materialised before any root is read
    if request.listing is not None:  # or read from a storage inventory by the driver
        cands, n_candidates, n_buckets = _inventory_candidates(ctx, main, decision)
    elif io.lists_flat:  # object stores: one flat listing of the table's prefix, by the driver
        cands, n_candidates, n_buckets = _planning(lambda: _flat_candidates(ctx, main, decision),
                                                   "listing candidate files")
    else:
        listing = [(d.path, d.temp_prefix, d.kind.value) for d in decision.listings]
        walks: list[tuple[str, int]] = []
        for root in decision.data_roots:
            if depth == 0:
                walks.append((root, 0))
            else:
                walks.extend((s.path, depth - 1) for s in io.list_dir(root)
                             if s.is_dir and orphans.is_partition_dir(s.name))
        buckets = _planning(lambda: ctx.keep(ctx.io(ctx.df(walks, ex.WALK_FIELDS), ex.expand_bucket_dirs,
                                                    ex.DIR_FIELDS, spec)), "listing bucket directories")
        listing_df = buckets.select("dir", F.lit(None).cast("string").alias("temp_prefix"),
                                    F.lit(_DATA).alias("kind")).unionByName(ctx.df(listing, ex.LISTING_FIELDS))
        cands = _planning(lambda: ctx.keep(ctx.io(listing_df, ex.list_files, ex.CANDIDATE_FIELDS, spec, key="dir")),
                          "listing candidate files")
        n_buckets = buckets.count()
        n_candidates = cands.count()
    concurrency.point("orphans:listed")

    # 2. the used set, read in executors, scoped to candidate names (roots enumerated now, after
    #    the listing, as core does); then core's loop over roots that appeared while listed
    #    ones vanished unwalked (``orphans.cover_vanished_roots``), each pass walked here too
    with io.one_view():  # opened after the candidate listing, as in process
        enumerated = orphans.enumerate_roots(main)
    concurrency.point("orphans:roots-listed")
    names = {r.path: reach.RootName(reach.root_kind(r.kind, r.branch), r.branch, r.name)
             for r in enumerated}
    roots = [(r.path, r.kind, r.branch) for r in enumerated]
    ignored: list[reach.IgnoredReference] = []
    used, walked, vanished = _used_set(ctx, io, roots, cands, spec, names, ignored)
    seen = set(walked)
    passes = 0

    def walk(fresh: list[orphans.Root]) -> bool:
        nonlocal used, passes
        passes += 1
        names.update({path: root for _branch, path, _snap, root in fresh})
        fresh_roots = [(path, root.kind.file_kind, root.branch) for _branch, path, _snap, root in fresh]
        more, _keys, gone = _used_set(ctx, io, fresh_roots, cands, spec, names, ignored)
        used = used.unionByName(more)
        return gone

    orphans.cover_vanished_roots(main, seen, vanished, walk)
    result.notes.extend(reach.notes_of(ignored))
    result.details["ignoredReferences"] = reach.details_of(ignored)
    if passes:
        result.notes.append(f"roots vanished while they were walked: listed again {passes} time(s), "
                            f"{len(seen) - len(walked)} new root(s) walked")
    concurrency.point("orphans:walked")

    # 3. orphans = candidates - used, by name
    orphan_df = _planning(lambda: ctx.keep(cands.join(used.distinct(), "name", "left_anti")), "the anti-join")
    stages = _record_planned(ctx, orphan_df)
    n_orphans = sum(result.planned_files.values())
    result.details.update({"older_than_ms": threshold, "candidates": n_candidates, "unreferenced": n_orphans,
                           "bucket_dirs": n_buckets, "roots": len(roots)})
    result.notes.append(f"{n_candidates} candidate file(s) older than the threshold, {n_orphans} unreferenced")
    result.timings["planSeconds"] = round(time.perf_counter() - t0, 3)
    if request.dry_run or not n_orphans:
        return

    # 4. delete, stage by stage, then emptied directories
    t1 = time.perf_counter()
    _delete_stages(ctx, orphan_df, stages, spec)
    if decision.clean_empty_directories:  # the directories the deletes may have emptied
        def per_dir(df: DataFrame, name: str) -> DataFrame:
            in_bucket = ~F.col("parent_dir").isin([d.path for d in decision.listings])  # (the rest: bucket dirs)
            return df.filter(in_bucket).groupBy(F.col("parent_dir").alias("dir")).agg(
                F.count(F.lit(1)).alias(name))

        touched = per_dir(orphan_df, "deleted").join(per_dir(cands, "listed"), "dir", "left").select(
            "dir", "listed", "deleted")
        removed = ctx.io(touched, ex.remove_emptied_dirs, ex.REMOVED_FIELDS, spec, key="dir").agg(
            F.sum("removed").alias("removed")).collect()
        result.removed_dirs += int(removed[0]["removed"] or 0) if removed else 0
    result.timings["deleteSeconds"] = round(time.perf_counter() - t1, 3)


def _flat_candidates(ctx: _Ctx, main: Table, decision: orphans.OrphanCleanDecision
                     ) -> tuple[DataFrame, int, int]:
    """The candidates of an object store, as in process: ``orphans.list_candidates`` within
    ``FileIO.flat_listing`` of the table's prefix (``ceil(objects / 1000)`` LIST pages, the
    floor; entries carry size and time, so no HEAD), on the driver; and the number of bucket
    directories seen (with the number of candidates). One listing per directory from the executors cost a LIST per bucket
    directory (docs/storage-internals.md, "Spark on S3, measured")."""
    with main.file_io.flat_listing(main.root):
        found = orphans.list_candidates(main, decision)
    return _candidate_rows(ctx, decision, found), found.count, len(found.bucket_dirs)


def _candidate_rows(ctx: _Ctx, decision: orphans.OrphanCleanDecision,
                    found: orphans.CandidateListing) -> DataFrame:
    """Listed candidates (entries with their status) as candidate rows, materialised."""
    kind_of = {d.path: d.kind.value for d in decision.listings}
    rows: list[tuple[Any, ...]] = []
    for entries, data in ((found.meta_files, False), (found.data_files, True)):
        for e in entries:
            assert e.status is not None  # a listing of an object store or an inventory carries both
            parent = e.path.rsplit("/", 1)[0]
            kind = orphans.bucket_file_kind(e.name, decision.changelog_prefixes).value if data else kind_of[parent]
            rows.append((e.name, e.path, e.status.size, e.status.mtime_ms, parent, kind, ex.stage_of(kind, e.path)))
    return ctx.keep(ctx.df(rows, ex.CANDIDATE_FIELDS))


def _inventory_candidates(ctx: _Ctx, main: Table, decision: orphans.OrphanCleanDecision
                          ) -> tuple[DataFrame, int, int]:
    """The candidates among a storage inventory's files (``request.listing``), read and validated
    by the driver exactly as in process (``inventory.load_for_table``, ``inventory.check_listing``,
    ``orphans.listed_candidates``: keys absent from the inventory are never candidates, nothing
    newer than the threshold is); their number and the number of bucket directories they are in."""
    request = ctx.request
    assert request.listing is not None
    listed = orphans.load_for_table(request.listing, main.file_io, main.root, orphans.listing_roots(main),
                                      request.storage_options())
    orphans.check_listing(listed, main.root, decision.older_than_ms)
    found = orphans.listed_candidates(decision, listed)
    ctx.result.notes.append(f"candidates from the storage inventory {request.listing} "
                            f"({len(listed.files)} file(s) of the table listed there)")
    return _candidate_rows(ctx, decision, found), found.count, len(found.bucket_dirs)


def _used_set(ctx: _Ctx, io: Any, roots: list[tuple[str, str, str]], cands: DataFrame, spec: Mapping[str, Any],
              names: Mapping[str, reach.RootName], ignored: list[reach.IgnoredReference]
              ) -> tuple[DataFrame, set[orphans.RootKey], bool]:
    """The names ``roots`` (path, kind, branch) use among the candidates, read in executors; the
    keys of the roots read (``orphans.root_key``); and whether some root vanished before it was
    walked (its file, or a file only vanished roots referenced, was gone: a concurrent
    expiration), which makes core list the roots again. ``names``: every root by its path;
    missing files gone by design are added to ``ignored``."""
    refs = _planning(lambda: ctx.keep(ctx.io(ctx.df(roots, ex.ROOT_FIELDS), ex.read_roots, ex.ROOT_REF_FIELDS,
                                             spec)), "reading snapshot, tag and changelog files")
    ok_refs = refs.filter(_is_null("error_kind"))
    # materialised: two consumers (manifest names to read; list entries as used names) would
    # otherwise run the Python read twice (exchange reuse stops below the Python stage)
    lists = _planning(lambda: ctx.keep(ctx.io(ok_refs.filter(F.col("what") == "list").select("name")
                                              .distinct(), ex.read_lists, ex.LIST_FIELDS, spec, key="name")),
                      "reading manifest lists")
    manifest_names = lists.filter(F.col("manifest_name").isNotNull()).select(
        F.col("manifest_name").alias("name")).distinct()
    from_manifests = ctx.io(manifest_names, ex.used_names, ex.USED_FIELDS, spec, key="name")
    from_index = ctx.io(ok_refs.filter(F.col("what") == "index").select("name").distinct(), ex.index_names,
                        ex.USED_FIELDS, spec, key="name")
    used_cols = ["source", "name", "error_kind", "error"]
    used = (
        refs.filter(F.col("what") != "root").select(F.col("root_path").alias("source"), "name", "error_kind", "error")
        .unionByName(refs.filter(F.col("what") == "root").select(
            F.col("root_path").alias("source"), F.lit(_ERROR_NAME).alias("name"), "error_kind", "error"))
        .unionByName(lists.select(F.col("list_name").alias("source"), _error_sentinel("manifest_name").alias("name"),
                                  "error_kind", "error"))
        .unionByName(lists.filter(_is_null("error_kind")).select(
            F.col("list_name").alias("source"), F.explode("extra_files").alias("name"), "error_kind", "error"))
        .unionByName(from_manifests.select(F.col("source"), _error_sentinel("name").alias("name"), "error_kind",
                                           "error"))
        .unionByName(from_index.select(F.col("source"), _error_sentinel("name").alias("name"), "error_kind",
                                       "error"))
    ).select(*used_cols)
    wanted = cands.select("name").distinct().unionByName(ctx.df([(_ERROR_NAME,)], ex.NAME_FIELDS))
    scoped = _planning(lambda: ctx.keep(used.join(wanted, "name", "left_semi")), "reading manifests")
    problems = scoped.filter(F.col("error_kind").isNotNull()).limit(_ERROR_COLLECT_MAX).collect()
    gone = bool(problems) and _judge_orphan_errors(ctx, io, problems, refs, lists, names, ignored)
    walked: dict[str, list[str]] = {}
    for r in refs.filter(F.col("what") == "list").select("root_path", "name").collect():
        walked.setdefault(r["root_path"], []).append(r["name"])
    gone = gone or any(path not in walked for path, _kind, _branch in roots)
    return (scoped.filter(_is_null("error_kind")).select("name"),
            {orphans.root_key(path, names) for path, names in walked.items()}, gone)


def _judge_orphan_errors(ctx: _Ctx, io: Any, problems: Sequence[Any], refs: DataFrame, lists: DataFrame,
                         names: Mapping[str, reach.RootName], ignored: list[reach.IgnoredReference]
                         ) -> bool:
    """Core's rules on the files the roots' reads missed: unreadable metadata aborts; a missing
    file is ignored where the root names it by a reference Paimon lets dangle
    (``guarantees.RULES``, by the rule ``read_roots`` found; a copied snapshot's changelog list
    by ``guarantees.copied_lists``), else it aborts while that root still exists
    (``decisions.missing_reference_aborts``) and means a root vanished otherwise. Returns
    whether a root vanished unwalked."""
    missing: set[str] = set()
    for p in problems:
        if p["error_kind"] != "missing":
            raise errors.IncompleteProtectionSetError(f"orphan cleanup: cannot read metadata {p['source']}: "
                                                      f"{p['error']}", fix="repair the damaged file")
        missing.add(p["source"])
    wanted = sorted(missing)
    # which list names each missing manifest
    owner_rows = lists.filter(F.col("manifest_name").isin(wanted)).select("list_name", "manifest_name").collect()
    owners: dict[str, set[str]] = {}
    for r in owner_rows:
        owners.setdefault(r["list_name"], set()).add(r["manifest_name"])
    through = refs.filter(F.col("name").isin(sorted({*wanted, *owners})) & F.col("what").isin("list", "index")) \
        .select("root_path", "what", "name", "role", "rule").distinct().collect()
    lists_named = sorted({r["name"] for r in through if r["role"] == ListRole.CHANGELOG.value})
    copied = reach.copied_lists(
        (names[r["root_path"]], r["name"]) for r in refs.filter(
            (F.col("role") == ListRole.CHANGELOG.value) & F.col("name").isin(lists_named)).select(
            "root_path", "name").distinct().collect() if r["root_path"] in names)
    vanished = False
    for r in through:
        root = names.get(r["root_path"])
        rule = reach.RULES[int(r["rule"])]
        files = [(r["name"], None)] if r["name"] in missing else [(m, r["name"]) for m in sorted(owners.get(r["name"], ()))]
        for file, via in files:
            if root is not None and rule.dangles(copied=r["name"] in copied):
                ignored.append(reach.IgnoredReference(root, reach.list_reference(ListRole(r["role"])), file,
                                                           rule, via))
            elif orphans.missing_reference_aborts(io.exists(r["root_path"])):
                what = (f"a manifest of its {reach.list_reference(ListRole(r['role']))} {via}:" if via
                        else f"its {reach.list_reference(ListRole(r['role']))}")
                if root is None:
                    raise errors.IncompleteProtectionSetError(
                        f"orphan cleanup: {r['root_path']} names {what} {file}, which is missing (nothing was deleted)",
                        fix=f"restore {file} and rerun")
                raise reach.missing_kept_file(root, what, file, operation="orphan cleanup")
            else:
                vanished = True
    if vanished:
        ctx.result.notes.append("missing file(s) referenced only by roots that vanished meanwhile")
    return vanished


# -- expiration: core's decision, evaluated distributed ---------------------------------------------
_USE_FIELDS: ex.Fields = (
    ("rid", "int"), ("sid", "long"), ("keep_live", "boolean"), ("keep_changelog", "boolean"), ("keep_meta", "boolean"),
    ("log_keep", "boolean"), ("tag_live", "boolean"), ("cand_delta", "string"), ("cand_changelog", "string"),
    ("changelog_vs_data", "boolean"), ("cand_sizes", "boolean"), ("prev_tag", "long"), ("cand_meta", "boolean"),
    ("log_role", "string"),
)
_BUCKET_FIELDS: ex.Fields = (("partition", "binary"), ("bucket", "int"), ("bucket_dir", "string"))
_LIST_ORDER = {ListRole.BASE.value: 0, ListRole.DELTA.value: 1, ListRole.CHANGELOG.value: 2}


@dataclass
class _Judgement:
    """What the read errors met so far mean, as ``expire_decisions.judge_missing`` says."""

    skip_delta: set[int] = field(default_factory=set)
    skip_changelog: set[int] = field(default_factory=set)
    broken_tags: dict[int, tuple[str, str]] = field(default_factory=dict)  # tag_live rid -> (what, file)
    ignored: list[reach.IgnoredReference] = field(default_factory=list)
    #: expiring deltas an earlier interrupted run removed (not those Paimon deleted by design)
    cleaned_before: set[int] = field(default_factory=set)

    def missing(self, rid: int, use: RootUse, what: str, role: str, file: str, via_list: str | None = None) -> None:
        """``file`` (a list or index manifest of ``role``, ``what`` = ``list``; or a manifest of
        the list ``via_list``, ``what`` = ``manifest``) that ``use`` reads is missing."""
        list_role = ListRole(role)
        outcomes = expire.judge_missing(use, what, list_role)
        described = _described(what, list_role, via_list)
        if ReadOutcome.ABORT in outcomes:
            raise expire.abort_unreadable_protection(use, described, file)
        if ReadOutcome.DANGLING in outcomes and use.protects:  # (an expiring root's are no news)
            self.ignored.append(use.ignored(list_role, file, via_list))
        if ReadOutcome.BREAKS_TAG in outcomes:
            self.broken_tags.setdefault(rid, (described, file))
        if ReadOutcome.SKIP_DELTA in outcomes:
            self.skip_delta.add(rid)
            if ReadOutcome.DANGLING not in outcomes:
                self.cleaned_before.add(rid)
        if ReadOutcome.SKIP_CHANGELOG in outcomes:
            self.skip_changelog.add(rid)


def _described(what: str, role: ListRole, via_list: str | None) -> str:
    """What a missing file is to its root (as refusals say it)."""
    if role == ListRole.INDEX:
        return "its index manifest"
    reference = reach.list_reference(role)
    return f"a manifest of its {reference} {via_list}:" if what == "manifest" else f"its {reference}"


def _use_row(rid: int, u: RootUse) -> tuple[Any, ...]:
    return (rid, u.sid, u.keep_live, u.keep_changelog, u.keep_meta, u.log_keep, u.tag_live,
            u.cand_delta.value if u.cand_delta else None, u.cand_changelog.value if u.cand_changelog else None,
            u.changelog_vs_data, u.cand_sizes, u.prev_tag, u.cand_meta, u.log_role.value)


def _plan_expiration(ctx: _Ctx, table: Table, decision: expire.ExpirationDecision
                     ) -> tuple[DataFrame, dict[str, Any]]:
    """Distributed evaluation of ``decision``'s roots; returns (planned delete rows, spec),
    materialised, not yet counted (:func:`_record_planned`)."""
    roots = decision.roots
    by_rid = dict(enumerate(roots))
    main = table.on_branch(paimon.MAIN)
    resolver = ctx.resolver(main)
    in_data_dir = resolver.index_file_in_data_file_dir
    spec = ctx.spec(main, index_file_in_data_file_dir=in_data_dir,
                    statistics_dir=main.shared_dir(paimon.STATISTICS_DIR))
    root_df = F.broadcast(ctx.df([_use_row(rid, u) for rid, u in by_rid.items()], _USE_FIELDS))

    # 1. every root in one pass: manifests to read, metadata paths, read errors
    expand_rows = []
    for rid, u in by_rid.items():
        f = u.snapshot.fields
        expand_rows.append((rid, u.snapshot.base_manifest_list, u.snapshot.delta_manifest_list,
                            u.snapshot.changelog_manifest_list, f.get("baseManifestListSize"),
                            f.get("deltaManifestListSize"), f.get("changelogManifestListSize"),
                            u.snapshot.index_manifest, u.snapshot.statistics,
                            ",".join(sorted(r.value for r in u.entry_roles)), ",".join(r.value for r in u.meta_lists),
                            u.meta_extra))
    # the lists every root needs, each read once per run (ctx.lists), handed to its roots
    wanted = [(rid, name) for rid, u in by_rid.items()
              for _role, name in reach.lists_of(u.snapshot, {*u.entry_roles, *u.meta_lists})]

    def expand() -> DataFrame:
        lists = ctx.lists({name for _rid, name in wanted}, spec)
        per_root = ctx.df(wanted, (("rid", "int"), ("list_name", "string"))).join(lists, "list_name").groupBy(
            "rid").agg(F.collect_list(F.struct("list_name", "pos", "manifest_name", "manifest_size", "extra_files",
                                               "error_kind", "error")).alias("lists"))
        roots_in = ctx.df(expand_rows, ex.EXPAND_FIELDS).join(per_root, "rid", "left")
        return ctx.keep(ctx.io(roots_in, ex.expand_roots, ex.EXPANDED_FIELDS, spec))

    expanded = _planning(expand, "reading manifest lists")
    judged = _Judgement()
    for row in expanded.filter(F.col("what") == "error").collect():
        role, name = row["list_role"], row["name"]
        rid = int(row["rid"])
        if row["error_kind"] != "missing":
            raise errors.FormatError(f"cannot read {_described('list', ListRole(role), None)} {name} of "
                                     f"{by_rid[rid].label}: {row['error']}", fix="repair the damaged file")
        judged.missing(rid, by_rid[rid], "list", role, name)
    root_manifests = expanded.filter(F.col("what") == "manifest").select(
        "rid", "list_role", F.col("name").alias("manifest_name"), F.col("pos").alias("manifest_pos")).join(
        root_df, "rid")

    # 2. pass A: the candidates (deltas and changelogs of the expiring uses)
    cand_use = (((F.col("list_role") == ListRole.DELTA.value) & F.col("cand_delta").isNotNull())
                | ((F.col("list_role") == ListRole.CHANGELOG.value) & F.col("cand_changelog").isNotNull()))
    cand_manifests = root_manifests.filter(cand_use)
    entries_a = _planning(lambda: ctx.entries(cand_manifests.select(F.col("manifest_name").alias("name")), spec),
                          "reading the deltas of expiring snapshots")
    bad_a = entries_a.filter(F.col("error_kind").isNotNull()).select("manifest_name", "error_kind", "error") \
        .limit(_ERROR_COLLECT_MAX).collect()
    if bad_a:
        _judge_manifest_errors(judged, by_rid, cand_manifests, bad_a)
    cand_entries = cand_manifests.join(entries_a.filter(_is_null("error_kind")), "manifest_name")
    cand_entries = _without(cand_entries, ListRole.DELTA, judged.skip_delta)
    cand_entries = _without(cand_entries, ListRole.CHANGELOG, judged.skip_changelog)
    key = ["partition", "bucket", "file_name"]
    size = F.when(F.col("cand_sizes"), F.col("file_size")).otherwise(F.lit(None)).cast("long").alias("size")
    deltas = cand_entries.filter((F.col("list_role") == ListRole.DELTA.value) & F.col("cand_delta").isNotNull())
    # core's rule (expire_decisions.effective_deletions) on each file's entry kinds within one delta
    effective = ctx.io(deltas.groupBy("rid", *key).agg(F.collect_set("kind").alias("kinds")),
                       ex.effective_deletions, ex.KEYED_FIELDS, spec)
    deletions = deltas.filter(F.col("kind") == manifests.DELETE).join(effective, ["rid", *key], "left_semi").select(
        "rid", "prev_tag", F.col("cand_delta").alias("file_kind"), F.lit(True).alias("vs_data"), *key,
        "extra_files", "external_path", size)
    added_logs = cand_entries.filter((F.col("list_role") == ListRole.CHANGELOG.value)
                                     & F.col("cand_changelog").isNotNull() & (F.col("kind") == manifests.ADD)).select(
        "rid", F.lit(None).cast("long").alias("prev_tag"), F.col("cand_changelog").alias("file_kind"),
        F.col("changelog_vs_data").alias("vs_data"), *key, "extra_files", "external_path", size)
    candidates = _planning(lambda: ctx.keep(deletions.unionByName(added_logs)), "computing candidates")

    # 3. pass B: protecting uses, scoped to candidate names
    log_role_entries = (F.col("list_role") == F.col("log_role")) & F.col("log_keep")
    live_use = F.col("list_role").isin(ListRole.BASE.value, ListRole.DELTA.value) & (
        F.col("keep_live") | F.col("tag_live"))
    keep_use = live_use | ((F.col("list_role") == ListRole.CHANGELOG.value) & F.col("keep_changelog")) \
        | log_role_entries
    keep_manifests = root_manifests.filter(keep_use)
    entries_b_all = _planning(lambda: ctx.entries(keep_manifests.select(F.col("manifest_name").alias("name")), spec),
                              "reading the manifests of protecting roots").withColumn("file_name",
                                                                                       _error_sentinel("file_name"))
    wanted_names = candidates.select("file_name").distinct().unionByName(
        ctx.df([(_ERROR_NAME,)], (("file_name", "string"),)))
    entries_b = entries_b_all.join(wanted_names, "file_name", "left_semi")
    bad_b = entries_b.filter(F.col("error_kind").isNotNull()).select("manifest_name", "error_kind", "error") \
        .limit(_ERROR_COLLECT_MAX).collect()
    if bad_b:
        _judge_manifest_errors(judged, by_rid, keep_manifests, bad_b)
    for rid, (what, file) in judged.broken_tags.items():  # only previous tags still in use matter
        tag = by_rid[rid]
        if any(u.cand_delta and r not in judged.skip_delta and u.prev_tag == tag.sid for r, u in by_rid.items()):
            raise expire.abort_unreadable_protection(tag, what, file)
    keep_entries = keep_manifests.join(entries_b.filter(_is_null("error_kind")), "manifest_name")
    # core's merge (manifests.merge_kinds) per identifier, entries in manifest-list order
    ident = ["rid", "partition", "bucket", "level", "file_name", "ident_x"]
    order = F.when(F.col("list_role") == ListRole.BASE.value, 0).otherwise(1)
    merged = _planning(lambda: ctx.keep(ctx.io(keep_entries.filter(live_use).groupBy(*ident).agg(
        F.collect_list(F.struct(order.alias("list_order"), "manifest_pos", "entry_pos", "kind")).alias("entries")),
        ex.merge_live, ex.MERGED_FIELDS, spec)), "merging live files")
    corrupt = merged.filter(F.col("error").isNotNull()).limit(1).collect()
    if corrupt:
        raise errors.FormatError(corrupt[0]["error"],
                                 fix="the table's manifests are inconsistent: Paimon itself refuses to read this "
                                     "snapshot; restore the manifests or roll back to an earlier snapshot")
    live = merged.filter(_is_null("error")).join(root_df.select("rid", "sid", "keep_live", "tag_live"), "rid")
    log_data = keep_entries.filter(log_role_entries & (F.col("kind") == manifests.ADD)).select(*key)
    keep_data = live.filter(F.col("keep_live")).select(*key).unionByName(log_data).distinct()
    keep_changelog = keep_entries.filter((F.col("list_role") == ListRole.CHANGELOG.value) & F.col("keep_changelog")) \
        .select(*key).unionByName(log_data).distinct()
    tag_live = live.filter(F.col("tag_live")).select(F.col("sid").alias("prev_tag"), *key).distinct()
    data_side = candidates.filter(F.col("vs_data")).join(keep_data, key, "left_anti") \
        .join(tag_live, ["prev_tag", *key], "left_anti")
    log_side = candidates.filter(~F.col("vs_data")).join(keep_changelog, key, "left_anti")
    survivors = _planning(lambda: ctx.keep(data_side.unionByName(log_side)), "protecting candidates")

    # 4. metadata the expiring uses reach and no protecting use does
    meta = expanded.filter(F.col("what").isin("meta", "index")).join(
        root_df.select("rid", "keep_meta", "log_keep", "cand_meta"), "rid")
    kept_meta = meta.filter(F.col("keep_meta") | F.col("log_keep")).select("path")
    meta_files = _planning(lambda: ctx.keep(meta.filter(F.col("cand_meta")).join(
        kept_meta, "path", "left_anti").groupBy("path").agg(
        F.first("what").alias("what"), F.first("kind").alias("kind"), F.max("size").alias("size"),
        F.first("stage").alias("stage"), F.first("name").alias("file_name"), F.first("partition").alias("partition"),
        F.first("bucket").alias("bucket"), F.first("index_type").alias("index_type"),
        F.first("external_path").alias("external_path"))), "planning metadata")

    # 5. locations: bucket directories resolved on the driver (one per partition and bucket)
    need_dirs = survivors.filter(_is_null("external_path")).select("partition", "bucket")
    if in_data_dir:
        need_dirs = need_dirs.unionByName(meta_files.filter(
            (F.col("what") == "index") & F.col("index_type").isin("HASH", "DELETION_VECTORS")
            & _is_null("external_path")).select("partition", "bucket"))
    pairs = _planning(lambda: need_dirs.distinct().collect(), "collecting bucket directories")
    dirs = F.broadcast(ctx.df([(bytes(p["partition"]), int(p["bucket"]),
                                resolver.bucket_dir(bytes(p["partition"]), int(p["bucket"]))) for p in pairs],
                              _BUCKET_FIELDS))
    data_rows = survivors.join(dirs, ["partition", "bucket"], "left").select(
        F.lit("data").alias("what"), F.col("file_kind").alias("kind"), "file_name", "extra_files", "external_path",
        "bucket_dir", "size", F.lit(None).cast("string").alias("index_type"))
    index_rows = meta_files.filter(F.col("what") == "index").join(dirs, ["partition", "bucket"], "left").select(
        F.lit("index").alias("what"), F.lit(_INDEX).alias("kind"), "file_name",
        F.lit(None).cast("array<string>").alias("extra_files"), "external_path", "bucket_dir", "size", "index_type")
    paths = ctx.io(data_rows.unionByName(index_rows), ex.expand_paths, ex.DELETE_FIELDS, spec)
    plain_meta = meta_files.filter(F.col("what") == "meta").select(
        "path", "kind", "size", F.regexp_extract("path", r"^(.*)/[^/]*$", 1).alias("parent_dir"), "stage")
    first = F.min(F.struct("stage", "kind", "size", "parent_dir")).alias("f")
    planned = _planning(lambda: ctx.keep(paths.unionByName(plain_meta).groupBy("path").agg(first).select(
        "path", "f.kind", "f.size", "f.parent_dir", "f.stage")), "planning")
    skipped = sorted({by_rid[r].sid for r in judged.cleaned_before})
    if skipped:
        note = f"deltas of snapshots {skipped[:10]} already cleaned by an earlier run"
        if note not in ctx.result.notes:
            ctx.result.notes.append(note)
    for note in reach.notes_of(judged.ignored):
        if note not in ctx.result.notes:
            ctx.result.notes.append(note)
    ctx.result.details["ignoredReferences"] = reach.details_of(judged.ignored)
    return planned, spec


def _without(df: DataFrame, role: ListRole, rids: set[int]) -> DataFrame:
    if not rids:
        return df
    return df.filter(~((F.col("list_role") == role.value) & F.col("rid").isin(sorted(rids))))


def _judge_manifest_errors(judged: _Judgement, by_rid: Mapping[int, RootUse], uses: DataFrame,
                           rows: Sequence[Any]) -> None:
    for row in rows:
        if row["error_kind"] != "missing":
            first = uses.filter(F.col("manifest_name") == row["manifest_name"]).select("rid").limit(1).collect()
            label = f" of {by_rid[int(first[0]['rid'])].label}" if first else ""
            raise errors.FormatError(f"cannot read manifest {row['manifest_name']}{label}: {row['error']}",
                                     fix="repair the damaged file")
    names = sorted({row["manifest_name"] for row in rows})
    for use in uses.filter(F.col("manifest_name").isin(names)).select("rid", "list_role", "manifest_name") \
            .distinct().collect():
        rid, role = int(use["rid"]), use["list_role"]
        via = dict(reach.lists_of(by_rid[rid].snapshot, [ListRole(role)])).get(ListRole(role))
        judged.missing(rid, by_rid[rid], "manifest", role, use["manifest_name"], via)


def _evaluate(ctx: _Ctx, table: Table, decision: expire.ExpirationDecision, t0: float) -> None:
    """Evaluate ``decision`` and carry it out in Paimon's order (a dry run, or a decision run
    under core's commit-point re-check): nothing to read (hints only) -> core's executor runs
    its tail; otherwise distributed planning, then the deletes and the tail."""
    result = ctx.result
    result.details.update(dict(decision.details))
    result.notes.extend(decision.notes)
    if not decision.reads_manifests:
        _run_tail(ctx, table, decision.tail_plan(), t0)
        return
    planned, spec = _plan_expiration(ctx, table, decision)
    stages = _record_planned(ctx, planned)
    _finish(ctx, table, planned, stages, spec, decision.tail_plan(), t0, empty_dirs_depth=decision.empty_dirs_depth)


@dataclass(frozen=True)
class _Evaluated:
    """A decision evaluated distributed: its delete rows (materialised), or None when it reads
    nothing (hints only)."""

    planned: DataFrame | None
    spec: Mapping[str, Any]
    empty_dirs_depth: int | None
    #: the decision's unpublishing steps (snapshot or changelog files): counted as planned
    unpublishing: tuple[plans.Step, ...] = ()


def _evaluator(ctx: _Ctx, table: Table, t0: float) -> expire.Evaluator[_Evaluated]:
    """Core's expiration phases (``expire_commit.expire_snapshots``: intent, unpublish, verify,
    delete) with this job evaluating the decisions: core decides, orders and re-checks; the
    job reads manifests, intersects the two evaluations and deletes, distributed."""

    def evaluate(view: Table, decision: expire.ExpirationDecision) -> _Evaluated:
        unpublish = expire.unpublishing(decision)
        if not decision.reads_manifests:
            return _Evaluated(None, {}, None, unpublish)
        planned, spec = _plan_expiration(ctx, view, decision)
        return _Evaluated(planned, spec, decision.empty_dirs_depth, unpublish)

    def agree(first: _Evaluated, again: _Evaluated) -> tuple[_Evaluated, int]:
        if first.planned is None:
            return (again if again.planned is None else
                    _Evaluated(ctx.keep(again.planned.limit(0)), again.spec, again.empty_dirs_depth,
                               again.unpublishing)), 0
        if again.planned is None:
            return again, int(first.planned.count())
        before, after = first.planned, again.planned
        agreed = _planning(lambda: ctx.keep(after.join(before.select("path"), "path", "left_semi")),
                           "verifying the plan")
        kept = _planning(lambda: before.join(agreed.select("path"), "path", "left_anti").count(),
                         "verifying the plan")
        return _Evaluated(agreed, again.spec, again.empty_dirs_depth, again.unpublishing), int(kept)

    def delete(evaluated: _Evaluated, tail: plans.Plan) -> plans.ExecutionResult:
        failed_before = ctx.result.failed_count
        _tail_summary(ctx, plans.Plan(tail.operation, tail.table, evaluated.unpublishing))
        if evaluated.planned is None:
            _run_tail(ctx, table, tail, t0)
        else:
            stages = _record_planned(ctx, evaluated.planned)
            _finish(ctx, table, evaluated.planned, stages, evaluated.spec, tail, t0,
                    empty_dirs_depth=evaluated.empty_dirs_depth)
        # failures keep core's intent, so the next run resumes; the counts are in ctx.result
        return plans.ExecutionResult(failed=[DeleteResult("(spark delete stage)", DeleteOutcome.FAILED)]
                                         if ctx.result.failed_count > failed_before else [])

    def run_meta(plan: plans.Plan) -> plans.ExecutionResult:
        executed = plans.execute(plan, table.file_io, batch_size=ctx.request.batch_size)
        run_steps.merge_execution(ctx.result, executed)
        return executed

    return expire.Evaluator(evaluate, agree, delete, run_meta)


def _expire(ctx: _Ctx) -> None:
    """``expire.decide_expire``, evaluated distributed, in core's phases: unpublish, verify,
    then delete (``expire_commit``); with a decoupled changelog lifecycle, Paimon's order under
    core's commit-point re-check (``commit_point``), as in process."""
    table = run_steps.open_request_table(ctx.request)
    now = ctx.request.now_ms if ctx.request.now_ms is not None else values.now_ms()
    t0 = time.perf_counter()
    config = run_steps.expire_config(ctx.request, table)
    if ctx.request.dry_run:
        _evaluate(ctx, table, expire.decide_expire(table, config, now), t0)
        return
    if config.changelog_decoupled:
        _checked(ctx, table, lambda: expire.decide_expire(table, config, now), t0)
        return
    _report(ctx, expire.expire_snapshots(table, config, now, _evaluator(ctx, table, t0)))


def _report(ctx: _Ctx, done: expire.Expiration[_Evaluated]) -> None:
    """What core's phases decided and noted (the evaluator counted what was planned)."""
    ctx.result.details.update(dict(done.decision.details))
    ctx.result.notes.extend((*done.decision.notes, *done.notes))


def _checked(ctx: _Ctx, table: Table, decide: Callable[[], expire.ExpirationDecision], t0: float) -> None:
    """Run a decision under core's commit-point re-check (``commit_point.run_checked_with``):
    tags, branches and consumers are compared before every delete stage; when they grew, the
    decision is made again (a re-plan counts only what it finally planned)."""
    result = ctx.result
    counted = (dict(result.planned_files), dict(result.planned_bytes), list(result.sample), list(result.notes))

    def run(decision: expire.ExpirationDecision) -> None:
        result.planned_files, result.planned_bytes = dict(counted[0]), dict(counted[1])
        result.sample, result.notes = list(counted[2]), list(counted[3])
        _evaluate(ctx, table, decision, t0)

    _made, _none, reasons = expire.run_checked_with(table, decide, run)
    if reasons:
        result.notes.append(f"re-planned {len(reasons)} time(s): {'; '.join(reasons)}")


def _expire_changelog(ctx: _Ctx) -> None:
    """``expire.decide_expire_changelog``, evaluated distributed, in core's phases (unpublish
    the changelog files, verify, delete: ``expire_commit.expire_changelogs``)."""
    table = run_steps.open_request_table(ctx.request)
    now = ctx.request.now_ms if ctx.request.now_ms is not None else values.now_ms()
    t0 = time.perf_counter()
    config = run_steps.changelog_config(ctx.request, table)
    if ctx.request.dry_run:
        _evaluate(ctx, table, expire.decide_expire_changelog(table, config, now), t0)
        return
    _report(ctx, expire.expire_changelogs(table, config, now, _evaluator(ctx, table, t0)))


def _tail_summary(ctx: _Ctx, tail: plans.Plan) -> None:
    summary = tail.summary()
    for kind, n in summary["files"].items():
        ctx.result.planned_files[kind] = ctx.result.planned_files.get(kind, 0) + n
        ctx.result.planned_bytes[kind] = ctx.result.planned_bytes.get(kind, 0) + summary["bytes"].get(kind, 0)
    for kind, n in summary["unsized"].items():
        ctx.result.planned_unsized[kind] = ctx.result.planned_unsized.get(kind, 0) + n
    room = values.STATUS_SAMPLE_MAX - len(ctx.result.sample)
    ctx.result.sample.extend(f.path for f in tail.files[:max(0, room)])


_DATA_STAGES_END = plans.STAGE_ORDER.index(plans.FileKind.CHANGELOG_DATA) * 3 + 2


def _finish(ctx: _Ctx, table: Table, planned: DataFrame, stages: Stages, spec: Mapping[str, Any],
            tail: plans.Plan, t0: float, *, empty_dirs_depth: int | None = None) -> None:
    """Execute in core's order: data and changelog files, (emptied directories), index,
    statistics, manifests — each stage a Spark action that must return before the next — then
    the metadata tail (changelog copies, snapshot files, EARLIEST) through core's executor."""
    _tail_summary(ctx, tail)
    ctx.result.timings["planSeconds"] = round(time.perf_counter() - t0, 3)
    if ctx.request.dry_run:
        return
    t1 = time.perf_counter()
    data_stages = {s: n for s, n in stages.items() if s <= _DATA_STAGES_END}
    _delete_stages(ctx, planned, data_stages, spec)
    if empty_dirs_depth is not None and data_stages:
        touched = planned.filter(F.col("stage") <= _DATA_STAGES_END).select(F.col("parent_dir").alias("dir")) \
            .distinct()
        removed = ctx.io(touched, ex.remove_empty_dirs, ex.REMOVED_FIELDS, {**spec, "depth": empty_dirs_depth},
                         key="dir").agg(F.sum("removed").alias("removed")).collect()
        ctx.result.removed_dirs += int(removed[0]["removed"] or 0) if removed else 0
    _delete_stages(ctx, planned, {s: n for s, n in stages.items() if s > _DATA_STAGES_END}, spec)
    run_steps.merge_execution(ctx.result, plans.execute(tail, table.file_io, batch_size=ctx.request.batch_size))
    ctx.result.timings["deleteSeconds"] = round(time.perf_counter() - t1, 3)


def _run_tail(ctx: _Ctx, table: Table, plan: plans.Plan, t0: float) -> None:
    """A plan with nothing to read or distribute (hints only): core plans and executes it."""
    ctx.result.details.update(dict(plan.details))
    ctx.result.notes.extend(plan.notes)
    _tail_summary(ctx, plan)
    ctx.result.timings["planSeconds"] = round(time.perf_counter() - t0, 3)
    if not ctx.request.dry_run and plan.steps:
        run_steps.merge_execution(ctx.result, plans.execute(plan, table.file_io,
                                                             batch_size=ctx.request.batch_size))


# -- entry points --------------------------------------------------------------------------------------
_OPERATIONS: Mapping[str, Callable[[_Ctx], None]] = {
    "clean-orphans": _clean_orphans, "expire": _expire, "expire-changelog": _expire_changelog}


def run(spark: SparkSession, request: job_request.JobRequest, *, fault: Mapping[str, Any] | None = None,
        result: result_artifact.RunResult | None = None) -> result_artifact.RunResult:
    """Plan and (unless ``request.dry_run``) execute ``request`` on ``spark``.

    ``fault`` is a test hook for the delete stages (see ``executor._Fault``). ``result``, when
    given, is filled in place, so a caller still has the partial result after an error.

    Raises:
        IncompleteProtectionSetError: a protection set could not be built (nothing deleted).
        StorageError: a delete stage failed after Spark's retries (rerun to finish).
        TablekeeperError: bad input or table state.
    """
    result = result if result is not None else result_artifact.RunResult(
        operation=request.operation, table=request.table, branch=request.branch, dry_run=request.dry_run,
        engine="spark", run_name=request.run_name, warehouse=request.warehouse, versions=run_steps.versions())
    result.versions.setdefault("spark", spark.version)
    started = values.now_ms()
    result.started_at = values.iso_ms(started)
    t0 = time.perf_counter()
    _PHASES.clear()
    maintainer = contextlib.ExitStack()  # one maintainer per table (core/concurrency/lease.py); released below
    tally = maintainer.enter_context(request_tally.Tally(spark))  # storage requests of the run
    ctx = _Ctx(spark, request, result, fault)
    result.details["parallelism"] = ctx.n
    try:
        maintainer.enter_context(run_steps.maintenance_lease(request))
        due = request.with_changelog and _changelog_due(request)
        if request.operation not in run_steps.BATCH_UNIT:
            _OPERATIONS[request.operation](ctx)
        else:
            unit = run_steps.BATCH_UNIT[request.operation]

            def first(n: int) -> int:
                if n == 1:
                    _OPERATIONS[request.operation](ctx)
                    return result.planned_files.get(unit, 0)
                ctx.release()
                count = _next_step(spark, request, result, fault, request.operation, run_steps.step_name("batch", n))
                result.details["batches"] = n
                return count

            def changelog(n: int) -> int:  # on the table as the snapshot batches left it
                ctx.release()
                return _next_step(spark, request, result, fault, "expire-changelog", run_steps.step_name("changelog", n))

            expire.run_with_changelog(first, changelog, changelog_due=due, max_batches=request.batches,
                                              dry_run=request.dry_run)
    finally:
        ctx.release()
        result.requests = tally.total()
        result.details["executorRequests"] = tally.executors()
        result.details["requestsCounted"] = "driver" if tally.accumulators is None else "driver and executors"
        maintainer.close()
        result.timings.update({f"phase {k}": round(v, 3) for k, v in _PHASES.items()})
        result.timings["totalSeconds"] = round(time.perf_counter() - t0, 3)
        result.finished_at = values.iso_ms(values.now_ms())
    return result


def _next_step(spark: SparkSession, request: job_request.JobRequest, result: result_artifact.RunResult,
               fault: Mapping[str, Any] | None, operation: job_request.Operation, name: str) -> int:
    """One more batch of ``operation`` (a later snapshot batch, or the changelog's) on the table as
    the previous step left it, summed into ``result`` (its details under ``details[name]``), even
    when it fails part way; returns what it expired (snapshots or changelogs)."""
    step = result_artifact.RunResult(operation=operation, table=request.table, branch=request.branch,
                            dry_run=request.dry_run, engine="spark", run_name=request.run_name,
                            warehouse=request.warehouse)
    step_ctx = _Ctx(spark, request, step, fault)
    try:
        _OPERATIONS[operation](step_ctx)
    finally:
        step_ctx.release()
        run_steps.merge_step(result, step, name)
    return step.planned_files.get(run_steps.BATCH_UNIT[operation], 0)


def _changelog_due(request: job_request.JobRequest) -> bool:
    """``with_changelog``: whether changelog expiration is due before the snapshot expiration (the
    operator's in-process run plans both first, then applies them in order)."""
    table = run_steps.open_request_table(request)
    now = request.now_ms if request.now_ms is not None else values.now_ms()
    return run_steps.changelog_due(table, run_steps.changelog_config(request, table), now)


def run_to_result(spark: SparkSession, request: job_request.JobRequest) -> result_artifact.RunResult:
    """``run``, with every error recorded in the result (status ``Failed``) instead of raised."""
    result = result_artifact.RunResult(operation=request.operation, table=request.table, branch=request.branch,
                              dry_run=request.dry_run, engine="spark", run_name=request.run_name,
                              warehouse=request.warehouse, versions=run_steps.versions())
    try:
        run(spark, request, result=result)
    except Exception as e:
        log.exception("tablekeeper spark job failed")
        result.fail(e)
    return result


def worker_pids(spark: SparkSession, partitions: int = 4) -> set[int]:
    """Pids of the Python workers that ran a trivial stage (tests: work left the driver)."""
    df = spark.range(partitions * 4).repartition(partitions)
    rows = df.mapInArrow(functools.partial(ex.worker_pid, {}), ex.ddl(ex.PID_FIELDS)).collect()
    return {int(r["pid"]) for r in rows}
