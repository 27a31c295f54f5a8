"""Metadata formats byte for byte: Jackson pretty printing, snapshot/tag/schema/consumer JSON,
hints. Golden inputs are the Java-written fixture and the inline strings of upstream
``SnapshotTest``/``TagTest`` (apache/paimon, paimon-core/src/test/java/org/apache/paimon/)."""

from __future__ import annotations

import json
import tarfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core import errors
from tablekeeper.core.paimon.metadata import hints, jackson
from tablekeeper.core.paimon.metadata.consumer import Consumer
from tablekeeper.core.paimon.metadata.schema import TableSchema
from tablekeeper.core.paimon.metadata.snapshot import Snapshot
from tablekeeper.core.paimon.metadata.tag import (
    Tag,
    decode_duration,
    decode_local_datetime,
    encode_duration,
    encode_local_datetime,
)
from tests.support import paimon as tp


# -- the Java-written fixture ------------------------------------------------------------------
def _java_members() -> dict[str, bytes]:
    """Every regular file of the tarball, by path (read straight from the archive)."""
    out: dict[str, bytes] = {}
    with tarfile.open(tp.FIXTURE_TARBALL) as tar:
        for member in tar.getmembers():
            if member.isfile():
                handle = tar.extractfile(member)
                assert handle is not None
                out[member.name.removeprefix("./")] = handle.read()
    return out


JAVA = _java_members()
JAVA_SNAPSHOTS = sorted(n for n in JAVA if "/snapshot/snapshot-" in n)
JAVA_SCHEMAS = sorted(n for n in JAVA if "/schema/schema-" in n)
JAVA_HINTS = sorted(n for n in JAVA if n.endswith(("/EARLIEST", "/LATEST")))


def test_fixture_has_what_the_tests_below_rely_on() -> None:
    assert len(JAVA) == 91
    assert len(JAVA_SCHEMAS) == len(tp.JAVA_TABLES) == 3
    assert len(JAVA_SNAPSHOTS) >= 2 * len(tp.JAVA_TABLES)
    assert len(JAVA_HINTS) == 6


@pytest.mark.parametrize("name", JAVA_SNAPSHOTS + JAVA_SCHEMAS)
def test_jackson_dumps_reproduces_java_json(name: str) -> None:
    raw = JAVA[name].decode("utf-8")
    assert jackson.dumps(json.loads(raw)) == raw


@pytest.mark.parametrize("name", JAVA_SNAPSHOTS)
def test_java_snapshot_round_trips_byte_identically(name: str) -> None:
    raw = JAVA[name].decode("utf-8")
    snapshot = Snapshot.from_json(raw)
    assert snapshot.to_json() == raw
    assert snapshot.version == 3
    assert snapshot.id == int(name.rsplit("-", 1)[1])
    assert snapshot.uuid is None  # written by a 2.1-dev build without uuid/writerVersion


@pytest.mark.parametrize("name", JAVA_SNAPSHOTS)
def test_java_snapshot_as_a_tag_without_retention_is_the_snapshot_json(name: str) -> None:
    raw = JAVA[name].decode("utf-8")
    tag = Tag.from_json("t", raw)
    assert tag.create_time is None and tag.time_retained is None
    assert tag.to_json() == raw


@pytest.mark.parametrize("name", JAVA_SCHEMAS)
def test_java_schema_parses(name: str) -> None:
    schema = TableSchema.from_json(JAVA[name])
    assert schema.id == 0
    assert schema.primary_keys == ("id",)
    assert schema.partition_keys == ()
    assert schema.options["deletion-vectors.enabled"] == "true"
    assert schema.field_type("id") == "INT NOT NULL"
    assert schema.raw["highestFieldId"] >= 1


@pytest.mark.parametrize("name", JAVA_HINTS)
def test_java_hints_have_no_trailing_newline(name: str) -> None:
    raw = JAVA[name]
    assert raw.isdigit(), raw
    assert hints.encode_hint(hints.decode_hint(raw) or 0) == raw.decode()


