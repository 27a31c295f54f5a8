"""`enforcement: TableOptions|Both` through the reconciler and the GitOps CLI: `apply -f` writes the managed Paimon options
as a new schema (as ALTER TABLE does), never a protected key; the table reads as before through
pypaimon; a second plan has nothing to do."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tablekeeper import reconcile
from tablekeeper.cli.main import main
from tablekeeper.core.paimon.table import open_table
from tests.support import paimon as P

HEAD = "apiVersion: tablekeeper.io/v1alpha1\n"


def manifests(wh: Path, enforcement: str) -> str:
    return "---\n".join([
        HEAD + f"kind: PaimonCatalog\nmetadata: {{name: c, namespace: ns}}\nspec: {{warehouse: '{wh}'}}\n",
        HEAD + "kind: PaimonTable\nmetadata: {name: t, namespace: ns}\n"
               "spec:\n  catalogRef: {kind: PaimonCatalog, name: c}\n  database: db\n  table: orders\n"
               f"  enforcement: {enforcement}\n  protectedOptions: [snapshot.expire.limit]\n"
               "  retention:\n    snapshots: {minRetained: 12, maxAge: 36 h, expireLimit: 7}\n",
    ])


@pytest.mark.parametrize("enforcement", ["TableOptions", "Both"])
def test_apply_writes_managed_table_options(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            enforcement: str) -> None:
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=3)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "table.yaml").write_text(manifests(wh, enforcement))
    before_views = P.snapshot_views(str(wh), "db.orders")
    before_schemas = open_table(str(wh), "db.orders").schema_ids()
    listing = P.dir_listing(wh)

    assert main(["plan", "-f", str(tmp_path / "m")]) == 2
    out = capsys.readouterr().out
    assert "set table options: snapshot.num-retained.min=12, snapshot.time-retained=36 h" in out
    assert "table option snapshot.expire.limit" in out  # protected: reported, not written
    assert P.dir_listing(wh) == listing  # plan changes nothing

    assert main(["apply", "-f", str(tmp_path / "m"), "-o", "json"]) == 0
    applied = json.loads(capsys.readouterr().out)
    assert applied["converged"] and applied["passes"][0]["totals"]["failed"] == 0
    table = open_table(str(wh), "db.orders")
    assert table.schema_ids() == [*before_schemas, before_schemas[-1] + 1]  # one new schema file
    options = table.options()
    assert options["snapshot.num-retained.min"] == "12" and options["snapshot.time-retained"] == "36 h"
    assert "snapshot.expire.limit" not in options
    assert P.snapshot_views(str(wh), "db.orders") == before_views  # pypaimon reads every view as before

    assert main(["plan", "-f", str(tmp_path / "m")]) == 0
    assert "set table options" not in capsys.readouterr().out


def test_operator_enforcement_writes_no_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=2)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "table.yaml").write_text(manifests(wh, "Operator"))
    schemas = open_table(str(wh), "db.orders").schema_ids()
    assert main(["apply", "-f", str(tmp_path / "m")]) == 0
    assert "set table options" not in capsys.readouterr().out
    assert open_table(str(wh), "db.orders").schema_ids() == schemas


# -- enforcement: Both runs expiration only where writers cannot (operator-design.md §4.2) --------

def both_manifests(wh: Path) -> str:
    return "---\n".join([
        HEAD + f"kind: PaimonCatalog\nmetadata: {{name: c, namespace: ns}}\nspec: {{warehouse: '{wh}'}}\n",
        HEAD + "kind: PaimonTable\nmetadata: {name: t, namespace: ns}\n"
               "spec:\n  catalogRef: {kind: PaimonCatalog, name: c}\n  database: db\n  table: orders\n"
               "  enforcement: Both\n"
               "  retention:\n    snapshots: {minRetained: 1, maxAge: 2 h}\n"
               "    orphanFiles: {state: Enabled, olderThan: 2 d, dryRun: true}\n",
    ])


def plan_kinds(wh: Path, tmp_path: Path, now: datetime, **config: Any) -> list[tuple[str, str]]:
    (tmp_path / "m").mkdir(exist_ok=True)
    (tmp_path / "m" / "table.yaml").write_text(both_manifests(wh))
    desired = reconcile.build_desired_state(reconcile.load_manifests([tmp_path / "m"], base_dir=tmp_path))
    plan = reconcile.plan(desired, now=now, store=reconcile.MemoryRecordStore(),
                          config=reconcile.ReconcileConfig(**config))
    return [(a.kind, getattr(a, "what", "")) for a in plan.tables[0].actions]


def test_both_leaves_expiration_to_active_writers_but_cleans_orphans(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=3)
    P.plant_orphan(wh / "db.db" / "orders", "data-0a0a0a0a-0a0a-0a0a-0a0a-0a0a0a0a0a0a-0.parquet", b"orphan",
                   age_s=3 * 86_400)
    acts = plan_kinds(wh, tmp_path, datetime.now(UTC))
    assert ("Skipped", "maintenance") in acts and ("CleanOrphans", "") in acts
    assert not [k for k, _ in acts if k in ("ExpireSnapshots", "ExpireChangelog", "ExpirePartitions")]
    # a manual run (ignore schedules, as PaimonMaintenanceRun does) runs what it is asked for
    assert ("ExpireSnapshots", "") in plan_kinds(wh, tmp_path, datetime.now(UTC), ignore_schedules=True)


def test_both_expires_idle_tables(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=3)
    acts = plan_kinds(wh, tmp_path, datetime.now(UTC) + timedelta(hours=3))  # past maxAge: nobody committed
    assert ("ExpireSnapshots", "") in acts and ("Skipped", "maintenance") not in acts


def test_both_expires_write_only_tables(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=3, options={"write-only": "true"})
    acts = plan_kinds(wh, tmp_path, datetime.now(UTC))
    assert ("ExpireSnapshots", "") in acts and ("Skipped", "maintenance") not in acts
