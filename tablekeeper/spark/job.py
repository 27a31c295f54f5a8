"""The driver of the tablekeeper Spark jobs: the core plans, executed distributed.

The protection rules are core's: ranges, roots and thresholds come from ``tablekeeper.core``
(``expire.compute_range``, ``expire._roots``, ``orphans.resolve_older_than``,
``orphans._data_roots``...), small metadata steps run through core's own plan types and
executor (``plans.DeleteStep``/``WriteStep`` + ``execution.execute``), and every file is deleted
in ``plans.STAGE_ORDER``. What is distributed is what grows with the table: listing, manifest
reads, the set differences and the deletes. The driver holds root descriptors, bucket
directories, error rows, per-kind counts and a sample of at most ``safety.STATUS_SAMPLE_MAX``
paths — never a list of files.

Orphan cleanup (spark-jobs.md §5.1):
  1. candidates first: shared dirs + temp files of every branch + bucket dirs (first partition
     level listed on the driver, deeper levels walked in executors), listed per directory in
     executors, materialised (``localCheckpoint``) before any root is read (Paimon #3075);
  2. used set in executors: root JSON -> manifest lists -> distinct manifests -> names, scoped
     to candidate names by a semi-join (Paimon #4287); read errors travel as rows (through the
     semi-join via a sentinel name) and are judged on the driver as core does: a missing file
     under a root that still exists aborts, under a vanished root is ignored;
  3. orphans = candidates left-anti-join used (by name), materialised once; counts and sample;
  4. deletes per stage, ``repartition(n, parent_dir)``, summary rows; then emptied bucket and
     partition directories, non-recursively.

Expiration (§5.2): range and roots on the driver (core); manifest lists, manifests and index
manifests read in executors in two passes (candidate deltas first, then the protecting roots,
scoped to candidate names); candidates = deletions not re-added in the same delta, minus live
files of other branches and long-lived changelogs, minus the previous tag's live files; then
metadata not used by any retained root. Any read error under a protecting root aborts before
the first delete (fail closed); read errors under an expiring snapshot are tolerated exactly as
core tolerates them (that snapshot's deltas were cleaned by an earlier run). Deletes run stage by
stage in executors, then the snapshot files and EARLIEST (and, decoupled, the changelog copies)
through core's executor on the driver.
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

from tablekeeper.core import errors, execution, expire, orphans, plans, safety
from tablekeeper.core.paimon import hints, layout
from tablekeeper.core.paimon.pypaimon_adapter import PartitionPathResolver
from tablekeeper.core.paimon.snapshot import Snapshot
from tablekeeper.core.paimon.table import Table, open_table
from tablekeeper.core.storage import join
from tablekeeper.spark import engine, launch
from tablekeeper.spark import executor as ex

__all__ = ["run", "run_to_result", "local_session", "worker_pids", "SESSION_DEFAULTS"]

log = logging.getLogger(__name__)

#: A name no Paimon file can have: error rows carry it through the semi-join with candidates.
_ERROR_NAME = "\x00tablekeeper-read-error"
_ADD, _DELETE = 0, 1
_DATA, _CHANGELOG = plans.FileKind.DATA.value, plans.FileKind.CHANGELOG_DATA.value
_MANIFEST, _INDEX, _STATS = plans.FileKind.MANIFEST.value, plans.FileKind.INDEX.value, plans.FileKind.STATISTICS.value
_ERROR_COLLECT_MAX = 1_000
#: Tasks one directory's deletes may spread over.
_DIR_SALT = 8

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


def _parallelism(spark: SparkSession, request: launch.JobRequest) -> int:
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
    def __init__(self, spark: SparkSession, request: launch.JobRequest, result: launch.RunResult,
                 fault: Mapping[str, Any] | None) -> None:
        self.spark = spark
        self.request = request
        self.result = result
        self.fault = dict(fault) if fault else None
        self.n = _parallelism(spark, request)
        self._kept: list[DataFrame] = []

    def df(self, rows: Iterable[Sequence[Any]], fields: ex.Fields) -> DataFrame:
        return self.spark.createDataFrame([tuple(r) for r in rows], ex.ddl(fields))

    def io(self, df: DataFrame, fn: Callable[..., Iterator[Any]], out: ex.Fields, spec: Mapping[str, Any],
           key: str | None = None) -> DataFrame:
        """An I/O stage: explicit partition count first (AQE would merge small I/O tasks)."""
        df = df.repartition(self.n, key) if key else df.repartition(self.n)
        return df.mapInArrow(functools.partial(fn, dict(spec)), ex.ddl(out))

    def keep(self, df: DataFrame) -> DataFrame:
        """Materialise once; never recomputed later (lost blocks fail the job, they are not
        silently re-derived from a newer table state)."""
        kept = df.localCheckpoint(eager=True)
        self._kept.append(kept)
        return kept

    def release(self) -> None:
        for df in self._kept:
            try:
                df.unpersist()
            except Exception:  # pragma: no cover - best effort
                pass
        self._kept.clear()

    def spec(self, table: Table, **extra: Any) -> dict[str, Any]:
        main = table.on_branch(layout.MAIN)
        return {"storage": {"uri": main.root, "options": dict(self.request.options)}, "root": main.root,
                "manifest_dir": main.shared_dir(layout.MANIFEST_DIR), "batch_size": self.request.batch_size,
                **extra}


# -- shared helpers ----------------------------------------------------------------------------------
def _is_null(name: str) -> Column:
    return F.col(name).isNull()


def _error_sentinel(name_col: str) -> Column:
    return F.when(F.col("error_kind").isNotNull(), F.lit(_ERROR_NAME)).otherwise(F.col(name_col))


def _record_planned(ctx: _Ctx, planned: DataFrame) -> list[int]:
    """Per-kind counts and bytes, a bounded sample; returns the stages present."""
    rows = planned.groupBy("stage", "kind").agg(F.count(F.lit(1)).alias("n"),
                                                 F.sum("size").alias("bytes")).collect()
    files: dict[str, int] = {}
    nbytes: dict[str, int] = {}
    stages: set[int] = set()
    for r in rows:
        files[r["kind"]] = files.get(r["kind"], 0) + int(r["n"])
        nbytes[r["kind"]] = nbytes.get(r["kind"], 0) + int(r["bytes"] or 0)
        stages.add(int(r["stage"]))
    for kind, n in files.items():
        ctx.result.planned_files[kind] = ctx.result.planned_files.get(kind, 0) + n
        ctx.result.planned_bytes[kind] = ctx.result.planned_bytes.get(kind, 0) + nbytes[kind]
    room = safety.STATUS_SAMPLE_MAX - len(ctx.result.sample)
    if room > 0 and files:
        ctx.result.sample.extend(r["path"] for r in planned.select("path").limit(room).collect())
    return sorted(stages)


def _delete_stages(ctx: _Ctx, planned: DataFrame, stages: Sequence[int], spec: Mapping[str, Any]) -> None:
    """One Spark action per stage, strictly in order: a stage starts after the previous one
    returned. Rows are grouped by directory (bulk deletes share a prefix); the executors
    return one summary row per (stage, kind) and partition, summed here."""
    fault = ctx.fault
    for stage in stages:
        stage_spec = {**spec, "fault": fault} if fault else spec
        part = planned.filter(F.col("stage") == stage).select(*[n for n, _ in ex.DELETE_FIELDS])
        # by directory (every bulk request shares one prefix), salted so one huge directory
        # (an unpartitioned single-bucket table) still spreads over up to _DIR_SALT tasks
        salt = F.pmod(F.hash("path"), F.lit(_DIR_SALT))
        part = part.repartition(ctx.n, "parent_dir", salt).sortWithinPartitions("parent_dir")
        try:
            rows = part.mapInArrow(functools.partial(ex.delete_files, dict(stage_spec)),
                                   ex.ddl(ex.SUMMARY_FIELDS)).collect()
        except Exception as e:
            raise errors.StorageError(
                f"deletion stage {stage} failed after Spark's task retries: {_short(e)}",
                fix="rerun the same job: it plans again and finishes the work (deleted files count as missing)") from e
        _add_summary(ctx.result, rows)


def _add_summary(result: launch.RunResult, rows: Iterable[Any]) -> None:
    for r in rows:
        kind = r["kind"]
        if r["deleted"]:
            result.deleted[kind] = result.deleted.get(kind, 0) + int(r["deleted"])
            result.deleted_bytes[kind] = result.deleted_bytes.get(kind, 0) + int(r["bytes"])
        if r["missing"]:
            result.missing[kind] = result.missing.get(kind, 0) + int(r["missing"])
        result.failed_count += int(r["failed"])
        for line in r["failure_sample"] or ():
            if len(result.failure_sample) < safety.STATUS_SAMPLE_MAX:
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
    main = open_table(request.warehouse, request.table, options=dict(request.options)).on_branch(layout.MAIN)
    now = request.now_ms if request.now_ms is not None else engine.now_ms()
    threshold = engine.orphan_threshold(request, now)
    io = main.file_io
    depth = len(main.schema().partition_keys)
    spec = ctx.spec(main, older_than_ms=threshold, depth=depth)
    t0 = time.perf_counter()

    # 1. candidates, listed and materialised before any root is read
    listing: list[tuple[str, str, str]] = [
        (main.shared_dir(layout.MANIFEST_DIR), "all", _MANIFEST),
        (main.shared_dir(layout.INDEX_DIR), "all", _INDEX),
        (main.shared_dir(layout.STATISTICS_DIR), "all", _STATS),
    ]
    for branch in main.all_branches():
        listing.append((branch.dir(layout.SNAPSHOT_DIR), "temp:" + layout.SNAPSHOT_PREFIX, plans.FileKind.OTHER.value))
        listing.append((branch.dir(layout.CHANGELOG_DIR), "temp:" + layout.CHANGELOG_PREFIX,
                        plans.FileKind.OTHER.value))
    walks: list[tuple[str, int]] = []
    for root in orphans._data_roots(main):
        if depth == 0:
            walks.append((root, 0))
        else:
            walks.extend((s.path, depth - 1) for s in io.list_dir(root) if s.is_dir and "=" in s.name)
    buckets = _planning(lambda: ctx.keep(ctx.io(ctx.df(walks, ex.WALK_FIELDS), ex.expand_bucket_dirs,
                                                ex.DIR_FIELDS, spec)), "listing bucket directories")
    listing_df = buckets.select("dir", F.lit("all").alias("mode"), F.lit(_DATA).alias("kind")).unionByName(
        ctx.df(listing, ex.LISTING_FIELDS))
    cands = _planning(lambda: ctx.keep(ctx.io(listing_df, ex.list_files, ex.CANDIDATE_FIELDS, spec, key="dir")),
                      "listing candidate files")
    n_candidates = cands.count()
    n_buckets = buckets.count()

    # 2. the used set, read in executors, scoped to candidate names
    roots: list[tuple[str, str]] = []
    for branch in main.all_branches():
        if not branch.schema_ids():
            raise errors.IncompleteProtectionSetError(
                f"branch {branch.branch!r} has no schema: its files cannot be attributed",
                fix="check that branch manually (Paimon aborts here too), then drop or repair it")
        roots.extend((branch.snapshot_path(sid), "snapshot") for sid in branch.snapshot_ids())
        roots.extend((branch.tag_path(name), "tag") for name in branch.tag_names())
        roots.extend((branch.changelog_path(cid), "changelog") for cid in branch.changelog_ids())
    refs = _planning(lambda: ctx.keep(ctx.io(ctx.df(roots, ex.ROOT_FIELDS), ex.read_roots, ex.ROOT_REF_FIELDS,
                                             spec)), "reading snapshot, tag and changelog files")
    ok_refs = refs.filter(_is_null("error_kind"))
    # materialised: two consumers (manifest names to read; list entries as used names) would
    # otherwise run the Python read twice (exchange reuse stops below the Python stage)
    lists = _planning(lambda: ctx.keep(ctx.io(ok_refs.filter(F.col("what").isin("list", "optlist")).select("name")
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
    if problems:
        _judge_orphan_errors(ctx, io, problems, refs, lists)

    # 3. orphans = candidates - used, by name
    orphan_df = _planning(lambda: ctx.keep(cands.join(
        scoped.filter(_is_null("error_kind")).select("name").distinct(), "name", "left_anti")), "the anti-join")
    stages = _record_planned(ctx, orphan_df)
    n_orphans = sum(result.planned_files.values())
    result.details.update({"older_than_ms": threshold, "candidates": n_candidates, "bucket_dirs": n_buckets,
                           "roots": len(roots)})
    result.notes.append(f"{n_candidates} candidate file(s) older than the threshold, {n_orphans} unreferenced")
    result.timings["planSeconds"] = round(time.perf_counter() - t0, 3)
    if request.dry_run or not n_orphans:
        return

    # 4. delete, stage by stage, then emptied directories
    t1 = time.perf_counter()
    _delete_stages(ctx, orphan_df, stages, spec)
    touched = orphan_df.filter(F.col("kind") == _DATA).select(F.col("parent_dir").alias("dir")).distinct()
    removed = ctx.io(touched, ex.remove_empty_dirs, ex.REMOVED_FIELDS, spec, key="dir").agg(
        F.sum("removed").alias("removed")).collect()
    result.removed_dirs += int(removed[0]["removed"] or 0) if removed else 0
    result.timings["deleteSeconds"] = round(time.perf_counter() - t1, 3)


def _judge_orphan_errors(ctx: _Ctx, io: Any, problems: Sequence[Any], refs: DataFrame, lists: DataFrame) -> None:
    """Core's rule: unreadable metadata aborts; a missing file aborts only if a root that
    references it still exists (otherwise the root was expired concurrently). The base/delta
    lists of a changelog-N with changelog manifests may be missing (``optlist``)."""
    missing: set[str] = set()
    for p in problems:
        if p["error_kind"] != "missing":
            raise errors.IncompleteProtectionSetError(f"cannot read metadata {p['source']}: {p['error']}",
                                                      fix="repair the damaged file")
        missing.add(p["source"])
    names = sorted(missing)
    owners = {r["name"] for r in lists.filter(F.col("manifest_name").isin(names)).select(
        F.col("list_name").alias("name")).distinct().collect()}
    direct = F.col("name").isin(names) & (F.col("what") != "optlist")
    via_manifest = F.col("name").isin(sorted(owners)) & F.col("what").isin("list", "optlist")
    roots = refs.filter(direct | via_manifest).select("root_path", "name").distinct().collect()
    for r in roots:
        if io.exists(r["root_path"]):
            raise errors.IncompleteProtectionSetError(
                f"{r['root_path']} references a missing file ({r['name']} or a manifest it lists)",
                fix="repair the table (e.g. Paimon's remove_unexisting_files) before cleaning orphans")
    ctx.result.notes.append(f"{len(missing)} missing file(s) referenced only by roots that vanished meanwhile")


# -- expiration: one distributed planner for snapshots and changelogs ---------------------------------
@dataclass
class _Root:
    """One root and what the plan uses it for. A snapshot used in several ways appears once
    per use (e.g. an expiring snapshot of a decoupled table is a candidate and, as the
    changelog-N it becomes, a protecting root)."""

    snap: Snapshot
    keep_live: bool = False          # its live files (base + delta) protect data
    keep_changelog: bool = False     # every file its changelog names protects changelog files
    keep_meta: bool = False          # its lists, manifests, index, statistics are kept (strict reads)
    log_keep: bool = False           # a retained changelog-N: Reachability.changelog_root_data/_meta
    tag_live: bool = False           # live files protect deltas after it (previous-tag rule)
    cand_delta: str | None = None    # kind of the files its delta deletes (candidates)
    cand_changelog: str | None = None  # kind of the files its changelog adds (candidates)
    changelog_vs_data: bool = False  # changelog candidates checked against kept data (not changelog)
    cand_sizes: bool = True          # candidates carry the manifest's file size (as core's planner does)
    prev_tag: int | None = None
    cand_meta: bool = False          # its metadata are candidates (tolerant reads)
    cand_meta_changelog: bool = True
    rid: int = 0

    @property
    def sid(self) -> int:
        return self.snap.id

    @property
    def log_role(self) -> str:
        """The list a retained changelog-N is read through (``changelog_root_data``): its
        changelog manifests (producer != none), else its delta (producer none)."""
        return "changelog" if self.snap.changelog_manifest_list else "delta"

    @property
    def meta_lists(self) -> tuple[str, ...]:
        """The lists whose names and manifests are this use's metadata."""
        if self.keep_meta or (self.log_keep and self.log_role == "delta"):
            return ("base", "delta", "changelog")  # meta_files(root)
        if self.log_keep:
            return ("changelog",)  # changelog_root_meta: the changelog list, its manifests
        if self.cand_meta:
            return ("base", "delta", "changelog") if self.cand_meta_changelog else ("base", "delta")
        return ()

    @property
    def meta_extra(self) -> bool:
        """Index manifest, index files and statistics belong to this use's metadata."""
        return self.keep_meta or self.log_keep or self.cand_meta

    @property
    def strict_index(self) -> bool:
        return self.keep_meta or (self.log_keep and self.log_role == "delta")

    def strict_entries(self, role: str) -> bool:
        """Whether a missing manifest list or manifest of ``role`` must abort the plan because
        this use reads its entries strictly (core: ``live_files``, ``changelog_refs``,
        ``changelog_root_data``)."""
        return bool((self.keep_live and role in ("base", "delta"))
                    or (self.keep_changelog and role == "changelog")
                    or (self.log_keep and role == self.log_role))

    def strict_list(self, role: str) -> bool:
        """Whether a missing manifest list of ``role`` must abort (entries, or strict metadata:
        ``meta_files(root)`` / ``changelog_root_meta``)."""
        strict_meta = self.keep_meta or (self.log_keep and (self.log_role == "delta" or role == "changelog"))
        return strict_meta or self.strict_entries(role)


