"""One maintainer per table among tablekeeper processes: a lease on the table's storage.

Why: two maintainers planning on the same history (a CLI run beside the operator, a Spark job
beside ``apply -f``) each make a plan that is right alone and wrong together (issue #12). Paimon
writers and Paimon's own procedures do not take this lease; the planners' own rules (age
thresholds, re-listing roots, re-checking preconditions at the commit point) cover them.

Layout: ``<table>/.tablekeeper/lease``, JSON ``{owner, operation, acquired_ms, expires_ms}``.
The directory starts with a dot and is neither a partition (no ``=``) nor a ``bucket-*``
directory, so Paimon's readers, Java's and tablekeeper's orphan cleanup never look at it; branch
operations only touch ``branch/``. A finished run leaves nothing behind (the file and the empty
directory are removed), so a refused command has changed nothing.

Protocol (needs only create-if-absent, which local files and S3 conditional PUT both offer):

- acquire = create ``lease`` if absent: of several contenders exactly one succeeds;
- release = delete it (after checking it is still ours);
- the holder renews by rewriting its record (a thread, every ``ttl / 3``); a renewal that finds
  another owner, or that comes after its own expiry, marks the lease lost, and
  :meth:`Lease.check` (called at every phase boundary of the executor) then stops the run
  before its next stage;
- a record is free once expired (holder's clock; keep clocks within seconds, the TTL is
  minutes), or when its owner ran on this host under a PID that no longer exists (a killed CLI
  does not block the rerun for a whole TTL). Taking over a free record: create the marker
  ``takeover-<owner id>`` (create-if-absent: one taker per dead record), read the lease again
  and only if it is still that record delete it and create our own. The re-read after winning
  the marker is what stops a slow taker from deleting a lease someone else took meanwhile.
  Markers expire after a TTL too (a taker that crashed mid-way).

Re-entrant per thread: code holding the lease may call code that takes it again (``apply -f``
runs the same functions as the CLI)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from tablekeeper.core import errors
from tablekeeper.core.safety.concurrency import seams
from tablekeeper.core.storage import FileIO, join

__all__ = ["LEASE_DIR", "DEFAULT_TTL", "TTL_ENV", "LeaseRecord", "Lease", "holder", "acquire", "held",
           "lease_dir"]

LEASE_DIR = ".tablekeeper"
_LEASE = "lease"
_TAKEOVER = "takeover-"
DEFAULT_TTL = timedelta(minutes=2)
#: Overrides the TTL in seconds (tests, or stores with slow clocks).
TTL_ENV = "TABLEKEEPER_LEASE_TTL"
_POLL_S = 0.5

Clock = Callable[[], float]


def _ttl(ttl: timedelta | None) -> timedelta:
    if ttl is not None:
        return ttl
    raw = os.environ.get(TTL_ENV)
    return timedelta(seconds=float(raw)) if raw else DEFAULT_TTL


def _ms(ttl: timedelta) -> int:
    return int(ttl.total_seconds() * 1000)


def lease_dir(table_root: str) -> str:
    return join(table_root, LEASE_DIR)


@dataclass(frozen=True)
class LeaseRecord:
    """The lease file's content: who holds the table's maintenance lease, for what, until when."""

    owner: str  # host:pid:thread:random (16 hex digits)
    operation: str
    acquired_ms: int
    expires_ms: int

    @property
    def host(self) -> str:
        return self.owner.split(":", 1)[0]

    @property
    def pid(self) -> int | None:
        parts = self.owner.split(":")
        return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None

    @property
    def token(self) -> str:
        """The owner's unique part, safe in a file name."""
        return "".join(c if c.isalnum() else "_" for c in self.owner.rsplit(":", 1)[-1])

    def describe(self) -> str:
        until = datetime.fromtimestamp(self.expires_ms / 1000, tz=timezone.utc).isoformat(timespec="seconds")
        return f"{self.owner} ({self.operation}); its lease expires {until} unless renewed"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: bytes) -> LeaseRecord:
        raw: dict[str, Any] = json.loads(text)
        return LeaseRecord(str(raw["owner"]), str(raw.get("operation", "")), int(raw["acquired_ms"]),
                           int(raw["expires_ms"]))


