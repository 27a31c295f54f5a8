"""Partition directories (``k1=v1/k2=v2/bucket-N``) rendered without pypaimon, for the partition
types almost every table has: STRING, VARCHAR, CHAR, BOOLEAN, TINYINT, SMALLINT, INT, BIGINT and
DATE, with Hive escaping, ``partition.default-name`` (null, empty and whitespace-only values),
``partition.legacy-name`` (DATE as days since the epoch) and a plain relative
``data-file.path-directory``.

Why a second renderer at all: pypaimon's path factory is exact, but importing it pulls in pyarrow,
numpy and requests (~0.4 s of CPU), which every expiration paid just to spell a handful of
directory names (issue 13: a third of the peer table's planning). Why it cannot drift from the
rules: it renders only what it is sure of and answers ``None`` for everything else (any other
type, an option it does not parse exactly as pypaimon does, a root or path directory that
pypaimon would normalise, partition bytes it would not decode byte for byte as pypaimon does),
and :class:`~tablekeeper.core.paimon.pypaimon.adapter.PartitionPathResolver` then asks pypaimon,
which stays the reference. ``tests/unit/test_partition_paths.py`` compares the two over generated
values of every covered type (escaping-worthy characters, unicode, nulls, empty and whitespace
strings, negative numbers, minima and maxima, both legacy settings) and on Java-written tables.

Pure functions of the schema and the bytes: no I/O, no pypaimon.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Final

from tablekeeper.core.paimon.metadata import TableSchema

__all__ = ["PartitionRenderer", "renders_under"]

#: The partition column types rendered here (Java Paimon's JSON spelling), by decoder.
_TYPE: Final = re.compile(r"(STRING|VARCHAR\(\d+\)|CHAR\(\d+\)|BOOLEAN|TINYINT|SMALLINT|INT|BIGINT|DATE)( NOT NULL)?")
_FIXED: Final = {"TINYINT": struct.Struct("<b"), "SMALLINT": struct.Struct("<h"), "INT": struct.Struct("<i"),
                 "BIGINT": struct.Struct("<q")}
_SLOT: Final = struct.Struct("<q")
_DAYS: Final = struct.Struct("<i")
_EPOCH: Final = date(1970, 1, 1)
#: Java ``PartitionPathUtils.CHAR_TO_ESCAPE`` besides control characters (spaces and unicode stay).
_ESCAPED: Final = frozenset("\"#%'*/:=?\\{}[]^")
#: Bucket -2 (postpone mode) is written to ``bucket-postpone``.
_POSTPONE_BUCKET: Final = -2
#: A relative ``data-file.path-directory`` that pypaimon's path resolution leaves unchanged.
_PLAIN_DIR: Final = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]*(/[A-Za-z0-9_.\-]+)*")
_SCHEME_ROOT: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/]+(/.*)")
_TRUE: Final = ("true", "1", "yes", "on")
_FALSE: Final = ("false", "0", "no", "off")


def _escape(text: str) -> str:
    if all(" " <= c != "\x7f" and c not in _ESCAPED for c in text):
        return text
    return "".join(f"%{ord(c):02X}" if ord(c) < 32 or ord(c) == 127 or c in _ESCAPED else c for c in text)


def _blank(text: str) -> bool:
    """pypaimon's null-or-whitespace test (Python's notion of whitespace)."""
    return not text or text.isspace()


def _flag(options: Mapping[str, str], key: str, default: bool) -> bool | None:
    """A boolean option as pypaimon's ``Options.get`` converts it; None: not a value it accepts."""
    raw = options.get(key)
    if raw is None:
        return default
    if not isinstance(raw, str):
        return None
    value = raw.lower().strip()
    return True if value in _TRUE else False if value in _FALSE else None


def renders_under(root: str) -> bool:
    """Whether ``root`` + ``/`` + a rendered relative directory is what pypaimon's path resolution
    gives (an absolute local path or ``scheme://authority/path`` with nothing to normalise; not
    ``file:`` URIs, whose local form pypaimon rewrites)."""
    if os.name == "nt" or root.startswith("file:"):
        return False
    if root.startswith("/"):
        path = root
    else:
        match = _SCHEME_ROOT.fullmatch(root)
        if match is None:
            return False
        path = match.group(1)
    parts = path.split("/")[1:]
    return bool(parts) and all(p not in ("", ".", "..") for p in parts)


