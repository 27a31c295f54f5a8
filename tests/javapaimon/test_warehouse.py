"""The Java-written warehouse really has every feature of issue 13 point 2 (on both Paimon
versions): the other tests of this tier are only as strong as their input, and a writer option
Java silently ignored (an automatic tag that was never created, a changelog that was never
decoupled) would go unnoticed there. Read from the files Java wrote, and through Java itself."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.javapaimon import warehouse as W
from tests.support import javapaimon as J

pytestmark = [pytest.mark.javapaimon, pytest.mark.timeout(600)]


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _snapshots(root: Path) -> list[Any]:
    return [_json(root / "snapshot" / f"snapshot-{i}") for i in J.ids(root / "snapshot", "snapshot-")]


def test_every_feature_of_point_2_is_on_disk(java: J.JavaPaimon, java_warehouse: W.Built) -> None:
    wh = java_warehouse.root
    orders, events, dyn = (J.table_root(wh, t) for t in W.TABLES)

    # orders: primary key, partitioned, fixed 2 buckets, deletion vectors, lookup changelog (decoupled)
    schema = _json(orders / "schema" / "schema-0")
    assert schema["primaryKeys"] == ["dt", "id"] and schema["partitionKeys"] == ["dt"]
    assert schema["options"]["bucket"] == "2" and schema["options"]["deletion-vectors.enabled"] == "true"
    assert schema["options"]["changelog-producer"] == "lookup"
    assert {p.name for p in orders.glob("dt=*/bucket-*")} == {"bucket-0", "bucket-1"}
    assert list((orders / "index").glob("index-*")), "no deletion-vector index file"
    assert J.ids(orders / "changelog", "changelog-"), "no decoupled changelog-N (lookup)"
    assert any(s.get("changelogManifestList") for s in _snapshots(orders)), "no changelog manifests"
    tags = {n: _json(orders / "tag" / f"tag-{n}") for n in J.names(orders / "tag", "tag-")}
    assert set(tags) == {"t1", "t2"} and "tagTimeRetained" not in tags["t1"] and tags["t2"]["tagTimeRetained"]
    dev = J.branch_root(wh, W.ORDERS, "dev")
    assert J.ids(dev / "snapshot", "snapshot-")[-1] > tags["t1"]["id"], "branch dev has no writes of its own"

    # events: append-only, partitioned, INSERT OVERWRITE, ADD then RENAME COLUMN, automatic and
    # manual tags, branch with own writes, consumer
    schemas = [_json(events / "schema" / f"schema-{i}") for i in J.ids(events / "schema", "schema-")]
    assert not schemas[0]["primaryKeys"] and schemas[0]["partitionKeys"] == ["dt"]
    names = [[f["name"] for f in s["fields"]] for s in schemas]
    assert names[0] == ["dt", "id", "payload"] and names[-1] == ["dt", "id", "body", "note"]
    assert {s["schemaId"] for s in _snapshots(events)} == {s["id"] for s in schemas}, "no snapshot per schema"
    assert "OVERWRITE" in {s["commitKind"] for s in _snapshots(events)}
    event_tags = J.names(events / "tag", "tag-")
    assert [t for t in event_tags if re.fullmatch(r"\d{4}-\d{2}-\d{2}", t)], \
        f"Java's tag.automatic-creation made no tag: {event_tags}"
    assert _json(events / "tag" / "tag-manual")["tagTimeRetained"]
    exp = J.branch_root(wh, W.EVENTS, "exp")
    assert J.ids(exp / "snapshot", "snapshot-")[-1] > _json(events / "tag" / "tag-manual")["id"]
    assert _json(events / "consumer" / "consumer-reader-1")["nextSnapshot"] == 3

    # dyn: primary key, dynamic bucket (HASH index), input changelog (decoupled)
    schema = _json(dyn / "schema" / "schema-0")
    assert schema["primaryKeys"] == ["id"] and schema["options"]["bucket"] == "-1"
    assert schema["options"]["changelog-producer"] == "input"
    assert list((dyn / "index").glob("index-*")), "no dynamic-bucket index file"
    assert J.ids(dyn / "changelog", "changelog-"), "no decoupled changelog-N (input)"

    # and Java reads all of it, system tables included
    for table in W.TABLES:
        views = java.views(wh, table)
        assert not {k: v for k, v in views.items() if "error" in v}, table
    assert [r[0] for r in J.system_rows(java.views(wh, W.EVENTS), "consumers")] == ["reader-1"]