def _read(io: FileIO, path: str, ttl: timedelta) -> LeaseRecord | None:
    try:
        data = io.read_bytes(path)
    except FileNotFoundError:
        return None
    try:
        return LeaseRecord.from_json(data)
    except (ValueError, KeyError, TypeError):
        # Unreadable (edited by hand): held until the file is a TTL old (fail closed), then free.
        try:
            mtime = io.stat(path).mtime_ms
        except FileNotFoundError:
            return None
        return LeaseRecord(f"unknown:unreadable:{mtime}", "unknown", mtime, mtime + _ms(ttl))


def holder(io: FileIO, table_root: str, *, ttl: timedelta | None = None) -> LeaseRecord | None:
    """The current lease record of the table (expired ones included), or None."""
    return _read(io, join(lease_dir(table_root), _LEASE), _ttl(ttl))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _free(record: LeaseRecord, now_ms: int) -> bool:
    if record.expires_ms <= now_ms:
        return True
    pid = record.pid
    return record.host == _host() and pid is not None and pid != os.getpid() and not _pid_alive(pid)


class Lease:
    """A held lease; renewed by a daemon thread until :meth:`release`."""

    def __init__(self, io: FileIO, table_root: str, record: LeaseRecord, ttl: timedelta, clock: Clock) -> None:
        self.io = io
        self.table_root = table_root
        self.directory = lease_dir(table_root)
        self.path = join(self.directory, _LEASE)
        self.record = record
        self.ttl = ttl
        self._clock = clock
        self._lost: str | None = None
        self._released = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._depth = 1
        self._thread = threading.Thread(target=self._renew_loop, name="tablekeeper-lease", daemon=True)
        self._thread.start()

    @property
    def lost(self) -> str | None:
        return self._lost

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _still_mine(self) -> bool:
        current = _read(self.io, self.path, self.ttl)
        return current is not None and current.owner == self.record.owner

    def renew(self) -> bool:
        """Extend the lease; False (and the lease is lost) if it was taken over or had expired."""
        with self._lock:
            if self._lost is not None or self._released:
                return False
            now = self._now_ms()
            if now >= self.record.expires_ms:
                self._lost = "it expired before it was renewed"
                return False
            if not self._still_mine():
                self._lost = "another maintainer took it over"
                return False
            self.record = replace(self.record, expires_ms=now + _ms(self.ttl))
            self.io.overwrite(self.path, self.record.to_json())
            return True

    def _renew_loop(self) -> None:
        interval = max(0.05, self.ttl.total_seconds() / 3)
        while not self._stop.wait(interval):
            try:
                if not self.renew():
                    return
            except Exception as e:  # storage hiccup: try again; expiry decides
                if self._now_ms() >= self.record.expires_ms:
                    self._lost = f"it could not be renewed: {e}"
                    return

    def check(self, _point: str = "") -> None:
        """Raise if the lease is lost (called at every phase boundary, see ``seams.guarded``)."""
        if self._lost is not None:
            raise errors.TableLockedError(
                f"stopped: the maintenance lease of {self.table_root} was lost ({self._lost})",
                fix="the stages before this point completed; rerun the command, it resumes")

    def release(self) -> None:
        """Stop renewing and delete the record (free for the next maintainer at once)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        with self._lock:
            if self._released:
                return
            self._released = True
            if self._lost is not None:
                return
            try:
                if self._still_mine():
                    # just read back: no listing to tell a missing lease from a deleted one
                    self.io.delete_files([self.path], tell_missing=False)
                    self.io.delete_empty_dir(self.directory)
            except Exception:  # the lease expires by itself
                pass


_held: dict[tuple[str, int], Lease] = {}
_held_lock = threading.Lock()


def _host() -> str:
    """This machine's name, as ``platform.node()`` gives it, without importing ``platform`` and
    ``uuid`` at start-up (~7 ms of every CLI process)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import platform

    return platform.node()


