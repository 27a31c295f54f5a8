"""The native byte scan of orphan cleanup (core/reclaim/orphans/_name_scan_native.c via core/reclaim/orphans/name_scan.py, issue
13): it drops exactly the keys the regex path finds (random blocks with keys, near-misses,
overlapping and nested prefixes, keys cut at the block's end), its bit filter never hides a
listed key, and a NameScanner reports the same missing names with and without it on the
manifests of a pypaimon-written table."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tablekeeper.core.paimon import manifests
from tablekeeper.core.reclaim.orphans import name_scan
from tablekeeper.core.storage import FileIO
from tests.support import paimon as tp

if os.environ.get("CI") == "true":
    assert name_scan._NATIVE is not None, "the native name scan was not built (scripts/bootstrap: pip install -e .)"
pytestmark = pytest.mark.skipif(name_scan._NATIVE is None, reason="the native name scan is not built here (no C compiler)")

NATIVE = name_scan._NATIVE
HEXISH = "0123456789abcdef-"


def _key(rng: random.Random, prefix: bytes) -> bytes:
    tail = "".join(rng.choice(HEXISH) for _ in range(36))
    return prefix + f"{tail}-{rng.randrange(0, 1000)}.".encode()


def _block(rng: random.Random, prefixes: tuple[bytes, ...]) -> tuple[bytes, list[bytes]]:
    """Random bytes with keys, broken keys (bad tail, no digits, no dot, cut short) and
    doubled prefixes; returns the block and some of its keys."""
    parts: list[bytes] = []
    keys: list[bytes] = []
    for _ in range(rng.randrange(1, 40)):
        prefix = rng.choice(prefixes)
        kind = rng.randrange(8)
        key = _key(rng, prefix)
        if kind == 0:
            parts.append(key[:-1] + b"x")  # no dot
        elif kind == 1:
            parts.append(key[:len(prefix) + 10] + b"z" + key[len(prefix) + 11:])  # a tail byte off
        elif kind == 2:
            parts.append(prefix + key)  # a doubled prefix: the key starts at the second
            keys.append(key)
        elif kind == 3:
            parts.append(prefix + key[len(prefix):len(prefix) + 37] + b".")  # no digits
        else:
            parts.append(key + rng.choice([b"parquet", b"orc", b"", b"index"]))
            keys.append(key)
        parts.append(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 30))))
    block = b"".join(parts)
    if rng.random() < 0.3:  # a key cut at the end
        block += _key(rng, rng.choice(prefixes))[: rng.randrange(1, 45)]
    return block, keys


@pytest.mark.parametrize("seed", range(40))
def test_drops_exactly_what_the_regex_path_finds(seed: int) -> None:
    rng = random.Random(seed)
    prefixes = (b"data-", b"changelog-", b"d-", b"aa-data-")
    block, keys = _block(rng, prefixes)
    decoys = {_key(rng, p) for p in prefixes for _ in range(5)}  # listed, never in the block
    for prefix in prefixes:
        found = set(name_scan._keys_one_by_one(block, prefix))
        listed = set(keys) | decoys | found
        unseen = set(listed)
        count = NATIVE.discard_keys(block, prefix, unseen, NATIVE.make_filter(b"\n".join(sorted(listed))))
        assert unseen == listed - found
        assert count == len(name_scan._keys_one_by_one(block, prefix))
        assert found >= {k for k in keys if k.startswith(prefix)}


def test_filter_never_hides_a_listed_key() -> None:
    rng = random.Random(7)
    keys = [_key(rng, b"data-") for _ in range(5000)]
    block = b"\x00".join(keys)
    unseen = set(keys)
    assert NATIVE.discard_keys(block, b"data-", unseen, NATIVE.make_filter(b"\n".join(keys))) == len(keys)
    assert unseen == set()


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError):
        NATIVE.discard_keys(b"data-", b"data-", set(), b"\x00" * 3)  # not a filter
    with pytest.raises(ValueError):
        NATIVE.discard_keys(b"data-", b"", set(), NATIVE.make_filter(b""))
    with pytest.raises(TypeError):
        NATIVE.discard_keys(b"data-", b"data-", frozenset(), NATIVE.make_filter(b""))


def test_scanner_reports_the_same_missing_names_with_and_without_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    tp.build_history(str(tmp_path), commits=6)
    table = tmp_path / "db.db" / "orders"
    listed = sorted(n for _d, _s, names in os.walk(table) for n in names if n.startswith("data-"))
    rng = random.Random(3)
    names = listed + [_key(rng, b"data-").decode() + "parquet" for _ in range(50)] + ["data-odd-name.parquet"]
    manifest_dir = table / "manifest"
    blocks = [b for n in sorted(os.listdir(manifest_dir)) if n.startswith("manifest-") and "list" not in n
              for b in manifests.read_manifest_payload(FileIO.for_uri(str(tmp_path)), str(manifest_dir / n)) or []]
    assert blocks and listed

    def missing() -> set[str]:
        scanner = name_scan.NameScanner(names, ("data-", "changelog-"))
        for block in blocks:
            scanner.feed(block)
        return scanner.missing()

    with_native = missing()
    monkeypatch.setattr(name_scan, "_NATIVE", None)
    assert missing() == with_native
    assert "data-odd-name.parquet" in with_native and len(with_native) >= 51
