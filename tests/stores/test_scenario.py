"""One full maintenance scenario per store (tags, branch, expire, partition expiry, orphans), run
through the CLI against the store's URI with Paimon-style options, re-read by pypaimon after
every step.

pypaimon 2.1.0 reads and writes only local disk and S3 with its own file IO (HDFS only through
libhdfs, OSS only virtual-hosted, GCS through pyarrow's client without ``fs.gs.*`` options, no
Azure). So the table is written by pypaimon locally and uploaded with the store's own client;
after each step it is downloaded and read by pypaimon (the same bytes any reader gets). The
partition drop commits through pypaimon on every store: on the non-S3 ones over tablekeeper's
storage layer (``core/paimon/pypaimon/store_io.py``). The Spark engine on these stores:
``test_spark_stores.py``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.cli.main import main as cli_main
from tests.maintenance.helpers import IDENT, now_ms, plant, table_root
from tests.stores.conftest import StoreUnderTest
from tests.support.paimon import append_table, catalog, read_rows, rows, write

DAY_MS = 86_400_000
NOW_ISO = "2026-01-20T12:00:00"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A partitioned append table: 5 snapshots over 4 daily partitions, and one old orphan."""
    wh = str(tmp_path_factory.mktemp("template") / "wh")
    t = append_table(wh, options={"partition.expiration-time": "7 d", "partition.timestamp-formatter": "yyyyMMdd"})
    for i, dt in enumerate(["20260101", "20260102", "20260118", "20260119", "20260119"]):
        write(t, rows(dt, 10 * i))
    plant(f"{table_root(wh)}/dt=20260118/bucket-0/data-orphan-0.parquet", b"x" * 10)
    return wh


def _upload(store: StoreUnderTest, src: str, rel: str) -> str:
    for dirpath, _dirs, files in os.walk(src):
        for name in files:
            full = os.path.join(dirpath, name)
            store.put(f"{rel}/{os.path.relpath(full, src)}", Path(full).read_bytes())
    return store.path(rel)


def _download(store: StoreUnderTest, rel: str, dst: Path) -> str:
    """The store's copy of warehouse ``rel`` as a local directory (for pypaimon)."""
    if dst.exists():
        shutil.rmtree(dst)
    store.fs.invalidate_cache()
    prefix = store.raw(rel).rstrip("/")
    for key in store.fs.find(prefix):
        if key.endswith("/"):
            continue
        target = dst / os.path.relpath(key, prefix.lstrip("/") if not key.startswith("/") else prefix)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(bytes(store.fs.cat_file(key)))
    return str(dst)


def _views(warehouse: str) -> dict[str, Any]:
    cat = catalog(warehouse)
    t = cat.get_table(IDENT)
    out: dict[str, Any] = {"main": read_rows(t)}
    for tag in sorted(t.list_tags()):
        out[f"tag:{tag}"] = read_rows(t, {"scan.tag-name": tag})
    for branch in sorted(t.branch_manager().branches()):
        out[f"branch:{branch}"] = read_rows(cat.get_table(f"{IDENT}$branch_{branch}"))
    return out


def _cli(capsys: pytest.CaptureFixture[str], store: StoreUnderTest, wh: str, *args: str) -> dict[str, Any]:
    argv = [*args, "-w", wh, "-o", "json"]
    for key, value in store.options.items():
        argv += ["--option", f"{key}={value}"]
    capsys.readouterr()
    code = cli_main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    for value in store.options.values():  # secrets never printed
        if len(value) > 12 and ("Key" in value or value.startswith("Eby8")):
            assert value not in out + err
    return json.loads(out) if out.strip().startswith(("{", "[")) else {}


def _deleted(payload: dict[str, Any]) -> dict[str, int]:
    """Files deleted per kind, from the JSON of either engine."""
    result = payload.get("result", payload)
    return dict(result.get("deleted") or {})


@pytest.mark.timeout(900)
def test_maintenance_scenario(store: StoreUnderTest, template: str, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    wh = _upload(store, template, "wh")
    root = f"wh/{IDENT.split('.')[0]}.db/{IDENT.split('.')[1]}"
    before = _views(_download(store, "wh", tmp_path / "v0"))
    main_rows = before["main"]

    _cli(capsys, store, wh, "tag", "create", IDENT, "t2", "--snapshot", "2")
    _cli(capsys, store, wh, "branch", "create", IDENT, "b1", "--from-tag", "t2")
    views = _views(_download(store, "wh", tmp_path / "v1"))
    assert views["main"] == main_rows and views["tag:t2"] == views["branch:b1"]
    assert {dict(r)["id"] for r in views["tag:t2"]} == {0, 1, 10, 11}

    expired = _cli(capsys, store, wh, "expire", IDENT, "--retain-min", "1", "--time-retained", "0 ms",
                   "--now", str(now_ms() + 1000))
    assert expired.get("total_files", 0) >= 0
    views = _views(_download(store, "wh", tmp_path / "v2"))
    assert views["main"] == main_rows and views["tag:t2"] == views["branch:b1"]
    assert not store.exists(f"{root}/snapshot/snapshot-4") and store.exists(f"{root}/snapshot/snapshot-5")
    assert store.exists(f"{root}/tag/tag-t2")

    planned = _cli(capsys, store, wh, "expire-partitions", IDENT, "--zone-known", "--now", NOW_ISO, "--dry-run")
    assert planned["expired"] == ["dt=20260101", "dt=20260102"]
    dropped = _cli(capsys, store, wh, "expire-partitions", IDENT, "--zone-known", "--now", NOW_ISO)
    assert dropped["dropped"] == 2
    views = _views(_download(store, "wh", tmp_path / "v3"))
    assert {dict(r)["dt"] for r in views["main"]} == {"20260118", "20260119"}
    assert {dict(r)["id"] for r in views["tag:t2"]} == {0, 1, 10, 11}  # the tag still reads its snapshot

    orphans = _cli(capsys, store, wh, "clean-orphans", IDENT, "--now", str(now_ms() + 2 * DAY_MS))
    assert _deleted(orphans) == {"data": 1}
    assert not store.exists(f"{root}/dt=20260118/bucket-0/data-orphan-0.parquet")
    after = _views(_download(store, "wh", tmp_path / "v4"))
    assert after == views
