"""What every executor-side function of the Spark job stands on: rows in and out of Arrow, the
FileIO of a Python worker, the request count of a task, and the manifest-list read both
operations share. The functions that evaluate core's decisions (``tablekeeper.core.reclaim.orphans.decision``)
live beside the stage that uses them: ``spark/orphans/executor.py``,
``spark/expire/executor.py``, ``spark/deletes/executor.py``. No rule is stated here.

Rules for every executor-side module (style.md §2.13, spark-jobs.md §6.4):

- no driver state: every function is ``fn(spec, batches)`` over ``Iterator[pyarrow.RecordBatch]``
  (the ``mapInArrow`` shape, which also runs on Spark Connect), bound with ``functools.partial``
  to a *plain* ``spec`` dict (strings, ints, dicts) — never a live client;
- heavy imports (pyarrow, fsspec via ``tablekeeper.core.storage``, fastavro via the manifest
  reader) happen inside functions; these modules import no pyspark, kopf, pypaimon or
  pypaimon-rust at all (a test imports each in a fresh interpreter to prove it);
- the filesystem is built per Python worker from ``spec["storage"]`` (``{"uri", "options"}``)
  and cached behind a pid check: workers are forked and reused, clients do not survive a fork;
- read errors that planning must judge (a missing file, an unreadable file) become rows with
  ``error_kind`` ``missing``/``format``; the driver decides (skip vs. fail closed). Any other
  exception fails the task, so Spark retries it, and then fails the job.

Each ``*_FIELDS`` tuple is the schema of a function's input or output; ``ddl(fields)`` is its
Spark form.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from tablekeeper.core.storage import FileIO

__all__ = [
    "Fields", "ddl", "arrow_schema", "Rows", "rows_of", "map_rows", "file_io", "counted", "join", "stage_of",
    "classify", "map_manifest_files", "NAME_FIELDS", "LIST_FIELDS", "PID_FIELDS", "read_lists", "worker_pid",
]

Fields = tuple[tuple[str, str], ...]
_Item = TypeVar("_Item")

NAME_FIELDS: Fields = (("name", "string"),)
LIST_FIELDS: Fields = (("list_name", "string"), ("manifest_name", "string"), ("manifest_size", "long"),
                       ("extra_files", "array<string>"), ("pos", "int"), ("error_kind", "string"), ("error", "string"))
PID_FIELDS: Fields = (("pid", "long"),)

_CHUNK = 8_192


# -- schemas and rows ----------------------------------------------------------------------------
def ddl(fields: Fields) -> str:
    """Spark DDL of a schema, e.g. ``"dir string, depth int"``."""
    return ", ".join(f"{name} {kind}" for name, kind in fields)


_ARROW_CACHE: dict[Fields, Any] = {}


def arrow_schema(fields: Fields) -> pa.Schema:
    """The Arrow form of a schema (built once per process)."""
    cached = _ARROW_CACHE.get(fields)
    if cached is None:
        import pyarrow as pa

        types = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "binary": pa.binary(),
                 "boolean": pa.bool_(), "array<string>": pa.list_(pa.string())}
        cached = pa.schema([(name, types[kind]) for name, kind in fields])
        _ARROW_CACHE[fields] = cached
    return cached


class Rows:
    """Column buffers for one output schema, emitted in chunks of ``_CHUNK`` rows."""

    def __init__(self, fields: Fields) -> None:
        self.fields = fields
        self.cols: list[list[Any]] = [[] for _ in fields]
        self.count = 0

    def add(self, *values: Any) -> None:
        for col, value in zip(self.cols, values, strict=True):
            col.append(value)
        self.count += 1

    @property
    def full(self) -> bool:
        return self.count >= _CHUNK

    def take(self) -> pa.RecordBatch:
        import pyarrow as pa

        batch = pa.RecordBatch.from_arrays([pa.array(c, type=t.type) for c, t in
                                            zip(self.cols, arrow_schema(self.fields), strict=True)],
                                           schema=arrow_schema(self.fields))
        self.cols = [[] for _ in self.fields]
        self.count = 0
        return batch


def rows_of(batches: Iterable[pa.RecordBatch], names: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    """The values of the columns ``names``, row by row."""
    for batch in batches:
        cols = [batch.column(batch.schema.get_field_index(n)).to_pylist() for n in names]
        yield from zip(*cols, strict=True)


def map_rows(batches: Iterable[pa.RecordBatch], names: Sequence[str], out: Fields,
             fn: Callable[[tuple[Any, ...], Rows], None]) -> Iterator[pa.RecordBatch]:
    """``fn(row, out)`` for every row of the columns ``names``: what it adds to ``out`` (schema
    ``out``), in batches."""
    rows = Rows(out)
    for row in rows_of(batches, names):
        fn(row, rows)
        if rows.full:
            yield rows.take()
    if rows.count:
        yield rows.take()


# -- per-process filesystem ----------------------------------------------------------------------
_FILE_IOS: dict[str, tuple[int, FileIO]] = {}


def file_io(storage: Mapping[str, Any]) -> FileIO:
    """The FileIO for ``storage`` (``{"uri": ..., "options": {...}}``) in this process.

    Built once per Python worker and rebuilt after a fork (pid check): s3fs sessions and
    connection pools must not be shared across processes."""
    key = json.dumps(storage, sort_keys=True)
    pid = os.getpid()
    cached = _FILE_IOS.get(key)
    if cached is None or cached[0] != pid:
        from tablekeeper.core.storage import FileIO

        options = dict(storage.get("options") or {})
        for name in storage.get("env_options") or ():  # a mounted Secret key: read here, never shipped
            if name in os.environ:
                options[name] = os.environ[name]
        cached = (pid, FileIO.for_uri(str(storage["uri"]), options))
        _FILE_IOS[key] = cached
    return cached[1]


def counted(tally: Mapping[str, Any], fn: Callable[[Mapping[str, Any], Iterator[pa.RecordBatch]],
                                                  Iterator[pa.RecordBatch]],
            spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``fn(spec, batches)``, adding the storage requests this task made (by kind) to ``tally``
    (Spark accumulators by kind, summed on the driver when the task succeeds). A Python worker
    runs one task at a time, so the difference of the process's tally
    (``requests.process_snapshot``) before and after is this task's, whatever FileIO made them."""
    from tablekeeper.core import storage

    before = storage.process_snapshot()
    try:
        yield from fn(spec, batches)
    finally:
        for kind, n in storage.since(before, storage.process_snapshot()).items():
            if kind in tally:
                tally[kind].add(n)


