"""``enforcement: TableOptions`` / ``Both`` (operator-design.md §4.2, §7.2 step 2): the operator
writes the managed fields as Paimon table options (a new schema file), never ``protectedOptions``
nor the operator's unalterable list, records them in status with a hash, reverts out-of-band
changes (``DriftCorrected``), and the table reads identically through pypaimon."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tablekeeper.core.paimon import table_options
from tablekeeper.core.paimon.table import open_table
from tests.operator.conftest import Harness, basic_objects
from tests.support import paimon as P
from tests.support.k8s import eventually

pytestmark = pytest.mark.k8s


async def test_table_options_written_recorded_and_drift_corrected(harness: Harness, warehouse: Path) -> None:
    before = P.snapshot_views(str(warehouse), "sales.orders")
    await harness.start(replace(harness.config, protected_table_options=frozenset({"snapshot.expire.limit"})))
    catalog, table = basic_objects(warehouse)
    table["spec"].update(enforcement="TableOptions", protectedOptions=["snapshot.num-retained.max"],
                         retention={"snapshots": {"minRetained": 3, "maxRetained": 50, "maxAge": "2 d",
                                                  "expireLimit": 7},
                                    "partitions": {"expiration": "30 d"}})
    await harness.apply(catalog)
    await harness.apply(table)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")
    opts = open_table(str(warehouse), "sales.orders").options()
    assert opts["snapshot.num-retained.min"] == "3" and opts["snapshot.time-retained"] == "2 d"
    assert opts["partition.expiration-time"] == "30 d"
    assert "snapshot.num-retained.max" not in opts and "snapshot.expire.limit" not in opts  # protected
    status = harness.status("PaimonTable", "orders")
    assert status["appliedTableOptions"] == {"snapshot.num-retained.min": "3", "snapshot.time-retained": "2 d",
                                             "partition.expiration-time": "30 d"}
    assert status["appliedTableOptionsHash"] == table_options.options_hash(status["appliedTableOptions"])
    await harness.wait_event("orders", "TableOptionsApplied")
    compliant = harness.condition("PaimonTable", "orders", "PolicyCompliant")
    assert compliant and compliant["status"] == "False" and compliant["reason"] == "ConflictingTableOption"
    assert "snapshot.num-retained.max" in compliant["message"]
    assert P.snapshot_views(str(warehouse), "sales.orders") == before  # data untouched
    assert open_table(str(warehouse), "sales.orders").schema_ids() == [0, 1]

    # someone changes a managed option out of band: reverted on the next pass
    table_options.alter_options(open_table(str(warehouse), "sales.orders"), {"snapshot.time-retained": "1 h"},
                                now_ms=1)
    await harness.wait_event("orders", "DriftCorrected")
    await eventually(lambda: open_table(str(warehouse), "sales.orders").options()["snapshot.time-retained"] == "2 d")
    assert open_table(str(warehouse), "sales.orders").schema_ids() == [0, 1, 2, 3]
    assert P.snapshot_views(str(warehouse), "sales.orders") == before
    # a steady state writes no more schemas
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")
    assert open_table(str(warehouse), "sales.orders").schema_ids() == [0, 1, 2, 3]


async def test_operator_enforcement_writes_no_options(harness: Harness, warehouse: Path) -> None:
    await harness.start()
    catalog, table = basic_objects(warehouse)
    table["spec"].update(enforcement="Operator", retention={"snapshots": {"maxAge": "2 d"}})
    await harness.apply(catalog)
    await harness.apply(table)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")
    assert open_table(str(warehouse), "sales.orders").schema_ids() == [0]
    assert "appliedTableOptions" not in harness.status("PaimonTable", "orders")
