"""Plan types shared by every executor (in-process threads and Spark): what is deleted or
written, in which order, why, and how many bytes. Planners are pure and return these frozen
objects; dry run = the same plan, executed by nothing."""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tablekeeper.core.pycompat import StrEnum

__all__ = ["FileKind", "PlannedFile", "DeleteStep", "WriteStep", "RemoveEmptyDirsStep", "Step", "Plan",
           "STAGE_ORDER", "stage_of"]


class FileKind(StrEnum):
    DATA = "data"
    CHANGELOG_DATA = "changelog"
    MANIFEST = "manifest"
    INDEX = "index"
    STATISTICS = "statistics"
    SNAPSHOT = "snapshot"
    CHANGELOG_META = "changelog-meta"
    TAG = "tag"
    OTHER = "other"


#: Paimon's deletion order: data, changelog, manifests/index/statistics, snapshot/changelog
#: metadata files, tag files, then hints (paimon-semantics.md §2.3).
STAGE_ORDER: tuple[FileKind, ...] = (
    FileKind.DATA, FileKind.CHANGELOG_DATA, FileKind.INDEX, FileKind.STATISTICS, FileKind.MANIFEST,
    FileKind.CHANGELOG_META, FileKind.SNAPSHOT, FileKind.TAG, FileKind.OTHER,
)


def _manifest_rank(path: str) -> tuple[int, str]:
    """Within the manifest stage: manifests, then manifest lists, then index manifests — a file
    is deleted only after the files it lists, so an interrupted run can still enumerate what
    is left (index files already go before, in their own stage)."""
    name = path.rsplit("/", 1)[-1]
    if name.startswith("index-manifest-"):
        return (2, path)
    if name.startswith("manifest-list-"):
        return (1, path)
    return (0, path)


def _in_rank_order(files: list[PlannedFile]) -> tuple[PlannedFile, ...]:
    """``files`` sorted by ``_manifest_rank`` of their paths. When no file name can start with a
    ranked prefix (data files: ~100k of them in a large expiration), every rank is 0 and the
    order is the path order, sorted without building a key per file."""
    if not any("manifest-list-" in f.path or "index-manifest-" in f.path for f in files):
        return tuple(sorted(files, key=_path_of))
    return tuple(sorted(files, key=lambda p: _manifest_rank(p.path)))


#: The sort key of path order (C-level: ~100k data files are sorted by it).
_path_of = operator.attrgetter("path")


def stage_of(kind: FileKind | str, path: str) -> int:
    """Position of a file in Paimon's deletion order: ``STAGE_ORDER``, and within the manifest
    stage manifests before manifest lists before index manifests (as ``Plan.ordered_deletes``
    sorts them). Evaluators that delete stage by stage order their work by it."""
    file_kind = FileKind(kind)
    stage = STAGE_ORDER.index(file_kind) * 3
    if file_kind == FileKind.MANIFEST:
        stage += _manifest_rank(path)[0]
    return stage


@dataclass(frozen=True)
class PlannedFile:
    """One file a plan deletes, with its kind (its stage in Paimon's order), size if known and why."""

    path: str
    kind: FileKind
    size: int | None = None
    reason: str = ""


@dataclass(frozen=True)
class DeleteStep:
    """Delete these files (never directories); missing files are tolerated and counted."""

    kind: FileKind
    files: tuple[PlannedFile, ...]


@dataclass(frozen=True)
class WriteStep:
    """Write (or replace) one small metadata file, e.g. the EARLIEST hint or changelog-N."""

    path: str
    content: str
    reason: str = ""
    create_only: bool = False


@dataclass(frozen=True)
class RemoveEmptyDirsStep:
    """Remove these bucket directories if empty, then their parents up to ``depth`` partition
    levels, bottom-up and non-recursively (never the table root)."""

    dirs: tuple[str, ...]
    depth: int = 0


Step = DeleteStep | WriteStep | RemoveEmptyDirsStep


@dataclass(frozen=True)
class Plan:
    """What one operation changes, in order: the same object is printed by a dry run and carried
    out by an executor."""

    operation: str
    table: str
    steps: tuple[Step, ...] = ()
    notes: tuple[str, ...] = ()
    details: tuple[tuple[str, Any], ...] = field(default=())

    @staticmethod
    def ordered_deletes(files: Iterable[PlannedFile]) -> tuple[DeleteStep, ...]:
        """Group files into delete steps in Paimon's stage order, de-duplicated by path (the
        first file of a path wins; each step is sorted, so the input order is irrelevant)."""
        listed = files if isinstance(files, list) else list(files)
        unique = {f.path: f for f in reversed(listed)}  # the last assignment is the first file
        kinds = {f.kind for f in unique.values()}
        if len(kinds) == 1:  # the usual call: ~100k data files, or the metadata files
            kind = kinds.pop()
            return (DeleteStep(kind, _in_rank_order(list(unique.values()))),)
        by_kind: dict[FileKind, list[PlannedFile]] = {}
        for f in unique.values():
            by_kind.setdefault(f.kind, []).append(f)
        return tuple(DeleteStep(k, _in_rank_order(by_kind[k])) for k in STAGE_ORDER if by_kind.get(k))

    @property
    def files(self) -> tuple[PlannedFile, ...]:
        return tuple(f for s in self.steps if isinstance(s, DeleteStep) for f in s.files)

    @property
    def is_empty(self) -> bool:
        return not self.steps

    def summary(self) -> dict[str, Any]:
        counts: Counter[str] = Counter()
        sizes: Counter[str] = Counter()
        unsized: Counter[str] = Counter()
        for step in self.steps:
            if not isinstance(step, DeleteStep) or not step.files:
                continue
            kind = step.files[0].kind
            if all(f.kind is kind for f in step.files):  # the usual step: one kind (~100k data files)
                counts[kind.value] += len(step.files)
                sizes[kind.value] += sum(f.size or 0 for f in step.files)
                unknown = sum(1 for f in step.files if f.size is None)
                if unknown:
                    unsized[kind.value] += unknown
                continue
            for f in step.files:
                counts[f.kind.value] += 1
                sizes[f.kind.value] += f.size or 0
                if f.size is None:
                    unsized[f.kind.value] += 1
        return {
            "operation": self.operation,
            "table": self.table,
            "files": dict(counts),
            "bytes": dict(sizes),
            "total_files": sum(counts.values()),
            "total_bytes": sum(sizes.values()),
            #: files whose size is not known (bytes above count 0 for them)
            "unsized": dict(unsized),
            "writes": [s.path for s in self.steps if isinstance(s, WriteStep)],
            "notes": list(self.notes),
            **dict(self.details),
        }
