"""The byte-level name scan of orphan cleanup must never miss a name that occurs in a block
(a miss would delete a referenced file); reporting extra names only keeps files."""

from __future__ import annotations

import io
import uuid

import fastavro
from hypothesis import given, settings
from hypothesis import strategies as st

from tablekeeper.core.reclaim.orphans import name_scan
from tablekeeper.core.reclaim.orphans.name_scan import NameScanner

PREFIXES = ("data-", "changelog-")


def paimon_name(prefix: str = "data-", n: int = 0, ext: str = "parquet") -> str:
    return f"{prefix}{uuid.uuid4()}-{n}.{ext}"


def avro_string(text: str) -> bytes:
    """How an Avro writer stores a string: zigzag varint length, then the UTF-8 bytes."""
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, {"type": "string"}, text)
    return buf.getvalue()


def scan(names: list[str], *blocks: bytes) -> set[str]:
    scanner = NameScanner(names, PREFIXES)
    assert scanner.usable
    for block in blocks:
        scanner.feed(block)
    return set(names) - scanner.missing()


def test_names_stored_as_avro_strings_are_found_and_others_are_missing() -> None:
    present = [paimon_name(), paimon_name("changelog-", 3, "orc"), paimon_name(n=12)]
    absent = [paimon_name(), paimon_name("changelog-")]
    block = b"".join(avro_string(n) + b"\x02\xff" for n in present)
    assert scan(present + absent, block) == set(present)


def test_names_are_found_whatever_bytes_surround_them() -> None:
    # the length byte before a name can be a hex letter or a digit, and the bytes after it a digit or
    # a letter: the key must still start at the prefix and end at the '.' after the counter
    names = [paimon_name(n=i) for i in range(40)]
    glue = [b"", b"a", b"f0", b"9", b"-", b".", b"data-", b"data-0", b"\x00", b"xdata-"]
    block = b"".join(glue[i % len(glue)] + n.encode() + glue[(i + 3) % len(glue)] for i, n in enumerate(names))
    assert scan(names, block) == set(names)


def test_adjacent_names_without_separator_are_all_found() -> None:
    names = [paimon_name(n=i) for i in range(5)]
    assert scan(names, "".join(names).encode()) == set(names)


def test_a_prefix_not_followed_by_a_key_does_not_hide_later_names() -> None:
    # 'data-' inside a partition value or a stats blob: counted, not a key, so the scan goes one by one
    names = [paimon_name(n=i) for i in range(3)]
    block = b"dt=data-2024|data-|" + b"|".join(n.encode() for n in names) + b"|data-zz"
    assert scan(names, block) == set(names)


def test_names_found_across_blocks_and_external_paths() -> None:
    a, b = paimon_name(), paimon_name()
    assert scan([a, b], avro_string("s3://bucket/wh/db.db/t/bucket-0/" + a), avro_string(b)) == {a, b}


def test_names_sharing_a_key_are_both_kept() -> None:
    base = f"data-{uuid.uuid4()}-0."
    parquet, index = base + "parquet", base + "parquet.index"
    orc = base + "orc"
    assert scan([parquet, index, orc], avro_string(parquet)) == {parquet, index, orc}


def test_names_of_another_shape_are_searched_literally() -> None:
    odd = ["inner-file", "file", "data-0a0a-orphan-0.parquet", "tmp-\u00e9.parquet", "line\nbreak"]
    block = avro_string("x/inner-file") + avro_string("line\nbreak")
    # 'file' occurs inside 'inner-file': a literal search sees it too (it only keeps a file)
    assert scan(odd, block) == {"inner-file", "file", "line\nbreak"}


def test_custom_prefixes_and_unusable_ones() -> None:
    custom = f"part-{uuid.uuid4()}-0.parquet"
    scanner = NameScanner([custom], ("part-",))
    scanner.feed(avro_string(custom))
    assert scanner.missing() == set()
    # a prefix whose occurrences could overlap ('aa') is not used for keys: its names go literal
    overlapping = f"aa{uuid.uuid4()}-0.parquet"
    scanner = NameScanner([overlapping], ("aa",))
    scanner.feed(b"a" + avro_string(overlapping))
    assert scanner.missing() == set()


def test_too_many_names_of_another_shape_make_the_scanner_unusable() -> None:
    odd = [f"debris-{i}" for i in range(name_scan.MAX_LITERAL_NAMES + 1)]
    assert not NameScanner(odd, PREFIXES).usable
    assert NameScanner(odd[:-1] + [paimon_name() for _ in range(100)], PREFIXES).usable


names_strategy = st.lists(
    st.builds(paimon_name, st.sampled_from(PREFIXES), st.integers(0, 10_000), st.sampled_from(["parquet", "orc"])),
    min_size=1, max_size=30, unique=True)


@settings(max_examples=200, deadline=None)
@given(names=names_strategy, data=st.data())
def test_property_never_misses_an_occurring_name(names: list[str], data: st.DataObject) -> None:
    present = data.draw(st.lists(st.sampled_from(names), unique=True))
    noise = st.binary(max_size=12) | st.sampled_from([b"data-", b"changelog-", b"-0.", b"0123abcd-"])
    parts: list[bytes] = []
    for n in present:
        parts.append(data.draw(noise))
        parts.append(n.encode())
    parts.append(data.draw(noise))
    blob = b"".join(parts)
    cut = data.draw(st.integers(0, 3))  # spread over blocks, never splitting a name
    bounds = sorted({0, len(blob)} | {sum(len(p) for p in parts[: 2 * i + 1]) for i in range(min(cut, len(present)))})
    blocks = [blob[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    found = scan(names, *blocks)
    assert set(present) <= found
    # and anything reported occurs up to its key (over-approximation only on a shared key)
    for n in found:
        assert n.rsplit(".", 1)[0].encode() + b"." in blob


def test_names_of_several_prefixes_in_one_scanner() -> None:
    # a table whose data-file.prefix changed: old 'data-' files and new 'part-' files side by side
    old, new, gone = paimon_name(), f"part-{uuid.uuid4()}-0.orc", f"part-{uuid.uuid4()}-1.orc"
    scanner = NameScanner([old, new, gone], ("part-", "changelog-", "data-"))
    assert scanner.usable
    scanner.feed(avro_string(old) + avro_string(new))
    assert scanner.missing() == {gone}


def test_what_another_scanner_saw_is_merged() -> None:
    """A forked helper builds the same scanner, scans other blocks and exports what it did not
    see; a name stays missing only if neither scanner saw it (keyed and literal names)."""
    names = [paimon_name(), paimon_name("changelog-"), paimon_name(), "odd-name.parquet"]
    here, there = NameScanner(names, PREFIXES), NameScanner(names, PREFIXES)
    here.feed(avro_string(names[0]))
    there.feed(avro_string(names[1]) + avro_string("odd-name.parquet"))
    assert here.merge_state(there.export_state())
    assert here.missing() == {names[2]}
    # a state of other names does not fit, and nothing is merged
    assert not here.merge_state(NameScanner(names[:2], PREFIXES).export_state())
    assert here.missing() == {names[2]}


def test_key_finder_searches_only_prefixes_some_name_has() -> None:
    finder = name_scan.KeyFinder.for_names([paimon_name()], PREFIXES)
    assert finder.prefixes == (b"data-",)
    assert name_scan.KeyFinder.for_names([paimon_name("changelog-"), paimon_name()], PREFIXES).prefixes == \
        (b"changelog-", b"data-")