_ROOT_FIELDS: ex.Fields = (
    ("rid", "int"), ("sid", "long"), ("keep_live", "boolean"), ("keep_changelog", "boolean"), ("keep_meta", "boolean"),
    ("log_keep", "boolean"), ("tag_live", "boolean"), ("cand_delta", "string"), ("cand_changelog", "string"),
    ("changelog_vs_data", "boolean"), ("cand_sizes", "boolean"), ("prev_tag", "long"), ("cand_meta", "boolean"),
    ("log_role", "string"),
)
_BUCKET_FIELDS: ex.Fields = (("partition", "binary"), ("bucket", "int"), ("bucket_dir", "string"))


@dataclass
class _Judgement:
    skip_delta: set[int] = field(default_factory=set)
    skip_changelog: set[int] = field(default_factory=set)
    broken_tags: dict[int, str] = field(default_factory=dict)  # tag_live rid -> error


def _abort_strict(what: str, error: str) -> errors.TablekeeperError:
    return errors.IncompleteProtectionSetError(
        f"cannot read a protecting root while planning expiration: {what}: {error}",
        fix="a manifest of a retained snapshot/tag/branch is missing; repair it (nothing was deleted)")


def _plan_expiration(ctx: _Ctx, table: Table, roots: list[_Root]) -> tuple[DataFrame, list[int], dict[str, Any]]:
    """Distributed planning over ``roots``; returns (planned delete rows, stages, spec)."""
    for i, root in enumerate(roots):
        root.rid = i
    main = table.on_branch(layout.MAIN)
    resolver = PartitionPathResolver(main)
    in_data_dir = resolver.index_file_in_data_file_dir
    spec = ctx.spec(main, index_file_in_data_file_dir=in_data_dir,
                    statistics_dir=main.shared_dir(layout.STATISTICS_DIR))
    by_rid = {r.rid: r for r in roots}
    root_df = F.broadcast(ctx.df([(r.rid, r.sid, r.keep_live, r.keep_changelog, r.keep_meta, r.log_keep, r.tag_live,
                                   r.cand_delta, r.cand_changelog, r.changelog_vs_data, r.cand_sizes, r.prev_tag,
                                   r.cand_meta, r.log_role) for r in roots], _ROOT_FIELDS))

    # 1. every root in one pass: manifests to read, metadata paths, read errors
    expand_rows = []
    for r in roots:
        entry_roles = set()
        if r.keep_live or r.tag_live:
            entry_roles |= {"base", "delta"}
        if r.cand_delta:
            entry_roles.add("delta")
        if r.keep_changelog or r.cand_changelog:
            entry_roles.add("changelog")
        if r.log_keep:
            entry_roles.add(r.log_role)
        f = r.snap.fields
        expand_rows.append((r.rid, r.snap.base_manifest_list, r.snap.delta_manifest_list,
                            r.snap.changelog_manifest_list, f.get("baseManifestListSize"),
                            f.get("deltaManifestListSize"), f.get("changelogManifestListSize"),
                            r.snap.index_manifest, r.snap.statistics, ",".join(sorted(entry_roles)),
                            ",".join(r.meta_lists), r.meta_extra))
    expanded = _planning(lambda: ctx.keep(ctx.io(ctx.df(expand_rows, ex.EXPAND_FIELDS), ex.expand_roots,
                                                 ex.EXPANDED_FIELDS, spec)), "reading manifest lists")
    judged = _Judgement()
    for row in expanded.filter(F.col("what") == "error").collect():
        _judge_root_error(judged, by_rid[int(row["rid"])], row)
    root_manifests = expanded.filter(F.col("what") == "manifest").select(
        "rid", "list_role", F.col("name").alias("manifest_name")).join(root_df, "rid")

    # 2. pass A: the candidates (deltas and changelogs of the roots being expired)
    cand_use = (((F.col("list_role") == "delta") & F.col("cand_delta").isNotNull())
                | ((F.col("list_role") == "changelog") & F.col("cand_changelog").isNotNull()))
    cand_manifests = root_manifests.filter(cand_use)
    entries_a = _planning(lambda: ctx.keep(ctx.io(cand_manifests.select(F.col("manifest_name").alias("name"))
                                                  .distinct(), ex.read_entries, ex.ENTRY_FIELDS, spec, key="name")),
                          "reading the deltas of expiring snapshots")
    bad_a = entries_a.filter(F.col("error_kind").isNotNull()).select("manifest_name", "error_kind", "error") \
        .limit(_ERROR_COLLECT_MAX).collect()
    if bad_a:
        _judge_manifest_errors(judged, by_rid, cand_manifests, bad_a, candidates=True)
    cand_entries = cand_manifests.join(entries_a.filter(_is_null("error_kind")), "manifest_name")
    cand_entries = _without(cand_entries, "delta", judged.skip_delta)
    cand_entries = _without(cand_entries, "changelog", judged.skip_changelog)
    key = ["partition", "bucket", "file_name"]
    size = F.when(F.col("cand_sizes"), F.col("file_size")).otherwise(F.lit(0)).cast("long").alias("size")
    deltas = cand_entries.filter((F.col("list_role") == "delta") & F.col("cand_delta").isNotNull())
    re_added = deltas.filter(F.col("kind") == _ADD).select("rid", *key).distinct()
    deletions = deltas.filter(F.col("kind") == _DELETE).join(re_added, ["rid", *key], "left_anti").select(
        "rid", "prev_tag", F.col("cand_delta").alias("file_kind"), F.lit(True).alias("vs_data"), *key,
        "extra_files", "external_path", size)
    added_logs = cand_entries.filter((F.col("list_role") == "changelog") & F.col("cand_changelog").isNotNull()
                                     & (F.col("kind") == _ADD)).select(
        "rid", F.lit(None).cast("long").alias("prev_tag"), F.col("cand_changelog").alias("file_kind"),
        F.col("changelog_vs_data").alias("vs_data"), *key, "extra_files", "external_path", size)
    candidates = _planning(lambda: ctx.keep(deletions.unionByName(added_logs)), "computing candidates")

    # 3. pass B: protecting roots, scoped to candidate names
    keep_use = ((F.col("list_role").isin("base", "delta") & (F.col("keep_live") | F.col("tag_live")))
                | ((F.col("list_role") == "changelog") & F.col("keep_changelog"))
                | ((F.col("list_role") == F.col("log_role")) & F.col("log_keep")))
    keep_manifests = root_manifests.filter(keep_use)
    entries_b_all = ctx.io(keep_manifests.select(F.col("manifest_name").alias("name")).distinct(), ex.read_entries,
                           ex.ENTRY_FIELDS, spec, key="name") \
        .withColumn("file_name", _error_sentinel("file_name"))
    wanted = candidates.select("file_name").distinct().unionByName(
        ctx.df([(_ERROR_NAME,)], (("file_name", "string"),)))
    entries_b = _planning(lambda: ctx.keep(entries_b_all.join(wanted, "file_name", "left_semi")),
                          "reading the manifests of protecting roots")
    bad_b = entries_b.filter(F.col("error_kind").isNotNull()).select("manifest_name", "error_kind", "error") \
        .limit(_ERROR_COLLECT_MAX).collect()
    if bad_b:
        _judge_manifest_errors(judged, by_rid, keep_manifests, bad_b, candidates=False)
    for rid, error in judged.broken_tags.items():  # only previous tags still in use matter (as in core)
        if any(r.cand_delta and r.rid not in judged.skip_delta and r.prev_tag == by_rid[rid].sid for r in roots):
            raise errors.IncompleteProtectionSetError(
                f"cannot read tag at snapshot {by_rid[rid].sid}: {error}", fix="repair the tag's manifests")
    keep_entries = keep_manifests.join(entries_b.filter(_is_null("error_kind")), "manifest_name")
    ident = ["rid", "partition", "bucket", "level", "file_name", "ident_x"]
    live_groups = _planning(lambda: ctx.keep(keep_entries.filter(
        F.col("list_role").isin("base", "delta") & (F.col("keep_live") | F.col("tag_live"))).groupBy(*ident).agg(
        F.sum(F.when(F.col("kind") == _ADD, 1).otherwise(0)).alias("adds"),
        F.sum(F.when(F.col("kind") == _DELETE, 1).otherwise(0)).alias("dels"))), "merging live files")
    twice = live_groups.filter(F.col("adds") > 1).limit(1).collect()
    if twice:
        raise errors.FormatError(
            f"file {twice[0]['file_name']} (bucket {twice[0]['bucket']}, level {twice[0]['level']}) is added twice",
            fix="the table's manifests are inconsistent: Paimon itself refuses to read this snapshot; restore the "
                "manifests or roll back to an earlier snapshot")
    live = live_groups.filter((F.col("adds") > 0) & (F.col("dels") == 0)).join(
        root_df.select("rid", "sid", "keep_live", "tag_live"), "rid")
    log_data = keep_entries.filter(F.col("log_keep") & (F.col("list_role") == F.col("log_role"))
                                   & (F.col("kind") == _ADD)).select(*key)
    keep_data = live.filter(F.col("keep_live")).select(*key).unionByName(log_data).distinct()
    keep_changelog = keep_entries.filter((F.col("list_role") == "changelog") & F.col("keep_changelog")) \
        .select(*key).unionByName(log_data).distinct()
    tag_live = live.filter(F.col("tag_live")).select(F.col("sid").alias("prev_tag"), *key).distinct()
    data_side = candidates.filter(F.col("vs_data")).join(keep_data, key, "left_anti") \
        .join(tag_live, ["prev_tag", *key], "left_anti")
    log_side = candidates.filter(~F.col("vs_data")).join(keep_changelog, key, "left_anti")
    survivors = _planning(lambda: ctx.keep(data_side.unionByName(log_side)), "protecting candidates")

    # 4. metadata the expiring roots use and no retained root uses
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
    ctx.result.notes.extend(_skip_notes(judged, by_rid))
    return planned, _record_planned(ctx, planned), spec


