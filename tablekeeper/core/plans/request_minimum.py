"""The fewest storage requests an operation needs, so that what tablekeeper does can be compared.

On an object store (S3, OSS) the floor of a maintenance operation is (docs/storage-internals.md, "Request
cost"):

- **reads**: one GET per metadata file the plan needs (snapshot, manifest list, manifest, index
  manifest, schema, hint), each read once;
- **listings**: one LIST page per 1,000 entries of each directory the plan must enumerate, each
  listed once; for orphan cleanup one flat listing of the table's prefix,
  ``ceil(objects / 1000)`` pages, and no HEAD (listings carry size and time);
- **writes**: one PUT per file the plan writes (hints, a tag, a commit's files);
- **deletes**: ``ceil(keys / 1000)`` DeleteObjects per step of the plan (Paimon's deletion order:
  data before manifests before snapshot files, so steps are not merged).

Beyond that floor, some requests are needed for safety, and are counted here on purpose, each
with its reason (docs/storage-internals.md, "Request cost"): :data:`LEASE`, :data:`INTENT`,
:func:`expire_verify`, :func:`tag_verify`, :data:`COMMIT_POINT`. They are stated from the
table's shape (tags, snapshots, branches), never from what tablekeeper happened to send.

The counts that depend on the table's content (distinct reads, listed pages, objects under the
prefix) are measured by the caller (the benchmark counts them at the server); the rest comes from
the plan. Pure functions: the counting lives in :mod:`tablekeeper.core.storage.layers.requests`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tablekeeper.core import values
from tablekeeper.core.plans import plan as plans

__all__ = ["RequestMinimum", "LEASE", "INTENT", "COMMIT_POINT", "expire_verify", "tag_verify", "trash_moves", "minimum", "list_pages", "delete_requests", "plan_deletes", "plan_minimum", "orphan_minimum", "ratio"]


@dataclass(frozen=True)
class RequestMinimum:
    get: int = 0
    list: int = 0
    put: int = 0
    bulk_delete: int = 0
    head: int = 0
    copy: int = 0

    @property
    def total(self) -> int:
        return self.get + self.list + self.put + self.bulk_delete + self.head + self.copy

    def as_dict(self) -> dict[str, int]:
        out = {"get": self.get, "list": self.list, "put": self.put, "bulk_delete": self.bulk_delete}
        if self.head:
            out["head"] = self.head
        if self.copy:
            out["copy"] = self.copy
        out["total"] = self.total
        return out

    def __add__(self, other: RequestMinimum) -> RequestMinimum:
        return RequestMinimum(self.get + other.get, self.list + other.list, self.put + other.put,
                              self.bulk_delete + other.bulk_delete, self.head + other.head, self.copy + other.copy)


#: The maintenance lease of every changing command (core/safety/concurrency/lease.py), beyond its first read and its
#: write (distinct keys, in the floor already): the existence check before the create-if-absent
#: PUT (a HEAD: stores that ignore ``If-None-Match`` must not overwrite a holder's lease), the
#: read-back before release (a lease taken over after it expired is not ours to delete), and the
#: DeleteObjects that releases it. Without the lease two maintainers of one table interleave.
LEASE = RequestMinimum(get=1, head=1, bulk_delete=1)

#: The intent of an unpublishing operation (expire, tag delete: core/reclaim/expire/commit.py,
#: core/refs/tag_deletion.py), beyond its read (404 unless resuming) and its write: the existence
#: check before its create-if-absent PUT and the DeleteObjects removing it at the end. It is what
#: makes a crash between unpublishing and deleting resumable instead of losing the snapshots.
INTENT = RequestMinimum(head=1, bulk_delete=1)

#: A partition drop's commit (pypaimon's, Paimon's conflict logic) reads the latest snapshot
#: again at the commit point (LATEST hint, the snapshot, and the existence of the next one: a
#: writer may have committed since the plan) and checks the snapshot file it creates before the
#: create-if-absent PUT. Paimon's commit protocol; fewer would commit over a concurrent writer.
COMMIT_POINT = RequestMinimum(get=2, head=2)


def expire_verify(*, tags: int, branches: int = 1) -> RequestMinimum:
    """The verify decision of an expiration (core/reclaim/expire/commit.py) sees the table as it is
    *now*, after the snapshots were unpublished: a tag, branch, changelog or consumer that
    appeared meanwhile must be a root of it. So it lists again the snapshot, tag, changelog and
    consumer directories of every branch and the branch directory, reads again every tag (Java
    and pypaimon rewrite tag files in place), the LATEST and EARLIEST hints and the first
    retained snapshot, and checks the latest snapshot the way Java's findLatest does (it
    exists, the next one does not)."""
    return RequestMinimum(list=4 * branches + 1, get=tags + 3, head=2)


def tag_verify(*, tags: int, snapshots: int, branches: int = 1) -> RequestMinimum:
    """The verify plan of a tag deletion (core/refs/tag_deletion.py), after the tag file was
    unpublished, against the roots as they are now: the tag, snapshot and changelog directories
    of every branch and the branch directory listed again, every other tag and every retained
    snapshot read again, and whether the tag's snapshot exists again (one HEAD)."""
    return RequestMinimum(list=3 * branches + 1, get=max(0, tags - 1) + snapshots, head=1)


