"""Orphan cleanup on Spark: ``orphans.decide_orphan_clean`` (spark-jobs.md §5.1), evaluated
distributed. Core decides what is a candidate and what protects it; this module lists, reads and
joins at scale, with the executor functions of :mod:`tablekeeper.spark.orphans.executor`:

  1. candidates first: the decision's candidate directories and the bucket directories of its
     data roots (first partition level listed on the driver, deeper levels walked in executors
     with core's directory predicates), listed per directory in executors with core's
     candidate-name filter — on an object store instead core's ``orphans.list_candidates``
     within one flat listing of the table's prefix (``FileIO.flat_listing``) on the driver, and
     with a storage inventory core's ``orphans.listed_candidates`` — materialised
     (``localCheckpoint``) before any root is read (Paimon #3075);
  2. roots from ``orphans.enumerate_roots``; the used set in executors: root JSON -> manifest
     lists -> distinct manifests -> names, scoped to candidate names by a semi-join (Paimon
     #4287); read errors travel as rows and are judged on the driver with
     ``guarantees.RULES`` (a reference Paimon lets dangle is ignored and reported) and
     ``decisions.missing_reference_aborts``; roots that vanished while they were walked are
     covered by core's ``orphans.cover_vanished_roots``;
  3. orphans = candidates left-anti-join used (by name), materialised once; counts and sample;
  4. deletes by stage (:mod:`tablekeeper.spark.deletes.driver`), then the bucket directories
     the deletes may have emptied (``decisions.may_empty``), non-recursively.

The driver holds root descriptors, bucket directories, error rows, per-kind counts and a
sample, never a list of files, except an object store's flat listing (one LIST page per 1,000
objects is the minimum; hash-partitioned segments across executors would need a listing that
starts after a key, which core does not offer yet).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from tablekeeper.core import errors, paimon, plans, values
from tablekeeper.core.paimon import Table, open_table
from tablekeeper.core.reclaim import orphans, reach
from tablekeeper.core.reclaim.reach import ListRole
from tablekeeper.core.safety import concurrency
from tablekeeper.spark import executor as ex
from tablekeeper.spark import run_steps
from tablekeeper.spark.deletes import driver as deletes
from tablekeeper.spark.orphans import executor as tasks
from tablekeeper.spark.stages import (
    ERROR_COLLECT_MAX,
    ERROR_NAME,
    RunContext,
    error_sentinel,
    is_null,
    planning,
)

__all__ = ["clean_orphans"]


def clean_orphans(ctx: RunContext) -> None:
    """``orphans.decide_orphan_clean``, evaluated distributed: candidates, the used set, the
    anti-join, then (unless a dry run) the deletes by stage and the emptied directories."""
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
        cands, n_candidates, n_buckets = planning(lambda: _flat_candidates(ctx, main, decision),
                                                  "listing candidate files")
    else:
        cands, n_candidates, n_buckets = _listed_candidates(ctx, main, decision, spec)
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
    orphan_df = planning(lambda: ctx.keep(cands.join(used.distinct(), "name", "left_anti")), "the anti-join")
    stages = deletes.record_planned(ctx, orphan_df)
    n_orphans = sum(result.planned_files.values())
    result.details.update({"older_than_ms": threshold, "candidates": n_candidates, "unreferenced": n_orphans,
                           "bucket_dirs": n_buckets, "roots": len(roots)})
    result.notes.append(f"{n_candidates} candidate file(s) older than the threshold, {n_orphans} unreferenced")
    result.timings["planSeconds"] = round(time.perf_counter() - t0, 3)
    if request.dry_run or not n_orphans:
        return

    # 4. delete, stage by stage, then emptied directories
    t1 = time.perf_counter()
    deletes.delete_stages(ctx, orphan_df, stages, spec)
    if decision.clean_empty_directories:  # the directories the deletes may have emptied
        def per_dir(df: DataFrame, name: str) -> DataFrame:
            in_bucket = ~F.col("parent_dir").isin([d.path for d in decision.listings])  # (the rest: bucket dirs)
            return df.filter(in_bucket).groupBy(F.col("parent_dir").alias("dir")).agg(
                F.count(F.lit(1)).alias(name))

        touched = per_dir(orphan_df, "deleted").join(per_dir(cands, "listed"), "dir", "left").select(
            "dir", "listed", "deleted")
        deletes.remove_emptied_dirs(ctx, touched, spec)
    result.timings["deleteSeconds"] = round(time.perf_counter() - t1, 3)


def _listed_candidates(ctx: RunContext, main: Table, decision: orphans.OrphanCleanDecision,
                       spec: Mapping[str, Any]) -> tuple[DataFrame, int, int]:
    """The candidates of a store whose directories are real (local disk, HDFS), listed per
    directory in executors: the decision's candidate directories and the bucket directories of
    its data roots (first partition level listed here, deeper levels walked in executors);
    materialised, with their number and the number of bucket directories."""
    io = main.file_io
    depth = decision.partition_depth
    listing = [(d.path, d.temp_prefix, d.kind.value) for d in decision.listings]
    walks: list[tuple[str, int]] = []
    for root in decision.data_roots:
        if depth == 0:
            walks.append((root, 0))
        else:
            walks.extend((s.path, depth - 1) for s in io.list_dir(root)
                         if s.is_dir and orphans.is_partition_dir(s.name))
    buckets = planning(lambda: ctx.keep(ctx.io(ctx.df(walks, tasks.WALK_FIELDS), tasks.expand_bucket_dirs,
                                               tasks.DIR_FIELDS, spec)), "listing bucket directories")
    listing_df = buckets.select("dir", F.lit(None).cast("string").alias("temp_prefix"),
                                F.lit(plans.FileKind.DATA.value).alias("kind")).unionByName(
        ctx.df(listing, tasks.LISTING_FIELDS))
    cands = planning(lambda: ctx.keep(ctx.io(listing_df, tasks.list_files, tasks.CANDIDATE_FIELDS, spec, key="dir")),
                     "listing candidate files")
    n_buckets = buckets.count()
    return cands, cands.count(), n_buckets


def _flat_candidates(ctx: RunContext, main: Table, decision: orphans.OrphanCleanDecision
                     ) -> tuple[DataFrame, int, int]:
    """The candidates of an object store, as in process: ``orphans.list_candidates`` within
    ``FileIO.flat_listing`` of the table's prefix (``ceil(objects / 1000)`` LIST pages, the
    floor; entries carry size and time, so no HEAD), on the driver; and the number of bucket
    directories seen (with the number of candidates). One listing per directory from the executors cost a LIST per bucket
    directory (docs/storage-internals.md, "Spark on S3, measured")."""
    with main.file_io.flat_listing(main.root):
        found = orphans.list_candidates(main, decision)
    return _candidate_rows(ctx, decision, found), found.count, len(found.bucket_dirs)


def _candidate_rows(ctx: RunContext, decision: orphans.OrphanCleanDecision,
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
    return ctx.keep(ctx.df(rows, tasks.CANDIDATE_FIELDS))


def _inventory_candidates(ctx: RunContext, main: Table, decision: orphans.OrphanCleanDecision
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


def _used_set(ctx: RunContext, io: Any, roots: list[tuple[str, str, str]], cands: DataFrame, spec: Mapping[str, Any],
              names: Mapping[str, reach.RootName], ignored: list[reach.IgnoredReference]
              ) -> tuple[DataFrame, set[orphans.RootKey], bool]:
    """The names ``roots`` (path, kind, branch) use among the candidates, read in executors; the
    keys of the roots read (``orphans.root_key``); and whether some root vanished before it was
    walked (its file, or a file only vanished roots referenced, was gone: a concurrent
    expiration), which makes core list the roots again. ``names``: every root by its path;
    missing files gone by design are added to ``ignored``."""
    refs = planning(lambda: ctx.keep(ctx.io(ctx.df(roots, tasks.ROOT_FIELDS), tasks.read_roots, tasks.ROOT_REF_FIELDS,
                                            spec)), "reading snapshot, tag and changelog files")
    ok_refs = refs.filter(is_null("error_kind"))
    # materialised: two consumers (manifest names to read; list entries as used names) would
    # otherwise run the Python read twice (exchange reuse stops below the Python stage)
    lists = planning(lambda: ctx.keep(ctx.io(ok_refs.filter(F.col("what") == "list").select("name")
                                             .distinct(), ex.read_lists, ex.LIST_FIELDS, spec, key="name")),
                     "reading manifest lists")
    manifest_names = lists.filter(F.col("manifest_name").isNotNull()).select(
        F.col("manifest_name").alias("name")).distinct()
    from_manifests = ctx.io(manifest_names, tasks.used_names, tasks.USED_FIELDS, spec, key="name")
    from_index = ctx.io(ok_refs.filter(F.col("what") == "index").select("name").distinct(), tasks.index_names,
                        tasks.USED_FIELDS, spec, key="name")
    used_cols = ["source", "name", "error_kind", "error"]
    used = (
        refs.filter(F.col("what") != "root").select(F.col("root_path").alias("source"), "name", "error_kind", "error")
        .unionByName(refs.filter(F.col("what") == "root").select(
            F.col("root_path").alias("source"), F.lit(ERROR_NAME).alias("name"), "error_kind", "error"))
        .unionByName(lists.select(F.col("list_name").alias("source"), error_sentinel("manifest_name").alias("name"),
                                  "error_kind", "error"))
        .unionByName(lists.filter(is_null("error_kind")).select(
            F.col("list_name").alias("source"), F.explode("extra_files").alias("name"), "error_kind", "error"))
        .unionByName(from_manifests.select(F.col("source"), error_sentinel("name").alias("name"), "error_kind",
                                           "error"))
        .unionByName(from_index.select(F.col("source"), error_sentinel("name").alias("name"), "error_kind",
                                       "error"))
    ).select(*used_cols)
    wanted = cands.select("name").distinct().unionByName(ctx.df([(ERROR_NAME,)], ex.NAME_FIELDS))
    scoped = planning(lambda: ctx.keep(used.join(wanted, "name", "left_semi")), "reading manifests")
    problems = scoped.filter(F.col("error_kind").isNotNull()).limit(ERROR_COLLECT_MAX).collect()
    gone = bool(problems) and _judge_orphan_errors(ctx, io, problems, refs, lists, names, ignored)
    walked: dict[str, list[str]] = {}
    for r in refs.filter(F.col("what") == "list").select("root_path", "name").collect():
        walked.setdefault(r["root_path"], []).append(r["name"])
    gone = gone or any(path not in walked for path, _kind, _branch in roots)
    return (scoped.filter(is_null("error_kind")).select("name"),
            {orphans.root_key(path, names) for path, names in walked.items()}, gone)


def _judge_orphan_errors(ctx: RunContext, io: Any, problems: Sequence[Any], refs: DataFrame, lists: DataFrame,
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