def _without(df: DataFrame, role: str, rids: set[int]) -> DataFrame:
    if not rids:
        return df
    return df.filter(~((F.col("list_role") == role) & F.col("rid").isin(sorted(rids))))


def _skip_notes(judged: _Judgement, by_rid: Mapping[int, _Root]) -> list[str]:
    skipped = sorted({by_rid[r].sid for r in judged.skip_delta})
    return [f"deltas of snapshots {skipped[:10]} already cleaned by an earlier run"] if skipped else []


def _judge_root_error(judged: _Judgement, r: _Root, row: Any) -> None:
    """A manifest list or index manifest of root ``r`` could not be read: abort if the use of
    the root needs it (protecting roots read strictly), else record what the expiring root
    loses (core's planner tolerates exactly these)."""
    role, name, kind, error = row["list_role"], row["name"], row["error_kind"], row["error"]
    what = "index manifest" if role == "index" else "manifest list"
    if kind != "missing":
        raise errors.FormatError(f"cannot read {what} {name}: {error}", fix="repair the damaged file")
    if role == "index":
        if r.strict_index:
            raise _abort_strict(f"index manifest {name}", error)
        return
    if r.strict_list(role):
        raise _abort_strict(f"manifest list {name}", error)
    if r.tag_live and role in ("base", "delta"):
        judged.broken_tags.setdefault(r.rid, f"{name}: {error}")
    if r.cand_delta and role == "delta":
        judged.skip_delta.add(r.rid)
    if r.cand_changelog and role == "changelog":
        judged.skip_changelog.add(r.rid)