# -- upstream golden strings: TagTest ----------------------------------------------------------
# TagTest.snapshot = new Snapshot(0, 0L, null x8, 0L, APPEND, 1000, 0L, 0L, null x7)
TAG_TEST_SNAPSHOT = (
    "{\n"
    '  "version" : 3,\n'
    '  "id" : 0,\n'
    '  "schemaId" : 0,\n'
    '  "baseManifestList" : null,\n'
    '  "deltaManifestList" : null,\n'
    '  "commitUser" : null,\n'
    '  "commitIdentifier" : 0,\n'
    '  "commitKind" : "APPEND",\n'
    '  "timeMillis" : 1000,\n'
    '  "totalRecordCount" : 0,\n'
    '  "deltaRecordCount" : 0\n'
    "}"
)
TAG_TEST_WITH_TTL = (
    TAG_TEST_SNAPSHOT[:-2]
    + ",\n"
    '  "tagCreateTime" : [ 1969, 1, 1, 0, 0, 0, 123456789 ],\n'
    '  "tagTimeRetained" : 5.000000000\n'
    "}"
)


def _tag_test_snapshot() -> Snapshot:
    return Snapshot({
        "version": 3, "id": 0, "schemaId": 0, "baseManifestList": None, "baseManifestListSize": None,
        "deltaManifestList": None, "deltaManifestListSize": None, "changelogManifestList": None,
        "changelogManifestListSize": None, "indexManifest": None, "commitUser": None,
        "commitIdentifier": 0, "commitKind": "APPEND", "timeMillis": 1000, "totalRecordCount": 0,
        "deltaRecordCount": 0, "changelogRecordCount": None, "watermark": None, "statistics": None,
        "properties": None, "nextRowId": None,
    })


def test_tagtest_from_json() -> None:
    """TagTest#testFromJson: Tag.fromJson(snapshot.toJson()).toJson()."""
    snapshot_json = _tag_test_snapshot().to_json()
    assert snapshot_json == TAG_TEST_SNAPSHOT
    assert Tag.from_json("t", snapshot_json).to_json() == TAG_TEST_SNAPSHOT


def test_tagtest_from_snapshot_and_tag_ttl() -> None:
    """TagTest#testFromSnapshotAndTagTtl: Duration.ofSeconds(5), 1969-01-01T00:00:00.123456789."""
    tag = Tag("t", _tag_test_snapshot(), datetime(1969, 1, 1, 0, 0, 0, 123456), timedelta(seconds=5),
              create_time_array=(1969, 1, 1, 0, 0, 0, 123456789))
    assert tag.to_json() == TAG_TEST_WITH_TTL

    parsed = Tag.from_json("t", TAG_TEST_WITH_TTL)
    assert parsed.snapshot.to_json() == tag.snapshot.to_json() == TAG_TEST_SNAPSHOT
    assert parsed.to_json() == TAG_TEST_WITH_TTL  # nanoseconds survive the round trip
    assert parsed.create_time == datetime(1969, 1, 1, 0, 0, 0, 123456)
    assert parsed.time_retained == timedelta(seconds=5)
    assert parsed.expires_at() == datetime(1969, 1, 1, 0, 0, 5, 123456)


def test_a_changed_create_time_is_not_masked_by_the_original_nanoseconds() -> None:
    import dataclasses

    parsed = Tag.from_json("t", TAG_TEST_WITH_TTL)
    moved = dataclasses.replace(parsed, create_time=datetime(2026, 2, 3, 4, 5, 6, 7))
    assert '"tagCreateTime" : [ 2026, 2, 3, 4, 5, 6, 7000 ]' in moved.to_json()


