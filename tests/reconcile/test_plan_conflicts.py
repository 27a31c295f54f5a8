"""``plan -f`` fails (exit 1) when conflicts keep storage from matching the manifests, so a CI job
that runs it cannot pass over them; ``--allow-conflicts`` opts out (0/2 as without conflicts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablekeeper.cli.main import main
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.refs import tags as core_tags
from tests.support import paimon as P

HEAD = "apiVersion: tablekeeper.io/v1alpha1\n"


def test_a_conflict_fails_the_plan_unless_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=3)
    core_tags.create_tag(open_table(str(wh), "db.orders"), "release", snapshot_id=1)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "all.yaml").write_text("---\n".join([
        HEAD + f"kind: PaimonCatalog\nmetadata: {{name: c, namespace: ns}}\nspec: {{warehouse: '{wh}'}}\n",
        HEAD + "kind: PaimonTable\nmetadata: {name: t, namespace: ns}\n"
               "spec: {catalogRef: {kind: PaimonCatalog, name: c}, database: db, table: orders}\n",
        HEAD + "kind: PaimonTag\nmetadata: {name: release, namespace: ns}\nspec: {tableRef: {name: t}, snapshotId: 2}\n",
    ]))
    listing = P.dir_listing(wh)
    assert main(["plan", "-f", str(tmp_path / "m")]) == 1
    assert "conflict(s) need attention" in capsys.readouterr().out
    assert main(["plan", "-f", str(tmp_path / "m"), "--allow-conflicts"]) in (0, 2)
    assert P.dir_listing(wh) == listing  # a plan changes nothing
