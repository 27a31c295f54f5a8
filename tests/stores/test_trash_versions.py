"""The trash on an S3 bucket with versioning Enabled (moto): a move records each file's version
id and deletes it (no CopyObject: the delete leaves the version noncurrent), undo copies every
file back from its version, and purge deletes those versions for good and nothing else."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.cli.main import main as cli_main
from tablekeeper.core.safety import trash
from tablekeeper.core.storage import FileIO
from tests.maintenance.helpers import IDENT, now_ms
from tests.stores.conftest import StoreUnderTest
from tests.stores.test_scenario import _cli, _upload
from tests.stores.test_trash import (  # noqa: F401 - template: the module's fixture
    DAY_MS,
    ROOT,
    _assert_undone_beside_the_writer,
    _views,
    _writer_commits,
    template,
)
from tests.support import s3 as s3support

pytestmark = [pytest.mark.s3]

EXPIRE = ("expire", IDENT, "--retain-min", "1", "--time-retained", "0 ms")


@pytest.fixture
def versioned(s3: Any, s3_bucket: str, s3_endpoint: str) -> StoreUnderTest:
    s3.call_s3("put_bucket_versioning", Bucket=s3_bucket, VersioningConfiguration={"Status": "Enabled"})
    options = s3support.paimon_s3_options(s3_endpoint)
    return StoreUnderTest("s3", FileIO.for_uri(f"s3://{s3_bucket}", options), f"s3://{s3_bucket}/t", s3,
                          f"{s3_bucket}/t", options)


def _versions(store: StoreUnderTest, *, table_only: bool = False) -> set[tuple[str, str]]:
    """Every (key, version id) of the bucket, delete markers and the table lease (every command
    writes and deletes it) excluded; ``table_only``: outside ``.tablekeeper/`` only."""
    bucket = store.raw_root.split("/")[0]
    out: set[tuple[str, str]] = set()
    for page in [store.fs.call_s3("list_object_versions", Bucket=bucket)]:
        assert not page.get("IsTruncated")
        out |= {(v["Key"], v["VersionId"]) for v in page.get("Versions", [])
                if not v["Key"].endswith("/.tablekeeper/lease")
                and not (table_only and "/.tablekeeper/" in v["Key"])}
    return out


def _move_records(store: StoreUnderTest, run: str) -> list[list[Any]]:
    store.fs.invalidate_cache()
    keys = store.fs.find(store.raw(f"{ROOT}/.tablekeeper/trash/{run}/moves"))
    return [e for k in keys for e in json.loads(store.fs.cat_file(k))["files"]]


def _run_both(store: StoreUnderTest, wh: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [_cli(capsys, store, wh, *EXPIRE, "--now", str(now_ms() + 1000), "--keep-deleted", "7 d"),
            _cli(capsys, store, wh, "clean-orphans", IDENT, "--now", str(now_ms() + 2 * DAY_MS),
                 "--keep-deleted", "7 d")]


@pytest.mark.timeout(900)
def test_moves_record_versions_and_undo_copies_them_back(versioned: StoreUnderTest, template: str,  # noqa: F811
                                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = versioned
    wh = _upload(store, template, "wh")
    before = _views(store, tmp_path / "v0")
    versions_before = _versions(store)
    done = _run_both(store, wh, capsys)
    runs = [d["trash"]["run"] for d in done]
    recorded: set[tuple[str, str]] = set()
    for d, run in zip(done, runs, strict=True):
        moved = d["trash"]["moved_files"]
        assert moved == sum(d["result"]["deleted"].values()) > 0
        assert d["requests"].get("copy", 0) == 0, d["requests"]  # no CopyObject: the versions are kept
        assert d["requests"]["head"] >= moved  # one HEAD per file for its version id
        entries = _move_records(store, run)
        assert len(entries) == moved and all(len(e) == 4 and e[3] for e in entries)
        recorded |= {(store.raw(f"{ROOT}/{e[0]}").split("/", 1)[1], e[3]) for e in entries}
    assert recorded <= versions_before  # the very versions the table had: noncurrent now
    store.fs.invalidate_cache()
    assert not store.fs.exists(store.raw(f"{ROOT}/.tablekeeper/trash/{runs[1]}/files"))  # nothing copied
    assert not store.exists(f"{ROOT}/dt=a/bucket-0/data-orphan-0.parquet")
    written = _writer_commits(store, tmp_path / "writer")  # a writer commits before the undo
    for run in reversed(runs):
        undone = _cli(capsys, store, wh, "undo", IDENT, run)
        assert undone["restored"] == len(_move_records(store, run))
    assert store.read(f"{ROOT}/dt=a/bucket-0/data-orphan-0.parquet") == b"o" * 10
    restored = _views(store, tmp_path / "v1")
    _assert_undone_beside_the_writer(before, written, restored)
    left = _versions(store)
    purged = _cli(capsys, store, wh, "trash", "purge", IDENT)
    assert sorted(purged["purged_runs"]) == sorted(runs)
    after = _versions(store)
    assert not recorded & after  # the recorded versions are gone for good
    trash_prefix = store.raw(f"{ROOT}/.tablekeeper/trash/").split("/", 1)[1]
    # nothing else: only the recorded versions and the trash's own records went
    assert {v for v in left - after if not v[0].startswith(trash_prefix)} == recorded
    assert _views(store, tmp_path / "v2") == restored


@pytest.mark.timeout(900)
def test_undo_refuses_when_a_recorded_version_is_gone(versioned: StoreUnderTest, template: str,  # noqa: F811
                                                      tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = versioned
    wh = _upload(store, template, "wh")
    done = _cli(capsys, store, wh, "clean-orphans", IDENT, "--now", str(now_ms() + 2 * DAY_MS),
                "--keep-deleted", "7 d")
    run = done["trash"]["run"]
    rel, _kind, _size, version = _move_records(store, run)[0]
    bucket, key = store.raw(f"{ROOT}/{rel}").split("/", 1)
    store.fs.call_s3("delete_object", Bucket=bucket, Key=key, VersionId=version)  # e.g. a lifecycle rule
    versions = _versions(store)
    argv = ["undo", IDENT, run, "-w", wh]
    for k, v in store.options.items():
        argv += ["--option", f"{k}={v}"]
    capsys.readouterr()
    assert cli_main(argv) == 2
    _out, err = capsys.readouterr()
    assert "no longer holds" in err and len([line for line in err.splitlines() if line.strip()]) <= 2, err
    assert _versions(store) == versions  # nothing changed
    listed = _cli(capsys, store, wh, "trash", "list", IDENT)
    assert [r["state"] for r in listed["runs"]] == ["kept"]


def test_a_suspended_bucket_copies(s3: Any, s3_bucket: str, s3_endpoint: str) -> None:
    io = FileIO.for_uri(f"s3://{s3_bucket}", s3support.paimon_s3_options(s3_endpoint))
    assert not io.keeps_versions(f"s3://{s3_bucket}/t")  # never enabled
    s3.call_s3("put_bucket_versioning", Bucket=s3_bucket, VersioningConfiguration={"Status": "Suspended"})
    fresh = FileIO.for_uri(f"s3://{s3_bucket}", s3support.paimon_s3_options(s3_endpoint))
    assert not fresh.keeps_versions(f"s3://{s3_bucket}/t")
    s3.call_s3("put_bucket_versioning", Bucket=s3_bucket, VersioningConfiguration={"Status": "Enabled"})
    enabled = FileIO.for_uri(f"s3://{s3_bucket}", s3support.paimon_s3_options(s3_endpoint))
    before = enabled.requests.counts.snapshot()["total"] if enabled.requests.counts.snapshot() else 0
    assert enabled.keeps_versions(f"s3://{s3_bucket}/t") and enabled.keeps_versions(f"s3://{s3_bucket}/u")
    assert enabled.requests.counts.snapshot()["total"] - before == 1  # asked once per bucket


class Crash(Exception):
    pass


def _crash_before_delete(run: trash.TrashRun, paths: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Move ``paths`` into ``run``, crashing after the batch's record, before the delete."""
    def crash(*_args: Any, **_kwargs: Any) -> Any:
        raise Crash

    with monkeypatch.context() as mp:
        mp.setattr(run.io, "delete_files", crash)
        with pytest.raises(Crash):
            trash.move_batch(run, [(p, "data", None) for p in paths])