# -- upstream golden strings: SnapshotTest -----------------------------------------------------
SNAPSHOT_TEST_IGNORE_PROPERTIES = (
    "{\n"
    '  "version" : 3,\n'
    '  "id" : 5,\n'
    '  "schemaId" : 0,\n'
    '  "baseManifestList" : null,\n'
    '  "deltaManifestList" : null,\n'
    '  "changelogManifestList" : null,\n'
    '  "commitUser" : null,\n'
    '  "commitIdentifier" : 0,\n'
    '  "commitKind" : "APPEND",\n'
    '  "timeMillis" : 1234,\n'
    '  "totalRecordCount" : null,\n'
    '  "deltaRecordCount" : null,\n'
    '  "unknownKey" : 22222\n'
    "}"
)
SNAPSHOT_TEST_WITH_SIZES = (
    "{\n"
    '  "version" : 3,\n'
    '  "id" : 5,\n'
    '  "schemaId" : 0,\n'
    '  "baseManifestList" : null,\n'
    '  "baseManifestListSize" : 6,\n'
    '  "deltaManifestList" : null,\n'
    '  "deltaManifestListSize" : 8,\n'
    '  "changelogManifestListSize" : 10,\n'
    '  "commitUser" : null,\n'
    '  "commitIdentifier" : 0,\n'
    '  "commitKind" : "APPEND",\n'
    '  "timeMillis" : 1234,\n'
    '  "totalRecordCount" : null,\n'
    '  "deltaRecordCount" : null,\n'
    '  "unknownKey" : 22222\n'
    "}"
)
SNAPSHOT_TEST_OLD = (
    "{\n"
    '  "version" : 3,\n'
    '  "id" : 1,\n'
    '  "schemaId" : 0,\n'
    '  "baseManifestList" : "m-0",\n'
    '  "deltaManifestList" : "m-1",\n'
    '  "commitUser" : "user",\n'
    '  "commitIdentifier" : 0,\n'
    '  "commitKind" : "APPEND",\n'
    '  "timeMillis" : 1000,\n'
    '  "totalRecordCount" : 10,\n'
    '  "deltaRecordCount" : 5\n'
    "}"
)
SNAPSHOT_TEST_WITH_OPERATION = (
    "{\n"
    '  "version" : 3,\n'
    '  "id" : 2,\n'
    '  "schemaId" : 0,\n'
    '  "baseManifestList" : "m-0",\n'
    '  "deltaManifestList" : "m-1",\n'
    '  "commitUser" : "user",\n'
    '  "commitIdentifier" : 1,\n'
    '  "commitKind" : "APPEND",\n'
    '  "timeMillis" : 2000,\n'
    '  "totalRecordCount" : 20,\n'
    '  "deltaRecordCount" : 10,\n'
    '  "operation" : "MERGE"\n'
    "}"
)


def test_snapshottest_json_ignore_properties() -> None:
    """SnapshotTest#testJsonIgnoreProperties: unknown keys are accepted; no uuid."""
    snapshot = Snapshot.from_json(SNAPSHOT_TEST_IGNORE_PROPERTIES)
    assert snapshot.uuid is None
    assert snapshot.id == 5 and snapshot.time_millis == 1234
    assert snapshot.changelog_manifest_list is None
    # tablekeeper keeps the unknown key (Java drops it) and drops the NON_NULL null, as Java does
    out = snapshot.to_json()
    assert '"changelogManifestList"' not in out
    assert out.endswith('  "deltaRecordCount" : null,\n  "unknownKey" : 22222\n}')


def test_snapshottest_with_sizes() -> None:
    """SnapshotTest#testSnapshotWithSizes: sizes are read and survive a round trip."""
    snapshot = Snapshot.from_json(SNAPSHOT_TEST_WITH_SIZES)
    assert snapshot.fields["baseManifestListSize"] == 6
    assert snapshot.fields["deltaManifestListSize"] == 8
    assert snapshot.fields["changelogManifestListSize"] == 10
    assert snapshot.to_json() == SNAPSHOT_TEST_WITH_SIZES
    assert Snapshot.from_json(snapshot.to_json()).fields == snapshot.fields


def test_snapshottest_with_operation() -> None:
    """SnapshotTest#testSnapshotWithOperation: null operation omitted, MERGE round-trips."""
    old = Snapshot.from_json(SNAPSHOT_TEST_OLD)
    assert "operation" not in old.fields
    assert old.to_json() == SNAPSHOT_TEST_OLD
    assert "operation" not in old.to_json()
    with_op = Snapshot.from_json(SNAPSHOT_TEST_WITH_OPERATION)
    assert with_op.fields["operation"] == "MERGE"
    assert with_op.to_json() == SNAPSHOT_TEST_WITH_OPERATION


