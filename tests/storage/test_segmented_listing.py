"""The flat listing in segments (core/storage/backends/segmented.py) on moto: exact LIST pages of a small
fixed prefix (20 keys a page), the same entries as the sequential listing, every key once."""

from __future__ import annotations

import pytest

from tablekeeper.core.storage import FileIO
from tablekeeper.core.storage.backends import segmented
from tests.support import s3 as s3support

#: 10 partition directories of 30 files, manifest/ with 20 and snapshot/ with 5: 325 keys
LAYOUT = {**{f"dt=0{p}/bucket-0/data-{i:02d}.parquet": 30 for p in range(10) for i in range(30)},
          **{f"manifest/manifest-{i:02d}": 20 for i in range(20)},
          **{f"snapshot/snapshot-{i}": 5 for i in range(1, 6)}}


@pytest.fixture
def prefix(s3_bucket: str) -> str:
    s3support.put_objects(s3_bucket, {f"wh/t/{key}": b"x" * size for key, size in LAYOUT.items()})
    s3support.put_objects(s3_bucket, {"wh/t2/dt=00/bucket-0/data-x.parquet": b"x"})  # beside it, never listed
    return f"s3://{s3_bucket}/wh/t"


def _listed(io: FileIO, root: str, segments_max: int) -> tuple[dict[str, int], int]:
    before = io.requests.counts.snapshot().get("list", 0)
    with io.flat_listing(root, segments_max=segments_max, page_keys=20):
        flat = io.backend._flat
        assert flat is not None
        entries = {f"{d}/{name}": status.size for d, names in flat[1].items() for name, status in names.items()
                   if not status.is_dir}
    return entries, io.requests.counts.snapshot().get("list", 0) - before


@pytest.mark.s3
def test_segments_list_every_key_once_with_exact_pages(prefix: str, s3_options: dict[str, str]) -> None:
    io = FileIO.for_uri(prefix, s3_options)
    sequential, sequential_pages = _listed(io, prefix, segments_max=1)
    segments, segment_pages = _listed(io, prefix, segments_max=segmented.SEGMENTS_MAX)
    assert len(sequential) == len(LAYOUT) == 325
    assert segments == sequential  # same keys, sizes; nothing of wh/t2
    assert sequential_pages == 17  # ceil(325 / 20)
    # first page (dt=00, 20 keys); one delimiter LIST (12 directories; the first page reached 1:
    # 13 pages estimated, 2 segments, cut at dt=06/); segment 0: the 160 keys up to dt=06/ in 8
    # full pages and a 9th that reaches the cut; segment 1: 145 keys from dt=06/ in 8 pages
    assert segment_pages == 1 + 1 + 9 + 8


@pytest.mark.s3
def test_a_prefix_of_one_page_is_one_request(s3_bucket: str, s3_options: dict[str, str]) -> None:
    s3support.put_objects(s3_bucket, {f"wh/small/dt=0{p}/bucket-0/f-{i}": b"x" for p in range(3) for i in range(5)})
    io = FileIO.for_uri(f"s3://{s3_bucket}/wh/small", s3_options)
    entries, pages = _listed(io, f"s3://{s3_bucket}/wh/small", segments_max=segmented.SEGMENTS_MAX)
    assert len(entries) == 15 and pages == 1


def test_cut_points() -> None:
    dirs = [f"t/d{i:02d}/" for i in range(12)]
    # 13 pages expected, 6 a segment: 2 segments, cut halfway through the directories after the first page
    assert segmented.cut_points(dirs, "t/d00/x", 13) == ["t/d06/"]
    assert segmented.cut_points(dirs, "t/d00/x", 11) == []  # one segment: listed on sequentially
    assert len(segmented.cut_points(dirs, "t/d00/x", 1000)) == 11  # at most one cut per later directory
    many = [f"t/d{i:03d}/" for i in range(100)]
    assert len(segmented.cut_points(many, "t/", 1000)) == segmented.SEGMENTS_MAX - 1
    assert segmented.cut_points(dirs, "t/d11/x", 1000) == []  # nothing after the first page's last key
