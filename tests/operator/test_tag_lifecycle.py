"""A PaimonTag and a PaimonBranch through their whole life against a real local warehouse (written
by pypaimon): created in storage, with the finalizer only for ``deletionPolicy: Delete`` (added
before the create); deleting the CR deletes the object (Delete) or leaves it (Retain); flipping
the policy adds and removes the finalizer; drift (a tag deleted out of band) is repaired; an
existing tag is adopted; a fork-point tag survives the deletion of its CR."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.refs import tags as core_tags
from tablekeeper.operator.main import FINALIZER
from tests.operator.conftest import Harness, basic_objects, fast_config, obj
from tests.support.k8s import eventually

pytestmark = pytest.mark.k8s


def tag(name: str, **spec: Any) -> dict[str, Any]:
    return obj("PaimonTag", name, {"tableRef": {"name": "orders"}, **spec})


def branch(name: str, **spec: Any) -> dict[str, Any]:
    return obj("PaimonBranch", name, {"tableRef": {"name": "orders"}, **spec})


def finalizers(harness: Harness, kind: str, name: str) -> list[str]:
    body = harness.get(kind, name) or {}
    return list((body.get("metadata") or {}).get("finalizers") or [])


async def start(harness: Harness, warehouse: Path) -> None:
    await harness.start()
    for body in basic_objects(warehouse):
        await harness.apply(body)
    await harness.wait_condition("PaimonTable", "orders", reason="Reconciled")


def tags_of(warehouse: Path) -> dict[str, int]:
    return {t.name: t.snapshot_id for t in open_table(str(warehouse), "sales.orders").tags()}


async def test_tag_with_delete_policy_lives_and_dies_with_its_cr(harness: Harness, warehouse: Path) -> None:
    await start(harness, warehouse)
    await harness.apply(tag("nightly", snapshotId=3, timeRetained="7 d"))
    await harness.wait_condition("PaimonTag", "nightly", reason="Created")
    assert tags_of(warehouse) == {"nightly": 3}
    status = harness.status("PaimonTag", "nightly")
    assert {k: status[k] for k in ("state", "tagName", "snapshotId", "owned", "observedGeneration")} == \
        {"state": "Ready", "tagName": "nightly", "snapshotId": 3, "owned": True, "observedGeneration": 1}
    assert status["expireTime"] and status["snapshotCommitTime"]
    await eventually(lambda: finalizers(harness, "PaimonTag", "nightly") == [FINALIZER])
    labels = (harness.get("PaimonTag", "nightly") or {})["metadata"]["labels"]
    assert labels["tablekeeper.io/tag-state"] == "Ready" and labels["tablekeeper.io/table"] == "orders"
    event = await harness.wait_event("nightly", "Created")
    assert event["type"] == "Normal"

    await harness.delete("PaimonTag", "nightly")
    await harness.wait_gone("PaimonTag", "nightly")
    assert tags_of(warehouse) == {}
    await harness.wait_event("nightly", "Deleted")


async def test_tag_with_retain_policy_stays_in_storage(harness: Harness, warehouse: Path) -> None:
    await start(harness, warehouse)
    await harness.apply(tag("keep", fromLatest=True, deletionPolicy="Retain"))
    await harness.wait_condition("PaimonTag", "keep", reason="Created")
    assert tags_of(warehouse) == {"keep": 6}
    assert finalizers(harness, "PaimonTag", "keep") == []  # no finalizer without deletionPolicy Delete
    await harness.delete("PaimonTag", "keep")
    await harness.wait_gone("PaimonTag", "keep")
    assert tags_of(warehouse) == {"keep": 6}


async def test_flipping_the_deletion_policy_adds_and_removes_the_finalizer(harness: Harness,
                                                                            warehouse: Path) -> None:
    await start(harness, warehouse)
    await harness.apply(tag("flip", snapshotId=2, deletionPolicy="Retain"))
    await harness.wait_condition("PaimonTag", "flip", reason="Created")
    assert finalizers(harness, "PaimonTag", "flip") == []
    await harness.patch("PaimonTag", "flip", {"spec": {"deletionPolicy": "Delete"}})
    await eventually(lambda: finalizers(harness, "PaimonTag", "flip") == [FINALIZER])
    # Kopf adds the finalizer before the handler runs: wait for the status of generation 2
    await eventually(lambda: harness.status("PaimonTag", "flip").get("observedGeneration") == 2)
    await harness.wait_condition("PaimonTag", "flip", reason="Created")
    await harness.patch("PaimonTag", "flip", {"spec": {"deletionPolicy": "Retain"}})
    await eventually(lambda: finalizers(harness, "PaimonTag", "flip") == [])
    await harness.delete("PaimonTag", "flip")
    await harness.wait_gone("PaimonTag", "flip")
    assert tags_of(warehouse) == {"flip": 2}


async def test_from_latest_is_frozen_and_drift_is_repaired(harness: Harness, warehouse: Path) -> None:
    await start(harness, warehouse)
    await harness.apply(tag("latest", fromLatest=True))
    await harness.wait_condition("PaimonTag", "latest", reason="Created")
    assert harness.status("PaimonTag", "latest")["snapshotId"] == 6
    from tests.support import paimon as P

    P.write(P.table_at(str(warehouse), "sales.orders"), P.orders_rows("2026-01-05", 100, 2))  # snapshot 7
    table = open_table(str(warehouse), "sales.orders")
    Path(table.tag_path("latest")).unlink()  # deleted out of band
    await harness.wait_event("latest", "TagRecreated")
    assert tags_of(warehouse) == {"latest": 6}  # recreated at its snapshot, never at the new latest
    await harness.wait_condition("PaimonTag", "latest", reason="Created")


async def test_existing_tag_is_adopted_or_refused(harness: Harness, warehouse: Path) -> None:
    table = open_table(str(warehouse), "sales.orders")
    core_tags.create_tag(table, "pre", snapshot_id=4)
    core_tags.create_tag(table, "taken", snapshot_id=4)
    await start(harness, warehouse)
    await harness.apply(tag("pre", snapshotId=4))
    await harness.apply(tag("taken", snapshotId=4, adoptionPolicy="MustCreate"))
    await harness.wait_condition("PaimonTag", "pre", reason="Adopted")
    await harness.wait_condition("PaimonTag", "taken", status="False", reason="AlreadyExists")
    await harness.wait_event("taken", "AlreadyExists")
    assert finalizers(harness, "PaimonTag", "taken") == []
    await harness.delete("PaimonTag", "taken")  # never owned: deleting it leaves the tag
    await harness.wait_gone("PaimonTag", "taken")
    assert tags_of(warehouse) == {"pre": 4, "taken": 4}


async def test_branch_lifecycle_and_fork_point_protection(harness: Harness, warehouse: Path) -> None:
    await start(harness, warehouse)
    await harness.apply(tag("base", snapshotId=4))
    await harness.apply(tag("base2", snapshotId=5))
    await harness.apply(branch("fix", fromTag="base"))
    await harness.apply(branch("kept", fromTag="base2", deletionPolicy="Retain"))
    await harness.wait_condition("PaimonBranch", "fix", reason="Created")
    await harness.wait_condition("PaimonBranch", "kept", reason="Created")
    table = open_table(str(warehouse), "sales.orders")
    assert table.branch_names() == ["fix", "kept"]
    status = harness.status("PaimonBranch", "fix")
    assert status["state"] == "Ready" and status["basedOnTag"] == "base" and status["forkSnapshotId"] == 4
    await eventually(lambda: finalizers(harness, "PaimonBranch", "fix") == [FINALIZER])
    assert finalizers(harness, "PaimonBranch", "kept") == []
    await eventually(lambda: harness.status("PaimonTag", "base").get("forkPointOf") == ["fix"])

    # the tag is a fork point: deleting its CR keeps it in storage and releases the finalizer
    await harness.delete("PaimonTag", "base")
    await harness.wait_gone("PaimonTag", "base")
    await harness.wait_event("base", "ProtectedByBranch")
    assert "base" in tags_of(warehouse)

    await harness.delete("PaimonBranch", "fix")
    await harness.wait_gone("PaimonBranch", "fix")
    await harness.delete("PaimonBranch", "kept")
    await harness.wait_gone("PaimonBranch", "kept")
    assert open_table(str(warehouse), "sales.orders").branch_names() == ["kept"]  # Retain


async def test_branch_deleted_out_of_band_is_lost(harness: Harness, warehouse: Path) -> None:
    from tablekeeper.core.refs import branches

    await start(harness, warehouse)
    await harness.apply(tag("base", snapshotId=2))
    await harness.apply(branch("gone", fromTag="base"))
    await harness.wait_condition("PaimonBranch", "gone", reason="Created")
    branches.drop_branch(open_table(str(warehouse), "sales.orders"), "gone")
    await harness.wait_condition("PaimonBranch", "gone", status="False", reason="BranchLost")
    assert harness.status("PaimonBranch", "gone")["state"] == "Lost"
    assert open_table(str(warehouse), "sales.orders").branch_names() == []  # never recreated
    await harness.delete("PaimonBranch", "gone")  # deleting succeeds trivially
    await harness.wait_gone("PaimonBranch", "gone")


async def test_table_dropped_out_of_band_makes_tags_lost(harness: Harness, warehouse: Path) -> None:
    import shutil

    await start(harness, warehouse)
    await harness.apply(tag("orphaned", snapshotId=2))
    await harness.wait_condition("PaimonTag", "orphaned", reason="Created")
    shutil.rmtree(warehouse / "sales.db" / "orders")
    await harness.wait_condition("PaimonTag", "orphaned", status="False", reason="TableNotFound")
    assert harness.status("PaimonTag", "orphaned")["state"] == "Lost"
    await harness.wait_condition("PaimonTable", "orders", status="False", reason="TableNotFound")
    await harness.delete("PaimonTag", "orphaned")  # nothing left to delete: succeeds
    await harness.wait_gone("PaimonTag", "orphaned")


async def test_sibling_branches_from_one_tag_are_dropped_independently(harness: Harness, warehouse: Path) -> None:
    from tests.support import paimon as P

    await start(harness, warehouse)
    await harness.apply(tag("base", snapshotId=4))
    await harness.wait_condition("PaimonTag", "base", reason="Created")  # the subject is the drop, not the race
    await harness.apply(branch("b1", fromTag="base", deletionPolicy="Delete"))
    await harness.apply(branch("b2", fromTag="base", deletionPolicy="Delete"))
    for name in ("b1", "b2"):
        await harness.wait_condition("PaimonBranch", name, reason="Created")
    before = P.snapshot_views(str(warehouse), "sales.orders")
    await harness.delete("PaimonBranch", "b1")
    await harness.wait_gone("PaimonBranch", "b1")
    assert open_table(str(warehouse), "sales.orders").branch_names() == ["b2"]  # dropped, not kept
    assert not harness.events("b1", "HasDependentBranches")
    after = P.snapshot_views(str(warehouse), "sales.orders")
    assert after == {k: v for k, v in before.items() if not k.startswith("b1@")}
    assert tags_of(warehouse)["base"] == 4


async def test_a_branch_deleted_during_its_periodic_check_is_released_promptly(harness: Harness,
                                                                                warehouse: Path) -> None:
    """Kopf releases the finalizer only after the object's timers exited, and re-checks a timer
    still running its handler every ``background.cancellation_polling`` seconds, woken by no event
    (Kopf's default: 60 s). Before the operator set it to 2 s, a CR deleted while its check ran
    kept its finalizer for a minute (seen as an intermittent stall in the sibling-branches test)."""
    slow = threading.Event()
    in_check = threading.Event()

    async def slow_check(step: str, ref: str) -> None:
        if step == "branch/check" and ref.endswith("/b1") and slow.is_set():
            in_check.set()
            await asyncio.sleep(1.0)
            # end without a patch, as an unchanged check does: no event wakes the deletion then
            raise RuntimeError("check interrupted by the test")

    await harness.start(fast_config(step_hook=slow_check))
    for body in basic_objects(warehouse):
        await harness.apply(body)
    await harness.apply(tag("base", snapshotId=4))
    await harness.wait_condition("PaimonTag", "base", reason="Created")
    await harness.apply(branch("b1", fromTag="base", deletionPolicy="Delete"))
    await harness.wait_condition("PaimonBranch", "b1", reason="Created")
    from tests.support import paimon as P

    before = P.snapshot_views(str(warehouse), "sales.orders")
    slow.set()
    await eventually(in_check.is_set)
    await harness.delete("PaimonBranch", "b1")
    await harness.wait_gone("PaimonBranch", "b1", timeout=20)  # (60 s and more before the fix)
    assert open_table(str(warehouse), "sales.orders").branch_names() == []
    after = P.snapshot_views(str(warehouse), "sales.orders")
    assert after == {k: v for k, v in before.items() if not k.startswith("b1@")}


async def test_branches_declared_before_their_tag_are_created_then_dropped(harness: Harness, warehouse: Path) -> None:
    """The order of the sibling-branches test, unsynchronised: the branches wait (TagNotFound)
    until the tag exists, then one is dropped with its CR while the other stays."""
    await start(harness, warehouse)
    await harness.apply(branch("b1", fromTag="base", deletionPolicy="Delete"))
    await harness.apply(branch("b2", fromTag="base", deletionPolicy="Delete"))
    await harness.apply(tag("base", snapshotId=4))
    for name in ("b1", "b2"):
        await harness.wait_condition("PaimonBranch", name, reason="Created")
    from tests.support import paimon as P

    before = P.snapshot_views(str(warehouse), "sales.orders")
    await harness.delete("PaimonBranch", "b1")
    await harness.wait_gone("PaimonBranch", "b1", timeout=20)
    assert open_table(str(warehouse), "sales.orders").branch_names() == ["b2"]
    after = P.snapshot_views(str(warehouse), "sales.orders")
    assert after == {k: v for k, v in before.items() if not k.startswith("b1@")}