def _judge_manifest_errors(judged: _Judgement, by_rid: Mapping[int, _Root], uses: DataFrame, rows: Sequence[Any],
                           *, candidates: bool) -> None:
    for row in rows:
        if row["error_kind"] != "missing":
            raise errors.FormatError(f"cannot read manifest {row['manifest_name']}: {row['error']}",
                                     fix="repair the damaged file")
    names = sorted({row["manifest_name"] for row in rows})
    for use in uses.filter(F.col("manifest_name").isin(names)).select("rid", "list_role").distinct().collect():
        r, role = by_rid[int(use["rid"])], use["list_role"]
        if candidates:
            if r.cand_delta and role == "delta":
                judged.skip_delta.add(r.rid)
            if r.cand_changelog and role == "changelog":
                judged.skip_changelog.add(r.rid)
            continue
        if r.strict_entries(role):
            raise _abort_strict(f"a manifest of snapshot {r.sid} ({role})", f"missing {names[:5]}")
        if r.tag_live and role in ("base", "delta"):
            judged.broken_tags.setdefault(r.rid, f"missing manifest(s) {names[:5]}")


def _snapshots_in(table: Table, begin: int, end: int) -> tuple[list[Snapshot], list[int]]:
    expiring: list[Snapshot] = []
    missing: list[int] = []
    for sid in range(begin, end):
        try:
            expiring.append(table.snapshot(sid))
        except errors.SnapshotNotFoundError:
            missing.append(sid)  # a concurrent expiry removed it: tolerated, as core does
    return expiring, missing


