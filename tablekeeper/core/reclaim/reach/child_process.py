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

import mmap
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

__all__ = ["ForkedCall", "ForkedCallError", "SharedClaims", "available"]

#: Frame kinds: a message the child sends on its way, its final result, its failure.
_MESSAGE: Final = 0
_RESULT: Final = 1
_FAILED: Final = 2
_HEADER: Final = struct.Struct("<BQ")

#: What the child's function is given to send messages before its result.
Send = Callable[[bytes], None]


class ForkedCallError(RuntimeError):
    """The child failed (an exception, a signal, a truncated result); the message says how."""


def available() -> bool:
    """Whether :class:`ForkedCall` can run here (Linux with ``os.fork``)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


class ForkedCall:
    """``fn(send)`` running in a child process. The child may ``send`` messages on its way;
    :meth:`receive` returns them in order, :meth:`result` waits for what ``fn`` returns."""

    def __init__(self, fn: Callable[[Send], bytes]) -> None:
        read_fd, write_fd = os.pipe()
        with warnings.catch_warnings():
            # Python >= 3.12 warns about fork in a threaded process; the child here runs only
            # the given function and exits, and callers time out and redo its work if it hangs
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: run, report, leave without unwinding the parent's stack
            code = 1
            try:
                os.close(read_fd)

                def send(payload: bytes) -> None:
                    _write_all(write_fd, _HEADER.pack(_MESSAGE, len(payload)) + payload)

                try:
                    payload, kind = fn(send), _RESULT
                except BaseException:  # noqa: BLE001 - every failure is reported, then the child exits
                    payload, kind = traceback.format_exc().encode("utf-8", "replace"), _FAILED
                _write_all(write_fd, _HEADER.pack(kind, len(payload)) + payload)
                os.close(write_fd)
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        self._pid: int | None = pid
        self._fd: int | None = read_fd
        self._buffer = bytearray()
        self._done = False

    def receive(self, timeout: float | None = None) -> tuple[bool, bytes]:
        """The next thing the child sent: (whether it is the final result, its bytes). Waits
        at most ``timeout`` seconds (None: as long as it takes).

        Raises:
            ForkedCallError: the child raised (its traceback is the message), was killed, ended
            without a result, or sent nothing in time (it is killed then).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            if self._done:
                raise ForkedCallError("the child's result was already received")
            kind, length = _HEADER.unpack(self._read_exact(_HEADER.size, deadline))
            payload = self._read_exact(length, deadline)
        except BaseException:
            self.cancel()
            raise
        if kind == _MESSAGE:
            return False, payload
        self._done = True
        self.cancel()  # the child has nothing more to say: reap it
        if kind == _RESULT:
            return True, payload
        raise ForkedCallError(payload.decode("utf-8", "replace"))

    def result(self, timeout: float | None = None) -> bytes:
        """What ``fn`` returned (messages not received yet are skipped), waiting at most
        ``timeout`` seconds in all.

        Raises:
            ForkedCallError: as :meth:`receive`.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            final, payload = self.receive(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if final:
                return payload

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
            os.waitpid(self._pid, 0)
            self._pid = None

    def _read_exact(self, size: int, deadline: float | None) -> bytes:
        while len(self._buffer) < size:
            if self._fd is None:
                raise ForkedCallError("the child was stopped")
            if deadline is not None:
                ready, _, _ = select.select([self._fd], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    raise ForkedCallError("child did not finish in time (killed)")
            chunk = os.read(self._fd, max(1 << 20, size - len(self._buffer)))
            if not chunk:
                raise ForkedCallError("child ended without a complete result")
            self._buffer += chunk
        out = bytes(self._buffer[:size])
        del self._buffer[:size]
        return out


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class SharedClaims:
    """Work shared between a process and the children it forks after creating this: indices
    ``0..n-1`` handed out in batches to whichever process asks next (a counter in shared memory
    behind a process-shared lock), so that a faster process simply takes more; and one published
    value (a digest of the work list) the children wait for before they claim anything."""

    _READY = 24

    def __init__(self) -> None:
        self._memory = mmap.mmap(-1, 32)  # anonymous: shared with the children forked later
        import multiprocessing  # when forking only: ~10 ms of every process's start-up otherwise

        self._lock = multiprocessing.get_context("fork").Lock()

    def publish(self, value: bytes) -> None:
        """Publish a 16-byte value (once, before claiming)."""
        if len(value) != 16:
            raise ValueError("the published value has 16 bytes")
        self._memory[8:24] = value
        self._memory[self._READY] = 1

    def wait_published(self, timeout: float) -> bytes | None:
        """The published value, or None if nothing was published within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not self._memory[self._READY]:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.001)
        return bytes(self._memory[8:24])

    def claim(self, total: int, batch: int) -> range:
        """The next up to ``batch`` unclaimed indices below ``total`` (empty: all are taken)."""
        with self._lock:
            start = int.from_bytes(self._memory[0:8], "little")
            stop = min(total, start + batch)
            if stop > start:
                self._memory[0:8] = stop.to_bytes(8, "little")
        return range(start, max(start, stop))
