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
from tests.support.apiserver import Testenv


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
    assert real_harness.forbidden() == []


async def test_watch_namespaces_rbac_is_enough(crds: Testenv, operator_settings: kopf.OperatorSettings,
                                               warehouse: Path) -> None:
    token = install_rbac(crds, {"watchNamespaces": ["sales", "finance"]}, release="tkns")
    h = RealHarness(crds, operator_settings, token)
    h.add_namespace("sales")
    try:
        await _tag_lifecycle(h, warehouse, namespaces=["sales", "finance"])
        assert h.forbidden() == []
    finally:
        await h.stop()
        h.clean()


def _drop_verb(resource: str, verb: str) -> Any:
    """Take ``verb`` on ``resource`` (only that resource) out of the rendered rules."""
    def edit(objects: list[dict[str, Any]]) -> None:
        dropped = 0
        for role in objects:
            kept = []
            for rule in role.get("rules") or ():
                if resource in rule.get("resources", ()) and verb in rule["verbs"]:
                    others = [r for r in rule["resources"] if r != resource]
                    if others:
                        kept.append({**rule, "resources": others})
                    verbs = [v for v in rule["verbs"] if v != verb]
                    if verbs:
                        kept.append({**rule, "resources": [resource], "verbs": verbs})
                    dropped += 1
                else:
                    kept.append(rule)
            if "rules" in role:
                role["rules"] = kept
        assert dropped, f"no rule grants {verb} on {resource}"
    return edit


async def test_a_missing_verb_is_a_403(crds: Testenv, operator_settings: kopf.OperatorSettings,
                                       warehouse: Path) -> None:
    """Without ``patch`` on ``paimontags/status`` the operator cannot report: 403, never Ready."""
    token = install_rbac(crds, release="tkbroken", edit=_drop_verb("paimontags/status", "patch"))
    h = RealHarness(crds, operator_settings, token)
    h.add_namespace("sales")
    try:
        await h.start()
        for body in basic_objects(warehouse):
            await h.apply(body)
        await h.wait_condition("PaimonTable", "orders", reason="Reconciled")
        await h.apply(obj("PaimonTag", "nightly", {"tableRef": {"name": "orders"}, "snapshotId": 3}))
        for _ in range(300):
            if h.forbidden():
                break
            await asyncio.sleep(0.1)
        assert any('cannot patch resource "paimontags/status"' in text for text in h.forbidden()), h.forbidden()
        assert h.condition("PaimonTag", "nightly") is None  # no status was ever written
    finally:
        await h.stop()
        h.clean()
