"""The operator's table scope on a real local warehouse, without Kopf: namespace labels reach the
policy resolution (cluster policies selecting by ``namespaceSelector``)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tablekeeper import reconcile
from tablekeeper.core.policy.kinds import parse_spec
from tablekeeper.operator.cluster import scopes
from tablekeeper.operator.cluster import view as cluster
from tests.support import paimon as P

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def obj(kind: str, name: str, spec: dict[str, Any], *, namespace: str | None = "sales",
        labels: dict[str, str] | None = None) -> cluster.Obj:
    return cluster.Obj(kind, namespace, name, f"uid-{name}", "2026-01-01T00:00:00Z", 1, labels or {}, {}, spec, {},
                       False, ())


def scope(wh: Path, table_spec: dict[str, Any], *, ns_labels: dict[str, str] | None,
          cluster_policies: list[tuple[str, dict[str, Any]]] = ()) -> scopes.Scope:  # type: ignore[assignment]
    cat_spec = {"warehouse": str(wh), "writerTimeZone": "UTC"}
    cat = obj("ClusterPaimonCatalog", "lake", cat_spec, namespace=None)
    parsed_cat = parse_spec("ClusterPaimonCatalog", cat_spec, source="t")
    raw = {"catalogRef": {"kind": "ClusterPaimonCatalog", "name": "lake"}, "database": "db", "table": "orders",
           **table_spec}
    table = obj("PaimonTable", "orders", raw)
    parsed_table = parse_spec("PaimonTable", raw, source="t")
    info = cluster.TableInfo(table, parsed_table, cluster.CatalogInfo(cat, parsed_cat))  # type: ignore[arg-type]
    policies = tuple((obj("ClusterPaimonRetentionPolicy", name, spec, namespace=None),
                      parse_spec("ClusterPaimonRetentionPolicy", spec, source="t"))
                     for name, spec in cluster_policies)
    return scopes.Scope(info, {}, cluster.NamespaceLabels({"sales": ns_labels}), (), (), (),
                        policies)  # type: ignore[arg-type]


def test_namespace_labels_select_cluster_policies(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=2)
    gold = ("gold", {"selector": {"namespaceSelector": {"matchLabels": {"team": "sales"}}},
                     "defaults": {"snapshots": {"maxAge": "3 d"}}})
    opener = reconcile.Opener()
    plan = scopes.plan_scope(scope(wh, {}, ns_labels={"team": "sales"}, cluster_policies=[gold]), opener, NOW)
    assert plan.target.namespace_labels == {"team": "sales"}
    assert plan.policy.sources["snapshots.maxAge"] == "cluster/gold"
    assert str(plan.policy.values["snapshots.maxAge"]) == "3 d"
    other = scopes.plan_scope(scope(wh, {}, ns_labels={"team": "finance"}, cluster_policies=[gold]), opener, NOW)
    assert other.policy.sources["snapshots.maxAge"] != "cluster/gold"


def test_build_desired_state_takes_namespace_labels(tmp_path: Path) -> None:
    from tablekeeper.reconcile.state.documents import parse_documents

    head = "apiVersion: tablekeeper.io/v1alpha1\n"
    text = "---\n".join([
        head + f"kind: ClusterPaimonCatalog\nmetadata: {{name: lake}}\nspec: {{warehouse: '{tmp_path}', "
               "allowedNamespaces: {selector: {matchLabels: {team: sales}}}}\n",
        head + "kind: PaimonTable\nmetadata: {name: t, namespace: sales}\nspec: {catalogRef: {kind: "
               "ClusterPaimonCatalog, name: lake}, database: db, table: orders}\n",
    ])
    loaded = parse_documents([("m.yaml", text, tmp_path)], base_dir=tmp_path)
    assert not loaded.problems
    desired = reconcile.build_desired_state(loaded.resources, namespace_labels={"sales": {"team": "sales"}})
    assert desired.tables[0].namespace_labels == {"team": "sales"}
    try:
        reconcile.build_desired_state(loaded.resources)  # labels unknown: the selector cannot allow it
    except reconcile.ManifestError as e:
        assert "does not allow namespace" in str(e)
    else:
        raise AssertionError("expected a ManifestError")
