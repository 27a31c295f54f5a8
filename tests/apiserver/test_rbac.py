"""The chart's RBAC enforced by a real API server: the operator, logged in as the chart's
ServiceAccount (a TokenRequest token) with exactly the roles and bindings helm-python-sdk renders,
brings a tag to Ready and deletes it again, cluster-wide and with ``watchNamespaces`` (namespaced
RoleBindings); with one verb removed from the rendered rules the server answers 403 and the tag
never gets Ready (proof the check bites).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import kopf

from tests.apiserver.conftest import install_rbac
from tests.apiserver.harness import RealHarness
from tests.operator.conftest import basic_objects, obj
from tests.support.apiserver import Testenv, metric_counts


async def _tag_lifecycle(h: RealHarness, warehouse: Path, namespaces: list[str] | None = None) -> None:
    await h.start(namespaces=namespaces)
    for body in basic_objects(warehouse):
        await h.apply(body)
    await h.wait_condition("PaimonCatalog", "lake", reason="Connected")
    await h.wait_condition("PaimonTable", "orders", reason="Reconciled")
    await h.apply(obj("PaimonTag", "nightly", {"tableRef": {"name": "orders"}, "snapshotId": 3}))
    await h.wait_condition("PaimonTag", "nightly", reason="Created")
    await h.wait_event("nightly", "Created")
    await h.delete("PaimonTag", "nightly")
    await h.wait_gone("PaimonTag", "nightly")
    await h.stop()


async def test_cluster_wide_rbac_is_enough(real_harness: RealHarness, warehouse: Path) -> None:
    await _tag_lifecycle(real_harness, warehouse)
    assert real_harness.forbidden() == 0


async def test_watch_namespaces_rbac_is_enough(crds: Testenv, operator_settings: kopf.OperatorSettings,
                                               warehouse: Path) -> None:
    token = install_rbac(crds, {"watchNamespaces": ["sales", "finance"]}, release="tkns")
    h = RealHarness(crds, operator_settings, token)
    h.add_namespace("sales")
    try:
        await _tag_lifecycle(h, warehouse, namespaces=["sales", "finance"])
        assert h.forbidden() == 0
    finally:
        await h.stop()
        h.clean()


def _drop_verb(resource: str, verb: str) -> Any:
    def edit(objects: list[dict[str, Any]]) -> None:
        dropped = 0
        for role in objects:
            for rule in role.get("rules") or ():
                if resource in rule.get("resources", ()) and verb in rule["verbs"]:
                    rule["verbs"] = [v for v in rule["verbs"] if v != verb]
                    dropped += 1
        assert dropped, f"no rule grants {verb} on {resource}"
    return edit


def _forbidden(testenv: Testenv, resource: str, subresource: str, verb: str) -> float:
    return sum(value for labels, value in metric_counts(testenv.metrics())
               if labels.get("code") == "403" and labels.get("resource") == resource
               and labels.get("subresource", "") == subresource and labels.get("verb") == verb)


async def test_a_missing_verb_is_a_403(crds: Testenv, operator_settings: kopf.OperatorSettings,
                                       warehouse: Path) -> None:
    """Without ``patch`` on ``paimontags/status`` the operator cannot report: 403, never Ready."""
    token = install_rbac(crds, release="tkbroken", edit=_drop_verb("paimontags/status", "patch"))
    before = _forbidden(crds, "paimontags", "status", "PATCH")
    h = RealHarness(crds, operator_settings, token)
    try:
        await h.start()
        for body in basic_objects(warehouse):
            await h.apply(body)
        await h.wait_condition("PaimonTable", "orders", reason="Reconciled")
        await h.apply(obj("PaimonTag", "nightly", {"tableRef": {"name": "orders"}, "snapshotId": 3}))
        for _ in range(100):
            if _forbidden(crds, "paimontags", "status", "PATCH") > before:
                break
            await asyncio.sleep(0.1)
        assert _forbidden(crds, "paimontags", "status", "PATCH") > before
        assert h.forbidden() > 0
        assert h.condition("PaimonTag", "nightly") is None  # no status was ever written
    finally:
        await h.stop()
        h.clean()
