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

import importlib
import re
from collections.abc import Iterable, Iterator
from typing import Any, Final

__all__ = ["KeyFinder", "NameScanner", "MAX_LITERAL_NAMES"]

#: Names of another shape are searched one by one (each a pass over every block).
MAX_LITERAL_NAMES: Final = 32
#: Distinct prefixes are searched one by one as well.
MAX_PREFIXES: Final = 8

#: What follows the prefix in a key. Deliberately loose (any 36 characters a UUID is made of):
#: the same pattern keys the listed names and the manifest bytes, so it only has to be
#: deterministic, and a looser class is scanned faster.
_KEY_TAIL: Final = rb"[0-9a-f-]{36}-[0-9]+\."
_TAIL: Final = re.compile(_KEY_TAIL)
#: Every character a key's tail can contain.
_TAIL_ALPHABET: Final = frozenset(b"0123456789abcdef-.")


def _load_native() -> Any:
    """The native scan (``_name_scan_native.c``, an optional extension built by the install),
    trusted only if it finds what the regex path finds on a sample with nested, overlapping and
    broken keys; else None and the regex path scans."""
    try:
        native = importlib.import_module("tablekeeper.core.reclaim.orphans._name_scan_native")
    except ImportError:
        return None
    tail = b"0123456789abcdef-0123456789abcdef-ab"
    sample = (b"\x00data-" + tail + b"-12.parquet data-data-" + tail + b"-0.orc data-" + tail + b"-x. "
              b"changelog-" + tail[:-1] + b"g-3.avro data-" + tail + b"-7")
    try:
        for prefix in (b"data-", b"changelog-"):
            want = set(_keys_one_by_one(sample, prefix))
            unseen = want | {prefix + b"x"}
            bits = native.make_filter(b"\n".join(sorted(unseen)))
            if native.discard_keys(sample, prefix, unseen, bits) != len(want) or unseen != {prefix + b"x"}:
                return None
    except Exception:
        return None
    return native


def _borderless(prefix: bytes) -> bool:
    """No proper prefix equals a suffix: occurrences cannot overlap, so counting and
    ``findall`` see every one."""
    return all(prefix[:k] != prefix[-k:] for k in range(1, len(prefix)))


def _nests(prefix: bytes) -> bool:
    """Whether an occurrence of ``prefix`` could hide inside a key matched at an earlier
    occurrence (``findall`` would then skip it). It cannot when the prefix is borderless and has
    a character no tail contains and no '.', the tail's last character: an occurrence starting
    inside a tail would have to be made of tail characters up to that tail's end."""
    return b"." in prefix or all(c in _TAIL_ALPHABET for c in prefix)


def _usable_prefixes(prefixes: Iterable[str]) -> list[bytes]:
    return sorted({p.encode("utf-8") for p in prefixes if p and "\n" not in p and _borderless(p.encode("utf-8"))},
                  key=len, reverse=True)[:MAX_PREFIXES]


class KeyFinder:
    """Every key ``<prefix><36 characters>-<n>.`` in a block of bytes, for some prefixes."""

    def __init__(self, prefixes: Iterable[bytes]) -> None:
        self.prefixes = tuple(prefixes)
        self._patterns = [(p, re.compile(re.escape(p) + _KEY_TAIL), _nests(p)) for p in self.prefixes]

    @classmethod
    def for_names(cls, names: list[str], prefixes: Iterable[str], joined: bytes | None = None) -> KeyFinder:
        """A finder for the usable ``prefixes`` that some of ``names`` start with (each prefix
        costs a pass over every block); ``joined`` is ``names`` joined by line breaks, if at hand."""
        lines = joined if joined is not None else "\n".join(names).encode("utf-8")
        return cls(p for p in _usable_prefixes(prefixes) if lines.startswith(p) or b"\n" + p in lines)

    def find(self, block: bytes) -> list[bytes]:
        out: list[bytes] = []
        for prefix, pattern, nests in self._patterns:
            keys = pattern.findall(block)
            if nests and len(keys) != block.count(prefix):
                keys = _keys_one_by_one(block, prefix)  # a prefix not followed by a key
            if out:
                out.extend(keys)
            else:
                out = keys
        return out


def _ones(flags: bytes) -> Iterator[int]:
    """The positions of the 1 bytes in ``flags`` (few, usually: a bytes search between them)."""
    at = flags.find(1)
    while at >= 0:
        yield at
        at = flags.find(1, at + 1)


def _keys_one_by_one(block: bytes, prefix: bytes) -> list[bytes]:
    out: list[bytes] = []
    at = block.find(prefix)
    while at >= 0:
        m = _TAIL.match(block, at + len(prefix))
        if m is not None:
            out.append(prefix + m.group(0))
        at = block.find(prefix, at + 1)
    return out


