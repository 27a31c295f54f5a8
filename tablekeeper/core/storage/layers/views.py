"""One decision, one view: while a view is open, each file is read, each directory listed and each
existence asked at most once (:meth:`FileIO.one_view`), on every store alike.

A decision (an expiration's range and roots, a tag deletion's plan) looks at the table as at one
moment anyway, so reading the same snapshot, tag, schema or hint again inside it buys no safety,
only requests. The answers are kept per thread: one FileIO serves many threads in the operator
(an opener per warehouse), and another thread's verify re-check must read the table as it is
now, never answers a decision on another thread cached. A write, rename or delete forgets what
it may have made stale (:meth:`Views.changed`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from tablekeeper.core.storage.entries import FileStatus
from tablekeeper.core.storage.paths import basename, parent

__all__ = ["Views"]

T = TypeVar("T")

#: The kinds of answers a view keeps, by path: a read's bytes (or its FileNotFoundError), a
#: listing, and the existence questions.
_KINDS = ("get", "exists", "file_exists", "dir_exists", "is_dir", "list")


class Views:
    """The open view of each thread of one FileIO: (kind, path) -> answer."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()

    @property
    def _view(self) -> dict[tuple[str, str], Any] | None:
        view: dict[tuple[str, str], Any] | None = getattr(self._local, "view", None)
        return view

    @property
    def active(self) -> bool:
        """Whether this thread has a view open."""
        return getattr(self._local, "view", None) is not None

    @contextmanager
    def open(self) -> Iterator[None]:
        """A view for the block; inside one already open, that one (nested blocks share it)."""
        if self._view is not None:
            yield
            return
        self._local.view = {}
        try:
            yield
        finally:
            self._local.view = None

    def answer(self, kind: str, path: str) -> Any:
        """The answer of ``kind`` about ``path`` the view holds (None: not asked yet)."""
        view = self._view
        if view is None:
            return None
        with self._lock:
            return view.get((kind, path))

    def viewed(self, kind: str, path: str, fetch: Callable[[], T]) -> T:
        """``fetch()`` once per (kind, path) while the view is open (a FileNotFoundError is
        remembered too)."""
        view = self._view
        if view is None:
            return fetch()
        key = (kind, path)
        with self._lock:
            known = key in view
            answer = view.get(key)
        if known:
            if isinstance(answer, FileNotFoundError):
                raise FileNotFoundError(*answer.args)
            return cast(T, answer)
        try:
            answer = fetch()
        except FileNotFoundError as e:
            with self._lock:
                if self._view is view:
                    view[key] = e
            raise
        with self._lock:
            if self._view is view:
                view[key] = answer
        return answer

    def in_listed_parent(self, path: str) -> bool | None:
        """Whether ``path`` is an entry of its parent's listing in the view (None: the parent
        was not listed in it)."""
        listed: list[FileStatus] | None = self.answer("list", parent(path))
        if listed is None:
            return None
        name = basename(path.rstrip("/"))
        return any(basename(s.path.rstrip("/")) == name for s in listed)

    def told(self, path: str) -> bool | None:
        """Whether ``path`` exists as the view already tells it, by its parent's listing or a
        read of it the view holds (None: the view cannot tell)."""
        listed = self.in_listed_parent(path)
        if listed is not None:
            return listed
        read = self.answer("get", path)
        if read is not None:
            return not isinstance(read, FileNotFoundError)
        return None

    def changed(self, paths: list[str] | None = None) -> None:
        """A write, rename or delete of ``paths`` (None: of anything): the view's answers about
        them, and the listings of their ancestors, may be stale."""
        if self._view is None:
            return
        with self._lock:
            view = self._view
            if view is None:
                return
            if paths is None:
                view.clear()
                return
            for path in paths:
                path = path.rstrip("/")
                for kind in _KINDS:
                    view.pop((kind, path), None)
                up = path
                while "/" in up.rstrip("/"):
                    up = parent(up)
                    view.pop(("list", up), None)
                    view.pop(("is_dir", up), None)
                    view.pop(("exists", up), None)
                    view.pop(("dir_exists", up), None)
                    if not up or up.endswith((":/", ":")):
                        break
