"""Partition directories rendered without pypaimon (``core/paimon/partition_paths.py``) are the
directories Java Paimon writes: tables partitioned by STRING, VARCHAR, INT, BIGINT and BOOLEAN
columns, written by Java with values that need escaping, unicode, empty and whitespace-only
strings, nulls, minima and maxima (default and non-legacy partition names, a custom
``partition.default-name``). Every file a manifest adds is found at the rendered path, the
rendering equals pypaimon's, and an expiration plans the same with and without the renderer."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core.paimon import manifests
from tablekeeper.core.paimon import partition_paths as pp
from tablekeeper.core.paimon.pypaimon.adapter import PartitionPathResolver
from tablekeeper.core.paimon.table import open_table
from tablekeeper.core.reclaim.expire import planning
from tablekeeper.core.reclaim.reach.reachability import Reachability
from tests.support import javapaimon as J

pytestmark = [pytest.mark.javapaimon, pytest.mark.timeout(900)]

FIELDS = [["s", "STRING"], ["v", "VARCHAR(16)"], ["n", "INT"], ["big", "BIGINT"], ["flag", "BOOLEAN"],
          ["payload", "STRING"]]
ROWS: list[list[Any]] = [
    ["2026-01-01", "abc", 1, 10, True, "p"],
    ["a b/c:d=e%f", "x#y", -2147483648, -9223372036854775808, False, "q"],
    ["", "", 0, 0, None, "r"],
    [None, None, None, None, None, "s"],
    ["日本 ü", "\t", 2147483647, 9223372036854775807, True, "t"],
    ["   ", "{}[]^'*?\\\"", 7, -1, False, "u"],
    ["x\u0001y\u007f", "..", -7, 123456789012, True, "v"],
]


@pytest.mark.newest_paimon
@pytest.mark.parametrize("options", [{}, {"partition.legacy-name": "false", "partition.default-name": "nil part"}],
                         ids=["defaults", "non-legacy"])
def test_java_partition_directories_are_rendered_without_pypaimon(
        java: J.JavaPaimon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, str]) -> None:
    wh = str(tmp_path / "wh")
    java.call("create_table", warehouse=wh, table="db.parts", fields=FIELDS,
              partition_keys=["s", "v", "n", "big", "flag"], options={"bucket": "-1", **options})
    java.write(wh, "db.parts", ROWS)
    java.write(wh, "db.parts", ROWS[::2])
    java.write(wh, "db.parts", ROWS[:2], overwrite={})  # dynamic overwrite: DELETEs of those 2 partitions' files
    table = open_table(wh, "db.parts")
    assert pp.PartitionRenderer.of(table.schema()) is not None
    resolver, reach = PartitionPathResolver(table), Reachability(table)
    added: list[manifests.FileRef] = []
    for snapshot in table.snapshots():
        added += [r for r in reach.delta_refs(snapshot) if r.kind == manifests.ADD]
    dirs = {(r.partition, r.bucket) for r in added}
    assert len(dirs) == len(ROWS)
    for ref in added:
        path = resolver.file_paths(ref)[0]
        assert Path(path).is_file(), f"Java wrote {ref.file_name} elsewhere than {path}"
        assert path == f"{resolver.pypaimon_bucket_dir(ref.partition, ref.bucket)}/{ref.file_name}"
    rendered = {resolver.relative_bucket_dir(*d).split("/")[0] for d in dirs}
    default = options.get("partition.default-name", "__DEFAULT_PARTITION__")
    assert {"s=a b%2Fc%3Ad%3De%25f", f"s={default}", "s=日本 ü", "s=x%01y%7F"} <= rendered

    config = planning.ExpireConfig(retain_min=1, retain_max=1, time_retained=timedelta(0), expire_limit=100)
    now_ms = int(time.time() * 1000)
    plan = planning.plan_expire(table, config, now_ms, reach=Reachability(table))
    with monkeypatch.context() as m:
        m.setattr(pp.PartitionRenderer, "of", classmethod(lambda cls, schema: None))
        assert planning.plan_expire(table, config, now_ms, reach=Reachability(table)) == plan
    data = [f.path for step in plan.steps for f in getattr(step, "files", ()) if "/bucket-" in f.path]
    assert len(data) == 3 and all(Path(p).is_file() for p in data)  # ROWS[0] written twice, ROWS[1] once
    assert {p.split("/s=", 1)[1].split("/", 1)[0] for p in data} == {"2026-01-01", "a b%2Fc%3Ad%3De%25f"}