class NameScanner:
    """Feed it decompressed blocks; :meth:`missing` are the names that occurred in none.

    ``prefixes`` are the table's file-name prefixes (``data-file.prefix``,
    ``changelog-file.prefix``); names with another prefix are searched literally."""

    def __init__(self, names: Iterable[str], prefixes: Iterable[str], joined: bytes | None = None) -> None:
        """``joined``: ``names`` joined by line breaks and encoded, if at hand."""
        prefixes = tuple(prefixes)
        usable = _usable_prefixes(prefixes)
        listed = names if isinstance(names, list) else list(names)
        if joined is None:
            joined = "\n".join(listed).encode("utf-8")
        literal: list[str] = []
        if joined.count(b"\n") != max(0, len(listed) - 1):  # a name with a line break: literal
            literal = [n for n in listed if "\n" in n]
            listed = [n for n in listed if "\n" not in n]
            joined = "\n".join(listed).encode("utf-8")
        keys: list[bytes] = []
        if usable and listed:
            alternatives = b"|".join(re.escape(p) for p in usable)
            # usually every name has the shape: one match per line, in line order
            keys = re.compile(rb"^(?:" + alternatives + rb")" + _KEY_TAIL, re.MULTILINE).findall(joined)
            if len(keys) != len(listed):  # some do not: b"" for those lines
                keys = re.compile(rb"^(?:((?:" + alternatives + rb")" + _KEY_TAIL + rb")[^\n]*|[^\n]*)$",
                                  re.MULTILINE).findall(joined)
        if len(keys) != len(listed):  # no usable prefix (or a surprise): search every name literally
            literal, listed, keys = literal + listed, [], []
        if b"" in keys:
            literal += [n for n, k in zip(listed, keys, strict=True) if not k]
            pairs = [(n, k) for n, k in zip(listed, keys, strict=True) if k]
            listed, keys = [n for n, _k in pairs], [k for _n, k in pairs]
        #: the names with a key and their keys, in the same order
        self._names, self._keys = listed, keys
        self.finder = KeyFinder.for_names(listed, prefixes, joined)
        self._literal = [(n, n.encode("utf-8")) for n in literal]
        #: keys not seen yet: shrinks as blocks are fed (cheaper than collecting every key seen)
        self._unseen_keys = set(keys)
        #: the native scan's bit filter of the keys (None: the regex path scans)
        self._filter: bytes | None = _NATIVE.make_filter(b"\n".join(keys)) if _NATIVE is not None else None
        self._seen_literal: set[str] = set()

    @property
    def usable(self) -> bool:
        """False when too many names have another shape: decode entries instead."""
        return len(self._literal) <= MAX_LITERAL_NAMES

    def feed(self, block: bytes) -> None:
        if self._filter is not None:  # each key found is dropped at once, no list of every key
            for prefix in self.finder.prefixes:
                _NATIVE.discard_keys(block, prefix, self._unseen_keys, self._filter)
        else:
            self._unseen_keys.difference_update(self.finder.find(block))
        for name, raw in self._literal:
            if name not in self._seen_literal and raw in block:
                self._seen_literal.add(name)

    def export_state(self) -> tuple[bytes, list[str]]:
        """What this scanner has not seen, for :meth:`merge_state` of a scanner built from the same
        names and prefixes (in a forked process): one byte per keyed name (1: its key unseen),
        and the names searched literally that were seen."""
        return bytes(map(self._unseen_keys.__contains__, self._keys)), sorted(self._seen_literal)

    def merge_state(self, state: tuple[bytes, list[str]]) -> bool:
        """Count as seen what the scanner that exported ``state`` saw. False (and nothing
        merged) when the state does not fit this scanner's names or it was never usable."""
        unseen, seen_literal = state
        if len(unseen) != len(self._keys) or not self.usable:
            return False
        mine = bytes(map(self._unseen_keys.__contains__, self._keys))
        both = (int.from_bytes(mine, "big") & int.from_bytes(unseen, "big")).to_bytes(len(mine), "big")
        self._unseen_keys = {self._keys[i] for i in _ones(both)}
        self._seen_literal.update(seen_literal)
        return True

    def missing(self) -> set[str]:
        """Names that occurred in no block fed so far: the only ones that may be unreferenced."""
        unseen = self._unseen_keys
        out = {n for n, k in zip(self._names, self._keys, strict=True) if k in unseen} if unseen else set()
        out.update(name for name, _raw in self._literal if name not in self._seen_literal)
        return out


#: The native scan, or None (not built, or not trusted): the regex path then scans.
_NATIVE: Any = _load_native()