def _expire(ctx: _Ctx) -> None:
    """``expire.plan_expire``, distributed (same range, roots and rules)."""
    request, result = ctx.request, ctx.result
    table = engine.open_request_table(request)
    config = engine.expire_config(request, table)
    now = request.now_ms if request.now_ms is not None else engine.now_ms()
    t0 = time.perf_counter()
    rng = expire.compute_range(table, config, now)
    trivial = rng.earliest is None or rng.end_exclusive is None or rng.end_exclusive <= rng.earliest
    expiring, missing = ([], []) if trivial else _snapshots_in(table, rng.earliest or 0, rng.end_exclusive or 0)
    if trivial or not expiring:  # nothing to read: core's planner is exact and cheap here
        _run_tail(ctx, table, expire.plan_expire(table, config, now), t0)
        return
    assert rng.earliest is not None and rng.end_exclusive is not None
    end = rng.end_exclusive
    result.details.update({"branch": table.branch, "earliest": rng.earliest, "latest": rng.latest,
                           "end_exclusive": end, "expired_snapshots": len(expiring), "stop_reason": rng.reason})
    result.notes.append(f"expiring snapshots {rng.earliest}..{end - 1} (stop: {rng.reason})")
    if missing:
        result.notes.append(f"snapshot files already gone (concurrent or earlier run): {missing[:10]}")
    end_snapshot = table.snapshot(end)
    try:
        tag_roots, other_roots, changelog_roots = expire._roots(table)
        own_tags = sorted((t.snapshot for t in table.tags()), key=lambda s: s.id)
    except FileNotFoundError as e:
        raise _abort_strict("a root", str(e)) from e
    decoupled = config.changelog_decoupled
    roots: list[_Root] = []
    roots.extend(_Root(s, keep_changelog=True, keep_meta=True) for s in tag_roots)
    roots.extend(_Root(s, keep_live=True, keep_changelog=True, keep_meta=True) for s in other_roots)
    roots.append(_Root(end_snapshot, keep_changelog=True, keep_meta=True, cand_delta=_DATA,
                       prev_tag=_previous(own_tags, end_snapshot.id)))
    # decoupled: the expiring snapshots live on as changelog-N and protect what a changelog reads
    roots.extend(_Root(s, log_keep=True) for s in [*changelog_roots, *(expiring if decoupled else [])])
    for i, s in enumerate(expiring):
        roots.append(_Root(s, cand_delta=_DATA if i > 0 else None,
                           prev_tag=_previous(own_tags, s.id) if i > 0 else None,
                           cand_changelog=None if decoupled else _CHANGELOG,
                           cand_meta=True, cand_meta_changelog=not decoupled))
    used_tags = {r.prev_tag for r in roots if r.prev_tag is not None}
    seen: set[int] = set()
    for t in own_tags:
        if t.id in used_tags and t.id not in seen:
            seen.add(t.id)
            roots.append(_Root(t, tag_live=True))
    planned, stages, spec = _plan_expiration(ctx, table, roots)
    steps: list[plans.Step] = []
    if decoupled:
        for snap in expiring:
            steps.append(plans.WriteStep(table.changelog_path(snap.id), table.file_io.read_text(
                table.snapshot_path(snap.id)), "decoupled changelog lifecycle", create_only=True))
        steps.append(plans.WriteStep(join(table.dir(layout.CHANGELOG_DIR), hints.LATEST),
                                     hints.encode_hint(expiring[-1].id), "changelog LATEST"))
    steps.append(plans.DeleteStep(plans.FileKind.SNAPSHOT, tuple(
        plans.PlannedFile(table.snapshot_path(s.id), plans.FileKind.SNAPSHOT, s.file_size, "expired")
        for s in expiring)))
    steps.append(plans.WriteStep(join(table.dir(layout.SNAPSHOT_DIR), hints.EARLIEST), hints.encode_hint(end),
                                 "new earliest snapshot"))
    tail = plans.Plan("expire-snapshots", table.identifier, tuple(steps))
    empty_dirs = len(table.schema().partition_keys) if config.clean_empty_directories else None
    _finish(ctx, table, planned, stages, spec, tail, t0, empty_dirs_depth=empty_dirs)


