"""What ``kubectl get -o wide`` shows, on the real API server with the operator running: a tag's
EXPIRES is its expiry as a timestamp (a ``date`` column prints ``<invalid>`` for any future
time), paused and unmanaged tags say so in STATE, READY and REASON, and a finished run fills
READY and REASON; times carry their zone."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.apiserver.harness import RealHarness
from tests.operator.conftest import basic_objects, obj
from tests.support.k8s import eventually


def rows(h: RealHarness, plural: str) -> dict[str, dict[str, str]]:
    """``kubectl get PLURAL -n sales -o wide`` as {name: {COLUMN: cell}} (cells hold no spaces here)."""
    out = h.testenv.kubectl("get", plural, "-n", "sales", "-o", "wide").stdout
    lines = [line for line in out.splitlines() if line.strip()]
    header = lines[0]
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")]
    names = header.split()
    table = {}
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line) + 1], strict=True)]
        table[cells[0]] = dict(zip(names, cells, strict=True))
    return table


async def test_columns_tell_expiry_hands_off_modes_and_run_results(real_harness: RealHarness,
                                                                   warehouse: Path) -> None:
    h = real_harness
    await h.start()
    for body in basic_objects(warehouse):
        await h.apply(body)
    await h.wait_condition("PaimonTable", "orders", reason="Reconciled")
    await h.apply(obj("PaimonTag", "weekly", {"tableRef": {"name": "orders"}, "snapshotId": 3, "timeRetained": "7d"}))
    await h.apply(obj("PaimonTag", "held", {"tableRef": {"name": "orders"}, "snapshotId": 2},
                      annotations={"tablekeeper.io/paused": "true"}))
    await h.apply(obj("PaimonTag", "detached", {"tableRef": {"name": "orders"}, "snapshotId": 4}))
    await h.apply(obj("PaimonMaintenanceRun", "audit", {"tableRef": {"name": "orders"}, "type": "ExpireSnapshots",
                                                        "dryRun": True}))
    await h.wait_condition("PaimonTag", "weekly", reason="Created")
    await h.wait_condition("PaimonTag", "detached", reason="Created")
    await h.patch("PaimonTag", "detached", {"metadata": {"annotations": {"tablekeeper.io/managed": "false"}}})
    await h.wait_condition("PaimonTag", "held", status="Unknown", reason="Paused")
    await h.wait_condition("PaimonTag", "detached", status="Unknown", reason="Unmanaged")
    await eventually(lambda: h.status("PaimonMaintenanceRun", "audit").get("phase") == "Succeeded", timeout=60)

    tags = await asyncio.to_thread(rows, h, "paimontags")
    expires = h.status("PaimonTag", "weekly")["expireTime"]
    assert expires.endswith("Z") and tags["weekly"]["EXPIRES"] == expires
    assert h.status("PaimonTag", "weekly")["createTime"].endswith("Z")  # RFC 3339: the writer's zone is UTC
    assert (tags["weekly"]["STATE"], tags["weekly"]["READY"], tags["weekly"]["REASON"]) == ("Ready", "True", "Created")
    assert (tags["held"]["STATE"], tags["held"]["READY"], tags["held"]["REASON"]) == ("Paused", "Unknown", "Paused")
    assert (tags["detached"]["STATE"], tags["detached"]["READY"], tags["detached"]["REASON"]) == \
        ("Unmanaged", "Unknown", "Unmanaged")
    run = (await asyncio.to_thread(rows, h, "paimonmaintenanceruns"))["audit"]
    assert (run["PHASE"], run["READY"], run["REASON"]) == ("Succeeded", "True", "Succeeded")