# -- snapshot JSON details ---------------------------------------------------------------------
def test_unknown_fields_are_kept_after_known_ones_and_log_offsets_dropped() -> None:
    """A Java <= 1.3 snapshot (``logOffsets``) and a field from a future writer."""
    written = (
        "{\n"
        '  "version" : 3,\n'
        '  "id" : 4,\n'
        '  "schemaId" : 1,\n'
        '  "futureField" : {\n'
        '    "a" : [ 1, 2 ]\n'
        "  },\n"
        '  "baseManifestList" : "manifest-list-a-0",\n'
        '  "deltaManifestList" : "manifest-list-a-1",\n'
        '  "changelogManifestList" : null,\n'
        '  "indexManifest" : null,\n'
        '  "commitUser" : "u",\n'
        '  "commitIdentifier" : 9223372036854775807,\n'
        '  "commitKind" : "COMPACT",\n'
        '  "timeMillis" : 1700000000000,\n'
        '  "logOffsets" : { },\n'
        '  "totalRecordCount" : 12,\n'
        '  "deltaRecordCount" : 0,\n'
        '  "changelogRecordCount" : 0,\n'
        '  "watermark" : -9223372036854775808,\n'
        '  "properties" : {\n'
        '    "k" : "v"\n'
        "  },\n"
        '  "futureScalar" : "x",\n'
        '  "futureNull" : null\n'
        "}"
    )
    expected = (
        "{\n"
        '  "version" : 3,\n'
        '  "id" : 4,\n'
        '  "schemaId" : 1,\n'
        '  "baseManifestList" : "manifest-list-a-0",\n'
        '  "deltaManifestList" : "manifest-list-a-1",\n'
        '  "commitUser" : "u",\n'
        '  "commitIdentifier" : 9223372036854775807,\n'
        '  "commitKind" : "COMPACT",\n'
        '  "timeMillis" : 1700000000000,\n'
        '  "totalRecordCount" : 12,\n'
        '  "deltaRecordCount" : 0,\n'
        '  "changelogRecordCount" : 0,\n'
        '  "watermark" : -9223372036854775808,\n'
        '  "properties" : {\n'
        '    "k" : "v"\n'
        "  },\n"
        '  "futureField" : {\n'
        '    "a" : [ 1, 2 ]\n'
        "  },\n"
        '  "futureScalar" : "x"\n'
        "}"
    )
    snapshot = Snapshot.from_json(written)
    assert snapshot.to_json() == expected
    assert snapshot.watermark == -(2**63)
    assert Snapshot.from_json(expected).to_json() == expected


def test_pypaimon_compact_snapshot_is_rewritten_in_java_order() -> None:
    compact = json.dumps({
        "version": 3, "id": 2, "schemaId": 0, "baseManifestList": "b", "deltaManifestList": "d",
        "totalRecordCount": 6, "deltaRecordCount": 3, "commitUser": "u",
        "commitIdentifier": 9223372036854775807, "commitKind": "APPEND", "timeMillis": 1795238294248,
        "baseManifestListSize": 1358, "deltaManifestListSize": 1358, "uuid": "93e1",
        "writerVersion": "python-2.1.0",
    })
    out = Snapshot.from_json(compact).to_json()
    keys = [line.split('"')[1] for line in out.splitlines()[1:-1]]
    assert keys == ["version", "uuid", "id", "schemaId", "baseManifestList", "baseManifestListSize",
                    "deltaManifestList", "deltaManifestListSize", "commitUser", "writerVersion",
                    "commitIdentifier", "commitKind", "timeMillis", "totalRecordCount", "deltaRecordCount"]
    assert json.loads(out) == json.loads(compact)


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", '{"id": 1}', '{"id": 1, "schemaId": 0, "commitKind": "APPEND"}'])
def test_broken_snapshot_json_is_a_format_error(text: str) -> None:
    with pytest.raises(errors.FormatError):
        Snapshot.from_json(text)


# -- tag JSON ----------------------------------------------------------------------------------
def _with_tag_fields(snapshot_json: str, create: str, retained: str) -> str:
    return (snapshot_json[:-2] + ",\n"
            f'  "tagCreateTime" : {create},\n'
            f'  "tagTimeRetained" : {retained}\n'
            "}")


@pytest.mark.parametrize(("array", "value"), [
    ("[ 2026, 1, 2, 3, 4 ]", datetime(2026, 1, 2, 3, 4)),  # seconds and nanos both zero: omitted
    ("[ 2026, 1, 2, 3, 4, 5 ]", datetime(2026, 1, 2, 3, 4, 5)),  # nanos zero: omitted
    ("[ 2026, 1, 2, 3, 4, 0, 1000 ]", datetime(2026, 1, 2, 3, 4, 0, 1)),  # seconds kept before nanos
    ("[ 2026, 11, 21, 4, 13, 44, 983258000 ]", datetime(2026, 11, 21, 4, 13, 44, 983258)),
    ("[ 2026, 12, 31, 23, 59, 59, 999999999 ]", datetime(2026, 12, 31, 23, 59, 59, 999999)),  # true nanos
])
def test_tag_create_time_arrays_round_trip(array: str, value: datetime) -> None:
    raw = _with_tag_fields(TAG_TEST_SNAPSHOT, array, "86400.000000000")
    tag = Tag.from_json("t", raw)
    assert tag.create_time == value
    assert tag.time_retained == timedelta(days=1)
    assert tag.snapshot_id == 0
    assert tag.to_json() == raw
    if not array.endswith("999999999 ]"):
        assert jackson.dumps(encode_local_datetime(value)) == array
        assert Tag("t", tag.snapshot, value, timedelta(days=1)).to_json() == raw


