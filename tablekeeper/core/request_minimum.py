"""The fewest storage requests an operation needs, so that what tablekeeper does can be compared.

On an object store (S3, OSS) the floor of a maintenance operation is (docs/storage.md, "Request
cost"):

- **reads**: one GET per metadata file the plan needs (snapshot, manifest list, manifest, index
  manifest, schema, hint), each read once;
- **listings**: one LIST page per 1,000 entries of each directory the plan must enumerate, each
  listed once; for orphan cleanup one flat listing of the table's prefix,
  ``ceil(objects / 1000)`` pages, and no HEAD (listings carry size and time);
- **writes**: one PUT per file the plan writes (hints, a tag, a commit's files);
- **deletes**: ``ceil(keys / 1000)`` DeleteObjects per step of the plan (Paimon's deletion order:
  data before manifests before snapshot files, so steps are not merged).

The counts that depend on the table's content (distinct reads, listed pages, objects under the
prefix) are measured by the caller (the benchmark counts them at the server); the rest comes from
the plan. Pure functions: the counting lives in :mod:`tablekeeper.core.storage.requests`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tablekeeper.core import plans, safety

__all__ = ["RequestMinimum", "minimum", "list_pages", "delete_requests", "plan_deletes", "plan_minimum", "orphan_minimum", "ratio"]


@dataclass(frozen=True)
class RequestMinimum:
    get: int = 0
    list: int = 0
    put: int = 0
    bulk_delete: int = 0

    @property
    def total(self) -> int:
        return self.get + self.list + self.put + self.bulk_delete

    def as_dict(self) -> dict[str, int]:
        return {"get": self.get, "list": self.list, "put": self.put, "bulk_delete": self.bulk_delete,
                "total": self.total}


def list_pages(entries: int) -> int:
    """LIST pages of a listing of ``entries`` keys (an empty listing is still one request)."""
    return max(1, -(-entries // 1000))


def delete_requests(keys: int, batch: int = safety.DELETE_BATCH_MAX) -> int:
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
