"""Opening the tables a plan names: one FileIO per warehouse, shared by every table in it."""

from __future__ import annotations

from collections.abc import Mapping

from tablekeeper.core.paimon import Table, open_table
from tablekeeper.core.storage import FileIO
from tablekeeper.reconcile.state.desired import TableLocation

__all__ = ["Opener"]


class Opener:
    """Opens tables by location, caching one :class:`FileIO` per warehouse."""

    def __init__(self) -> None:
        self._ios: dict[str, FileIO] = {}
        self._options: dict[str, Mapping[str, str]] = {}

    def register(self, warehouse: str, options: Mapping[str, str]) -> None:
        """Remember the storage options of a warehouse (catalog options)."""
        self._options.setdefault(warehouse, dict(options))

    def file_io(self, warehouse: str) -> FileIO:
        io = self._ios.get(warehouse)
        if io is None:
            io = FileIO.for_uri(warehouse, self._options.get(warehouse))
            self._ios[warehouse] = io
        return io

    def open(self, location: TableLocation) -> Table:
        """The table at ``location`` (main branch).

        Raises:
            TableNotFoundError: no Paimon table there.
        """
        self.register(location.warehouse, location.options)
        return open_table(location.warehouse, location.identifier, file_io=self.file_io(location.warehouse))
