"""The flat listing of one prefix on S3/OSS, in segments listed at the same time.

ListObjectsV2 pages of one prefix come one after the other (each continuation token is in the
previous answer), so a flat listing of a large table takes ``pages x latency`` however fast the
rest of a cleanup is. S3 lists from any key on (``StartAfter``), so the prefix is cut into
segments at the table's top-level directories and the segments are listed concurrently, each
stopping at the next segment's first key (docs/storage-internals.md, "Listing in segments").

Requests: a table that fits one page costs exactly that page, as before. A larger one costs its
first page, one LIST with a delimiter (the top-level directories: the cut points), and per
segment its pages, the last one partial: about ``ceil(objects / 1000) + segments + 1`` pages
instead of ``ceil(objects / 1000)``. So segments are only used where each is expected to hold
:data:`PAGES_PER_SEGMENT` pages or more (estimated from how far the first page got), which keeps
the extra pages near ``1 / PAGES_PER_SEGMENT`` of the listing.

Consistency is that of a paginated listing, which is no snapshot either: each key is listed by
exactly one segment (a segment keeps only keys in ``[its cut, the next cut)``), every key present
for the whole listing is listed, and all segments are done before the caller gets the result
(orphan cleanup lists its candidates before it reads any root).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

__all__ = ["PageRequest", "ListPage", "list_prefix", "cut_points", "SEGMENTS_MAX", "PAGES_PER_SEGMENT", "PAGE_KEYS"]

#: Segments listed at once, at most.
SEGMENTS_MAX = 16
#: Pages a segment is expected to hold before the prefix is cut (each segment may cost one
#: partial page more than a sequential listing).
PAGES_PER_SEGMENT = 6
#: Keys per LIST page (S3's maximum).
PAGE_KEYS = 1000


@dataclass(frozen=True)
class PageRequest:
    """One ListObjectsV2 request below ``prefix``."""

    prefix: str
    start_after: str | None = None
    token: str | None = None
    delimiter: str | None = None
    max_keys: int = PAGE_KEYS


#: An answer: ``Contents`` (dicts with ``Key``, ``Size``, ``LastModified``), ``CommonPrefixes``,
#: ``IsTruncated``, ``NextContinuationToken``, as boto3 returns them.
ListPage = Mapping[str, Any]


def _keys(page: ListPage) -> list[Mapping[str, Any]]:
    return list(page.get("Contents") or [])


def _pages(send: Callable[[PageRequest], ListPage], prefix: str, start_after: str | None, stop: str | None,
           page_keys: int) -> list[Mapping[str, Any]]:
    """Keys ``> start_after`` and ``< stop`` below ``prefix``, page by page; stops at the first
    page that reaches ``stop`` (keys come in order)."""
    out: list[Mapping[str, Any]] = []
    token: str | None = None
    while True:
        page = send(PageRequest(prefix, None if token else start_after, token, None, page_keys))
        contents = _keys(page)
        out.extend(c for c in contents if stop is None or str(c["Key"]) < stop)
        if not page.get("IsTruncated") or (stop is not None and contents and str(contents[-1]["Key"]) >= stop):
            return out
        token = page.get("NextContinuationToken")
        if not token:
            return out


def cut_points(directories: Sequence[str], after: str, pages_estimate: int,
               segments_max: int = SEGMENTS_MAX, pages_per_segment: int = PAGES_PER_SEGMENT) -> list[str]:
    """Where the rest of a listing (the keys after ``after``) is cut: top-level directories
    (``prefix/name/``, sorted) after ``after``, evenly spaced, one fewer than the segments.
    Segments: ``pages_estimate // pages_per_segment``, at most ``segments_max``; none (a
    sequential listing) below two."""
    segments = min(segments_max, pages_estimate // max(1, pages_per_segment))
    later = sorted({d for d in directories if d > after})
    if segments < 2 or not later:
        return []
    segments = min(segments, len(later) + 1)
    return [later[(i * len(later)) // segments] for i in range(1, segments)]


def _estimate_pages(first: Sequence[Mapping[str, Any]], directories: Sequence[str]) -> int:
    """Pages of the whole prefix, from how many top-level directories the first page reached:
    an underestimate when the directories differ in size (cuts are then fewer, never more)."""
    if not first or not directories:
        return 1
    last = str(first[-1]["Key"])
    reached = sum(1 for d in directories if d <= last)
    return len(directories) // max(1, reached) + 1


def list_prefix(send: Callable[[PageRequest], ListPage], prefix: str, *, page_keys: int = PAGE_KEYS,
                segments_max: int = SEGMENTS_MAX, pages_per_segment: int = PAGES_PER_SEGMENT,
                pool: Callable[[int], ThreadPoolExecutor] | None = None) -> list[Mapping[str, Any]]:
    """Every key below ``prefix`` (ending in ``/``), in key order, listed as the module says.
    ``send`` makes one ListObjectsV2 request (with tablekeeper's retries and counting)."""
    first = send(PageRequest(prefix, max_keys=page_keys))
    keys = _keys(first)
    if not first.get("IsTruncated") or not keys:
        return keys
    after = str(keys[-1]["Key"])
    cuts: list[str] = []
    if segments_max >= 2:
        tops = send(PageRequest(prefix, delimiter="/", max_keys=page_keys))
        directories = sorted(str(p["Prefix"]) for p in tops.get("CommonPrefixes") or [])
        cuts = cut_points(directories, after, _estimate_pages(keys, directories), segments_max,
                          pages_per_segment)
    if not cuts:
        return keys + _pages(send, prefix, after, None, page_keys)
    # segment 0: the keys after the first page up to the first cut; segment i: [cut i, cut i+1),
    # listed after the largest name below the cut (the cut without its "/")
    bounds = list(zip([after, *cuts], [*cuts, None], strict=True))

    def segment(i: int) -> list[Mapping[str, Any]]:
        start, stop = bounds[i]
        if i == 0:
            return _pages(send, prefix, start, stop, page_keys)
        return [c for c in _pages(send, prefix, start[:-1], stop, page_keys) if str(c["Key"]) >= start]

    if pool is None:
        from concurrent.futures import ThreadPoolExecutor  # lazily: ~12 ms of every start-up

        pool = ThreadPoolExecutor
    with pool(len(bounds)) as executor:
        for part in executor.map(segment, range(len(bounds))):
            keys.extend(part)
    return keys
