"""Reads served without asking the store again: immutable metadata files kept for a command, and
files fetched ahead of a caller that reads them one after the other.

- :meth:`ReadCache.immutable_reads`: a UUID-named manifest, manifest list or index manifest, or
  a schema file, is fetched once and its bytes reused (Paimon writes them once and never
  rewrites them under that name, so the bytes cannot be stale).
- :meth:`ReadCache.read_ahead` and :meth:`ReadCache.prefetch`: the same GETs, many at a time
  instead of one after the other (on object stores a request is mostly waiting).

Both are the store's reads (``fetch``), never other answers: the caller picks when they pay."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from tablekeeper.core.storage.paths import basename

__all__ = ["ReadCache"]

#: Paimon metadata files named by a random UUID: written once, never rewritten under that name
#: (manifests, manifest lists, index manifests), so bytes read once are the bytes forever.
_IMMUTABLE_NAME = re.compile(r"^(?:(?:manifest|manifest-list|index-manifest)-"
                             r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+|schema-\d+)$")


class ReadCache:
    """The kept immutable files and the bytes read ahead of one FileIO."""

    def __init__(self) -> None:
        #: bytes of UUID-named metadata files while :meth:`immutable_reads` is active
        self._kept: dict[str, bytes] | None = None
        self._kept_budget = 0
        #: bytes fetched ahead by :meth:`read_ahead`, handed out (once) by :meth:`take_ahead`
        self._ahead: dict[str, bytes] = {}
        self._lock = threading.Lock()

    @contextmanager
    def immutable_reads(self, max_bytes: int) -> Iterator[None]:
        """Keep immutable files read in the block, up to ``max_bytes`` in all (nested: the
        outer block's)."""
        if self._kept is not None:
            yield
            return
        self._kept, self._kept_budget = {}, max_bytes
        try:
            yield
        finally:
            self._kept = None

    def take_ahead(self, path: str) -> bytes | None:
        """The bytes of ``path`` read ahead for the caller, once (None: not read ahead)."""
        if not self._ahead:
            return None
        with self._lock:
            return self._ahead.pop(path, None)

    def keeps(self, path: str) -> bool:
        """Whether a read of ``path`` goes through the kept files."""
        return self._kept is not None and _IMMUTABLE_NAME.match(basename(path)) is not None

    def read_kept(self, path: str, fetch: Callable[[str], bytes]) -> bytes:
        """``path``'s bytes from the kept files, fetched (and kept, within the budget) on a miss."""
        kept = self._kept
        if kept is None:
            return fetch(path)
        with self._lock:
            data = kept.get(path)
        if data is None:
            data = fetch(path)
            self._keep(kept, path, data)
        return data

    def _keep(self, kept: dict[str, bytes], path: str, data: bytes) -> None:
        with self._lock:
            if self._kept is kept and self._kept_budget >= len(data):
                kept[path] = data
                self._kept_budget -= len(data)

    def prefetch(self, paths: Iterable[str], fetch: Callable[[str], bytes | None], threads: int) -> None:
        """Fetch the immutable-named files among ``paths`` that are not kept yet, ``threads``
        at a time, into the kept files (a no-op outside :meth:`immutable_reads`). ``fetch``
        answers None for a file it could not read (the caller's own read raises it)."""
        kept = self._kept
        if kept is None:
            return
        with self._lock:
            todo = [p for p in dict.fromkeys(paths) if _IMMUTABLE_NAME.match(basename(p)) and p not in kept]
        if len(todo) < 2:
            return

        def one(path: str) -> None:
            data = fetch(path)
            if data is not None:
                self._keep(kept, path, data)

        from concurrent.futures import ThreadPoolExecutor  # lazily: ~12 ms of start-up

        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(one, todo))

    def read_ahead(self, paths: list[str], fetch: Callable[[str], bytes | None], window: int,
                   threads: int) -> Iterator[str]:
        """Yield ``paths`` in order, the next ``window`` of them fetched concurrently first, for
        :meth:`take_ahead`; whatever was not taken is dropped at the end."""
        def one(path: str) -> None:
            data = fetch(path)
            if data is not None:
                with self._lock:
                    self._ahead[path] = data

        from concurrent.futures import ThreadPoolExecutor  # lazily: ~12 ms of start-up

        with ThreadPoolExecutor(max_workers=threads) as pool:
            try:
                for start in range(0, len(paths), window):
                    chunk = paths[start:start + window]
                    list(pool.map(one, chunk))
                    yield from chunk
            finally:
                with self._lock:
                    for path in paths:
                        self._ahead.pop(path, None)