class PartitionRenderer:
    """Relative bucket directories of one table schema (see the module docstring).

    Build with :meth:`of`, which answers None when the schema has a partition type or an option
    value outside what is rendered here."""

    def __init__(self, keys: tuple[str, ...], kinds: tuple[str, ...], default_name: str, legacy: bool,
                 path_directory: str | None, index_in_data_dir: bool) -> None:
        self._keys = tuple(_escape(k) + "=" for k in keys)
        self._kinds = kinds
        self._default = _escape(default_name)
        self._legacy = legacy
        self._prefix = path_directory + "/" if path_directory else ""
        self._null_bytes = ((len(keys) + 63 + 8) // 64) * 8
        #: ``index-file-in-data-file-dir`` as pypaimon reads it.
        self.index_in_data_dir = index_in_data_dir

    @classmethod
    def of(cls, schema: TableSchema) -> PartitionRenderer | None:
        """The renderer of ``schema``, or None: pypaimon must render this table's directories."""
        fields = schema.raw.get("fields")
        if not isinstance(fields, list):
            return None
        types = {f.get("name"): f.get("type") for f in fields if isinstance(f, dict)}
        kinds: list[str] = []
        for key in schema.partition_keys:
            raw = types.get(key)
            match = _TYPE.fullmatch(raw) if isinstance(raw, str) else None
            if match is None:
                return None
            kinds.append(match.group(1).split("(", 1)[0])
        options = schema.options
        default_name = options.get("partition.default-name", "__DEFAULT_PARTITION__")
        legacy = _flag(options, "partition.legacy-name", True)
        index_in_data_dir = _flag(options, "index-file-in-data-file-dir", False)
        directory = options.get("data-file.path-directory")
        if not isinstance(default_name, str) or legacy is None or index_in_data_dir is None:
            return None
        if directory is not None and not (isinstance(directory, str) and _PLAIN_DIR.fullmatch(directory)
                                          and all(p not in (".", "..") for p in directory.split("/"))):
            return None
        return cls(tuple(schema.partition_keys), tuple(kinds), default_name, legacy, directory, index_in_data_dir)

    def relative_bucket_dir(self, partition: bytes, bucket: int) -> str | None:
        """``[path-directory/]k1=v1/.../bucket-N``, or None when pypaimon must decide (bytes it
        would decode differently or reject: its error is then raised by its own read)."""
        bucket_dir = "bucket-postpone" if bucket == _POSTPONE_BUCKET else f"bucket-{bucket}"
        if not self._keys:
            return self._prefix + bucket_dir
        values = self._values(partition)
        if values is None:
            return None
        parts = [key + (self._default if value is None or _blank(value) else _escape(value))
                 for key, value in zip(self._keys, values, strict=True)]
        parts.append(bucket_dir)
        return self._prefix + "/".join(parts)

    def _values(self, partition: bytes) -> list[str | None] | None:
        """The canonical strings of a BinaryRow's fields (None for null), decoded as pypaimon's
        ``GenericRowDeserializer`` does; None for anything it would read differently or reject."""
        data = partition[4:]
        if len(partition) < 4 or len(data) < self._null_bytes + 8 * len(self._keys) or data[0] > 3:
            return None
        out: list[str | None] = []
        for i, kind in enumerate(self._kinds):
            bit = i + 8
            if data[bit >> 3] & (1 << (bit & 7)):
                out.append(None)
                continue
            offset = self._null_bytes + 8 * i
            if kind in ("STRING", "VARCHAR", "CHAR"):
                slot = _SLOT.unpack_from(data, offset)[0]
                if slot & (1 << 63):
                    start, length = offset, (slot >> 56) & 0x7F
                else:
                    start, length = (slot >> 32) & 0xFFFFFFFF, slot & 0xFFFFFFFF
                if start + length > len(data):
                    return None
                try:
                    out.append(data[start:start + length].decode("utf-8"))
                except UnicodeDecodeError:
                    return None
            elif kind == "BOOLEAN":
                out.append("true" if data[offset] else "false")
            elif kind == "DATE":
                days = _DAYS.unpack_from(data, offset)[0]
                try:
                    day = _EPOCH + timedelta(days=days)
                except OverflowError:
                    return None
                out.append(str(days) if self._legacy else day.isoformat())
            else:
                out.append(str(_FIXED[kind].unpack_from(data, offset)[0]))
        return out
