"""Existence questions on S3 that cost a request fewer (docs/storage-internals.md, "A partition drop's fixed
costs"): a hint asked about and then read is one GET inside a view, a directory is one bounded
LIST (none when the view listed it). Counted by tablekeeper's request layer against moto."""

from __future__ import annotations

import pytest

from tablekeeper.core.storage import FileIO
from tests.support import s3 as s3support


def _requests(io: FileIO) -> dict[str, int]:
    return {k: v for k, v in io.requests.counts.snapshot().items() if k != "total" and v}


@pytest.fixture
def io(s3_bucket: str, s3_options: dict[str, str]) -> FileIO:
    s3support.put_objects(s3_bucket, {"t/snapshot/LATEST": b"5", "t/snapshot/snapshot-5": b"{}",
                                      "t/schema/schema-0": b"{}"})
    return FileIO.for_uri(f"s3://{s3_bucket}/t", s3_options)


@pytest.mark.s3
def test_a_hint_asked_about_then_read_is_one_get_in_a_view(io: FileIO, s3_bucket: str) -> None:
    latest = f"s3://{s3_bucket}/t/snapshot/LATEST"
    with io.one_view():
        assert io.file_exists(latest, will_read=True)
        assert io.read_bytes(latest) == b"5"
        assert not io.file_exists(f"s3://{s3_bucket}/t/snapshot/EARLIEST", will_read=True)
    assert _requests(io) == {"get": 2}  # LATEST once, EARLIEST's 404
    assert io.file_exists(latest, will_read=True)  # outside a view: a HEAD, as without will_read
    assert _requests(io) == {"get": 2, "head": 1}


@pytest.mark.s3
def test_a_directory_exists_by_one_bounded_list(io: FileIO, s3_bucket: str) -> None:
    schema, missing = f"s3://{s3_bucket}/t/schema", f"s3://{s3_bucket}/t/branch"
    assert io.dir_exists(schema) and not io.dir_exists(missing)
    assert not io.dir_exists(f"s3://{s3_bucket}/t/schema/schema-0")  # a file is no directory
    assert _requests(io) == {"list": 3}
    with io.one_view():
        assert [s.name for s in io.list_dir(schema)] == ["schema-0"]
        assert io.dir_exists(schema)  # the view's listing answers
        assert not io.dir_exists(missing) and not io.dir_exists(missing)
    assert _requests(io) == {"list": 5}
