"""tablekeeper.core.paimon.partition_paths: the pypaimon-free renderer of partition directories
answers exactly what pypaimon's FileStorePathFactory answers (generated values of every covered
type: escaping-worthy characters, control characters, unicode, nulls, empty and whitespace-only
strings, negative numbers, minima and maxima; both ``partition.legacy-name`` settings, a
``partition.default-name``, a ``data-file.path-directory``), declines what it does not cover (then
pypaimon renders), never answers differently on damaged bytes, and an expiration plans the same
with and without it on pypaimon- and Java-written tables."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pypaimon.schema.data_types import AtomicType, DataField
from pypaimon.table.row.generic_row import GenericRow, GenericRowSerializer

from tablekeeper.core import errors
from tablekeeper.core.paimon import manifests
from tablekeeper.core.paimon import partition_paths as pp
from tablekeeper.core.paimon.metadata.schema import TableSchema
from tablekeeper.core.paimon.pypaimon.adapter import PartitionPathResolver
from tablekeeper.core.paimon.table import open_table, open_table_path
from tablekeeper.core.reclaim.expire import planning
from tablekeeper.core.reclaim.reach.reachability import Reachability
from tests.support import paimon as tp

ROOT = "/wh/db.db/t"
#: One partition column per covered type (keys with characters that need escaping too).
COLUMNS = (("s", "STRING"), ("v=c", "VARCHAR(20)"), ("ch", "CHAR(5) NOT NULL"), ("b", "BOOLEAN"),
           ("t#i", "TINYINT"), ("sm", "SMALLINT"), ("i", "INT NOT NULL"), ("big", "BIGINT"), ("d", "DATE"))
SPECIAL = "\"#%'*/:=?\\{}[]^ \t\n\x00\x01\x1f\x7f.é日😀\u2003\xa0-_="
TEXT = st.one_of(st.sampled_from(["", " ", "  \t", "\u2003", "__DEFAULT_PARTITION__", "a/b", "..", ".", "%41",
                                  "x" * 7, "y" * 8, "ab cd", "null"]),
                 st.text(alphabet=st.sampled_from(SPECIAL + "abcXYZ019"), max_size=12),
                 st.text(max_size=10))
INTS = {"TINYINT": (-(2 ** 7), 2 ** 7 - 1), "SMALLINT": (-(2 ** 15), 2 ** 15 - 1),
        "INT": (-(2 ** 31), 2 ** 31 - 1), "BIGINT": (-(2 ** 63), 2 ** 63 - 1)}
OPTIONS: tuple[dict[str, str], ...] = (
    {},
    {"partition.legacy-name": "false"},
    {"partition.default-name": "null part%", "partition.legacy-name": " TRUE "},
    {"data-file.path-directory": "data/d-1", "partition.legacy-name": "off"},
)


def _schema(columns: tuple[tuple[str, str], ...], options: Mapping[str, str], keys: tuple[str, ...] | None = None,
            ) -> TableSchema:
    fields = [{"id": i, "name": n, "type": t} for i, (n, t) in enumerate(columns)]
    fields.append({"id": len(columns), "name": "payload", "type": "DOUBLE"})
    raw = {"version": 3, "id": 0, "fields": fields, "highestFieldId": len(columns),
           "partitionKeys": list(keys if keys is not None else [n for n, _ in columns]), "primaryKeys": [],
           "options": {"bucket": "2", **options}, "timeMillis": 0}
    return TableSchema.from_json(json.dumps(raw))


def _value(kind: str) -> st.SearchStrategy[Any]:
    base = kind.split("(", 1)[0].removesuffix(" NOT NULL")
    if base in INTS:
        low, high = INTS[base]
        return st.one_of(st.sampled_from([low, high, 0, -1, 1]), st.integers(low, high))
    if base == "BOOLEAN":
        return st.booleans()
    if base == "DATE":
        return st.one_of(st.sampled_from([date(1970, 1, 1), date(1, 1, 1), date(9999, 12, 31), date(1969, 12, 31)]),
                         st.dates())
    return TEXT


def _row(columns: tuple[tuple[str, str], ...], values: list[Any]) -> bytes:
    fields = [DataField(i, n, AtomicType(t.removesuffix(" NOT NULL"), not t.endswith("NOT NULL")))
              for i, (n, t) in enumerate(columns)]
    return GenericRowSerializer.to_bytes(GenericRow(values, fields))


ROWS = st.tuples(*[st.one_of(st.none(), _value(t)) for _, t in COLUMNS]).map(list)
BUCKETS = st.one_of(st.sampled_from([-2, -1, 0]), st.integers(0, 2 ** 31 - 1))


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "defaults")
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=ROWS, bucket=BUCKETS)
def test_every_covered_type_renders_as_pypaimon_does(options: dict[str, str], values: list[Any], bucket: int) -> None:
    schema = _schema(COLUMNS, options)
    renderer = pp.PartitionRenderer.of(schema)
    assert renderer is not None, "the covered types and options must not fall back"
    partition = _row(COLUMNS, values)
    resolver = PartitionPathResolver(ROOT, schema=schema)
    fast = renderer.relative_bucket_dir(partition, bucket)
    assert fast is not None, "pypaimon-written bytes of covered types are decoded here"
    assert fast == resolver.pypaimon_relative_bucket_dir(partition, bucket)
    assert resolver.bucket_dir(partition, bucket) == resolver.pypaimon_bucket_dir(partition, bucket) == f"{ROOT}/{fast}"
    assert resolver._factory is None or resolver._fast is not None


@settings(max_examples=150, deadline=None)
@given(values=ROWS, flips=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), min_size=1, max_size=4),
       cut=st.integers(0, 400))
def test_damaged_bytes_render_as_pypaimon_or_not_at_all(values: list[Any], flips: list[tuple[int, int]],
                                                        cut: int) -> None:
    """Wherever the renderer answers for damaged bytes it answers pypaimon's answer; where it
    does not, the resolver asks pypaimon, whose error (a FormatError) is raised unchanged."""
    schema = _schema(COLUMNS, {})
    renderer = pp.PartitionRenderer.of(schema)
    assert renderer is not None
    data = bytearray(_row(COLUMNS, values))
    for at, byte in flips:
        data[at % len(data)] = byte
    partition = bytes(data[:cut] if cut < len(data) else data)
    fast = renderer.relative_bucket_dir(partition, 0)
    resolver = PartitionPathResolver(ROOT, schema=schema)
    try:
        reference: str | Exception = resolver.pypaimon_relative_bucket_dir(partition, 0)
    except Exception as e:  # noqa: BLE001 - pypaimon's verdict on bytes it cannot read
        reference = e
    if fast is not None:
        assert fast == reference
    if isinstance(reference, str):
        assert resolver.relative_bucket_dir(partition, 0) == reference
    else:
        with pytest.raises(type(reference)):
            PartitionPathResolver(ROOT, schema=schema).relative_bucket_dir(partition, 0)


@pytest.mark.parametrize(("columns", "options"), [
    ((("ts", "TIMESTAMP(3)"),), {}),
    ((("dec", "DECIMAL(10, 2)"),), {}),
    ((("f", "FLOAT"),), {}),
    ((("d", "DOUBLE"),), {}),
    ((("n", "INTEGER"),), {}),
    ((("s", "string"),), {}),
    ((("s", "STRING"),), {"partition.legacy-name": "maybe"}),
    ((("s", "STRING"),), {"data-file.path-directory": "../up"}),
    ((("s", "STRING"),), {"data-file.path-directory": "/abs"}),
    ((("s", "STRING"),), {"data-file.path-directory": "a//b"}),
    ((("s", "STRING"),), {"data-file.path-directory": "a:b"}),
    ((("s", "STRING"),), {"index-file-in-data-file-dir": "sometimes"}),
], ids=str)
def test_what_it_does_not_cover_is_left_to_pypaimon(columns: tuple[tuple[str, str], ...],
                                                    options: dict[str, str]) -> None:
    assert pp.PartitionRenderer.of(_schema(columns, options)) is None


@pytest.mark.parametrize("root", ["file:/wh/t", "file:///wh/t", "wh/t", "/wh//t", "/wh/./t", "/wh/../t", "/",
                                  "s3://bucket", "s3:/bucket/t", "s3://bucket/a//t"])
def test_roots_pypaimon_would_normalise_are_left_to_it(root: str) -> None:
    assert not pp.renders_under(root)


@pytest.mark.parametrize("root", ["/wh/db.db/t", "/w h/%41/t:x", "s3://bucket/wh/db.db/t", "hdfs://nn:8020/wh/t",
                                  "oss://b/a b/t"])
def test_plain_roots_join_as_pypaimon_resolves_them(root: str) -> None:
    assert pp.renders_under(root)
    schema = _schema(COLUMNS[:2], {"data-file.path-directory": "data"})
    resolver = PartitionPathResolver(root, schema=schema)
    partition = _row(COLUMNS[:2], ["a b", None])
    assert resolver.bucket_dir(partition, 3) == resolver.pypaimon_bucket_dir(partition, 3)
    assert resolver.bucket_dir(partition, 3) == f"{root}/data/s=a b/v%3Dc=__DEFAULT_PARTITION__/bucket-3"


def test_a_partition_key_that_is_not_a_column_is_a_format_error() -> None:
    with pytest.raises(errors.FormatError, match="partition key 'nope'"):
        PartitionPathResolver(ROOT, schema=_schema(COLUMNS[:1], {}, keys=("s", "nope")))


def test_covered_tables_never_build_pypaimon_s_factory(tmp_path: Path) -> None:
    tp.build_history(str(tmp_path), commits=3, primary_key=False)
    table = open_table(str(tmp_path), "db.orders")
    resolver = PartitionPathResolver(table)
    refs = [r for s in table.snapshots() for r in Reachability(table).delta_refs(s)]
    assert refs, "the table has data files"
    for ref in refs:
        assert resolver.file_paths(ref) == [f"{resolver.pypaimon_bucket_dir(ref.partition, ref.bucket)}/{ref.file_name}"]
    fresh = PartitionPathResolver(table)
    assert [fresh.file_paths(r) for r in refs] and fresh._factory is None


def _plans_equal_without_renderer(table: Any, config: planning.ExpireConfig, monkeypatch: pytest.MonkeyPatch) -> Any:
    now_ms = int(time.time() * 1000)
    fast = planning.plan_expire(table, config, now_ms, reach=Reachability(table))
    with monkeypatch.context() as m:
        m.setattr(pp.PartitionRenderer, "of", classmethod(lambda cls, schema: None))
        assert planning.plan_expire(table, config, now_ms, reach=Reachability(table)) == fast
    return fast


def test_an_expiration_plans_the_same_without_pypaimon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Overwritten partitions with values that need escaping (pypaimon writes the directories)."""
    t = tp.append_table(str(tmp_path))
    for i, dt in enumerate(["2026-01-01", "a b/c:d", "x=%y", "", "日本", "2026-01-01", "a b/c:d", ""] * 2):
        tp.overwrite(t, tp.rows(dt, i * 10, 2), {"dt": dt})
    table = open_table(str(tmp_path), "db.orders")
    config = planning.ExpireConfig(retain_min=2, retain_max=3, time_retained=timedelta(0), expire_limit=100)
    plan = _plans_equal_without_renderer(table, config, monkeypatch)
    data = [f.path for step in plan.steps for f in getattr(step, "files", ()) if "/bucket-" in f.path]
    assert {p.split("/dt=", 1)[1].split("/", 1)[0] for p in data} >= {"a b%2Fc%3Ad", "x%3D%25y", "日本"}
    assert all(Path(p).parent.is_dir() for p in data), "the directories pypaimon wrote"


def test_a_java_table_plans_the_same_without_pypaimon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = tp.extract_java_fixture(tmp_path)
    for name in tp.JAVA_TABLES:
        table = open_table_path(str(warehouse / "default.db" / name))
        config = planning.ExpireConfig(retain_min=1, retain_max=1, time_retained=timedelta(0), expire_limit=100)
        _plans_equal_without_renderer(table, config, monkeypatch)
        resolver = PartitionPathResolver(table)
        reach = Reachability(table)
        for snapshot in table.snapshots():
            for ref in reach.delta_refs(snapshot):
                assert ref.kind in (manifests.ADD, manifests.DELETE)
                path = resolver.file_paths(ref)[0]
                assert path == f"{resolver.pypaimon_bucket_dir(ref.partition, ref.bucket)}/{ref.file_name}"
                assert ref.kind == manifests.DELETE or Path(path).parent.is_dir(), path