@pytest.mark.parametrize("rerun", [True, False])
def test_a_crash_between_the_record_and_the_delete_loses_and_duplicates_nothing(
        versioned: StoreUnderTest, rerun: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    store, io, table = versioned, versioned.io, versioned.path("tbl")
    files = {f"dt=a/data-{i}.parquet": f"bytes {i}".encode() for i in range(3)}
    paths = [store.put(f"tbl/{rel}", data) for rel, data in files.items()]
    versions = _versions(store, table_only=True)
    with trash.keeping(io, table, "expire", timedelta(days=7), now_ms=1_000) as first:
        assert first is not None
        _crash_before_delete(first, paths, monkeypatch)
    assert all(store.read(f"tbl/{rel}") == data for rel, data in files.items())  # still at their place
    if not rerun:  # undone as it is: every file counts as back; then purged: the files stay
        undone = trash.undo(io, table, first.run_id)
        assert (undone.restored, undone.already_back) == (0, len(files))
        trash.purge(io, table, now_ms=2_000)
        assert _versions(store, table_only=True) == versions
        assert all(store.read(f"tbl/{rel}") == data for rel, data in files.items())
        return
    with trash.keeping(io, table, "expire", timedelta(days=7), now_ms=2_000) as second:  # the rerun
        assert second is not None
        moved = trash.move_batch(second, [(p, "data", None) for p in paths])
    assert all(r.outcome.value == "deleted" for r in moved)
    assert not any(store.exists(f"tbl/{rel}") for rel in files)
    purged = trash.purge(io, table, now_ms=3_000, older_than_ms=1_500)  # the first run only
    assert purged.runs == [first.run_id] and purged.files == 0  # its versions: the rerun's too, kept
    assert _versions(store, table_only=True) == versions
    undone = trash.undo(io, table, second.run_id)
    assert undone.restored == len(files)
    assert all(store.read(f"tbl/{rel}") == data for rel, data in files.items())
    trash.purge(io, table, now_ms=3_000)  # the undone rerun: its versions go, the restored copies stay
    assert not versions & _versions(store)
    assert all(store.read(f"tbl/{rel}") == data for rel, data in files.items())


@pytest.mark.parametrize("versioning", [None, "Enabled"])
def test_a_move_and_its_undo_make_the_floor_of_requests_on_s3(s3: Any, s3_bucket: str, s3_endpoint: str,
                                                              versioning: str | None) -> None:
    """Per file: a move is one CopyObject (a versioned bucket: one HEAD for the version id) and the
    batch's one DeleteObjects; an undo is two HEADs (the trash copy and the empty place; a versioned
    bucket: the version and the place) and one CopyObject, the trash copies in one DeleteObjects.
    No LIST per file (fsspec's generic copy asks whether the target is a directory) and no HEAD
    before a copy."""
    if versioning:
        s3.call_s3("put_bucket_versioning", Bucket=s3_bucket, VersioningConfiguration={"Status": versioning})
    root = f"s3://{s3_bucket}/floor"
    io = FileIO.for_uri(root, s3support.paimon_s3_options(s3_endpoint))
    files = [f"{root}/dt=a/bucket-0/data-{i}.parquet" for i in range(20)]
    for i, path in enumerate(files):
        io.overwrite(path, b"d" * (i + 1))
    io.keeps_versions(root)  # asked once per bucket, before the counting

    def counted(action: Any) -> dict[str, int]:
        before = io.requests.counts.snapshot()
        action()
        after = io.requests.counts.snapshot()
        return {k: after[k] - before.get(k, 0) for k in after if k != "total" and after[k] - before.get(k, 0)}

    with trash.keeping(io, root, "floor", timedelta(days=1)) as run:
        assert run is not None
        moved = counted(lambda: trash.move_batch(run, [(p, "data", i + 1) for i, p in enumerate(files)]))
    # per file: the copy (or the version's HEAD); per batch: its record (a create-if-absent PUT, and
    # up to two HEADs and two LISTs of the run's directories) and the one DeleteObjects
    assert moved.get("copy", 0) == (0 if versioning else 20) and moved["bulk_delete"] == 1, moved
    assert moved.get("head", 0) - (20 if versioning else 0) <= 2 and moved.get("list", 0) <= 2, moved
    assert not any(io.file_exists(p) for p in files)
    undone = counted(lambda: trash.undo(io, root, run.run_id))
    assert undone["copy"] == 20 and undone.get("bulk_delete", 0) == (0 if versioning else 1), undone
    assert 40 <= undone["head"] <= 44 and undone.get("list", 0) <= 4, undone  # the run's records, not the files
    assert [io.read_bytes(p) for p in files] == [b"d" * (i + 1) for i in range(20)]
