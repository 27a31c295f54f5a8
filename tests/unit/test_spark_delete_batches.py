"""The Spark delete stages' batching (``deletes.executor.number_batches``, ``delete_files``),
without Spark: a stage's rows are numbered across the partitions of the plan from the offsets the
driver counted, so every batch but the last holds exactly ``batch_size`` keys whichever partition
and directory its rows came from (one DeleteObjects per 1,000 keys on S3, as in process)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from tablekeeper.spark import executor as ex
from tablekeeper.spark.deletes import executor as tasks


def _batch(fields: ex.Fields, rows: list[tuple[object, ...]]) -> pa.RecordBatch:
    schema = ex.arrow_schema(fields)
    return pa.RecordBatch.from_arrays([pa.array([r[i] for r in rows], type=f.type) for i, f in enumerate(schema)],
                                      schema=schema)


def _numbered(offsets: dict[str, int], size: int, pid: int, paths: list[str]) -> list[dict[str, object]]:
    fields = (*tasks.DELETE_FIELDS, ("pid", "int"))
    rows = [(p, "data", 1, p.rsplit("/", 1)[0], 0, pid) for p in paths]
    out = tasks.number_batches({"offsets": offsets, "batch_size": size}, iter([_batch(fields, rows)]))
    return [r for b in out for r in b.to_pylist()]


def test_rows_are_numbered_across_partitions_into_full_batches() -> None:
    # partition 0 holds 3 rows of the stage, partition 2 holds 4 (partition 1 none): 7 rows
    offsets = {"0": 0, "2": 3}
    first = _numbered(offsets, 2, 0, ["s3://b/t/p=1/bucket-0/a", "s3://b/t/p=2/bucket-0/b", "s3://b/t/p=3/bucket-0/c"])
    second = _numbered(offsets, 2, 2, [f"s3://b/t/p={i}/bucket-1/d{i}" for i in range(4)])
    assert [r["batch"] for r in first] == [0, 0, 1]
    assert [r["batch"] for r in second] == [1, 2, 2, 3]
    sizes: dict[int, int] = {}
    for r in first + second:
        sizes[int(r["batch"])] = sizes.get(int(r["batch"]), 0) + 1  # type: ignore[call-overload]
    assert sizes == {0: 2, 1: 2, 2: 2, 3: 1}  # ceil(7 / 2) batches, all full but the last
    assert {r["path"] for r in first + second} == {r["path"] for r in first} | {r["path"] for r in second}


def test_each_batch_is_one_delete_call_and_outcomes_are_summed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = []
    for d in ("p=1/bucket-0", "p=2/bucket-0", "p=2/bucket-1"):
        (tmp_path / d).mkdir(parents=True)
        for i in range(2):
            f = tmp_path / d / f"data-{i}.parquet"
            f.write_bytes(b"xyz")
            files.append(str(f))
    gone = str(tmp_path / "p=1/bucket-0/data-gone.parquet")
    rows = [(p, "data", 3, p.rsplit("/", 1)[0], 0, n // 3) for n, p in enumerate([*files, gone])]
    calls: list[list[str]] = []
    from tablekeeper.core import plans  # the executor takes delete_batch from the package

    real = plans.delete_batch

    def spy(io: object, paths: list[str]) -> object:
        calls.append(list(paths))
        return real(io, paths)  # type: ignore[arg-type]

    monkeypatch.setattr(plans, "delete_batch", spy)
    spec = {"storage": {"uri": str(tmp_path), "options": {}}, "batch_size": 3}
    out = list(tasks.delete_files(spec, iter([_batch(tasks.BATCHED_FIELDS, rows)])))
    assert [len(c) for c in calls] == [3, 3, 1]  # batches 0, 1, 2 across three directories
    summary = [r for b in out for r in b.to_pylist()]
    assert summary == [{"stage": 0, "kind": "data", "deleted": 6, "missing": 1, "failed": 0, "bytes": 18,
                        "failure_sample": [], "unsized": 0}]
    assert not any(Path(f).exists() for f in files)