@pytest.mark.parametrize(("text", "value"), [
    ("86400.000000000", timedelta(days=1)),
    ("5.000000000", timedelta(seconds=5)),
    ("1.500000000", timedelta(seconds=1, milliseconds=500)),
    ("3600.000001000", timedelta(hours=1, microseconds=1)),
    ("0.0", timedelta(0)),  # Jackson's DecimalUtils writes zero as 0.0
])
def test_tag_time_retained_round_trips(text: str, value: timedelta) -> None:
    assert str(encode_duration(value)) == text
    assert decode_duration(json.loads(text)) == value
    raw = _with_tag_fields(TAG_TEST_SNAPSHOT, "[ 2026, 1, 2, 3, 4, 5 ]", text)
    assert Tag.from_json("t", raw).to_json() == raw


@pytest.mark.parametrize(("value", "expected"), [
    (86400.0, timedelta(days=1)),  # pypaimon: td.total_seconds()
    (86400, timedelta(days=1)),
    ("PT24H", timedelta(days=1)),
    (None, None),
])
def test_tag_time_retained_other_spellings(value: Any, expected: timedelta | None) -> None:
    assert decode_duration(value) == expected


def test_tag_create_time_other_spellings() -> None:
    assert decode_local_datetime(None) is None
    assert decode_local_datetime([2026, 1, 2]) == datetime(2026, 1, 2)
    assert decode_local_datetime("2026-01-02T03:04:05.123456") == datetime(2026, 1, 2, 3, 4, 5, 123456)
    with pytest.raises(errors.FormatError):
        decode_local_datetime("yesterday")
    with pytest.raises(errors.FormatError):
        decode_local_datetime({"y": 2026})


def test_tag_without_retention_serialises_exactly_as_its_snapshot() -> None:
    snapshot = Snapshot.from_json(SNAPSHOT_TEST_WITH_OPERATION)
    assert Tag("t", snapshot).to_json() == snapshot.to_json() == SNAPSHOT_TEST_WITH_OPERATION
    # Java writes plain snapshot JSON whenever there is no retention, create time or not
    assert Tag("t", snapshot, create_time=datetime(2026, 1, 1)).to_json() == SNAPSHOT_TEST_WITH_OPERATION


def test_tag_fields_never_leak_into_the_snapshot() -> None:
    tag = Tag.from_json("t", TAG_TEST_WITH_TTL)
    assert "tagCreateTime" not in tag.snapshot.fields
    assert tag.snapshot.to_json() == TAG_TEST_SNAPSHOT


