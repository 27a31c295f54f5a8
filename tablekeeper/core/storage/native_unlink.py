"""Unlinking a batch of local files, in native code when it was built (issue 13: an expiration of
the peer table unlinks ~103k files, and a Python loop spends a call, an exception object per
failure and a result object per file on them, on one core).

:func:`unlink_all` is the one entry point. The C module ``_fs_native`` (an optional extension,
built by ``pip install -e .`` when a C compiler is there, like the manifest decoder) unlinks the
whole batch with the GIL released, in the caller's thread while unlinks are quick (CPU-bound)
and on up to ``threads`` threads once they wait (see ``_fs_native.c``), and returns only the
failures as ``(index, errno)``. Without the module, or for a path it does not take (not
a ``str``, not plain UTF-8, a NUL in it: ``os.unlink`` encodes or refuses those its own way), the
Python loop runs ``os.unlink``, so outcomes are the same either way: the same errno for the
same path, the same ``OSError`` subclass and message (``OSError(errno, strerror, path)`` is what
``os.unlink`` raises), the same ``ValueError`` for a NUL. The batch is complete on return.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Final

__all__ = ["unlink_all", "native_built", "native_usable", "NATIVE_THREADS", "MAX_THREADS"]

#: The most threads one native call uses (``MAX_THREADS`` of ``_fs_native.c``).
MAX_THREADS: Final = 16

#: Threads the native unlink may use when the caller names none. Helpers start only once unlinks
#: wait (a file's last link: its blocks are freed, 0.2-2 ms a file on ext4 here), and waits
#: overlap whatever the cores: 5,000 such files took 8.7-11.2 s in one thread and 1.2-1.25 s
#: in four (1.5-4.8 s in two) at load 7 on 2 cores. Quick unlinks stay in the caller's thread.
NATIVE_THREADS: Final = 4


def _load() -> Any:
    try:
        return importlib.import_module("tablekeeper.core.storage._fs_native")
    except ImportError:
        return None


_NATIVE: Final = _load()
#: Tests set False to force the Python loop (and True back); None: decided by :func:`native_usable`.
_enabled: bool | None = None


def native_built() -> bool:
    """Whether the C module was built at install time."""
    return _NATIVE is not None


def native_usable() -> bool:
    """Whether :func:`unlink_all` runs the C module: it was built, and file names are encoded as
    UTF-8 with ``surrogateescape`` (what ``os.unlink`` does on Linux and macOS), so a ``str`` it
    takes reaches ``unlink(2)`` as the same bytes."""
    global _enabled
    if _enabled is None:
        _enabled = _NATIVE is not None and sys.getfilesystemencoding() == "utf-8" \
            and sys.getfilesystemencodeerrors() == "surrogateescape"
    return _enabled


def unlink_all(raws: list[str], threads: int = 1, *, slow_ns: int | None = None) -> list[tuple[int, OSError]]:
    """``os.unlink`` each of ``raws``; returns ``(index, error)`` of those that failed, in index
    order (FileNotFoundError for a missing file, IsADirectoryError for a directory, ...). A
    ``ValueError`` (a NUL in a path) propagates as ``os.unlink``'s does, the paths before it
    unlinked and none after it. ``slow_ns``: the pace from which helper threads start (tests)."""
    start = 0
    failed: list[tuple[int, OSError]] = []
    if native_usable():
        failures, start = _NATIVE.unlink_many(raws, threads) if slow_ns is None else \
            _NATIVE.unlink_many(raws, threads, slow_ns)
        strerror = os.strerror
        failed = [(i, OSError(err, strerror(err), raws[i])) for i, err in failures]
    if start < len(raws):
        unlink = os.unlink
        for i in range(start, len(raws)):
            try:
                unlink(raws[i])
            except OSError as e:
                failed.append((i, e))
    return failed
