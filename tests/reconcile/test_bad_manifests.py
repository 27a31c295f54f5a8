"""Bad manifests: ``plan`` and ``apply`` exit 2 with an ``error:`` line naming the file and the
field, and NOTHING is changed, not even by the valid manifests next to the bad one (everything is
validated, including what only storage can tell, before anything is applied)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablekeeper.cli.main import main
from tests.support import paimon as P

TAG = """apiVersion: tablekeeper.io/v1alpha1
kind: PaimonTag
metadata: {name: %s, namespace: demo}
spec: %s
"""
TABLE = """apiVersion: tablekeeper.io/v1alpha1
kind: PaimonTable
metadata: {name: %s, namespace: demo}
spec:
  catalogRef: {kind: PaimonCatalog, name: demo}
  database: sales
  table: %s
%s"""

# (case id, file name, content, substrings the error must contain)
CASES = [
    ("unknown-kind", "90-bad.yaml",
     "apiVersion: tablekeeper.io/v1alpha1\nkind: PaimonTagz\nmetadata: {name: x, namespace: demo}\nspec: {}\n",
     ["90-bad.yaml", "kind", "unknown kind 'PaimonTagz'", "did you mean 'PaimonTag'"]),
    ("wrong-api-version", "90-bad.yaml",
     (TAG % ("x", "{tableRef: {name: orders}, fromLatest: true}")).replace("v1alpha1", "v1"),
     ["90-bad.yaml", "apiVersion", "'tablekeeper.io/v1' is not supported", "tablekeeper.io/v1alpha1"]),
    ("missing-api-version", "90-bad.yaml", "kind: PaimonTag\nmetadata: {name: x}\nspec: {}\n",
     ["90-bad.yaml", "apiVersion is missing"]),
    ("tag-of-undeclared-table", "90-bad.yaml", TAG % ("x", "{tableRef: {name: nope}, fromLatest: true}"),
     ["90-bad.yaml (PaimonTag demo/x)", "spec.tableRef.name", "PaimonTable 'nope' is not declared"]),
    ("table-missing-in-storage", "90-bad.yaml", TABLE % ("ghosts", "ghosts", ""),
     ["90-bad.yaml (PaimonTable demo/ghosts)", "spec.table", "no Paimon table"]),
    ("two-resources-one-tag", "90-bad.yaml", TAG % ("baseline-2", "{tableRef: {name: orders}, tagName: baseline, "
                                                    "snapshotId: 3}"),
     ["90-bad.yaml (PaimonTag demo/baseline-2)", "spec.tagName",
      "tag 'baseline' of sales.orders (branch main) is also declared by PaimonTag demo/baseline (m/02-tags.yaml)"]),
    ("min-greater-than-max", "90-bad.yaml",
     TABLE % ("third", "events2", "  retention:\n    snapshots: {minRetained: 10, maxRetained: 5}\n"),
     ["90-bad.yaml (PaimonTable demo/third)", "spec.retention.snapshots.minRetained",
      "minRetained (10) is larger than snapshots.maxRetained (5)"]),
    ("malformed-duration", "90-bad.yaml", TAG % ("x", "{tableRef: {name: orders}, fromLatest: true, "
                                                 "timeRetained: '7 days'}"),
     ["90-bad.yaml (PaimonTag demo/x)", "spec.timeRetained", "'7 days' is not a duration"]),
    ("branch-from-missing-tag", "90-bad.yaml",
     "apiVersion: tablekeeper.io/v1alpha1\nkind: PaimonBranch\nmetadata: {name: b2, namespace: demo}\n"
     "spec: {tableRef: {name: orders}, fromTag: no-such-tag}\n",
     ["90-bad.yaml (PaimonBranch demo/b2)", "spec.fromTag", "tag 'no-such-tag' does not exist"]),
    ("branch-from-missing-snapshot", "90-bad.yaml",
     "apiVersion: tablekeeper.io/v1alpha1\nkind: PaimonBranch\nmetadata: {name: b2, namespace: demo}\n"
     "spec: {tableRef: {name: orders}, fromSnapshotId: 999}\n",
     ["90-bad.yaml (PaimonBranch demo/b2)", "spec.fromSnapshotId", "snapshot 999 does not exist"]),
    ("unknown-spec-field", "90-bad.yaml", TAG % ("x", "{tableRef: {name: orders}, snapshotID: 3}"),
     ["90-bad.yaml (PaimonTag demo/x)", "spec.snapshotID", "unknown field", "did you mean 'snapshotId'"]),
    ("duplicate-yaml-key", "90-bad.yaml",
     "apiVersion: tablekeeper.io/v1alpha1\nkind: PaimonTag\nkind: PaimonBranch\nmetadata: {name: x}\nspec: {}\n",
     ["90-bad.yaml:3", "duplicate key 'kind'"]),
    ("invalid-yaml", "90-bad.yaml", "apiVersion: [unclosed\n", ["90-bad.yaml", "not valid YAML"]),
    ("missing-policy-ref", "90-bad.yaml",
     TABLE % ("third", "events2", "  policyRefs: [{name: gold}]\n"),
     ["90-bad.yaml (PaimonTable demo/third)", "spec.policyRefs[0].name", "'gold' is not declared"]),
    ("missing-catalog", "90-bad.yaml", (TABLE % ("third", "events2", "")).replace("name: demo}", "name: lake}"),
     ["90-bad.yaml (PaimonTable demo/third)", "spec.catalogRef", "PaimonCatalog 'lake'"]),
    ("merged-policy-breaks-rail", "90-bad.yaml",
     TABLE % ("third", "events2", "  retention:\n    snapshots: {maxRetained: 3}\n")
     + "---\napiVersion: tablekeeper.io/v1alpha1\nkind: PaimonRetentionPolicy\nmetadata: {name: p, namespace: demo}\n"
       "spec: {defaults: {snapshots: {minRetained: 8}}}\n",
     ["90-bad.yaml (PaimonTable demo/third)", "spec.retention.snapshots.minRetained",
      "snapshots.minRetained = 8 (from policy/demo/p) is larger than snapshots.maxRetained = 3 (from inline)"]),
    ("delay-not-shorter-than-period", "90-bad.yaml",
     TABLE % ("third", "events2", "  retention:\n    tags:\n      autoCreate: {period: hourly, delay: 2 h}\n"),
     ["90-bad.yaml (PaimonTable demo/third)", "spec.retention.tags.autoCreate.delay", "not shorter than"]),
    ("maintenance-run-is-imperative", "90-bad.yaml",
     "apiVersion: tablekeeper.io/v1alpha1\nkind: PaimonMaintenanceRun\nmetadata: {name: r, namespace: demo}\n"
     "spec: {tableRef: {name: orders}, type: ExpireSnapshots}\n",
     ["90-bad.yaml", "kind", "imperative"]),
    ("namespace-on-cluster-kind", "90-bad.yaml",
     "apiVersion: tablekeeper.io/v1alpha1\nkind: ClusterPaimonCatalog\nmetadata: {name: c, namespace: demo}\n"
     "spec: {warehouse: /tmp/x}\n", ["90-bad.yaml (ClusterPaimonCatalog c)", "metadata.namespace", "cluster-scoped"]),
    ("tag-on-unknown-branch", "90-bad.yaml", TAG % ("x", "{tableRef: {name: orders}, branch: nope, fromLatest: true}"),
     ["90-bad.yaml (PaimonTag demo/x)", "spec.branch", "branch 'nope'"]),
    ("snapshot-id-zero", "90-bad.yaml", TAG % ("x", "{tableRef: {name: orders}, snapshotId: 0}"),
     ["90-bad.yaml (PaimonTag demo/x)", "spec.snapshotId", "at least 1"]),
    ("bad-metadata-name", "90-bad.yaml", TAG % ("Not_A_Name", "{tableRef: {name: orders}, fromLatest: true}"),
     ["90-bad.yaml", "metadata.name", "'Not_A_Name' is not a Kubernetes object name"]),
    ("all-digit-tag-name", "90-bad.yaml", TAG % ("x", "{tableRef: {name: orders}, tagName: '12', fromLatest: true}"),
     ["90-bad.yaml (PaimonTag demo/x)", "spec.tagName", "all digits"]),
    ("two-tables-one-identity", "90-bad.yaml", TABLE % ("orders-again", "orders", ""),
     ["90-bad.yaml (PaimonTable demo/orders-again)", "spec.table", "also managed by PaimonTable demo/orders"]),
]


@pytest.fixture
def manifests(demo_wh: Path, examples: Path) -> Path:
    """Examples 01-03 (valid, and they would create tags and a branch) next to the demo warehouse."""
    m = demo_wh.parent / "m"
    m.mkdir()
    for f in examples.glob("0[123]-*.yaml"):
        (m / f.name).write_text(f.read_text())
    return m


@pytest.mark.parametrize(("file", "content", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize("command", ["plan", "apply"])
def test_bad_manifest(command: str, file: str, content: str, expected: list[str], manifests: Path, demo_wh: Path,
                      monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(demo_wh.parent)
    (manifests / file).write_text(content)
    listing = P.dir_listing(demo_wh)
    code = main([command, "-f", "m"])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.startswith("error: "), err
    assert "nothing was changed" in err
    for text in expected:
        assert text in err, (text, err)
    assert P.dir_listing(demo_wh) == listing  # storage untouched, no state file written
    assert "Applying" not in out


def test_every_problem_is_reported_at_once(manifests: Path, demo_wh: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(demo_wh.parent)
    (manifests / "90-a.yaml").write_text(TAG % ("x", "{tableRef: {name: orders}, fromLatest: true, "
                                                     "timeRetained: '7 days'}"))
    (manifests / "91-b.yaml").write_text("apiVersion: v9\nkind: PaimonTag\nmetadata: {name: y}\nspec: {}\n")
    (manifests / "92-c.yaml").write_text(TAG % ("z", "{tableRef: {name: nope}, fromLatest: true}"))
    assert main(["apply", "-f", "m"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: 4 problems in the manifests; nothing was changed")  # 91-b has two
    assert "90-a.yaml" in err and "91-b.yaml" in err and "92-c.yaml" in err


def test_missing_path_is_an_input_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["plan", "-f", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["plan", "-f", str(tmp_path / "empty")]) == 2
    assert "no *.yaml" in capsys.readouterr().err
