"""A user's first steps on a fresh cluster, exactly as README.md and docs/operator.md give them:
``kubectl apply --server-side -f crds/``, ``kubectl wait --for=condition=Established``, then
``kubectl apply -f examples/``. The chart ships the same CRDs; re-applying them keeps stored
objects valid."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.apiserver.conftest import CHART
from tests.apiserver.harness import clean_all
from tests.operator.test_samples import VALID, _placed
from tests.support.apiserver import Testenv
from tests.support.k8s import CRD_DIR, REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"


def test_crds_are_established_and_the_charts_copies_identical(crds: Testenv) -> None:
    listed = json.loads(crds.kubectl("get", "crd", "-o", "json").stdout)["items"]
    ours = {c["metadata"]["name"]: c for c in listed if c["spec"]["group"] == "tablekeeper.io"}
    files = sorted(CRD_DIR.glob("*.yaml"))
    assert set(ours) == {yaml.safe_load(p.read_text())["metadata"]["name"] for p in files}
    for crd in ours.values():
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions["Established"] == "True" and conditions["NamesAccepted"] == "True"
    for path in files:
        assert (CHART / "crds" / path.name).read_bytes() == path.read_bytes(), path.name


def test_reapplying_the_crds_keeps_stored_objects_valid(crds: Testenv, tmp_path: Path) -> None:
    docs = [_placed(p.values[0]) for p in VALID]
    for doc in docs:
        if doc["kind"] not in ("ClusterPaimonCatalog", "ClusterPaimonRetentionPolicy"):
            crds.ensure_namespace(doc["metadata"]["namespace"])
    manifest = tmp_path / "valid.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    try:
        crds.kubectl("apply", "--server-side", "-f", str(manifest))
        crds.kubectl("apply", "--server-side", "--force-conflicts", "-f", "crds/")
        crds.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", "crds/")
        # every stored object still passes validation on update (a label is a no-op for the spec)
        out = crds.kubectl("label", "--overwrite", "-f", str(manifest), "tablekeeper.io/revalidated=true")
        assert out.stdout.count("labeled") == len(docs), out.stdout
    finally:
        clean_all(crds)


def test_examples_apply_on_a_fresh_cluster(crds: Testenv) -> None:
    """``kubectl apply -f examples/`` (the namespace ``demo`` comes from examples/00)."""
    try:
        out = crds.kubectl("apply", "-f", "examples/")
        expected = 0
        for path in sorted(EXAMPLES.glob("*.yaml")):
            expected += sum(1 for doc in yaml.safe_load_all(path.read_text()) if doc)
        assert out.stdout.count("created") + out.stdout.count("unchanged") + out.stdout.count("configured") \
            == expected, out.stdout
        listed = json.loads(crds.kubectl("get", "paimon", "-A", "-o", "json").stdout)["items"]
        assert {(o["metadata"].get("namespace"), o["metadata"]["name"]) for o in listed} >= {
            ("demo", "demo"), ("demo", "orders"), ("demo", "baseline"), ("demo", "backfill")}
    finally:
        clean_all(crds)