# -- tags written by pypaimon ------------------------------------------------------------------
@pytest.fixture(scope="module")
def pypaimon_tags(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    warehouse = tmp_path_factory.mktemp("wh")
    cat = tp.catalog(str(warehouse))
    table = tp.create_table(cat, "db.events", tp.EVENTS_SCHEMA)
    tp.write(table, [{"id": 1, "payload": "a"}])
    tp.write(table, [{"id": 2, "payload": "b"}])
    table.create_tag("plain", snapshot_id=1)
    table.create_tag("ttl", time_retained="1d")
    table.create_tag("short", snapshot_id=1, time_retained="90 min")
    return table, warehouse / "db.db" / "events" / "tag"


def test_pypaimon_compact_tags_parse(pypaimon_tags: tuple[Any, Path]) -> None:
    table, tag_dir = pypaimon_tags
    raw = (tag_dir / "tag-ttl").read_text()
    assert raw.startswith('{"version": 3')  # compact json.dumps, not Jackson
    assert '"tagTimeRetained": 86400.0' in raw

    tag = Tag.from_json("ttl", raw)
    theirs = table.tag_manager().get("ttl")
    assert tag.snapshot_id == theirs.id == 2
    assert tag.time_retained == theirs.tag_time_retained == timedelta(days=1)
    assert tag.create_time == theirs.tag_create_time
    assert abs(datetime.now() - tag.create_time) < timedelta(minutes=10)
    assert Tag.from_json("short", (tag_dir / "tag-short").read_text()).time_retained == timedelta(minutes=90)

    plain = Tag.from_json("plain", (tag_dir / "tag-plain").read_text())
    assert (plain.snapshot_id, plain.create_time, plain.time_retained) == (1, None, None)


def test_our_rewrite_of_a_pypaimon_tag_is_java_shaped_and_pypaimon_readable(pypaimon_tags: tuple[Any, Path]) -> None:
    table, tag_dir = pypaimon_tags
    tag = Tag.from_json("ttl", (tag_dir / "tag-ttl").read_text())
    text = tag.to_json()
    assert jackson.dumps(json.loads(text, parse_float=jackson.RawNumber)) == text  # Jackson layout
    assert '"tagTimeRetained" : 86400.000000000' in text
    assert json.loads(text)["tagCreateTime"] == json.loads((tag_dir / "tag-ttl").read_text())["tagCreateTime"]

    (tag_dir / "tag-copy").write_text(text)
    try:
        copy = table.tag_manager().get("copy")
        original = table.tag_manager().get("ttl")
        assert copy.id == original.id
        assert copy.tag_time_retained == original.tag_time_retained
        assert copy.tag_create_time == original.tag_create_time
        assert copy.base_manifest_list == original.base_manifest_list
        assert tp.read_rows(table, {"scan.tag-name": "copy"}) == tp.read_rows(table, {"scan.tag-name": "ttl"})
    finally:
        (tag_dir / "tag-copy").unlink()


# -- hints and consumers -----------------------------------------------------------------------
def test_hints_are_decimal_text_without_newline() -> None:
    assert hints.encode_hint(12) == "12"
    assert not hints.encode_hint(1).endswith("\n")
    assert hints.decode_hint("12") == 12
    assert hints.decode_hint(b"7") == 7
    assert hints.decode_hint("12\n") == 12  # tolerate what other writers may add
    assert hints.decode_hint("-1") == -1  # changelog LATEST after a rollback: "unknown"
    assert hints.decode_hint("") is None
    assert hints.decode_hint("abc") is None


def test_consumer_json() -> None:
    java = '{\n  "nextSnapshot" : 5\n}'
    consumer = Consumer.from_json("c1", java, mtime_ms=42)
    assert (consumer.consumer_id, consumer.next_snapshot, consumer.mtime_ms) == ("c1", 5, 42)
    assert consumer.to_json() == java
    assert Consumer.from_json("py", '{"nextSnapshot": 9}').next_snapshot == 9  # pypaimon's compact form
    with pytest.raises(errors.FormatError):
        Consumer.from_json("c", '{"next": 1}')
    with pytest.raises(errors.FormatError):
        Consumer.from_json("c", "{")


def test_consumer_written_by_pypaimon(tmp_path: Path) -> None:
    from pypaimon.consumer.consumer import Consumer as PyConsumer

    table = tp.create_table(tp.catalog(str(tmp_path)), "db.c", tp.EVENTS_SCHEMA)
    table.consumer_manager().reset_consumer("reader-1", PyConsumer(next_snapshot=3))
    raw = (tmp_path / "db.db" / "c" / "consumer" / "consumer-reader-1").read_text()
    assert Consumer.from_json("reader-1", raw).next_snapshot == 3


# -- Jackson corner cases ----------------------------------------------------------------------
def test_jackson_layout_corner_cases() -> None:
    assert jackson.dumps({}) == "{ }"
    assert jackson.dumps([]) == "[ ]"
    assert jackson.dumps({"a": {}, "b": []}) == '{\n  "a" : { },\n  "b" : [ ]\n}'
    assert jackson.dumps({"a": [{"x": 1}, {"y": [1, 2]}]}) == (
        '{\n  "a" : [ {\n    "x" : 1\n  }, {\n    "y" : [ 1, 2 ]\n  } ]\n}')
    assert jackson.dumps({"s": "grüß \"q\""}) == '{\n  "s" : "grüß \\"q\\""\n}'
    assert jackson.dumps({"t": True, "f": False, "n": None}) == '{\n  "t" : true,\n  "f" : false,\n  "n" : null\n}'
    assert jackson.dumps(jackson.RawNumber("86400.000000000")) == "86400.000000000"
    assert jackson.dumps(1.0) == "1.0"
    assert jackson.dumps(0.5) == "0.5"
