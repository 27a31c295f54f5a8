"""Run a function in a forked child process and get its bytes back: CPU-bound planning work
(the byte-level manifest scan of orphan cleanup) on a second core, which threads cannot give
(the regex engine holds the GIL).

A forked child inherits the parent's memory copy-on-write, so large read-only inputs (the
listed names) cost nothing to hand over. The child runs only the given function — plain file
reads, decompression, regex and set work — and leaves with ``os._exit``, never returning into
the caller's stack, event loop or exit handlers. Fork is used only where it is well defined and
cheap: Linux, local files. Callers treat every failure of a child as "do that share yourself".
"""

from __future__ import annotations

import os
import select
import signal
import struct
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Final

__all__ = ["ForkedCall", "ForkedCallError", "available"]

_OK: Final = b"\x00"
_FAILED: Final = b"\x01"


class ForkedCallError(RuntimeError):
    """The child failed (an exception, a signal, a truncated result); the message says how."""


def available() -> bool:
    """Whether :class:`ForkedCall` can run here (Linux with ``os.fork``)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


class ForkedCall:
    """``fn()`` running in a child process; :meth:`result` waits for its bytes."""

    def __init__(self, fn: Callable[[], bytes]) -> None:
        read_fd, write_fd = os.pipe()
        with warnings.catch_warnings():
            # Python >= 3.12 warns about fork in a threaded process; the child here runs only
            # the given function and exits, and callers time out and redo its share if it hangs
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: run, report, leave without unwinding the parent's stack
            code = 1
            try:
                os.close(read_fd)
                try:
                    payload, status = fn(), _OK
                except BaseException:  # noqa: BLE001 - every failure is reported, then the child exits
                    payload, status = traceback.format_exc().encode("utf-8", "replace"), _FAILED
                _write_all(write_fd, status + struct.pack("<Q", len(payload)) + payload)
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        self._pid: int | None = pid
        self._fd: int | None = read_fd

    def result(self, timeout: float | None = None) -> bytes:
        """The child's bytes, waiting at most ``timeout`` seconds (None: as long as it takes).

        Raises:
            ForkedCallError: the child raised (its traceback is the message), was killed,
            reported a truncated result, or did not finish in time (it is killed then).
        """
        try:
            data = self._read_all(None if timeout is None else time.monotonic() + timeout)
            status = self._reap()
        finally:
            self.cancel()
        if len(data) < 9 or len(data) != 9 + struct.unpack("<Q", data[1:9])[0]:
            raise ForkedCallError(f"child ended ({status}) without a complete result")
        if data[:1] != _OK:
            raise ForkedCallError(data[9:].decode("utf-8", "replace"))
        return data[9:]

    def cancel(self) -> None:
        """Stop the child if it still runs and release it (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()

    def _read_all(self, deadline: float | None) -> bytes:
        assert self._fd is not None
        chunks: list[bytes] = []
        while True:
            if deadline is not None:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([self._fd], [], [], max(0.0, left))
                if not ready:
                    raise ForkedCallError("child did not finish in time (killed)")
            chunk = os.read(self._fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)

    def _reap(self) -> str:
        if self._pid is None:
            return "already reaped"
        _, status = os.waitpid(self._pid, 0)
        self._pid = None
        return f"wait status {status}"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.close(fd)
