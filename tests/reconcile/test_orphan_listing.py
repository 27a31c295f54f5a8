"""``orphanFiles.listing`` in a retention policy: the operator's and GitOps' orphan cleanup take
their candidates from the file list the policy names, in process (issue 16, point 4)."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

from tablekeeper import reconcile
from tablekeeper.cli import demo
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.reclaim.orphans import planning
from tablekeeper.reconcile import actions as A
from tests.reconcile.test_planner import _manifests, _plan
from tests.support.paimon import snapshot_views


def test_policy_listing_cleans_exactly_the_listed_orphans_in_process(demo_wh: Path, examples: Path) -> None:
    t = open_table(str(demo_wh), demo.ORDERS)
    live = {f.path for f in planning.plan_orphan_clean(
        t, planning.OrphanConfig(planning.resolve_older_than(int(time.time() * 1000)))).files}
    assert len(live) == 2  # the demo's planted orphans
    listed_orphan, unlisted_orphan = sorted(live)
    lines = ["key,size,last_modified"]
    for dirpath, _dirs, files in os.walk(t.root):
        for name in files:
            path = os.path.join(dirpath, name)
            if path != unlisted_orphan:
                st = os.stat(path)
                lines.append(f"{path},{st.st_size},{st.st_mtime_ns // 1_000_000}")
    listing = demo_wh.parent / "files.csv"
    listing.write_text("\n".join(lines) + "\n")
    taken = time.time() - 2 * 86400
    os.utime(listing, (taken, taken))
    policy = ("apiVersion: tablekeeper.io/v1alpha1\nkind: PaimonRetentionPolicy\nmetadata: {name: p, namespace: demo}\n"
              "spec: {selector: {tableNames: ['sales.orders']}, defaults: {orphanFiles: {state: Enabled, "
              f"olderThan: 1 d, dryRun: false, listing: '{listing}'}}}}}}\n")
    m = _manifests(demo_wh.parent, examples, policy)
    before = snapshot_views(str(demo_wh), demo.ORDERS)
    now = datetime.now(UTC)
    p = _plan(m, reconcile.MemoryRecordStore(), now, spark_threshold_files=1)
    orders = next(x for x in p.tables if x.target.location.identifier == demo.ORDERS)
    [clean] = [a for a in orders.actions if isinstance(a, A.CleanOrphans)]
    assert clean.listing == str(listing) and clean.engine == "in-process"  # never Spark with a listing
    assert clean.estimate.files == 1 and "orphanFiles.listing" in clean.policy
    result = reconcile.converge(reconcile.load([str(m)], base_dir=str(m.parent)), now=now,
                                store=reconcile.MemoryRecordStore())
    assert result.ok
    assert not os.path.exists(listed_orphan) and os.path.exists(unlisted_orphan)
    assert snapshot_views(str(demo_wh), demo.ORDERS) == before
