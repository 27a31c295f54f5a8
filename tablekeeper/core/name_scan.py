"""Which of a set of file names occur in the decompressed bytes of a manifest: the used-set
test of orphan cleanup without decoding every entry.

A manifest stores each file name it references verbatim (an Avro string: a length, then the
UTF-8 bytes), so "occurs in the decompressed blocks" over-approximates "referenced": it may
keep a file (a coincidence of bytes; harmless, nothing is lost) but it never misses one.
Decoding entries is what made orphan planning slow (about 4 µs an entry in Python); finding
200,000 names one by one would be quadratic. Paimon names data and changelog files
``<prefix><uuid>-<n>.<ext>``, so each prefix is searched as a literal at C speed and the key
``<prefix><uuid>-<n>.`` after each occurrence is read with one regex. The few names of another
shape (debris) are searched literally; too many of them and the scanner is not usable, and
the caller decodes entries instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

__all__ = ["NameScanner", "MAX_LITERAL_NAMES"]

#: Names of another shape are searched one by one (each a pass over every block).
MAX_LITERAL_NAMES: Final = 32
#: Distinct prefixes are searched one by one as well.
MAX_PREFIXES: Final = 8

_KEY_TAIL: Final = rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-[0-9]+\."
_TAIL: Final = re.compile(_KEY_TAIL)


def _borderless(prefix: bytes) -> bool:
    """No proper prefix equals a suffix: occurrences cannot overlap, so counting and
    ``findall`` see every one."""
    return all(prefix[:k] != prefix[-k:] for k in range(1, len(prefix)))


class NameScanner:
    """Feed it decompressed blocks; :meth:`missing` are the names that occurred in none.

    ``prefixes`` are the table's file-name prefixes (``data-file.prefix``,
    ``changelog-file.prefix``); names with another prefix are searched literally."""

    def __init__(self, names: Iterable[str], prefixes: Iterable[str]) -> None:
        usable = sorted({p.encode("utf-8") for p in prefixes if p and "\n" not in p
                         and _borderless(p.encode("utf-8"))}, key=len, reverse=True)[:MAX_PREFIXES]
        listed = list(names)
        literal = [n for n in listed if "\n" in n]  # one regex pass over all names, one per line
        if literal:
            listed = [n for n in listed if "\n" not in n]
        keys: list[bytes] = []
        if usable and listed:
            alternatives = b"|".join(re.escape(p) for p in usable)
            joined = "\n".join(listed).encode("utf-8")
            # usually every name has the shape: one match per line, in line order
            keys = re.compile(rb"^((?:" + alternatives + rb")" + _KEY_TAIL + rb")", re.MULTILINE).findall(joined)
            if len(keys) != len(listed):  # some do not: b"" for those lines
                keys = re.compile(rb"^(?:((?:" + alternatives + rb")" + _KEY_TAIL + rb")[^\n]*|[^\n]*)$",
                                  re.MULTILINE).findall(joined)
        if len(keys) != len(listed):  # no usable prefix (or a surprise): search every name literally
            literal, listed, keys = literal + listed, [], []
        if b"" in keys:
            literal += [n for n, k in zip(listed, keys, strict=True) if not k]
            pairs = [(k, n) for k, n in zip(keys, listed, strict=True) if k]
            keys, listed = [k for k, _n in pairs], [n for _k, n in pairs]
        by_key = dict(zip(keys, listed, strict=True))  # the last name of each key...
        shared: dict[bytes, list[str]] = {}  # ...and the others ('x.parquet' and 'x.parquet.index')
        if len(by_key) != len(keys):
            for k, n in zip(keys, listed, strict=True):
                if by_key[k] != n:
                    shared.setdefault(k, []).append(n)
        self._by_key = by_key
        self._shared = shared
        self._prefixes = {p: re.compile(re.escape(p) + _KEY_TAIL) for p in usable}
        self._literal = [(n, n.encode("utf-8")) for n in literal]
        self._seen_keys: set[bytes] = set()
        self._seen_literal: set[str] = set()

    @property
    def usable(self) -> bool:
        """False when too many names have another shape: decode entries instead."""
        return len(self._literal) <= MAX_LITERAL_NAMES

    def feed(self, block: bytes) -> None:
        for prefix, pattern in self._prefixes.items():
            keys = pattern.findall(block)
            if len(keys) != block.count(prefix):
                keys = self._keys_one_by_one(block, prefix)  # a prefix not followed by a key
            self._seen_keys.update(keys)
        for name, raw in self._literal:
            if name not in self._seen_literal and raw in block:
                self._seen_literal.add(name)

    @staticmethod
    def _keys_one_by_one(block: bytes, prefix: bytes) -> list[bytes]:
        out: list[bytes] = []
        at = block.find(prefix)
        while at >= 0:
            m = _TAIL.match(block, at + len(prefix))
            if m is not None:
                out.append(prefix + m.group(0))
            at = block.find(prefix, at + 1)
        return out

    def missing(self) -> set[str]:
        """Names that occurred in no block fed so far: the only ones that may be unreferenced."""
        out = {name for name, _raw in self._literal if name not in self._seen_literal}
        by_key, shared = self._by_key, self._shared
        for key in by_key.keys() - self._seen_keys:
            out.add(by_key[key])
            out.update(shared.get(key, ()))
        return out
