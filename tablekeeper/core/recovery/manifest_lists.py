"""Manifest lists written by a rollback (the target's manifests, listed again under new names)
and by ``repair --remove-missing-manifests`` (the latest snapshot's manifests without the lost ones).

Why new lists that name the *same* manifests: a restored snapshot must read exactly what the
target read, and a manifest list belongs to one snapshot (expiration deletes a snapshot's lists
with it), while manifests are shared between snapshots as Paimon shares them. The base list is
the target's base entries followed by its delta entries (the order every reader merges them
in); the delta list is empty. Each file is written in the target's own Avro schema and codec,
so every reader that read the target reads these. Names are derived from the rollback's inputs:
a rerun after a crash rewrites the same files instead of leaving new ones behind."""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tablekeeper.core import errors, paimon
from tablekeeper.core.paimon import Snapshot
from tablekeeper.core.storage import FileIO, join

__all__ = ["WrittenLists", "list_names", "write_restored_lists", "write_kept_lists", "repair_list_names"]

_NAMESPACE = uuid.UUID("5b0f8f52-5e0c-4d57-9f3e-7a4f0d2c9a10")


@dataclass(frozen=True)
class WrittenLists:
    base: str
    base_size: int
    delta: str
    delta_size: int


def list_names(identifier: str, branch: str, latest_id: int, target_id: int) -> tuple[str, str]:
    """The (base, delta) list names of the rollback of ``branch`` from ``latest_id`` to ``target_id``."""
    key = uuid.uuid5(_NAMESPACE, f"{identifier}|{branch}|{latest_id}|{target_id}")
    return f"manifest-list-{key}-0", f"manifest-list-{key}-1"


def repair_list_names(identifier: str, branch: str, snapshot_id: int) -> tuple[str, str]:
    """The (base, delta) list names of the manifest repair of ``branch``'s snapshot ``snapshot_id``."""
    key = uuid.uuid5(_NAMESPACE, f"{identifier}|{branch}|repair-manifests|{snapshot_id}")
    return f"manifest-list-{key}-0", f"manifest-list-{key}-1"


def _read(file_io: FileIO, path: str) -> tuple[dict[str, Any], str, list[Any]]:
    import fastavro

    try:
        data = file_io.read_bytes(path)
    except FileNotFoundError:
        raise errors.NotFoundError(f"manifest list {path} is missing: the target cannot be restored",
                                   fix="pick another snapshot or tag ('tablekeeper check' lists broken ones)") from None
    reader = fastavro.reader(io.BytesIO(data))
    schema = reader.writer_schema
    if not isinstance(schema, dict):
        raise errors.FormatError(f"manifest list {path} has no record schema", fix="inspect the file")
    return dict(schema), str(reader.codec), list(reader)


def _encode(schema: dict[str, Any], codec: str, records: list[Any]) -> bytes:
    import fastavro

    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec)
    return out.getvalue()


def _write_lists(file_io: FileIO, table_root: str, snapshot: Snapshot, names: tuple[str, str],
                 keep: Callable[[str], bool]) -> tuple[WrittenLists, list[str]]:
    """Write ``snapshot``'s base and delta entries whose manifest ``keep`` accepts as one base
    list (and an empty delta list) under ``names``, overwriting a crashed run's; the kept names."""
    manifest_dir = join(table_root, paimon.MANIFEST_DIR)
    if snapshot.base_manifest_list is None:
        raise errors.FormatError(f"snapshot {snapshot.id} names no base manifest list",
                                 fix="pick another snapshot or tag")
    schema, codec, records = _read(file_io, join(manifest_dir, snapshot.base_manifest_list))
    if snapshot.delta_manifest_list:
        delta_schema, _codec, delta = _read(file_io, join(manifest_dir, snapshot.delta_manifest_list))
        if delta_schema != schema:
            raise errors.FormatError(
                f"snapshot {snapshot.id}'s base and delta manifest lists were written with different schemas",
                fix="use a snapshot or tag committed by a single Paimon version")
        records += delta
    records = [r for r in records if keep(str(r["_FILE_NAME"]))]
    base_name, delta_name = names
    base_bytes, delta_bytes = _encode(schema, codec, records), _encode(schema, codec, [])
    file_io.overwrite(join(manifest_dir, base_name), base_bytes)
    file_io.overwrite(join(manifest_dir, delta_name), delta_bytes)
    return WrittenLists(base_name, len(base_bytes), delta_name, len(delta_bytes)), [str(r["_FILE_NAME"])
                                                                                    for r in records]


def write_restored_lists(file_io: FileIO, table_root: str, identifier: str, branch: str, latest_id: int,
                         target: Snapshot) -> WrittenLists:
    """Write the base and delta lists of the restored snapshot (overwriting a crashed run's).

    Raises:
        FormatError: the target's base and delta lists use different schemas.
        NotFoundError: a list of the target is gone.
    """
    names = list_names(identifier, branch, latest_id, target.id)
    return _write_lists(file_io, table_root, target, names, lambda _name: True)[0]


def write_kept_lists(file_io: FileIO, table_root: str, names: tuple[str, str], latest: Snapshot,
                     dropped: frozenset[str]) -> tuple[WrittenLists, list[str]]:
    """Write ``latest``'s manifests except ``dropped`` as the lists ``names``; the kept manifests."""
    return _write_lists(file_io, table_root, latest, names, lambda name: name not in dropped)
