"""S3-only FileIO behaviour against moto: conditional PUT, directory markers, bulk-delete
batching and per-key failures, option spellings, missing buckets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import s3fs

from tablekeeper.core.storage import DeleteOutcome, FileIO
from tablekeeper.core.values import rails
from tests.support import s3 as s3support

pytestmark = pytest.mark.s3


class _CallSpy:
    """Wraps ``fs.call_s3`` and records every call (method name, keyword arguments)."""

    def __init__(self, fs: s3fs.S3FileSystem, override: dict[str, Any] | None = None) -> None:
        self.fs = fs
        self.real = fs.call_s3
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.override = override or {}

    def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((method, kwargs))
        if method in self.override:
            return self.override[method](*args, **kwargs)
        return self.real(method, *args, **kwargs)

    def named(self, method: str) -> list[dict[str, Any]]:
        return [kw for m, kw in self.calls if m == method]


# -- moto and If-None-Match ---------------------------------------------------------------------
def test_moto_honours_if_none_match_on_put(s3: s3fs.S3FileSystem, s3_bucket: str) -> None:
    """What moto 5.2.5 does: PutObject with ``If-None-Match: *`` on an existing key answers
    412 PreconditionFailed; s3fs turns that into FileExistsError; the object is unchanged."""
    s3.pipe_file(f"{s3_bucket}/k", b"one", mode="create")
    with pytest.raises(FileExistsError):
        s3.pipe_file(f"{s3_bucket}/k", b"two", mode="create")
    with pytest.raises(FileExistsError):
        s3.call_s3("put_object", Bucket=s3_bucket, Key="k", Body=b"three", IfNoneMatch="*")
    assert s3.cat_file(f"{s3_bucket}/k") == b"one"


def test_write_new_relies_on_the_conditional_put_not_only_on_the_precheck(
        s3: s3fs.S3FileSystem, s3_bucket: str, s3_io: FileIO, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer creates the key between our existence check and our PUT: the
    conditional PUT still refuses it."""
    s3.pipe_file(f"{s3_bucket}/t/snapshot-5", b"theirs")
    monkeypatch.setattr(s3_io.fs, "exists", lambda path: False)  # the check saw nothing

    with pytest.raises(FileExistsError):
        s3_io.write_new(f"s3://{s3_bucket}/t/snapshot-5", b"ours")

    assert s3.cat_file(f"{s3_bucket}/t/snapshot-5") == b"theirs"


