"""One expiration decision evaluated distributed: ``expire.decide_expire`` /
``decide_expire_changelog``'s ``ExpirationDecision`` (spark-jobs.md §5.2) turned into the
planned delete rows, materialised. Each ``RootUse`` of the decision is one row; manifest lists,
manifests and index manifests are read in executors (:mod:`tablekeeper.spark.expire.executor`),
each manifest list and manifest once per run (:class:`ManifestReads`), in two passes (the
candidates' deltas and changelogs first, then the protecting uses, scoped to candidate names).
Core's rules are applied where the data is: deletions within one delta by
``expire_decisions.effective_deletions``, live files by ``manifests.merge_kinds`` in manifest
order, a root's metadata by ``core.root_metadata``, every read error by
``expire_decisions.judge_missing`` (abort, skip a cleaned delta, or a broken tag). What is done
with the plan is :mod:`tablekeeper.spark.expire.driver`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from tablekeeper.core import errors, paimon, plans
from tablekeeper.core.paimon import Table, manifests
from tablekeeper.core.paimon.pypaimon import PartitionPathResolver
from tablekeeper.core.reclaim import expire, reach
from tablekeeper.core.reclaim.expire import ReadOutcome, RootUse
from tablekeeper.core.reclaim.reach import ListRole
from tablekeeper.spark import executor as ex
from tablekeeper.spark.deletes.executor import DELETE_FIELDS
from tablekeeper.spark.expire import executor as tasks
from tablekeeper.spark.stages import (
    ERROR_COLLECT_MAX,
    ERROR_NAME,
    RunContext,
    error_sentinel,
    is_null,
    planning,
)

__all__ = ["ManifestReads", "plan_expiration"]

_USE_FIELDS: ex.Fields = (
    ("rid", "int"), ("sid", "long"), ("keep_live", "boolean"), ("keep_changelog", "boolean"), ("keep_meta", "boolean"),
    ("log_keep", "boolean"), ("tag_live", "boolean"), ("cand_delta", "string"), ("cand_changelog", "string"),
    ("changelog_vs_data", "boolean"), ("cand_sizes", "boolean"), ("prev_tag", "long"), ("cand_meta", "boolean"),
    ("log_role", "string"),
)
_BUCKET_FIELDS: ex.Fields = (("partition", "binary"), ("bucket", "int"), ("bucket_dir", "string"))


class ManifestReads:
    """The manifest lists and manifests an expiration has read so far, materialised (kept in
    the run's context), and the table's partition path resolver: every evaluation of one run
    (both passes, core's verify evaluation, a re-plan under the commit-point re-check) shares
    them, so each file is read once per run."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        #: manifest lists read so far (names; their rows)
        self._lists: tuple[set[str], DataFrame] | None = None
        #: manifests read so far: their entries, and their names
        self._entries: tuple[DataFrame, DataFrame] | None = None
        self._resolver: tuple[str, PartitionPathResolver] | None = None

    def lists(self, names: Iterable[str], spec: Mapping[str, Any]) -> DataFrame:
        """The rows of manifest lists ``names`` (``executor.read_lists``), each list read once per
        run: the driver knows every list a decision needs (from its roots), so only the ones not
        read before are read, by one task per list name, and kept."""
        ctx = self.ctx
        wanted = set(names)
        seen, rows = self._lists if self._lists is not None else (set(), None)
        fresh = sorted(wanted - seen)
        if fresh or rows is None:
            read = ctx.keep(ctx.io(ctx.df([(n,) for n in fresh], ex.NAME_FIELDS), ex.read_lists, ex.LIST_FIELDS,
                                   spec, key="name"))
            rows = read if rows is None else rows.unionByName(read)
            seen = seen | set(fresh)
            self._lists = (seen, rows)
        return rows.filter(F.col("list_name").isin(sorted(wanted))) if len(wanted) < len(seen) else rows

    def entries(self, names: DataFrame, spec: Mapping[str, Any]) -> DataFrame:
        """The entries (``executor.read_entries``) of the manifests ``names`` (a column ``name``),
        each manifest read once per run: the names not read before are read, by one task per
        name, and kept; both passes of an evaluation and core's verify evaluation share them."""
        ctx = self.ctx
        if self._entries is None:
            fresh = names
        else:
            fresh = names.join(self._entries[1], "name", "left_anti")
        read = ctx.keep(ctx.io(fresh.distinct(), tasks.read_entries, tasks.ENTRY_FIELDS, spec, key="name"))
        rows = read if self._entries is None else self._entries[0].unionByName(read)
        self._entries = (rows, rows.select(F.col("manifest_name").alias("name")).distinct())
        return rows.join(names.select(F.col("name").alias("manifest_name")).distinct(), "manifest_name", "left_semi")

    def resolver(self, main: Table) -> PartitionPathResolver:
        """The table's partition path resolver, built once per run (it reads the schema: the
        partition keys cannot change, and core's verify evaluation would read it again)."""
        if self._resolver is None or self._resolver[0] != main.root:
            self._resolver = (main.root, PartitionPathResolver(main))
        return self._resolver[1]


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


@dataclass(frozen=True)
class _Roots:
    """What every step of one evaluation reads: the run, its manifest reads, the executor spec,
    the decision's root uses by row id (and as a broadcast frame, :data:`_USE_FIELDS`), and the
    judgement of the read errors met so far."""

    ctx: RunContext
    reads: ManifestReads
    spec: dict[str, Any]
    by_rid: dict[int, RootUse]
    frame: DataFrame
    judged: _Judgement


#: A data or changelog file's key across roots.
_KEY = ("partition", "bucket", "file_name")


def plan_expiration(ctx: RunContext, reads: ManifestReads, table: Table,
                    decision: expire.ExpirationDecision) -> tuple[DataFrame, dict[str, Any]]:
    """Distributed evaluation of ``decision``'s roots; returns (planned delete rows, spec),
    materialised, not yet counted (``deletes.record_planned``)."""
    by_rid = dict(enumerate(decision.roots))
    main = table.on_branch(paimon.MAIN)
    resolver = reads.resolver(main)
    spec = ctx.spec(main, index_file_in_data_file_dir=resolver.index_file_in_data_file_dir,
                    statistics_dir=main.shared_dir(paimon.STATISTICS_DIR))
    roots = _Roots(ctx, reads, spec, by_rid,
                   F.broadcast(ctx.df([_use_row(rid, u) for rid, u in by_rid.items()], _USE_FIELDS)), _Judgement())
    expanded, root_manifests = _expand(roots)
    candidates = _candidates(roots, root_manifests)
    survivors = _protected(roots, root_manifests, candidates)
    planned = _located(roots, resolver, survivors, _metadata(roots, expanded))
    _report(roots)
    return planned, spec


def _expand(roots: _Roots) -> tuple[DataFrame, DataFrame]:
    """1. Every root in one pass: the manifests to read, metadata paths, read errors (judged
    here); returns the expanded rows (materialised) and the manifests of each root use."""
    ctx, by_rid, judged = roots.ctx, roots.by_rid, roots.judged
    expand_rows = []
    for rid, u in by_rid.items():
        f = u.snapshot.fields
        expand_rows.append((rid, u.snapshot.base_manifest_list, u.snapshot.delta_manifest_list,
                            u.snapshot.changelog_manifest_list, f.get("baseManifestListSize"),
                            f.get("deltaManifestListSize"), f.get("changelogManifestListSize"),
                            u.snapshot.index_manifest, u.snapshot.statistics,
                            ",".join(sorted(r.value for r in u.entry_roles)), ",".join(r.value for r in u.meta_lists),
                            u.meta_extra))
    # the lists every root needs, each read once per run (reads.lists), handed to its roots
    wanted = [(rid, name) for rid, u in by_rid.items()
              for _role, name in reach.lists_of(u.snapshot, {*u.entry_roles, *u.meta_lists})]

    def expand() -> DataFrame:
        lists = roots.reads.lists({name for _rid, name in wanted}, roots.spec)
        per_root = ctx.df(wanted, (("rid", "int"), ("list_name", "string"))).join(lists, "list_name").groupBy(
            "rid").agg(F.collect_list(F.struct("list_name", "pos", "manifest_name", "manifest_size", "extra_files",
                                               "error_kind", "error")).alias("lists"))
        roots_in = ctx.df(expand_rows, tasks.EXPAND_FIELDS).join(per_root, "rid", "left")
        return ctx.keep(ctx.io(roots_in, tasks.expand_roots, tasks.EXPANDED_FIELDS, roots.spec))

    expanded = planning(expand, "reading manifest lists")
    for row in expanded.filter(F.col("what") == "error").collect():
        role, name = row["list_role"], row["name"]
        rid = int(row["rid"])
        if row["error_kind"] != "missing":
            raise errors.FormatError(f"cannot read {_described('list', ListRole(role), None)} {name} of "
                                     f"{by_rid[rid].label}: {row['error']}", fix="repair the damaged file")
        judged.missing(rid, by_rid[rid], "list", role, name)
    root_manifests = expanded.filter(F.col("what") == "manifest").select(
        "rid", "list_role", F.col("name").alias("manifest_name"), F.col("pos").alias("manifest_pos")).join(
        roots.frame, "rid")
    return expanded, root_manifests


def _candidates(roots: _Roots, root_manifests: DataFrame) -> DataFrame:
    """2. Pass A: the candidates, from the deltas and changelogs of the expiring uses
    (materialised)."""
    ctx, judged = roots.ctx, roots.judged
    cand_use = (((F.col("list_role") == ListRole.DELTA.value) & F.col("cand_delta").isNotNull())
                | ((F.col("list_role") == ListRole.CHANGELOG.value) & F.col("cand_changelog").isNotNull()))
    cand_manifests = root_manifests.filter(cand_use)
    entries_a = planning(lambda: roots.reads.entries(cand_manifests.select(F.col("manifest_name").alias("name")),
                                                     roots.spec), "reading the deltas of expiring snapshots")
    bad_a = entries_a.filter(F.col("error_kind").isNotNull()).select("manifest_name", "error_kind", "error") \
        .limit(ERROR_COLLECT_MAX).collect()
    if bad_a:
        _judge_manifest_errors(judged, roots.by_rid, cand_manifests, bad_a)
    cand_entries = cand_manifests.join(entries_a.filter(is_null("error_kind")), "manifest_name")
    cand_entries = _without(cand_entries, ListRole.DELTA, judged.skip_delta)
    cand_entries = _without(cand_entries, ListRole.CHANGELOG, judged.skip_changelog)
    size = F.when(F.col("cand_sizes"), F.col("file_size")).otherwise(F.lit(None)).cast("long").alias("size")
    deltas = cand_entries.filter((F.col("list_role") == ListRole.DELTA.value) & F.col("cand_delta").isNotNull())
    # core's rule (expire_decisions.effective_deletions) on each file's entry kinds within one delta
    effective = ctx.io(deltas.groupBy("rid", *_KEY).agg(F.collect_set("kind").alias("kinds")),
                       tasks.effective_deletions, tasks.KEYED_FIELDS, roots.spec)
    deletions = deltas.filter(F.col("kind") == manifests.DELETE).join(effective, ["rid", *_KEY], "left_semi").select(
        "rid", "prev_tag", F.col("cand_delta").alias("file_kind"), F.lit(True).alias("vs_data"), *_KEY,
        "extra_files", "external_path", size)
    added_logs = cand_entries.filter((F.col("list_role") == ListRole.CHANGELOG.value)
                                     & F.col("cand_changelog").isNotNull() & (F.col("kind") == manifests.ADD)).select(
        "rid", F.lit(None).cast("long").alias("prev_tag"), F.col("cand_changelog").alias("file_kind"),
        F.col("changelog_vs_data").alias("vs_data"), *_KEY, "extra_files", "external_path", size)
    return planning(lambda: ctx.keep(deletions.unionByName(added_logs)), "computing candidates")


def _protected(roots: _Roots, root_manifests: DataFrame, candidates: DataFrame) -> DataFrame:
    """3. Pass B: the protecting uses, scoped to candidate names; returns the candidates no
    protecting use keeps (materialised)."""
    ctx, by_rid, judged = roots.ctx, roots.by_rid, roots.judged
    key = list(_KEY)
    log_role_entries = (F.col("list_role") == F.col("log_role")) & F.col("log_keep")
    live_use = F.col("list_role").isin(ListRole.BASE.value, ListRole.DELTA.value) & (
        F.col("keep_live") | F.col("tag_live"))
    keep_use = live_use | ((F.col("list_role") == ListRole.CHANGELOG.value) & F.col("keep_changelog")) \
        | log_role_entries
    keep_manifests = root_manifests.filter(keep_use)
    entries_b_all = planning(lambda: roots.reads.entries(keep_manifests.select(F.col("manifest_name").alias("name")),
                                                         roots.spec), "reading the manifests of protecting roots") \
        .withColumn("file_name", error_sentinel("file_name"))
    wanted_names = candidates.select("file_name").distinct().unionByName(
        ctx.df([(ERROR_NAME,)], (("file_name", "string"),)))
    entries_b = entries_b_all.join(wanted_names, "file_name", "left_semi")
    bad_b = entries_b.filter(F.col("error_kind").isNotNull()).select("manifest_name", "error_kind", "error") \
        .limit(ERROR_COLLECT_MAX).collect()
    if bad_b:
        _judge_manifest_errors(judged, by_rid, keep_manifests, bad_b)
    for rid, (what, file) in judged.broken_tags.items():  # only previous tags still in use matter
        tag = by_rid[rid]
        if any(u.cand_delta and r not in judged.skip_delta and u.prev_tag == tag.sid for r, u in by_rid.items()):
            raise expire.abort_unreadable_protection(tag, what, file)
    keep_entries = keep_manifests.join(entries_b.filter(is_null("error_kind")), "manifest_name")
    # core's merge (manifests.merge_kinds) per identifier, entries in manifest-list order
    ident = ["rid", "partition", "bucket", "level", "file_name", "ident_x"]
    order = F.when(F.col("list_role") == ListRole.BASE.value, 0).otherwise(1)
    merged = planning(lambda: ctx.keep(ctx.io(keep_entries.filter(live_use).groupBy(*ident).agg(
        F.collect_list(F.struct(order.alias("list_order"), "manifest_pos", "entry_pos", "kind")).alias("entries")),
        tasks.merge_live, tasks.MERGED_FIELDS, roots.spec)), "merging live files")
    corrupt = merged.filter(F.col("error").isNotNull()).limit(1).collect()
    if corrupt:
        raise errors.FormatError(corrupt[0]["error"],
                                 fix="the table's manifests are inconsistent: Paimon itself refuses to read this "
                                     "snapshot; restore the manifests or roll back to an earlier snapshot")
    live = merged.filter(is_null("error")).join(roots.frame.select("rid", "sid", "keep_live", "tag_live"), "rid")
    log_data = keep_entries.filter(log_role_entries & (F.col("kind") == manifests.ADD)).select(*key)
    keep_data = live.filter(F.col("keep_live")).select(*key).unionByName(log_data).distinct()
    keep_changelog = keep_entries.filter((F.col("list_role") == ListRole.CHANGELOG.value) & F.col("keep_changelog")) \
        .select(*key).unionByName(log_data).distinct()
    tag_live = live.filter(F.col("tag_live")).select(F.col("sid").alias("prev_tag"), *key).distinct()
    data_side = candidates.filter(F.col("vs_data")).join(keep_data, key, "left_anti") \
        .join(tag_live, ["prev_tag", *key], "left_anti")
    log_side = candidates.filter(~F.col("vs_data")).join(keep_changelog, key, "left_anti")
    return planning(lambda: ctx.keep(data_side.unionByName(log_side)), "protecting candidates")


def _metadata(roots: _Roots, expanded: DataFrame) -> DataFrame:
    """4. The metadata the expiring uses reach and no protecting use does (materialised)."""
    ctx = roots.ctx
    meta = expanded.filter(F.col("what").isin("meta", "index")).join(
        roots.frame.select("rid", "keep_meta", "log_keep", "cand_meta"), "rid")
    kept_meta = meta.filter(F.col("keep_meta") | F.col("log_keep")).select("path")
    return planning(lambda: ctx.keep(meta.filter(F.col("cand_meta")).join(
        kept_meta, "path", "left_anti").groupBy("path").agg(
        F.first("what").alias("what"), F.first("kind").alias("kind"), F.max("size").alias("size"),
        F.first("stage").alias("stage"), F.first("name").alias("file_name"), F.first("partition").alias("partition"),
        F.first("bucket").alias("bucket"), F.first("index_type").alias("index_type"),
        F.first("external_path").alias("external_path"))), "planning metadata")


def _located(roots: _Roots, resolver: PartitionPathResolver, survivors: DataFrame,
             meta_files: DataFrame) -> DataFrame:
    """5. Locations: bucket directories resolved on the driver (one per partition and bucket),
    joined back; the planned delete rows, one per path (materialised)."""
    ctx = roots.ctx
    need_dirs = survivors.filter(is_null("external_path")).select("partition", "bucket")
    if resolver.index_file_in_data_file_dir:
        need_dirs = need_dirs.unionByName(meta_files.filter(
            (F.col("what") == "index") & F.col("index_type").isin("HASH", "DELETION_VECTORS")
            & is_null("external_path")).select("partition", "bucket"))
    pairs = planning(lambda: need_dirs.distinct().collect(), "collecting bucket directories")
    dirs = F.broadcast(ctx.df([(bytes(p["partition"]), int(p["bucket"]),
                                resolver.bucket_dir(bytes(p["partition"]), int(p["bucket"]))) for p in pairs],
                              _BUCKET_FIELDS))
    data_rows = survivors.join(dirs, ["partition", "bucket"], "left").select(
        F.lit("data").alias("what"), F.col("file_kind").alias("kind"), "file_name", "extra_files", "external_path",
        "bucket_dir", "size", F.lit(None).cast("string").alias("index_type"))
    index_rows = meta_files.filter(F.col("what") == "index").join(dirs, ["partition", "bucket"], "left").select(
        F.lit("index").alias("what"), F.lit(plans.FileKind.INDEX.value).alias("kind"), "file_name",
        F.lit(None).cast("array<string>").alias("extra_files"), "external_path", "bucket_dir", "size", "index_type")
    paths = ctx.io(data_rows.unionByName(index_rows), tasks.expand_paths, DELETE_FIELDS, roots.spec)
    plain_meta = meta_files.filter(F.col("what") == "meta").select(
        "path", "kind", "size", F.regexp_extract("path", r"^(.*)/[^/]*$", 1).alias("parent_dir"), "stage")
    first = F.min(F.struct("stage", "kind", "size", "parent_dir")).alias("f")
    return planning(lambda: ctx.keep(paths.unionByName(plain_meta).groupBy("path").agg(first).select(
        "path", "f.kind", "f.size", "f.parent_dir", "f.stage")), "planning")


def _report(roots: _Roots) -> None:
    """What the judgement met, in the run's notes and details: deltas an earlier run cleaned,
    references Paimon lets dangle."""
    result, judged = roots.ctx.result, roots.judged
    skipped = sorted({roots.by_rid[r].sid for r in judged.cleaned_before})
    if skipped:
        note = f"deltas of snapshots {skipped[:10]} already cleaned by an earlier run"
        if note not in result.notes:
            result.notes.append(note)
    for note in reach.notes_of(judged.ignored):
        if note not in result.notes:
            result.notes.append(note)
    result.details["ignoredReferences"] = reach.details_of(judged.ignored)


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