def trash_moves(*, files: int, batches: int) -> RequestMinimum:
    """What a trash window (core/safety/trash) adds on S3/OSS to a run that removes ``files`` files in
    ``batches`` delete batches: one server-side CopyObject per file into the run's fresh
    directory (no existence check: nobody else writes there), one PUT per batch record and one
    for the run record. The DeleteObjects of the sources are the run's own deletes, unchanged.
    Less is not possible without versioning: the bytes must be kept somewhere first."""
    return RequestMinimum(copy=files, put=batches + 1 if files else 0)


def list_pages(entries: int) -> int:
    """LIST pages of a listing of ``entries`` keys (an empty listing is still one request)."""
    return max(1, -(-entries // 1000))


def delete_requests(keys: int, batch: int = values.DELETE_BATCH_MAX) -> int:
    """DeleteObjects requests for ``keys`` keys."""
    return -(-keys // batch) if keys > 0 else 0


def _plan_writes(plan: plans.Plan) -> int:
    return sum(1 for s in plan.steps if isinstance(s, plans.WriteStep))


def minimum(*, distinct_reads: int, listed_pages: int, writes: int, delete_steps: Iterable[int]) -> RequestMinimum:
    """The floor from counts: files read (each once), LIST pages, files written, and the number
    of keys of each ordered delete step (each in batches of 1000)."""
    return RequestMinimum(get=distinct_reads, list=listed_pages, put=writes,
                          bulk_delete=sum(delete_requests(n) for n in delete_steps))


def plan_deletes(plan: plans.Plan) -> int:
    """DeleteObjects requests of the plan's delete steps, each in batches of 1000."""
    return sum(delete_requests(len(s.files)) for s in plan.steps if isinstance(s, plans.DeleteStep))


def plan_minimum(plan: plans.Plan, *, distinct_reads: int, listed_pages: int, extra_writes: int = 0) -> RequestMinimum:
    """Expiration, partition expiration, tag deletion: the plan's reads (each once), listings,
    writes and deletes. ``extra_writes``: files the operation writes outside the plan's steps
    (a partition drop's commit: manifest, manifest lists, snapshot, hint)."""
    return RequestMinimum(get=distinct_reads, list=listed_pages, put=_plan_writes(plan) + extra_writes,
                          bulk_delete=plan_deletes(plan))


def orphan_minimum(plan: plans.Plan, *, objects_under_prefix: int, distinct_reads: int) -> RequestMinimum:
    """Orphan cleanup: one flat listing of the table's prefix, every metadata file the used set
    needs read once, the orphans deleted in batches of 1000."""
    return RequestMinimum(get=distinct_reads, list=list_pages(objects_under_prefix), bulk_delete=plan_deletes(plan))


def ratio(counted: Mapping[str, int], minimum: RequestMinimum) -> float:
    """Requests made over the minimum (``counted["total"]``, or the sum of the kinds)."""
    total = counted.get("total", sum(v for k, v in counted.items() if k != "total"))
    if minimum.total:
        return total / minimum.total
    return 1.0 if total == 0 else float("inf")
