"""plan/apply against an S3 warehouse (moto): the catalog gives the URI and the non-secret
options; credentials come from the environment (specs reject secret-looking options)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import s3fs

from tablekeeper import reconcile
from tablekeeper.core.paimon.pypaimon import sample_data
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.storage import FileIO
from tablekeeper.reconcile import actions as A


@pytest.mark.s3
def test_plan_apply_on_s3(s3: s3fs.S3FileSystem, s3_warehouse: str, s3_options: dict[str, str],
                          tmp_path: Path) -> None:
    ident = "db.t"
    catalog = sample_data._catalog(s3_warehouse, s3_options)
    catalog.create_database("db", ignore_if_exists=True)
    from pypaimon import Schema

    catalog.create_table(ident, Schema.from_pyarrow_schema(sample_data.ORDERS, partition_keys=["dt"]),
                         ignore_if_exists=False)
    table = catalog.get_table(ident)
    now = datetime.now(UTC)
    import pyarrow as pa

    for k in range(6):
        at = now - timedelta(days=6 - k)
        wb = table.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.Table.from_pylist([{"dt": f"{at:%Y-%m-%d}", "order_id": k, "amount": 1.0}],
                                           schema=sample_data.ORDERS))
        with sample_data.commit_clock(int(at.timestamp() * 1000)):
            c.commit(w.prepare_commit())
        w.close()
        c.close()
    public = {k: v for k, v in s3_options.items() if "key" not in k}
    opts = "\n".join(f"    {k}: '{v}'" for k, v in public.items())
    (tmp_path / "m.yaml").write_text(f"""apiVersion: tablekeeper.io/v1alpha1
kind: PaimonCatalog
metadata: {{name: lake, namespace: ns}}
spec:
  warehouse: {s3_warehouse}
  writerTimeZone: UTC
  options:
{opts}
---
apiVersion: tablekeeper.io/v1alpha1
kind: PaimonTable
metadata: {{name: t, namespace: ns}}
spec:
  catalogRef: {{kind: PaimonCatalog, name: lake}}
  database: db
  table: t
  enforcement: Operator
  retention:
    snapshots: {{minRetained: 2, maxAge: 1 d}}
    partitions: {{expiration: 3 d, timestampFormatter: yyyy-MM-dd}}
---
apiVersion: tablekeeper.io/v1alpha1
kind: PaimonTag
metadata: {{name: first, namespace: ns}}
spec: {{tableRef: {{name: t}}, snapshotId: 1, timeRetained: 30 d}}
""")
    desired = reconcile.load([str(tmp_path / "m.yaml")])
    opener = reconcile.Opener()
    store = reconcile.WarehouseRecordStore(opener.file_io)
    plan = reconcile.plan(desired, now=now, store=store, opener=opener)
    assert [a.kind for a in plan.changes] == ["CreateTag", "ExpirePartitions", "ExpireSnapshots"]
    result = reconcile.converge(desired, now=now, store=store, opener=opener, first_plan=plan)
    assert result.ok and result.final.is_empty, [r.message for r in result.results]
    io = FileIO.for_uri(s3_warehouse, s3_options)
    handle = open_table(s3_warehouse, ident, file_io=io)
    assert handle.tag("first").snapshot_id == 1
    assert any(isinstance(a, A.ExpirePartitions) for a in plan.changes)
    assert io.exists(f"{s3_warehouse}/.tablekeeper/state/db.t.json")
    # right after (time-based retention makes new work due as the clock moves: snapshot 6 is a day old)
    assert reconcile.plan(desired, now=now, store=store, opener=reconcile.Opener()).is_empty