def _previous(own_tags: Sequence[Snapshot], sid: int) -> int | None:
    before = [t.id for t in own_tags if t.id < sid]
    return max(before) if before else None


def _expire_changelog(ctx: _Ctx) -> None:
    """``expire.plan_expire_changelog``, distributed (same range, roots and rules)."""
    request, result = ctx.request, ctx.result
    table = engine.open_request_table(request)
    config = engine.changelog_config(request, table)
    now = request.now_ms if request.now_ms is not None else engine.now_ms()
    t0 = time.perf_counter()
    # the range, exactly as expire.plan_expire_changelog computes it (the parity tests pin it)
    ids = table.changelog_ids()
    latest = table.latest_snapshot_id()
    expiring_ids, end = engine.changelog_range(table, config, now)
    expiring: list[Snapshot] = [table.changelog(i) for i in expiring_ids]
    if not expiring:  # nothing to read: core's planner is exact and cheap here
        _run_tail(ctx, table, expire.plan_expire_changelog(table, config, now), t0)
        return
    try:
        tag_roots, other_roots, _logs = expire._roots(table)
        earliest_snapshot = table.snapshot(table.earliest_snapshot_id() or latest or 0)
        kept_logs = [table.changelog(i) for i in ids if i >= end]
        all_snapshots = table.snapshots()
    except (FileNotFoundError, errors.SnapshotNotFoundError) as e:
        raise errors.IncompleteProtectionSetError(f"cannot read a protecting root: {e}",
                                                  fix="repair the table; nothing was deleted") from e
    roots: list[_Root] = []
    roots.extend(_Root(s, keep_live=True) for s in [*other_roots, *tag_roots, earliest_snapshot])
    roots.extend(_Root(s, keep_meta=True) for s in [earliest_snapshot, *tag_roots, *other_roots, *all_snapshots])
    roots.extend(_Root(log, log_keep=True) for log in kept_logs)
    for log in expiring:
        if log.changelog_manifest_list:
            roots.append(_Root(log, cand_changelog=_CHANGELOG, changelog_vs_data=True, cand_sizes=False,
                               cand_meta=True))
        else:
            roots.append(_Root(log, cand_delta=_DATA, cand_sizes=False, cand_meta=True))
    planned, stages, spec = _plan_expiration(ctx, table, roots)
    result.details["expired_changelogs"] = len(expiring)
    result.notes.append(f"expiring changelogs {expiring[0].id}..{expiring[-1].id}")
    tail = plans.Plan("expire-changelog", table.identifier, (
        plans.DeleteStep(plans.FileKind.CHANGELOG_META, tuple(
            plans.PlannedFile(table.changelog_path(c.id), plans.FileKind.CHANGELOG_META, None, "expired")
            for c in expiring)),
        plans.WriteStep(join(table.dir(layout.CHANGELOG_DIR), hints.EARLIEST), hints.encode_hint(end),
                        "new earliest changelog")))
    _finish(ctx, table, planned, stages, spec, tail, t0)