def test_write_new_sends_if_none_match(s3_bucket: str, s3_io: FileIO, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    real = s3_io.fs._call_s3

    async def spy(method: str, *args: Any, **kwargs: Any) -> Any:
        if method == "put_object":
            seen.append(kwargs)
        return await real(method, *args, **kwargs)

    monkeypatch.setattr(s3_io.fs, "_call_s3", spy)
    s3_io.write_new(f"s3://{s3_bucket}/t/a", b"x")
    assert [kw.get("IfNoneMatch") for kw in seen] == ["*"]


def test_write_new_maps_a_412_from_the_store_to_file_exists(s3_bucket: str, s3_io: FileIO,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def precondition_failed(*args: Any, **kwargs: Any) -> None:
        raise OSError("An error occurred (PreconditionFailed) when calling the PutObject operation")

    monkeypatch.setattr(s3_io.fs, "pipe_file", precondition_failed)
    with pytest.raises(FileExistsError):
        s3_io.write_new(f"s3://{s3_bucket}/t/a", b"x")


def test_write_new_does_not_hide_other_errors(s3_bucket: str, s3_io: FileIO, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(*args: Any, **kwargs: Any) -> None:
        raise PermissionError("AccessDenied")

    monkeypatch.setattr(s3_io.fs, "pipe_file", denied)
    with pytest.raises(PermissionError):
        s3_io.write_new(f"s3://{s3_bucket}/t/a", b"x")


# -- directory markers (pyarrow/pypaimon write ``dir/`` objects) ---------------------------------
def test_directory_markers_are_not_files(s3: s3fs.S3FileSystem, s3_bucket: str, s3_io: FileIO) -> None:
    for key in ("t/", "t/tag/", "t/snapshot/"):
        s3support.put_marker(s3, s3_bucket, key)
    s3.pipe_file(f"{s3_bucket}/t/snapshot/snapshot-1", b"{}")
    root = f"s3://{s3_bucket}/t"

    assert {(s.name, s.is_dir) for s in s3_io.list_dir(root)} == {("tag", True), ("snapshot", True)}
    assert s3_io.list_dir(f"{root}/tag") == []
    assert [s.path for s in s3_io.walk_files(root)] == [f"{root}/snapshot/snapshot-1"]
    assert s3_io.is_dir(f"{root}/tag")


def test_delete_empty_dir_deletes_a_lone_marker_only(s3: s3fs.S3FileSystem, s3_bucket: str, s3_io: FileIO) -> None:
    s3support.put_marker(s3, s3_bucket, "p/empty")
    s3support.put_marker(s3, s3_bucket, "p/full")
    s3.pipe_file(f"{s3_bucket}/p/full/data", b"d")

    assert s3_io.delete_empty_dir(f"s3://{s3_bucket}/p/full") is False
    assert s3.exists(f"{s3_bucket}/p/full/data")
    assert s3.call_s3("list_objects_v2", Bucket=s3_bucket, Prefix="p/full/")["KeyCount"] == 2

    assert s3_io.delete_empty_dir(f"s3://{s3_bucket}/p/empty") is True
    assert s3.call_s3("list_objects_v2", Bucket=s3_bucket, Prefix="p/empty")["KeyCount"] == 0


def test_delete_tree_removes_markers_too(s3: s3fs.S3FileSystem, s3_bucket: str, s3_io: FileIO) -> None:
    for key in ("t/branch/", "t/branch/branch-b/", "t/branch/branch-b/tag/", "t/branch/branch-b/snapshot/"):
        s3support.put_marker(s3, s3_bucket, key)
    s3.pipe_file(f"{s3_bucket}/t/branch/branch-b/snapshot/snapshot-1", b"1")

    s3_io.delete_tree(f"s3://{s3_bucket}/t/branch/branch-b")

    keys = [o["Key"] for o in s3.call_s3("list_objects_v2", Bucket=s3_bucket).get("Contents", [])]
    assert keys == ["t/branch/"]
    assert not s3_io.is_dir(f"s3://{s3_bucket}/t/branch/branch-b")


# -- bulk delete -------------------------------------------------------------------------------
def test_bulk_delete_splits_more_than_1000_keys_into_batches(
        s3: s3fs.S3FileSystem, s3_bucket: str, s3_io: FileIO, monkeypatch: pytest.MonkeyPatch) -> None:
    n = rails.DELETE_BATCH_MAX + 205
    s3support.put_objects(s3_bucket, {f"big/data-{i:05d}.parquet": b"d" for i in range(n)})
    paths = [f"s3://{s3_bucket}/big/data-{i:05d}.parquet" for i in range(n)]
    paths.append(f"s3://{s3_bucket}/big/already-gone.parquet")
    spy = _CallSpy(s3_io.fs)
    monkeypatch.setattr(s3_io.fs, "call_s3", spy)

    results = s3_io.delete_files(paths)

    batches = [len(kw["Delete"]["Objects"]) for kw in spy.named("delete_objects")]
    assert batches == [1000, 205]
    assert [r.path for r in results] == paths
    assert [r.outcome for r in results] == [DeleteOutcome.DELETED] * n + [DeleteOutcome.MISSING]
    assert s3.call_s3("list_objects_v2", Bucket=s3_bucket, Prefix="big/")["KeyCount"] == 0


def test_bulk_delete_reports_per_key_errors(s3: s3fs.S3FileSystem, s3_bucket: str, s3_io: FileIO,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    s3support.put_objects(s3_bucket, {"d/a": b"a", "d/b": b"b"})

    def partial(**kwargs: Any) -> dict[str, Any]:
        assert [o["Key"] for o in kwargs["Delete"]["Objects"]] == ["d/a", "d/b"]
        s3.rm_file(f"{s3_bucket}/d/a")
        return {"Deleted": [{"Key": "d/a"}],
                "Errors": [{"Key": "d/b", "Code": "AccessDenied", "Message": "Access Denied"}]}

    monkeypatch.setattr(s3_io.fs, "call_s3", _CallSpy(s3_io.fs, {"delete_objects": partial}))
    results = s3_io.delete_files([f"s3://{s3_bucket}/d/a", f"s3://{s3_bucket}/d/b"])

    assert [r.outcome for r in results] == [DeleteOutcome.DELETED, DeleteOutcome.FAILED]
    assert results[1].error == "AccessDenied: Access Denied"
    assert s3.exists(f"{s3_bucket}/d/b")


def test_bulk_delete_request_failure_fails_every_key_of_the_batch(
        s3_bucket: str, s3_io: FileIO, monkeypatch: pytest.MonkeyPatch) -> None:
    s3support.put_objects(s3_bucket, {"d/a": b"a", "d/b": b"b"})

    def boom(**kwargs: Any) -> None:
        raise ConnectionError("endpoint went away")

    monkeypatch.setattr(s3_io.fs, "call_s3", _CallSpy(s3_io.fs, {"delete_objects": boom}))
    results = s3_io.delete_files([f"s3://{s3_bucket}/d/a", f"s3://{s3_bucket}/d/b"])
    assert [r.outcome for r in results] == [DeleteOutcome.FAILED, DeleteOutcome.FAILED]
    assert all("endpoint went away" in (r.error or "") for r in results)


def test_bulk_delete_never_deletes_a_bucket(s3_bucket: str, s3_io: FileIO) -> None:
    [result] = s3_io.delete_files([f"s3://{s3_bucket}"])
    assert result.outcome == DeleteOutcome.FAILED
    assert s3_io.exists(f"s3://{s3_bucket}")


def test_a_file_and_a_prefix_of_the_same_name(s3: s3fs.S3FileSystem, s3_bucket: str, s3_io: FileIO) -> None:
    """S3 allows key ``x`` and keys under ``x/`` at once: deleting ``x`` removes only the object."""
    s3support.put_objects(s3_bucket, {"d/x": b"file", "d/x/inner": b"inner"})
    [result] = s3_io.delete_files([f"s3://{s3_bucket}/d/x"])
    assert result.outcome == DeleteOutcome.DELETED
    assert s3.cat_file(f"{s3_bucket}/d/x/inner") == b"inner"


# -- mtimes through moto's backend -------------------------------------------------------------
def test_set_mtime_helper_is_visible_through_head_and_list(s3: s3fs.S3FileSystem, s3_bucket: str) -> None:
    s3.pipe_file(f"{s3_bucket}/old", b"o")
    s3support.set_mtime(s3_bucket, "old", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC))
    expected = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert s3.modified(f"{s3_bucket}/old") == expected
    assert s3support.get_mtime(s3_bucket, "old") == expected
    [listed] = s3.ls(s3_bucket, detail=True)
    assert listed["LastModified"] == expected
    when = s3support.backdate(s3_bucket, "old", timedelta(days=2))
    assert s3.modified(f"{s3_bucket}/old") == when
    with pytest.raises(FileNotFoundError):
        s3support.set_mtime(s3_bucket, "missing", expected)


# -- options and errors ------------------------------------------------------------------------
@pytest.mark.parametrize("spelling", ["s3", "fs.s3", "fs.s3a"])
def test_for_uri_accepts_paimon_option_spellings(s3: s3fs.S3FileSystem, s3_bucket: str, s3_endpoint: str,
                                                spelling: str) -> None:
    s3.pipe_file(f"{s3_bucket}/x/a", b"abc")
    if spelling == "fs.s3":
        options = {"fs.s3.endpoint": s3_endpoint, "fs.s3.accessKeyId": "testing",
                   "fs.s3.accessKeySecret": "testing", "fs.s3.region": "us-east-1",
                   "fs.s3.path.style.access": "true"}
    else:
        options = {f"{spelling}.{key.removeprefix('s3.')}": value
                   for key, value in s3support.paimon_s3_options(s3_endpoint).items()}
    scheme = "s3a" if spelling == "fs.s3a" else "s3"
    io = FileIO.for_uri(f"{scheme}://{s3_bucket}/x", options)
    assert io.read_bytes(f"{scheme}://{s3_bucket}/x/a") == b"abc"
    assert [s.path for s in io.list_dir(f"{scheme}://{s3_bucket}/x")] == [f"{scheme}://{s3_bucket}/x/a"]


def test_missing_bucket(s3: s3fs.S3FileSystem, s3_io: FileIO) -> None:
    assert s3_io.list_dir("s3://no-such-bucket/x") == []
    assert list(s3_io.walk_files("s3://no-such-bucket/x")) == []
    assert not s3_io.exists("s3://no-such-bucket/x/a")
    with pytest.raises(FileNotFoundError):
        s3_io.read_bytes("s3://no-such-bucket/x/a")
    with pytest.raises(FileNotFoundError):
        s3_io.stat("s3://no-such-bucket/x/a")
    with pytest.raises(FileNotFoundError):
        s3_io.write_new("s3://no-such-bucket/x/a", b"a")


def test_each_test_starts_with_an_empty_s3(s3: s3fs.S3FileSystem) -> None:
    assert s3.ls("") == []
