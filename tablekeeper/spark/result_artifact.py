"""The JSON result artifact of a run (schema version ``RESULT_SCHEMA_VERSION``): ``RunResult``,
``write_result`` and ``read_result`` (local path or any FileIO URI such as ``s3://``). The
operator reads the artifact after a terminal state, never logs (spark-jobs.md §8.3)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tablekeeper.core import errors, values
from tablekeeper.core.storage import FileIO

__all__ = ["RESULT_SCHEMA_VERSION", "RESULT_KIND", "RunResult", "write_result", "read_result"]

RESULT_SCHEMA_VERSION = 1
RESULT_KIND = "TablekeeperRunResult"
_STATUSES = ("Succeeded", "Failed")


def _int_map(value: Any, where: str) -> dict[str, int]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, int) for k, v in value.items()):
        raise errors.FormatError(f"result artifact: {where} must map names to integers", fix="rerun the job")
    return dict(value)


@dataclass
class RunResult:
    """The JSON result artifact of one run (identical shape for the Spark and in-process engines).

    ``planned_*`` are the plan's counts per file kind (dry run and real run report the same);
    ``deleted``/``missing`` what the executor did (missing = already gone, e.g. a retried task
    or an earlier crashed run); ``failed_count``/``failure_sample`` deletions that failed (best
    effort: never fatal); ``errors`` fatal errors (the run changed nothing after them);
    ``sample`` up to ``safety.STATUS_SAMPLE_MAX`` planned paths."""

    operation: str
    table: str
    branch: str
    dry_run: bool
    engine: str
    status: str = "Succeeded"
    run_name: str | None = None
    warehouse: str = ""
    started_at: str = ""
    finished_at: str = ""
    planned_files: dict[str, int] = field(default_factory=dict)
    planned_bytes: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    deleted_bytes: dict[str, int] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    #: planned files whose size is not known, and deleted ones whose size stayed unknown (0 bytes counted)
    planned_unsized: dict[str, int] = field(default_factory=dict)
    unsized: dict[str, int] = field(default_factory=dict)
    failed_count: int = 0
    failure_sample: list[dict[str, str]] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    removed_dirs: int = 0
    sample: list[str] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    #: storage requests of the run by kind, plus ``total`` (Spark: driver and executors, summed)
    requests: dict[str, int] = field(default_factory=dict)
    #: Spark jobs the run started (None in process and on Spark Connect, which cannot count them)
    spark_jobs: int | None = None

    @property
    def total_planned(self) -> int:
        return sum(self.planned_files.values())

    @property
    def total_deleted(self) -> int:
        return sum(self.deleted.values())

    def fail(self, error: BaseException) -> None:
        self.status = "Failed"
        fix = getattr(error, "fix", None)
        entry = {"type": type(error).__name__, "message": str(getattr(error, "message", error))[:2000]}
        if fix:
            entry["fix"] = str(fix)
        self.errors.append(entry)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schemaVersion": RESULT_SCHEMA_VERSION,
            "kind": RESULT_KIND,
            "runName": self.run_name,
            "operation": self.operation,
            "table": self.table,
            "branch": self.branch,
            "warehouse": self.warehouse,
            "dryRun": self.dry_run,
            "engine": self.engine,
            "status": self.status,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "planned": {"files": dict(self.planned_files), "bytes": dict(self.planned_bytes),
                        "totalFiles": self.total_planned, "totalBytes": sum(self.planned_bytes.values()),
                        "unsized": dict(self.planned_unsized)},
            "executed": {"deleted": dict(self.deleted), "deletedBytes": dict(self.deleted_bytes),
                         "missing": dict(self.missing), "unsized": dict(self.unsized),
                         "totalDeleted": self.total_deleted,
                         "totalDeletedBytes": sum(self.deleted_bytes.values()),
                         "written": list(self.written), "removedDirs": self.removed_dirs},
            "failures": {"count": self.failed_count, "sample": list(self.failure_sample[:values.STATUS_SAMPLE_MAX])},
            "sample": list(self.sample[:values.STATUS_SAMPLE_MAX]),
            "errors": list(self.errors),
            "timings": dict(self.timings),
            "details": dict(self.details),
            "notes": list(self.notes),
            "versions": dict(self.versions),
            "requests": dict(self.requests),
            "sparkJobs": self.spark_jobs,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False, default=str)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunResult:
        """Parse and validate an artifact.

        Raises:
            FormatError: not a tablekeeper result, an unknown schema version or a bad field.
        """
        if not isinstance(data, Mapping) or data.get("kind") != RESULT_KIND:
            raise errors.FormatError("not a tablekeeper result artifact", fix="check the --result location")
        if data.get("schemaVersion") != RESULT_SCHEMA_VERSION:
            raise errors.FormatError(f"result artifact schema version {data.get('schemaVersion')!r} is not "
                                     f"{RESULT_SCHEMA_VERSION}", fix="use the tablekeeper version that wrote it")
        try:
            planned, executed, failures = data["planned"], data["executed"], data["failures"]
            status = data["status"]
            if status not in _STATUSES:
                raise errors.FormatError(f"result artifact: unknown status {status!r}", fix="rerun the job")
            return cls(
                operation=str(data["operation"]), table=str(data["table"]), branch=str(data["branch"]),
                dry_run=bool(data["dryRun"]), engine=str(data["engine"]), status=status,
                run_name=data.get("runName"), warehouse=str(data.get("warehouse", "")),
                started_at=str(data.get("startedAt", "")), finished_at=str(data.get("finishedAt", "")),
                planned_files=_int_map(planned["files"], "planned.files"),
                planned_bytes=_int_map(planned["bytes"], "planned.bytes"),
                deleted=_int_map(executed["deleted"], "executed.deleted"),
                deleted_bytes=_int_map(executed["deletedBytes"], "executed.deletedBytes"),
                missing=_int_map(executed["missing"], "executed.missing"),
                planned_unsized=_int_map(planned.get("unsized", {}), "planned.unsized"),
                unsized=_int_map(executed.get("unsized", {}), "executed.unsized"),
                failed_count=int(failures["count"]),
                failure_sample=[dict(x) for x in failures["sample"]],
                written=[str(x) for x in executed.get("written", [])],
                removed_dirs=int(executed.get("removedDirs", 0)),
                sample=[str(x) for x in data.get("sample", [])],
                errors=[dict(x) for x in data.get("errors", [])],
                timings={str(k): float(v) for k, v in dict(data.get("timings", {})).items()},
                details=dict(data.get("details", {})),
                notes=[str(x) for x in data.get("notes", [])],
                versions={str(k): str(v) for k, v in dict(data.get("versions", {})).items()},
                requests=_int_map(data.get("requests", {}), "requests"),
                spark_jobs=None if data.get("sparkJobs") is None else int(data["sparkJobs"]),
            )
        except errors.FormatError:
            raise
        except (KeyError, TypeError, ValueError) as e:
            raise errors.FormatError(f"result artifact is missing or has a malformed field: {e}",
                                     fix="rerun the job") from e


def write_result(uri: str, result: RunResult, options: Mapping[str, str] | None = None) -> None:
    """Write the artifact to a local path or a FileIO URI (replaced if present). Keep it outside
    every table directory: unknown files inside a Paimon table confuse other tools."""
    io = FileIO.for_uri(uri, options)
    path = io.normalize(uri)
    if io.is_local:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    io.overwrite(path, result.to_json() + "\n")


def read_result(uri: str, options: Mapping[str, str] | None = None) -> RunResult:
    """Read and validate an artifact written by ``write_result``.

    Raises:
        FileNotFoundError: no artifact there (the job did not get far enough to write one).
        FormatError: the file is not a valid artifact.
    """
    io = FileIO.for_uri(uri, options)
    raw = io.read_bytes(io.normalize(uri))
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise errors.FormatError(f"result artifact at {uri} is not JSON: {e}", fix="rerun the job") from e
    return RunResult.from_dict(cast(Mapping[str, Any], data))