def _tail_summary(ctx: _Ctx, tail: plans.Plan) -> None:
    summary = tail.summary()
    for kind, n in summary["files"].items():
        ctx.result.planned_files[kind] = ctx.result.planned_files.get(kind, 0) + n
        ctx.result.planned_bytes[kind] = ctx.result.planned_bytes.get(kind, 0) + summary["bytes"].get(kind, 0)
    room = safety.STATUS_SAMPLE_MAX - len(ctx.result.sample)
    ctx.result.sample.extend(f.path for f in tail.files[:max(0, room)])


_DATA_STAGES_END = plans.STAGE_ORDER.index(plans.FileKind.CHANGELOG_DATA) * 3 + 2


def _finish(ctx: _Ctx, table: Table, planned: DataFrame, stages: Sequence[int], spec: Mapping[str, Any],
            tail: plans.Plan, t0: float, *, empty_dirs_depth: int | None = None) -> None:
    """Execute in core's order: data and changelog files, (emptied directories), index,
    statistics, manifests — each stage a Spark action that must return before the next — then
    the metadata tail (changelog copies, snapshot files, EARLIEST) through core's executor."""
    _tail_summary(ctx, tail)
    ctx.result.timings["planSeconds"] = round(time.perf_counter() - t0, 3)
    if ctx.request.dry_run:
        return
    t1 = time.perf_counter()
    data_stages = [s for s in stages if s <= _DATA_STAGES_END]
    _delete_stages(ctx, planned, data_stages, spec)
    if empty_dirs_depth is not None and data_stages:
        touched = planned.filter(F.col("stage") <= _DATA_STAGES_END).select(F.col("parent_dir").alias("dir")) \
            .distinct()
        removed = ctx.io(touched, ex.remove_empty_dirs, ex.REMOVED_FIELDS, {**spec, "depth": empty_dirs_depth},
                         key="dir").agg(F.sum("removed").alias("removed")).collect()
        ctx.result.removed_dirs += int(removed[0]["removed"] or 0) if removed else 0
    _delete_stages(ctx, planned, [s for s in stages if s > _DATA_STAGES_END], spec)
    engine.merge_execution(ctx.result, execution.execute(tail, table.file_io, batch_size=ctx.request.batch_size))
    ctx.result.timings["deleteSeconds"] = round(time.perf_counter() - t1, 3)


