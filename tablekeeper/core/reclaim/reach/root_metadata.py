"""Which metadata files a root (snapshot, tag, changelog-N) reaches, given what was read of it:
its manifest lists (sized from the snapshot), the manifests each list names and their extra
files, its index manifest and the index files it ADDs, its statistics file.

The one statement of that rule, for ``Reachability.meta_files`` (in process) and the Spark
executors (``tablekeeper.spark.executor.expand_roots``). Pure: the caller reads the files
(with its own caching and error handling) and locates index files itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from tablekeeper.core.paimon import Snapshot, manifests
from tablekeeper.core.reclaim.reach.roles import ListRole
from tablekeeper.core.storage import join

__all__ = ["MetaRef", "lists_of", "list_file", "list_contents", "index_manifest_file", "added_index_entries",
           "statistics_file"]

_SIZE_FIELDS = {ListRole.BASE: "baseManifestListSize", ListRole.DELTA: "deltaManifestListSize",
                ListRole.CHANGELOG: "changelogManifestListSize"}


@dataclass(frozen=True)
class MetaRef:
    """A metadata file: ``kind`` is ``manifest`` (lists, manifests, index manifests, extra
    files) or ``statistics``."""

    kind: str
    path: str
    size: int | None = None


def lists_of(snapshot: Snapshot, roles: Iterable[ListRole]) -> list[tuple[ListRole, str]]:
    """The (role, list name) pairs of ``snapshot`` among ``roles``, base, delta, changelog order."""
    wanted = set(roles)
    named = ((ListRole.BASE, snapshot.base_manifest_list), (ListRole.DELTA, snapshot.delta_manifest_list),
             (ListRole.CHANGELOG, snapshot.changelog_manifest_list))
    return [(role, name) for role, name in named if name and role in wanted]


def list_file(manifest_dir: str, snapshot: Snapshot, role: ListRole, name: str) -> MetaRef:
    """A manifest list itself, sized as the snapshot records it."""
    size = snapshot.fields.get(_SIZE_FIELDS[role])
    return MetaRef("manifest", join(manifest_dir, name), None if size is None else int(size))


def list_contents(manifest_dir: str, metas: Iterable[manifests.ManifestFileMeta]) -> Iterator[MetaRef]:
    """The manifests a list names, and their extra files."""
    for meta in metas:
        yield MetaRef("manifest", join(manifest_dir, meta.file_name), meta.file_size)
        for extra in meta.extra_files:
            yield MetaRef("manifest", join(manifest_dir, extra))


def index_manifest_file(manifest_dir: str, snapshot: Snapshot) -> MetaRef | None:
    return MetaRef("manifest", join(manifest_dir, snapshot.index_manifest)) if snapshot.index_manifest else None


def added_index_entries(entries: Sequence[manifests.IndexManifestEntry]) -> Iterator[manifests.IndexManifestEntry]:
    """The index files an index manifest keeps (its ADD entries); their location is the caller's."""
    return (e for e in entries if e.kind == manifests.ADD)


def statistics_file(statistics_dir: str, snapshot: Snapshot) -> MetaRef | None:
    return MetaRef("statistics", join(statistics_dir, snapshot.statistics)) if snapshot.statistics else None
