"""Policy auto tags (operator-design.md §4.3): always summarised in the table's status; with
``operator.materializePolicyTags`` (``TABLEKEEPER_MATERIALIZE_POLICY_TAGS``, default off) each one
also becomes a PaimonTag (``trigger-type=Policy``, owned by the PaimonTable, ``deletionPolicy:
Retain``) that adopts the tag. Storage is the same either way."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tablekeeper.core.paimon.table import open_table
from tablekeeper.operator.settings import OperatorConfig
from tests.operator.conftest import Harness, basic_objects
from tests.support.k8s import eventually

pytestmark = pytest.mark.k8s


async def _start(harness: Harness, warehouse: Path, materialize: bool) -> list[str]:
    await harness.start(replace(harness.config, materialize_policy_tags=materialize))
    catalog, table = basic_objects(warehouse)
    table["spec"].update(enforcement="Operator",
                         retention={"tags": {"autoCreate": {"mode": "process-time", "period": "daily"}}})
    await harness.apply(catalog)
    await harness.apply(table)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")
    await harness.wait_event("orders", "Created")
    tags = open_table(str(warehouse), "sales.orders").tag_names()
    assert tags  # the demo history spans days: the policy created daily tags
    return tags


async def test_policy_tags_become_paimon_tags_when_switched_on(harness: Harness, demo_warehouse: Path) -> None:
    tags = await _start(harness, demo_warehouse, True)
    await eventually(lambda: len(harness.all("PaimonTag")) == len(tags), timeout=30)
    for cr in harness.all("PaimonTag"):
        meta = cr["metadata"]
        assert meta["labels"]["tablekeeper.io/trigger-type"] == "Policy"
        assert meta["ownerReferences"][0]["kind"] == "PaimonTable" and cr["spec"]["deletionPolicy"] == "Retain"
        assert cr["spec"]["tagName"] in tags
    for cr in harness.all("PaimonTag"):
        await harness.wait_condition("PaimonTag", cr["metadata"]["name"], reason="Adopted")
    assert sorted(open_table(str(demo_warehouse), "sales.orders").tag_names()) == sorted(tags)  # adopted as is


async def test_policy_tags_stay_summarised_by_default(harness: Harness, demo_warehouse: Path) -> None:
    assert OperatorConfig().materialize_policy_tags is False
    assert OperatorConfig.from_env({"TABLEKEEPER_MATERIALIZE_POLICY_TAGS": "true"}).materialize_policy_tags
    await _start(harness, demo_warehouse, False)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")
    assert harness.all("PaimonTag") == []