def _run_tail(ctx: _Ctx, table: Table, plan: plans.Plan, t0: float) -> None:
    """A plan with nothing to read or distribute (hints only): core plans and executes it."""
    ctx.result.details.update(dict(plan.details))
    ctx.result.notes.extend(plan.notes)
    _tail_summary(ctx, plan)
    ctx.result.timings["planSeconds"] = round(time.perf_counter() - t0, 3)
    if not ctx.request.dry_run and plan.steps:
        engine.merge_execution(ctx.result, execution.execute(plan, table.file_io,
                                                             batch_size=ctx.request.batch_size))


# -- entry points --------------------------------------------------------------------------------------
_OPERATIONS: Mapping[str, Callable[[_Ctx], None]] = {
    "clean-orphans": _clean_orphans, "expire": _expire, "expire-changelog": _expire_changelog}


def run(spark: SparkSession, request: launch.JobRequest, *, fault: Mapping[str, Any] | None = None,
        result: launch.RunResult | None = None) -> launch.RunResult:
    """Plan and (unless ``request.dry_run``) execute ``request`` on ``spark``.

    ``fault`` is a test hook for the delete stages (see ``executor._Fault``). ``result``, when
    given, is filled in place, so a caller still has the partial result after an error.

    Raises:
        IncompleteProtectionSetError: a protection set could not be built (nothing deleted).
        StorageError: a delete stage failed after Spark's retries (rerun to finish).
        TablekeeperError: bad input or table state.
    """
    result = result if result is not None else launch.RunResult(
        operation=request.operation, table=request.table, branch=request.branch, dry_run=request.dry_run,
        engine="spark", run_name=request.run_name, warehouse=request.warehouse, versions=engine.versions())
    result.versions.setdefault("spark", spark.version)
    started = engine.now_ms()
    result.started_at = engine._iso(started)
    t0 = time.perf_counter()
    ctx = _Ctx(spark, request, result, fault)
    result.details["parallelism"] = ctx.n
    _PHASES.clear()
    maintainer = contextlib.ExitStack()  # one maintainer per table (core/lease.py); released below
    try:
        maintainer.enter_context(engine.maintenance_lease(request))
        due = request.with_changelog and _changelog_due(request)
        _OPERATIONS[request.operation](ctx)
        _more_batches(spark, request, result, fault, first=result)
        if due:  # second step: the decoupled changelog, on the table as the first step left it
            ctx.release()
            step = launch.RunResult(operation="expire-changelog", table=request.table, branch=request.branch,
                                    dry_run=request.dry_run, engine="spark", run_name=request.run_name,
                                    warehouse=request.warehouse)
            try:
                _expire_changelog(_Ctx(spark, request, step, fault))
            finally:
                engine.merge_step(result, step, "changelog")
    finally:
        ctx.release()
        maintainer.close()
        result.timings.update({f"phase {k}": round(v, 3) for k, v in _PHASES.items()})
        result.timings["totalSeconds"] = round(time.perf_counter() - t0, 3)
        result.finished_at = engine._iso(engine.now_ms())
    return result


def _more_batches(spark: SparkSession, request: launch.JobRequest, result: launch.RunResult,
                  fault: Mapping[str, Any] | None, *, first: launch.RunResult) -> None:
    """Batches 2..``request.batches`` of ``expire``/``expire-changelog``, each on the table as the
    previous one left it, while the previous one expired something (counts summed into
    ``result``, details under ``details["batch N"]``). A dry run stops after the first."""
    unit = engine.BATCH_UNIT.get(request.operation)
    last = first
    for n in range(2, request.batches + 1):
        if unit is None or request.dry_run or not last.planned_files.get(unit):
            return
        step = launch.RunResult(operation=request.operation, table=request.table, branch=request.branch,
                                dry_run=request.dry_run, engine="spark", run_name=request.run_name,
                                warehouse=request.warehouse)
        step_ctx = _Ctx(spark, request, step, fault)
        try:
            _OPERATIONS[request.operation](step_ctx)
        finally:
            step_ctx.release()
            engine.merge_step(result, step, f"batch {n}")
        result.details["batches"] = n
        last = step


def _changelog_due(request: launch.JobRequest) -> bool:
    """``with_changelog``: whether changelog expiration is due before the snapshot expiration (the
    operator's in-process run plans both first, then applies them in order)."""
    table = engine.open_request_table(request)
    now = request.now_ms if request.now_ms is not None else engine.now_ms()
    return engine.changelog_due(table, engine.changelog_config(request, table), now)


def run_to_result(spark: SparkSession, request: launch.JobRequest) -> launch.RunResult:
    """``run``, with every error recorded in the result (status ``Failed``) instead of raised."""
    result = launch.RunResult(operation=request.operation, table=request.table, branch=request.branch,
                              dry_run=request.dry_run, engine="spark", run_name=request.run_name,
                              warehouse=request.warehouse, versions=engine.versions())
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
