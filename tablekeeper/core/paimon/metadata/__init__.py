"""Paimon's JSON metadata files: snapshots, tags, schemas, consumers and the EARLIEST/LATEST
hints, parsed with their format versions checked, and written in Jackson's layout."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "Consumer": "consumer",
    "EARLIEST": "hints",
    "LATEST": "hints",
    "Snapshot": "snapshot",
    "TableSchema": "schema",
    "Tag": "tag",
    "decode_hint": "hints",
    "dumps": "jackson",
    "encode_hint": "hints",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.paimon.metadata.consumer import Consumer as Consumer
    from tablekeeper.core.paimon.metadata.hints import EARLIEST as EARLIEST
    from tablekeeper.core.paimon.metadata.hints import LATEST as LATEST
    from tablekeeper.core.paimon.metadata.hints import decode_hint as decode_hint
    from tablekeeper.core.paimon.metadata.hints import encode_hint as encode_hint
    from tablekeeper.core.paimon.metadata.jackson import dumps as dumps
    from tablekeeper.core.paimon.metadata.schema import TableSchema as TableSchema
    from tablekeeper.core.paimon.metadata.snapshot import Snapshot as Snapshot
    from tablekeeper.core.paimon.metadata.tag import Tag as Tag
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
