"""Paimon's JSON metadata files: snapshots, tags, schemas, consumers and the EARLIEST/LATEST
hints, parsed with their format versions checked and written in Jackson's layout."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"Consumer": "consumer", "decode_hint": "hints", "EARLIEST": "hints", "encode_hint": "hints",
    "LATEST": "hints", "dumps": "jackson", "TableSchema": "schema", "Snapshot": "snapshot", "Tag": "tag"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .consumer import Consumer as Consumer
    from .hints import decode_hint as decode_hint, EARLIEST as EARLIEST, encode_hint as encode_hint, LATEST as LATEST
    from .jackson import dumps as dumps
    from .schema import TableSchema as TableSchema
    from .snapshot import Snapshot as Snapshot
    from .tag import Tag as Tag
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