def join(base: str, *parts: str) -> str:
    """A path under ``base`` (``core.storage.join``, imported when first used)."""
    from tablekeeper.core.storage import join

    return join(base, *parts)


# -- stages and errors ---------------------------------------------------------------------------
def stage_of(kind: str, path: str) -> int:
    """Position of a file in Paimon's deletion order (``plans.stage_of``)."""
    from tablekeeper.core import plans

    return plans.stage_of(kind, path)


def classify(error: BaseException) -> tuple[str, str]:
    """``(error_kind, error)`` of a read error row: ``missing`` for a file that is gone, else ``format``."""
    return ("missing" if isinstance(error, FileNotFoundError) else "format"), f"{type(error).__name__}: {error}"


# -- manifest lists (both operations read them) ---------------------------------------------------
def map_manifest_files(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch], out_fields: Fields,
                       read: Callable[[FileIO, str], Iterable[_Item]],
                       emit: Callable[[str, _Item, Rows], None]) -> Iterator[pa.RecordBatch]:
    """(name of a file in ``spec["manifest_dir"]``) -> the rows ``emit`` writes for each item
    ``read`` returns. A missing or unreadable file becomes one error row: the name, ``None`` in
    every other column, then ``error_kind`` and ``error`` (the last two columns)."""
    from tablekeeper.core import errors

    io = file_io(spec["storage"])
    manifest_dir = spec["manifest_dir"]
    blanks = (None,) * (len(out_fields) - 3)

    def one(row: tuple[Any, ...], out: Rows) -> None:
        name = row[0]
        try:
            items = read(io, join(manifest_dir, name))
        except (FileNotFoundError, errors.FormatError) as e:
            out.add(name, *blanks, *classify(e))
            return
        for item in items:
            emit(name, item, out)

    return map_rows(batches, ("name",), out_fields, one)


def read_lists(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(list_name) -> one row per manifest of a manifest list (name, size, extra files, position
    in the list)."""
    from tablekeeper.core.paimon import manifests

    def read(io: FileIO, path: str) -> Iterable[tuple[int, manifests.ManifestFileMeta]]:
        return enumerate(manifests.read_manifest_list(io, path))

    def emit(name: str, item: tuple[int, manifests.ManifestFileMeta], out: Rows) -> None:
        pos, meta = item
        out.add(name, meta.file_name, meta.file_size, list(meta.extra_files), pos, None, None)

    return map_manifest_files(spec, batches, LIST_FIELDS, read, emit)


def worker_pid(spec: Mapping[str, Any], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One row with this worker's pid per partition (tests prove work left the driver)."""
    for _ in batches:
        pass
    out = Rows(PID_FIELDS)
    out.add(os.getpid())
    yield out.take()