def _owner() -> str:
    return f"{_host()}:{os.getpid()}:{threading.get_ident()}:{os.urandom(8).hex()}"


def _take_over(io: FileIO, directory: str, dead: LeaseRecord, mine: LeaseRecord, ttl: timedelta, now_ms: int) -> bool:
    """Replace the free record ``dead`` by ``mine``; False if someone else is at it or was faster."""
    marker = join(directory, _TAKEOVER + dead.token)
    try:
        io.write_new(marker, json.dumps({"owner": mine.owner, "expires_ms": now_ms + _ms(ttl)}))
    except FileExistsError:
        try:
            stale = json.loads(io.read_bytes(marker)).get("expires_ms", 0) <= now_ms
        except (FileNotFoundError, ValueError, AttributeError):
            stale = False
        if stale:  # a taker that crashed mid-way
            io.delete_files([marker])
        return False
    try:
        again = _read(io, join(directory, _LEASE), ttl)
        if again is None or again.owner != dead.owner:
            return False  # released or taken meanwhile: start over
        io.delete_files([join(directory, _LEASE)])
        try:
            io.write_new(join(directory, _LEASE), mine.to_json())
        except FileExistsError:
            return False
        return True
    finally:
        io.delete_files([marker])


def acquire(io: FileIO, table_root: str, operation: str, *, wait: timedelta | None = None,
            ttl: timedelta | None = None, clock: Clock = time.time) -> Lease:
    """Take the lease of the table at ``table_root``, waiting up to ``wait`` for a holder.

    Raises:
        TableLockedError: another maintainer holds it (names the holder and its expiry).
    """
    ttl = _ttl(ttl)
    directory = lease_dir(table_root)
    path = join(directory, _LEASE)
    deadline = clock() + (wait.total_seconds() if wait else 0.0)
    while True:
        current = _read(io, path, ttl)
        now_ms = int(clock() * 1000)
        mine = LeaseRecord(_owner(), operation, now_ms, now_ms + _ms(ttl))
        if current is None:
            try:
                io.write_new(path, mine.to_json())
                return Lease(io, table_root, mine, ttl, clock)
            except (FileExistsError, FileNotFoundError):  # lost the race, or the directory just went
                continue
        if _free(current, now_ms):
            if _take_over(io, directory, current, mine, ttl, now_ms):
                return Lease(io, table_root, mine, ttl, clock)
        elif clock() >= deadline:
            raise errors.TableLockedError(
                f"{table_root} is being maintained by {current.describe()}",
                fix="wait for that run to finish (or pass --wait, e.g. --wait 10m); a crashed holder's lease "
                    "expires by itself",
                holder=current.owner, expires_ms=current.expires_ms)
        time.sleep(min(_POLL_S, max(0.01, deadline - clock())))


@contextmanager
def held(io: FileIO, table_root: str, operation: str, *, wait: timedelta | None = None,
         ttl: timedelta | None = None) -> Iterator[Lease]:
    """Hold the table lease for the block (re-entrant per thread). Every phase boundary of the
    executor checks it (``seams.guarded``), so a lost lease stops the run before its next stage."""
    key = (lease_dir(table_root), threading.get_ident())
    with _held_lock:
        mine = _held.get(key)
    if mine is not None:
        mine._depth += 1
        try:
            yield mine
        finally:
            mine._depth -= 1
        return
    lease = acquire(io, table_root, operation, wait=wait, ttl=ttl)
    with _held_lock:
        _held[key] = lease
    try:
        with seams.guarded(lease.check):
            yield lease
    finally:
        with _held_lock:
            _held.pop(key, None)
        lease.release()
